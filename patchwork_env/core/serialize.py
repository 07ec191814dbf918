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

Quilts, income and the player to move are derived, never stored, so they cannot disagree. The
array is built through the rules' own writers (``rules.new_state_into`` deals the circle,
``rules.lay_patch`` / ``rules.lay_leather`` sew every placement, ``rules.set_position`` sets the
rest); this module writes no state field itself. It works on arrays and never imports
``GameState``: ``GameState.from_dict`` / ``from_notation`` wrap what ``array_from_dict`` /
``array_from_notation`` build.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.bitboard import BOARD, BONUS_HI, BONUS_LO, CELLS, NUM_ORIENTATIONS, ORIENT_CANON, PLACEMENT_ROW
from patchwork_env.core.patches import NUM_PATCHES, PATCHES, STARTING_PATCH
from patchwork_env.core.validate import MAX_PLY, check_state_array
from patchwork_env.core.view import Position

IntArray = npt.NDArray[np.int64]

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


def state_to_dict(state: Position) -> dict[str, Any]:
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


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _int(data: dict[str, Any], key: str, lo: int, hi: int) -> int:
    value = data[key]
    if not _is_int(value) or not lo <= value <= hi:
        raise ValueError(f"{key} must be an integer in {lo}..{hi}, got {value!r}")
    return int(value)


def _int_list(value: Any, key: str) -> list[int]:
    if not isinstance(value, list | tuple) or not all(_is_int(v) for v in value):
        raise ValueError(f"{key} must be a list of integers, got {value!r}")
    return [int(v) for v in value]


def _pair(data: dict[str, Any], key: str, lo: int, hi: int) -> tuple[int, int]:
    value = data[key]
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"{key} must be a pair [player 0, player 1], got {value!r}")
    a, b = (_int({key: v}, key, lo, hi) for v in value)
    return a, b


def _optional_player(data: dict[str, Any], key: str) -> int:
    value = data[key]
    if value is None:
        return -1
    return _int(data, key, 0, 1)


