"""Readable set-ups for rule scenarios: a position as a few overrides of a fresh game."""

from __future__ import annotations

from typing import Any

from patchwork_env import GameState, encode_buy, new_game
from patchwork_env.core import rules
from patchwork_env.core.bitboard import cells_to_words

# circle used by most scenarios: market is 9 (2x2, cost 6, time 5, 2 buttons), 1 (cost 1, time 3),
# 17 (1x5, cost 7, time 1, 1 button); the 1x2 patch 0 is last
CIRCLE = [9, 1, 17, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
          30, 31, 32, 0]  # fmt: skip


def start(first_player: int = 0, layout: str = "revised", circle: list[int] | None = None) -> GameState:
    return new_game(circle=circle or CIRCLE, first_player=first_player, leather_layout=layout)


_FIELDS = {"positions": rules.POS, "buttons": rules.BUTTONS, "top": rules.TOP, "bonus_owner": rules.BONUS,
           "first_to_finish": rules.FIRST53, "pending_leather": rules.PENDING, "ply": rules.PLY}  # fmt: skip


def position(base: GameState | None = None, **overrides: Any) -> GameState:
    """A fresh game (or ``base``) with some fields (names of ``to_dict``) overwritten in the raw
    array. A rule scenario need not be reachable: ``from_dict`` and even ``GameState(array)``
    would reject most (5 + 45 buttons on space 0, for one), so this adopts the array unchecked."""
    arr = (base or start()).array().copy()
    for key, value in overrides.items():
        if key == "leather_remaining":
            arr[rules.LEATHER] = sum(1 << space for space in value)
        elif key in _FIELDS:
            values = value if isinstance(value, list | tuple) else [value]
            arr[_FIELDS[key] : _FIELDS[key] + len(values)] = [-1 if v is None else int(v) for v in values]
        else:
            raise KeyError(f"position() cannot override {key!r}")
    return GameState._wrap(arr)


def with_cells(state: GameState, player: int, cells: list[int] | range) -> GameState:
    """``state`` with ``cells`` of ``player``'s quilt covered (raw bits, no patch record): a short
    way to set up nearly full quilts. Income and the placement log are left as they are."""
    arr = state.array().copy()
    lo, hi = cells_to_words(list(cells))
    arr[2 * player] |= lo
    arr[2 * player + 1] |= hi
    return GameState._wrap(arr)  # unchecked, like position()


def cells_except(*free: int) -> list[int]:
    return [c for c in range(81) if c not in free]


def play(state: GameState, *actions: int) -> GameState:
    for a in actions:
        state = state.step(a)
    return state


def buy(slot: int, orientation: int = 0, row: int = 0, col: int = 0) -> int:
    return encode_buy(slot, orientation, row, col)
