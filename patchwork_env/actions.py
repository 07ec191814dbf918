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
from typing import Literal, SupportsIndex

from patchwork_env.rules import ADVANCE, LEATHER_BASE, MARKET_SIZE, NUM_ACTIONS, SLOT_ACTIONS

__all__ = [
    "ADVANCE",
    "NUM_ACTIONS",
    "Action",
    "action_to_str",
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


def _check(name: str, value: int, limit: int) -> None:
    if not 0 <= value < limit:
        raise ValueError(f"{name} must be in 0..{limit - 1}, got {value}")


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


def as_action_id(action: SupportsIndex) -> int:
    """``action`` as a Python int in 0..2025, or a ValueError naming what was given."""
    try:
        value = int(action.__index__())
    except (AttributeError, TypeError):
        raise ValueError(f"an action must be an integer in 0..{NUM_ACTIONS - 1}, got {action!r}") from None
    if not 0 <= value < NUM_ACTIONS:
        raise ValueError(f"action {value} is out of range: actions are 0..{NUM_ACTIONS - 1}")
    return value


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