def array_from_dict(data: dict[str, Any]) -> IntArray:
    """Rebuild a state array (for ``GameState.from_dict``); ValueError naming the first
    inconsistency found. Only states the rules can reach are accepted (as far as the checks derived
    from the rules can tell, listed in ``_check_reachable``); the result also passes
    ``validate.check_state_array``."""
    if not isinstance(data, dict):
        raise ValueError(f"a state dict is expected, got {type(data).__name__}")
    missing = [k for k in _KEYS if k not in data]
    unknown = [k for k in data if k not in _KEYS]
    if missing or unknown:
        raise ValueError(f"state dict: missing keys {missing}, unknown keys {unknown}")
    layout = rules.check_leather_layout(data["leather_layout"])
    positions = _pair(data, "positions", 0, rules.FINAL_SPACE)
    buttons = _pair(data, "buttons", 0, rules.MAX_BUTTONS)
    top = _int(data, "top", 0, 1)
    pending = data["pending_leather"]
    if not isinstance(pending, bool):
        raise ValueError(f"pending_leather must be true or false, got {pending!r}")
    bonus = _optional_player(data, "bonus_owner")
    first = _optional_player(data, "first_to_finish")
    ply = _int(data, "ply", 0, MAX_PLY)
    circle = _int_list(data["circle"], "circle")
    if not all(0 <= c < NUM_PATCHES for c in circle) or len(set(circle)) != len(circle):
        raise ValueError(f"circle must hold distinct patch ids 0..{NUM_PATCHES - 1}, got {circle}")
    remaining = _int_list(data["leather_remaining"], "leather_remaining")

    layout_spaces = rules.LEATHER_LAYOUTS[layout]
    leather_mask = 0
    for space in remaining:
        if space not in layout_spaces:
            raise ValueError(
                f"leather_remaining: {space!r} is not a leather space of the {layout} layout {layout_spaces}"
            )
        leather_mask |= 1 << space
    s = np.zeros(rules.STATE_LEN, dtype=np.int64)
    rules.new_state_into(s, np.array(circle, dtype=np.int64), top, rules.LAYOUT_NAMES.index(layout), leather_mask)

    placements = data["placements"]
    if not isinstance(placements, list | tuple) or len(placements) != 2:
        raise ValueError("placements must be a pair of lists (player 0, player 1)")
    bought: set[int] = set(circle)
    for player, entries in enumerate(placements):
        if not isinstance(entries, list | tuple):
            raise ValueError(f"placements of player {player} must be a list, got {entries!r}")
        for entry in entries:
            if not isinstance(entry, list | tuple) or len(entry) != 4 or not all(_is_int(x) for x in entry):
                raise ValueError(
                    f"placement {entry!r} of player {player} must be 4 integers [patch, orientation, row, col]"
                )
            patch, o, row, col = (int(x) for x in entry)
            if rules.placed_count(s, player) >= rules.MAX_PLACED:
                raise ValueError(f"player {player} has more than {rules.MAX_PLACED} placements")
            if patch == -1:
                if not (o == 0 and 0 <= row < BOARD and 0 <= col < BOARD):
                    raise ValueError(
                        f"leather placement {entry!r} of player {player} must be [-1, 0, row 0..8, col 0..8]"
                    )
                err = rules.lay_leather(s, player, row * BOARD + col)
            else:
                if not 0 <= patch < NUM_PATCHES:
                    raise ValueError(f"placement {entry!r} of player {player}: no patch {patch}")
                if patch in bought:
                    raise ValueError(f"patch {patch} is placed twice, or placed and still in the circle")
                bought.add(patch)
                on_board = 0 <= o < NUM_ORIENTATIONS and 0 <= row < BOARD and 0 <= col < BOARD
                if not on_board or ORIENT_CANON[patch, o] != o:
                    raise ValueError(f"placement {entry!r} of player {player}: not a distinct orientation on the board")
                placement = int(PLACEMENT_ROW[patch, o * CELLS + row * BOARD + col])
                if placement < 0:
                    raise ValueError(f"placement {entry!r} of player {player} leaves the board")
                err = rules.lay_patch(s, player, patch, placement)
            if err != rules.OK:
                raise ValueError(f"placement {entry!r} of player {player} overlaps an earlier one")
    if len(bought) != NUM_PATCHES:
        lost = sorted(set(range(NUM_PATCHES)) - bought)
        raise ValueError(f"patches {lost} are neither in the circle nor on a quilt")

    rules.set_position(s, positions, buttons, pending, bonus, first, ply)
    squares = [_has_square(int(s[2 * p]), int(s[2 * p + 1])) for p in (0, 1)]
    if bonus >= 0 and not squares[bonus]:
        raise ValueError(f"bonus_owner is {bonus} but that quilt has no covered 7x7 square")
    if bonus < 0 and any(squares):
        raise ValueError("a quilt has a covered 7x7 square but nobody holds the bonus tile")
    at_end = [p for p in (0, 1) if positions[p] == rules.FINAL_SPACE]
    if (first >= 0) != bool(at_end) or (first >= 0 and first not in at_end):
        raise ValueError(f"first_to_finish is {data['first_to_finish']!r} but players {at_end} are on space 53")
    if pending and rules.empty_cells(s, top) == 0:
        raise ValueError(f"a leather patch is pending for player {top}, whose quilt is full")
    _check_reachable(s, placements, circle)
    return check_state_array(s)


