"""The public action encoding (2026 actions) and its human notation.

::

    0 .. 1943     buy: (slot * 8 + orientation) * 81 + row * 9 + col
                  slot 0..2 = market position (0 = next after the neutral token),
                  (row, col) = top-left cell of the oriented shape's bounding box
    1944 .. 2024  place the pending leather patch on cell row * 9 + col
    2025          advance and receive buttons

``logits[:2025].reshape(25, 9, 9)`` gives one 9x9 plane per (slot, orientation) and one for the
leather patch. Human notation: ``"buy s1 o4 r5c3"``, ``"leather r0c0"``, ``"advance"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, SupportsIndex

import numpy as np
import numpy.typing as npt

from patchwork_env.core.rules import ADVANCE, LEATHER_BASE, MARKET_SIZE, NUM_ACTIONS, SLOT_ACTIONS

__all__ = [
    "ADVANCE",
    "NUM_ACTIONS",
    "Action",
    "IllegalActionError",
    "action_to_str",
    "as_action_id",
    "as_action_ids",
    "decode_action",
    "encode_buy",
    "encode_leather",
    "parse_action",
]

Kind = Literal["buy", "leather", "advance"]
_NOTATION = re.compile(
    r"^\s*(?:(?P<adv>advance|pass)|buy\s+s(?P<slot>\d+)\s+o(?P<o>\d+)\s+r(?P<r>\d+)\s*c(?P<c>\d+)"
    r"|leather\s+r(?P<lr>\d+)\s*c(?P<lc>\d+))\s*$",
    re.IGNORECASE,
)


class IllegalActionError(ValueError):
    """An action that the rules do not allow in this state (the message says why)."""


class GameOverError(IllegalActionError, RuntimeError):
    """An action sent to a finished game (call ``reset()``, or start from another state)."""


def game_over(what: str = "the game") -> GameOverError:
    """The error of an action sent to a finished game or episode (``what``)."""
    return GameOverError(f"{what} is over: no action is legal (call reset(), or start a new game)")


@dataclass(frozen=True)
class Action:
    """A decoded action: ``kind`` plus the fields that apply to it (others are None)."""

    id: int
    kind: Kind
    slot: int | None = None
    orientation: int | None = None
    row: int | None = None
    col: int | None = None

    def __str__(self) -> str:
        if self.kind == "advance":
            return "advance"
        if self.kind == "leather":
            return f"leather r{self.row}c{self.col}"
        return f"buy s{self.slot} o{self.orientation} r{self.row}c{self.col}"


def is_integer(value: object) -> bool:
    """A Python or numpy integer, not a bool (``True`` is not a seat, ``1.0`` not a row)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _check(name: str, value: int, limit: int) -> None:
    if not is_integer(value) or not 0 <= value < limit:
        raise ValueError(f"{name} must be an integer in 0..{limit - 1}, got {value!r}")


def as_player(value: object, name: str = "player") -> int:
    """``value`` as a player index 0 or 1: an integer type only (``True`` and ``1.0`` are refused),
    the one check of every seat and player argument."""
    if not is_integer(value) or value not in (0, 1):
        raise ValueError(f"{name} must be the integer 0 or 1, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def encode_buy(slot: int, orientation: int, row: int, col: int) -> int:
    """Action id of buying market ``slot`` in ``orientation`` with its box's top-left at (row, col)."""
    _check("slot", slot, MARKET_SIZE)
    _check("orientation", orientation, 8)
    _check("row", row, 9)
    _check("col", col, 9)
    return (slot * 8 + orientation) * 81 + row * 9 + col


def encode_leather(row: int, col: int) -> int:
    """Action id of placing the pending leather patch on (row, col)."""
    _check("row", row, 9)
    _check("col", col, 9)
    return LEATHER_BASE + row * 9 + col


def _out_of_range(value: object) -> IllegalActionError:
    return IllegalActionError(f"action {value!r} is out of range: actions are integers 0..{NUM_ACTIONS - 1}")


def as_action_id(action: Any) -> int:
    """``action`` as a Python int in 0..2025: any Python or numpy integer (or 0-d integer array).
    Everything else, bools and floats included, and integers of any size outside 0..2025 raise
    ``IllegalActionError`` (a ValueError) saying the action is out of range, before any compiled
    code sees it. The one action check of every front-end."""
    if type(action) is int:  # the common case first: no conversion
        if 0 <= action < NUM_ACTIONS:
            return action
        raise _out_of_range(action)
    if isinstance(action, bool | np.bool_) or getattr(action, "dtype", None) == np.bool_:
        raise _out_of_range(action)
    try:
        value = int(action.__index__())
    except (AttributeError, TypeError):
        raise _out_of_range(action) from None
    if not 0 <= value < NUM_ACTIONS:
        raise _out_of_range(value)
    return value


def as_action_ids(actions: Any, num: int, *, allow_skip: bool = False) -> npt.NDArray[np.int64]:
    """The batch form of ``as_action_id``: ``actions`` as a fresh int64 array of shape ``(num,)``.
    A wrong shape is a ValueError; a non-integer dtype (bool, float, object) an
    ``IllegalActionError``. Integers outside 0..2025 (of any size and dtype) come back as 2026, so
    that the caller's legality check names that game; -1 (a finished game's no-op) is kept when
    ``allow_skip``."""
    acts = np.asarray(actions)
    if acts.shape != (num,):
        raise ValueError(f"actions must be an integer array of shape ({num},), got {acts.dtype} {acts.shape}")
    if acts.dtype == np.bool_ or not np.issubdtype(acts.dtype, np.integer):
        raise IllegalActionError(
            f"actions must be integers 0..{NUM_ACTIONS - 1}, got an array of dtype {acts.dtype}: out of range"
        )
    ok = (acts >= (-1 if allow_skip else 0)) & (acts < NUM_ACTIONS)
    return np.where(ok, acts, NUM_ACTIONS).astype(np.int64)


def decode_action(action: SupportsIndex) -> Action:
    """The readable record of an action id."""
    a = as_action_id(action)
    if a == ADVANCE:
        return Action(a, "advance")
    if a >= LEATHER_BASE:
        row, col = divmod(a - LEATHER_BASE, 9)
        return Action(a, "leather", row=row, col=col)
    slot, rest = divmod(a, SLOT_ACTIONS)
    orientation, cell = divmod(rest, 81)
    row, col = divmod(cell, 9)
    return Action(a, "buy", slot, orientation, row, col)


def action_to_str(action: SupportsIndex) -> str:
    """Human notation of an action id, e.g. ``"buy s1 o4 r5c3"``."""
    return str(decode_action(action))


def parse_action(text: str) -> int:
    """Action id from human notation (``"buy s1 o4 r5c3"``, ``"leather r0c0"``, ``"advance"``)."""
    m = _NOTATION.match(text)
    if m is None:
        raise ValueError(
            f"cannot read action {text!r}: expected 'advance', 'buy s<slot> o<orientation> r<row>c<col>' "
            "or 'leather r<row>c<col>'"
        )
    if m["adv"]:
        return ADVANCE
    if m["lr"] is not None:
        return encode_leather(int(m["lr"]), int(m["lc"]))
    return encode_buy(int(m["slot"]), int(m["o"]), int(m["r"]), int(m["c"]))
