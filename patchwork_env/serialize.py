"""JSON dicts and a one-line text notation for ``GameState``, both checked for consistency.

Notation (space-separated fields, like chess FEN)::

    R 12,9 7,3 1! - 32,38,44,50 - 5.17.2.0 3:0:0:0/L:4:4 7:2:6:0 14
    | |    |   |  | |           | |        |             |       ply (decisions taken)
    | |    |   |  | |           | |        |             quilt of player 1
    | |    |   |  | |           | |        quilt of player 0: patch:orientation:row:col, L:row:col
    | |    |   |  | |           | circle, slot 0 first ('-' when empty)
    | |    |   |  | |           first to reach 53 ('-', 0 or 1)
    | |    |   |  | leather patches left on the track ('-' when none)
    | |    |   |  bonus tile owner ('-', 0 or 1)
    | |    |   player on top (moved last); '!' = that player must place a leather patch now
    | |    buttons
    | positions
    leather layout: R revised, O original

Quilts, income and the player to move are derived, never stored, so they cannot disagree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from patchwork_env import rules as R
from patchwork_env.bitboard import BONUS_HI, BONUS_LO, DENSE, ORIENT_CANON, PL_HI, PL_LO
from patchwork_env.patches import NUM_PATCHES, PATCHES
from patchwork_env.state import GameState

_KEYS = (
    "leather_layout",
    "positions",
    "buttons",
    "top",
    "pending_leather",
    "bonus_owner",
    "leather_remaining",
    "first_to_finish",
    "circle",
    "placements",
    "ply",
)


def state_to_dict(state: GameState) -> dict[str, Any]:
    return {
        "leather_layout": state.leather_layout,
        "positions": list(state.positions),
        "buttons": list(state.buttons),
        "top": state.top,
        "pending_leather": state.pending_leather,
        "bonus_owner": state.bonus_owner,
        "leather_remaining": list(state.leather_remaining),
        "first_to_finish": state.first_to_finish,
        "circle": list(state.circle),
        "placements": [[list(e) for e in state.placements(p)] for p in (0, 1)],
        "ply": state.ply,
    }


def _int(data: dict[str, Any], key: str, lo: int, hi: int) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{key} must be an integer in {lo}..{hi}, got {value!r}")
    return value


def _pair(data: dict[str, Any], key: str, lo: int, hi: int) -> tuple[int, int]:
    value = data[key]
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(f"{key} must be a pair [player 0, player 1], got {value!r}")
    a, b = (_int({key: v}, key, lo, hi) for v in value)
    return a, b


def _optional_player(data: dict[str, Any], key: str) -> int:
    value = data[key]
    if value is None:
        return -1
    return _int(data, key, 0, 1)


def state_from_dict(data: dict[str, Any]) -> GameState:
    """Rebuild a state; ValueError naming the first inconsistency found."""
    if not isinstance(data, dict):
        raise ValueError(f"a state dict is expected, got {type(data).__name__}")
    missing = [k for k in _KEYS if k not in data]
    unknown = [k for k in data if k not in _KEYS]
    if missing or unknown:
        raise ValueError(f"state dict: missing keys {missing}, unknown keys {unknown}")
    layout = data["leather_layout"]
    if layout not in R.LEATHER_LAYOUTS:
        raise ValueError(f"leather_layout must be one of {sorted(R.LEATHER_LAYOUTS)}, got {layout!r}")
    positions = _pair(data, "positions", 0, R.FINAL_SPACE)
    buttons = _pair(data, "buttons", 0, 10_000)
    top = _int(data, "top", 0, 1)
    pending = data["pending_leather"]
    if not isinstance(pending, bool):
        raise ValueError(f"pending_leather must be true or false, got {pending!r}")
    bonus = _optional_player(data, "bonus_owner")
    first = _optional_player(data, "first_to_finish")
    ply = _int(data, "ply", 0, 10_000)
    circle = [_int({"circle": c}, "circle", 0, NUM_PATCHES - 1) for c in data["circle"]]
    if len(set(circle)) != len(circle):
        raise ValueError(f"circle repeats a patch: {circle}")

    s = np.zeros(R.STATE_LEN, dtype=np.int64)
    R.new_state_into(s, np.array(circle, dtype=np.int64), top, R.LAYOUT_NAMES.index(layout), 0)
    layout_spaces = R.LEATHER_LAYOUTS[layout]
    leather_mask = 0
    for space in data["leather_remaining"]:
        if space not in layout_spaces:
            raise ValueError(
                f"leather_remaining: {space!r} is not a leather space of the {layout} layout {layout_spaces}"
            )
        if space <= max(positions):
            raise ValueError(f"leather patch on space {space} should have been taken: a token reached {max(positions)}")
        leather_mask |= 1 << space
    s[R.LEATHER] = leather_mask

    placements = data["placements"]
    if not isinstance(placements, (list, tuple)) or len(placements) != 2:
        raise ValueError("placements must be a pair of lists (player 0, player 1)")
    bought: set[int] = set(circle)
    leathers = 0
    for player, entries in enumerate(placements):
        w = 2 * player
        for entry in entries:
            if not isinstance(entry, (list, tuple)) or len(entry) != 4:
                raise ValueError(f"placement {entry!r} of player {player} must be [patch, orientation, row, col]")
            patch, o, row, col = (int(x) for x in entry)
            if patch == -1:
                if not (0 <= row < 9 and 0 <= col < 9):
                    raise ValueError(f"leather placement {entry!r} of player {player} is off the board")
                cell = row * 9 + col
                lo, hi = (1 << cell, 0) if cell < 63 else (0, 1 << (cell - 63))
                log_entry = R.LEATHER_PLACEMENT + cell
                leathers += 1
            else:
                if not 0 <= patch < NUM_PATCHES:
                    raise ValueError(f"placement {entry!r} of player {player}: no patch {patch}")
                if patch in bought:
                    raise ValueError(f"patch {patch} is placed twice, or placed and still in the circle")
                bought.add(patch)
                if not (0 <= o < 8 and 0 <= row < 9 and 0 <= col < 9) or ORIENT_CANON[patch, o] != o:
                    raise ValueError(f"placement {entry!r} of player {player}: not a distinct orientation on the board")
                log_entry = int(DENSE[patch, o * 81 + row * 9 + col])
                if log_entry < 0:
                    raise ValueError(f"placement {entry!r} of player {player} leaves the board")
                lo, hi = int(PL_LO[log_entry]), int(PL_HI[log_entry])
                s[R.INCOME + player] += PATCHES[patch].buttons
            if (int(s[w]) & lo) or (int(s[w + 1]) & hi):
                raise ValueError(f"placement {entry!r} of player {player} overlaps an earlier one")
            if int(s[R.NPLACED + player]) >= R.MAX_PLACED:
                raise ValueError(f"player {player} has more than {R.MAX_PLACED} placements")
            s[w] |= lo
            s[w + 1] |= hi
            s[R.LOG + player * R.MAX_PLACED + s[R.NPLACED + player]] = log_entry
            s[R.NPLACED + player] += 1
    if len(bought) != NUM_PATCHES:
        lost = sorted(set(range(NUM_PATCHES)) - bought)
        raise ValueError(f"patches {lost} are neither in the circle nor on a quilt")
    if leathers + len(data["leather_remaining"]) > len(layout_spaces):
        raise ValueError(
            f"{leathers} leather patches placed and {len(data['leather_remaining'])} left: the layout has 5"
        )

    s[R.POS], s[R.POS + 1] = positions
    s[R.BUTTONS], s[R.BUTTONS + 1] = buttons
    s[R.PENDING] = int(pending)
    s[R.BONUS] = bonus
    s[R.FIRST53] = first
    s[R.PLY] = ply
    squares = [_has_square(int(s[2 * p]), int(s[2 * p + 1])) for p in (0, 1)]
    if bonus >= 0 and not squares[bonus]:
        raise ValueError(f"bonus_owner is {bonus} but that quilt has no covered 7x7 square")
    if bonus < 0 and any(squares):
        raise ValueError("a quilt has a covered 7x7 square but nobody holds the bonus tile")
    at_end = [p for p in (0, 1) if positions[p] == R.FINAL_SPACE]
    if (first >= 0) != bool(at_end) or (first >= 0 and first not in at_end):
        raise ValueError(f"first_to_finish is {data['first_to_finish']!r} but players {at_end} are on space 53")
    if pending and R.empty_cells(s, top) == 0:
        raise ValueError(f"a leather patch is pending for player {top}, whose quilt is full")
    return GameState._wrap(s)


def _has_square(lo: int, hi: int) -> bool:
    return any((lo & int(a)) == int(a) and (hi & int(b)) == int(b) for a, b in zip(BONUS_LO, BONUS_HI, strict=False))


# --- notation ------------------------------------------------------------------------------------
def _player_or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def _ints(values: list[int] | tuple[int, ...], sep: str) -> str:
    return sep.join(str(v) for v in values) if values else "-"


def to_notation(state: GameState) -> str:
    quilts = []
    for p in (0, 1):
        entries = [f"L:{r}:{c}" if patch < 0 else f"{patch}:{o}:{r}:{c}" for patch, o, r, c in state.placements(p)]
        quilts.append("/".join(entries) if entries else "-")
    return " ".join(
        [
            "R" if state.leather_layout == "revised" else "O",
            _ints(state.positions, ","),
            _ints(state.buttons, ","),
            f"{state.top}{'!' if state.pending_leather else ''}",
            _player_or_dash(state.bonus_owner),
            _ints(state.leather_remaining, ","),
            _player_or_dash(state.first_to_finish),
            _ints(state.circle, "."),
            quilts[0],
            quilts[1],
            str(state.ply),
        ]
    )


def from_notation(text: str) -> GameState:
    fields = text.split()
    if len(fields) != 11:
        raise ValueError(f"notation has 11 space-separated fields, got {len(fields)} in {text!r}")
    try:
        layout = {"R": "revised", "O": "original"}[fields[0]]
        top_field = fields[3]
        pending = top_field.endswith("!")

        def ints(field: str, sep: str) -> list[int]:
            return [] if field == "-" else [int(x) for x in field.split(sep)]

        def quilt(field: str) -> list[list[int]]:
            out = []
            for entry in [] if field == "-" else field.split("/"):
                parts = entry.split(":")
                out.append([-1, 0, int(parts[1]), int(parts[2])] if parts[0] == "L" else [int(x) for x in parts])
            return out

        data = {
            "leather_layout": layout,
            "positions": ints(fields[1], ","),
            "buttons": ints(fields[2], ","),
            "top": int(top_field.rstrip("!")),
            "pending_leather": pending,
            "bonus_owner": None if fields[4] == "-" else int(fields[4]),
            "leather_remaining": ints(fields[5], ","),
            "first_to_finish": None if fields[6] == "-" else int(fields[6]),
            "circle": ints(fields[7], "."),
            "placements": [quilt(fields[8]), quilt(fields[9])],
            "ply": int(fields[10]),
        }
    except (KeyError, ValueError, IndexError) as exc:
        raise ValueError(f"cannot read notation {text!r}: {exc}") from None
    return state_from_dict(data)