def _check_reachable(s: npt.NDArray[np.int64], placements: Any, circle: list[int]) -> None:
    """The relations every reachable state satisfies (each derived from the rules; p = a player):

    - leather: exactly the layout's spaces beyond the furthest token are left (the first token to
      pass a space takes its patch); the patches taken were placed or are pending, unless a quilt
      was full; p placed or has pending at most as many as there are leather spaces up to p's
      token; a pending patch belongs to TOP, who just passed it ahead of the other token, at ply >= 1;
    - time: below space 53, p's position is its buys' time plus what p advanced, so at least the
      time of p's patches (every buy and advance moves p at least one space);
    - ply: at least the placements plus one advance for each player who moved further than the time
      of its patches, at most both positions plus the leather placements;
    - buttons: p has 5 + advanced spaces + income collected - costs paid, with income collected
      between 0 and (income marks passed) x p's income now;
    - TOP moved last, so is off space 0 once a decision was taken; an untouched circle (33
      patches) still ends with the 1x2 patch.
    """
    layout_spaces = rules.LEATHER_LAYOUTS[rules.LAYOUT_NAMES[int(s[rules.LAYOUT])]]
    pos = (int(s[rules.POS]), int(s[rules.POS + 1]))
    furthest = max(pos)
    top, pending, ply = int(s[rules.TOP]), int(s[rules.PENDING]), int(s[rules.PLY])
    expected = [x for x in layout_spaces if x > furthest]
    left = [x for x in range(rules.FINAL_SPACE + 1) if (int(s[rules.LEATHER]) >> x) & 1]
    if left != expected:
        raise ValueError(
            f"leather_remaining is {left}, but with a token on space {furthest} exactly {expected} are left"
        )
    taken = len(layout_spaces) - len(expected)
    leathers = [sum(1 for e in placements[p] if int(e[0]) == -1) for p in (0, 1)]
    full = [rules.empty_cells(s, p) == 0 for p in (0, 1)]
    if sum(leathers) + pending > taken or (sum(leathers) + pending < taken and not any(full)):
        raise ValueError(
            f"{sum(leathers)} leather patches placed and {pending} pending, but {taken} were taken from the "
            f"track (the spaces up to {furthest})"
        )
    for p in (0, 1):
        own = leathers[p] + (pending if top == p else 0)
        reachable = sum(1 for x in layout_spaces if x <= pos[p])
        if own > reachable:
            raise ValueError(f"player {p} has {own} leather patches but passed only {reachable} leather spaces")
    if pending and (ply < 1 or pos[top] <= pos[1 - top]):
        raise ValueError(
            f"a leather patch pending for player {top} on space {pos[top]}: it must have just passed the "
            f"patch ahead of the other token (space {pos[1 - top]}), after at least one decision (ply {ply})"
        )
    bought = [[int(e[0]) for e in placements[p] if int(e[0]) >= 0] for p in (0, 1)]
    time = [sum(PATCHES[x].time for x in bought[p]) for p in (0, 1)]
    cost = [sum(PATCHES[x].cost for x in bought[p]) for p in (0, 1)]
    low_ply = sum(len(b) for b in bought) + sum(leathers)
    for p in (0, 1):
        if pos[p] < rules.FINAL_SPACE and pos[p] < time[p]:
            raise ValueError(f"player {p} bought patches of time {time[p]} in all but is only on space {pos[p]}")
        low_ply += int(time[p] < pos[p])
        if pos[p] < rules.FINAL_SPACE:
            advanced_lo = advanced_hi = pos[p] - time[p]
        else:
            advanced_lo, advanced_hi = max(0, pos[p] - time[p]), pos[p] - len(bought[p])
        marks = int((pos[p] >= rules.INCOME_MARKS).sum())
        lo = rules.STARTING_BUTTONS + advanced_lo - cost[p]
        hi = rules.STARTING_BUTTONS + advanced_hi + marks * int(s[rules.INCOME + p]) - cost[p]
        if not lo <= int(s[rules.BUTTONS + p]) <= hi:
            raise ValueError(
                f"player {p} has {int(s[rules.BUTTONS + p])} buttons, but on space {pos[p]} with these patches "
                f"(cost {cost[p]}, time {time[p]}, income {int(s[rules.INCOME + p])}) it has {lo}..{hi}"
            )
    high_ply = pos[0] + pos[1] + sum(leathers)
    if not low_ply <= ply <= high_ply:
        raise ValueError(f"ply is {ply}, but the placements and positions need {low_ply}..{high_ply} decisions")
    if ply > 0 and pos[top] == 0:
        raise ValueError(f"top is player {top}, who moved last, but that token is still on space 0 (ply {ply})")
    if len(circle) == NUM_PATCHES and circle[-1] != STARTING_PATCH:
        raise ValueError(f"no patch was bought, so the circle still ends with the 1x2 patch {STARTING_PATCH}")


def _has_square(lo: int, hi: int) -> bool:
    return any((lo & int(a)) == int(a) and (hi & int(b)) == int(b) for a, b in zip(BONUS_LO, BONUS_HI, strict=False))


# --- notation ------------------------------------------------------------------------------------
def _player_or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def _ints(values: list[int] | tuple[int, ...], sep: str) -> str:
    return sep.join(str(v) for v in values) if values else "-"


def to_notation(state: Position) -> str:
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


def array_from_notation(text: str) -> IntArray:
    """Rebuild a state array from its notation (for ``GameState.from_notation``), checked as
    ``array_from_dict`` checks a dict."""
    if not isinstance(text, str):
        raise TypeError(f"from_notation takes the notation string, got {type(text).__name__}")
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
    return array_from_dict(data)
