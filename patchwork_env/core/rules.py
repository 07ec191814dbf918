"""The rules of Patchwork, compiled with numba: the one implementation every layer calls.

A game state is a flat int64 array of ``STATE_LEN`` entries (layout below). ``GameState`` wraps
one such array immutably; the vector engine steps a ``(N, STATE_LEN)`` block with the same
functions. Every function here is pure apart from writing into the arrays it is given, draws no
random numbers, prints nothing. ``step_into`` validates the action and returns an error code
instead of raising (numba has no rich exceptions); ``GameState.step`` turns the code into an
``IllegalActionError``.

State layout (index: meaning)::

    0, 1    quilt of player 0 (bitboard words 0 and 1, see ``bitboard``)
    2, 3    quilt of player 1
    4, 5    time-track positions (0..53)
    6, 7    buttons
    8, 9    income (button icons on each quilt)
    10      TOP: the player who moved last (on top when both tokens share a space)
    11      BONUS: owner of the 7x7 bonus tile, -1 if unclaimed
    12      PENDING: 1 when the player on TOP must place a leather patch now
    13      LEATHER: bitmask over track spaces still holding a leather patch
    14      FIRST53: the player who reached space 53 first, -1 before that
    15      LAYOUT: 0 revised, 1 original (leather positions)
    16      NCIRCLE: patches left in the circle
    17      PLY: decisions taken so far (leather placements included)
    18..50  CIRCLE: patch ids clockwise from the neutral token (slot 0 first), -1 padded
    51, 52  NPLACED: placements logged per player
    53..90  LOG of player 0: placement rows (``bitboard.PL_*``), or 7349 + cell for leather
    91..128 LOG of player 1
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from patchwork_env.core.bitboard import (
    BONUS_HI,
    BONUS_LO,
    CELLS,
    NUM_PLACEMENTS,
    ORIENT_CANON,
    PL_HI,
    PL_LO,
    PL_OFFSET,
    PL_START,
    PLACEMENT_ROW,
    WORD0_CELLS,
)
from patchwork_env.core.bitboard import bit_count as popcount
from patchwork_env.core.jit import jit
from patchwork_env.core.patches import NUM_PATCHES, PATCHES

# --- game constants -------------------------------------------------------------------------
FINAL_SPACE = 53
INCOME_MARKS = np.array([5, 11, 17, 23, 29, 35, 41, 47, 53], dtype=np.int64)
LEATHER_LAYOUTS = {"revised": (26, 32, 38, 44, 50), "original": (20, 26, 32, 44, 50)}
LAYOUT_NAMES = ("revised", "original")
STARTING_BUTTONS = 5
BONUS_POINTS = 7
MARKET_SIZE = 3
MAX_PLACED = NUM_PATCHES + 5

PATCH_COST = np.array([p.cost for p in PATCHES], dtype=np.int64)
PATCH_TIME = np.array([p.time for p in PATCHES], dtype=np.int64)
PATCH_BUTTONS = np.array([p.buttons for p in PATCHES], dtype=np.int64)
PATCH_AREA = np.array([p.area for p in PATCHES], dtype=np.int64)

# --- limits the rules imply (not observed): the range checks of raw states and serialized ones
MAX_INCOME = int(PATCH_BUTTONS.sum())  # 38: every button icon on one quilt
MAX_BUTTONS = STARTING_BUTTONS + FINAL_SPACE + len(INCOME_MARKS) * MAX_INCOME  # 400


def check_leather_layout(layout: object) -> str:
    """``layout`` if it names a leather layout (``LAYOUT_NAMES``), else a ``ValueError``."""
    if not isinstance(layout, str) or layout not in LEATHER_LAYOUTS:
        raise ValueError(f"leather_layout must be one of {LAYOUT_NAMES}, got {layout!r}")
    return layout


# --- action encoding -------------------------------------------------------------------------
SLOT_ACTIONS = 8 * CELLS  # 648 buy actions per market slot
LEATHER_BASE = MARKET_SIZE * SLOT_ACTIONS  # 1944
ADVANCE = LEATHER_BASE + CELLS  # 2025
NUM_ACTIONS = ADVANCE + 1  # 2026

# --- state layout ----------------------------------------------------------------------------
QUILT = 0
POS = 4
BUTTONS = 6
INCOME = 8
TOP = 10
BONUS = 11
PENDING = 12
LEATHER = 13
FIRST53 = 14
LAYOUT = 15
NCIRCLE = 16
PLY = 17
CIRCLE = 18
NPLACED = CIRCLE + NUM_PATCHES  # 51
LOG = NPLACED + 2  # 53
STATE_LEN = LOG + 2 * MAX_PLACED  # 129
LEATHER_PLACEMENT = NUM_PLACEMENTS  # log entry = LEATHER_PLACEMENT + cell
_FIELD_STARTS = (("QUILT", QUILT), ("POS", POS), ("BUTTONS", BUTTONS), ("INCOME", INCOME), ("TOP", TOP),
                 ("BONUS", BONUS), ("PENDING", PENDING), ("LEATHER", LEATHER), ("FIRST53", FIRST53),
                 ("LAYOUT", LAYOUT), ("NCIRCLE", NCIRCLE), ("PLY", PLY), ("CIRCLE", CIRCLE), ("NPLACED", NPLACED),
                 ("LOG", LOG))  # fmt: skip


def field_name(index: int) -> str:
    """The layout field that index ``index`` of a state array belongs to (``CIRCLE`` for 18..50)."""
    return next(name for name, start in reversed(_FIELD_STARTS) if index >= start)


# --- error codes of step_into ----------------------------------------------------------------
OK = 0
E_GAME_OVER = 1
E_LEATHER_PENDING = 2
E_NO_LEATHER = 3
E_CELL_TAKEN = 4
E_NO_SLOT = 5
E_CANNOT_AFFORD = 6
E_DUPLICATE = 7
E_OFF_BOARD = 8
E_OVERLAP = 9
E_OUT_OF_RANGE = 10


# --- small helpers -----------------------------------------------------------------------------
@jit
def current_player(s: npt.NDArray[np.int64]) -> int:
    """Who decides now: the leather placer, else the player behind, else the one on top."""
    if s[PENDING]:
        return int(s[TOP])
    if s[POS] < s[POS + 1]:
        return 0
    if s[POS + 1] < s[POS]:
        return 1
    return int(s[TOP])


@jit
def is_terminal(s: npt.NDArray[np.int64]) -> bool:
    return bool(s[POS] == FINAL_SPACE and s[POS + 1] == FINAL_SPACE and s[PENDING] == 0)


@jit
def empty_cells(s: npt.NDArray[np.int64], player: int) -> int:
    return CELLS - popcount(s[QUILT + 2 * player]) - popcount(s[QUILT + 2 * player + 1])


@jit
def score(s: npt.NDArray[np.int64], player: int) -> int:
    bonus = BONUS_POINTS if s[BONUS] == player else 0
    return int(s[BUTTONS + player] + bonus - 2 * empty_cells(s, player))


@jit
def winner(s: npt.NDArray[np.int64]) -> int:
    """0 or 1 once the game is over (ties go to who reached 53 first), -1 before."""
    if not is_terminal(s):
        return -1
    a = score(s, 0)
    b = score(s, 1)
    if a != b:
        return 0 if a > b else 1
    return int(s[FIRST53])


# --- events ----------------------------------------------------------------------------------
@jit
def _log(s: npt.NDArray[np.int64], player: int, entry: int) -> None:
    n = s[NPLACED + player]
    s[LOG + player * MAX_PLACED + n] = entry
    s[NPLACED + player] = n + 1


@jit
def _claim_bonus(s: npt.NDArray[np.int64], player: int) -> None:
    """After a placement: the first quilt with a fully covered 7x7 square takes the tile."""
    if s[BONUS] >= 0:
        return
    lo = s[QUILT + 2 * player]
    hi = s[QUILT + 2 * player + 1]
    for i in range(9):
        if (lo & BONUS_LO[i]) == BONUS_LO[i] and (hi & BONUS_HI[i]) == BONUS_HI[i]:
            s[BONUS] = player
            return


@jit
def _move(s: npt.NDArray[np.int64], player: int, new: int) -> None:
    """Move a time token forward and resolve what it passes: income marks, a leather patch."""
    old = s[POS + player]
    s[POS + player] = new
    for m in INCOME_MARKS:
        if old < m <= new:
            s[BUTTONS + player] += s[INCOME + player]
    for space in range(old + 1, new + 1):
        if (s[LEATHER] >> space) & 1:
            s[LEATHER] &= ~(np.int64(1) << space)
            if empty_cells(s, player) > 0:
                s[PENDING] = 1
            break  # at most one leather patch per move
    if new == FINAL_SPACE and s[FIRST53] < 0:
        s[FIRST53] = player
    s[TOP] = player


@jit
def lay_leather(s: npt.NDArray[np.int64], player: int, cell: int) -> int:
    """Sew a leather patch onto ``cell`` of ``player``'s quilt and log it; E_CELL_TAKEN (and ``s``
    untouched) if the cell is covered. The one writer of leather placements."""
    w = QUILT + 2 * player
    if cell < WORD0_CELLS:
        bit = np.int64(1) << cell
        if s[w] & bit:
            return E_CELL_TAKEN
        s[w] |= bit
    else:
        bit = np.int64(1) << (cell - WORD0_CELLS)
        if s[w + 1] & bit:
            return E_CELL_TAKEN
        s[w + 1] |= bit
    _log(s, player, LEATHER_PLACEMENT + cell)
    return OK


@jit
def lay_patch(s: npt.NDArray[np.int64], player: int, patch: int, row: int) -> int:
    """Sew ``patch`` in placement ``row`` (``bitboard.PL_*``) onto ``player``'s quilt: its cells,
    its button icons (income) and the log; E_OVERLAP (and ``s`` untouched) if it overlaps. The one
    writer of bought patches on a quilt."""
    w = QUILT + 2 * player
    if (s[w] & PL_LO[row]) != 0 or (s[w + 1] & PL_HI[row]) != 0:
        return E_OVERLAP
    s[w] |= PL_LO[row]
    s[w + 1] |= PL_HI[row]
    s[INCOME + player] += PATCH_BUTTONS[patch]
    _log(s, player, row)
    return OK


@jit
def _place_leather(s: npt.NDArray[np.int64], player: int, cell: int) -> int:
    err = lay_leather(s, player, cell)
    if err != OK:
        return err
    s[PENDING] = 0
    _claim_bonus(s, player)
    return OK


@jit
def _buy(s: npt.NDArray[np.int64], player: int, action: int) -> int:
    slot = action // SLOT_ACTIONS
    offset = action % SLOT_ACTIONS
    o = offset // CELLS
    n = s[NCIRCLE]
    if slot >= min(n, MARKET_SIZE):
        return E_NO_SLOT
    patch = s[CIRCLE + slot]
    if PATCH_COST[patch] > s[BUTTONS + player]:
        return E_CANNOT_AFFORD
    if ORIENT_CANON[patch, o] != o:
        return E_DUPLICATE
    row = PLACEMENT_ROW[patch, offset]
    if row < 0:
        return E_OFF_BOARD
    err = lay_patch(s, player, patch, row)
    if err != OK:
        return err
    # the neutral token moves to the bought patch: the skipped patches go behind it
    skipped = s[CIRCLE : CIRCLE + slot].copy()
    for k in range(slot + 1, n):
        s[CIRCLE + k - slot - 1] = s[CIRCLE + k]
    for k in range(slot):
        s[CIRCLE + n - slot - 1 + k] = skipped[k]
    s[CIRCLE + n - 1] = -1
    s[NCIRCLE] = n - 1
    s[BUTTONS + player] -= PATCH_COST[patch]
    _claim_bonus(s, player)
    _move(s, player, min(s[POS + player] + PATCH_TIME[patch], FINAL_SPACE))
    return OK


@jit
def replace_purchase(after: npt.NDArray[np.int64], before: npt.NDArray[np.int64], player: int, action: int) -> None:
    """``after`` is ``before`` after a legal purchase from ``action``'s market slot (``step_into``);
    give it the quilt and bonus tile of ``before`` after the legal ``action`` instead. The same patch
    in another placement changes nothing else but the log (buttons, income, time and leather are
    the patch's): scoring every placement of a patch then costs one ``step_into`` per patch, not
    per placement (``heuristic.score_actions``)."""
    w = QUILT + 2 * player
    row = PLACEMENT_ROW[before[CIRCLE + action // SLOT_ACTIONS], action % SLOT_ACTIONS]
    after[w] = before[w] | PL_LO[row]
    after[w + 1] = before[w + 1] | PL_HI[row]
    after[BONUS] = before[BONUS]
    _claim_bonus(after, player)


@jit
def step_into(s: npt.NDArray[np.int64], action: int) -> int:
    """Apply ``action`` to ``s`` in place; return OK, or an error code leaving ``s`` untouched."""
    if action < 0 or action >= NUM_ACTIONS:
        return E_OUT_OF_RANGE
    if is_terminal(s):
        return E_GAME_OVER
    player = current_player(s)
    if s[PENDING]:
        if action < LEATHER_BASE or action >= ADVANCE:
            return E_LEATHER_PENDING
        err = _place_leather(s, player, action - LEATHER_BASE)
    elif action == ADVANCE:
        opponent = s[POS + 1 - player]
        new = min(opponent + 1, FINAL_SPACE)
        s[BUTTONS + player] += new - s[POS + player]
        _move(s, player, new)
        err = OK
    elif action >= LEATHER_BASE:
        return E_NO_LEATHER
    else:
        err = _buy(s, player, action)
    if err == OK:
        s[PLY] += 1
    return err


# --- legal actions ---------------------------------------------------------------------------
@jit
def leather_placements(s: npt.NDArray[np.int64], player: int, out: npt.NDArray[Any]) -> int:
    """Mark every empty cell of ``player``'s quilt as a leather placement; return the count."""
    lo = s[QUILT + 2 * player]
    hi = s[QUILT + 2 * player + 1]
    count = 0
    for cell in range(CELLS):
        if cell < WORD0_CELLS:
            free = ((lo >> cell) & 1) == 0
        else:
            free = ((hi >> (cell - WORD0_CELLS)) & 1) == 0
        if free:
            out[LEATHER_BASE + cell] = 1
            count += 1
    return count


@jit
def market_pass(
    s: npt.NDArray[np.int64],
    player: int,
    mask: npt.NDArray[Any],
    set_mask: bool,
    cover: npt.NDArray[np.float32],
    set_cover: bool,
) -> int:
    """One pass over the placements of each market patch on ``player``'s quilt: mark the buys
    ``player`` can afford in ``mask`` (if ``set_mask``) and write the cells each patch could cover
    into ``cover`` (one 81-cell plane per slot; the observation's cover planes) if ``set_cover``.
    Returns the number of buys marked."""
    lo = s[QUILT + 2 * player]
    hi = s[QUILT + 2 * player + 1]
    buttons = s[BUTTONS + player]
    count = 0
    for slot in range(min(s[NCIRCLE], MARKET_SIZE)):
        patch = s[CIRCLE + slot]
        affordable = set_mask and PATCH_COST[patch] <= buttons
        if not affordable and not set_cover:
            continue
        base = slot * SLOT_ACTIONS
        cover_lo = 0
        cover_hi = 0
        for i in range(PL_START[patch], PL_START[patch + 1]):
            if (PL_LO[i] & lo) == 0 and (PL_HI[i] & hi) == 0:
                if affordable:
                    mask[base + PL_OFFSET[i]] = 1
                    count += 1
                cover_lo |= PL_LO[i]
                cover_hi |= PL_HI[i]
        if set_cover:
            write_cells(cover_lo, cover_hi, cover, slot * CELLS)
    return count


@jit
def legal_mask_into(s: npt.NDArray[np.int64], out: npt.NDArray[Any]) -> int:
    """Write the legal-action mask of ``s`` into ``out`` (length 2026); return the count."""
    out[:] = 0
    if is_terminal(s):
        return 0
    player = current_player(s)
    if s[PENDING]:
        return leather_placements(s, player, out)
    out[ADVANCE] = 1
    return 1 + market_pass(s, player, out, True, np.empty(0, dtype=np.float32), False)


# --- what the observation reads --------------------------------------------------------------
@jit
def write_cells(lo: int, hi: int, out: npt.NDArray[np.float32], base: int) -> None:
    """``out[base + cell] = 1.0`` for the cells set in the bitboard words (lo, hi), 0.0 elsewhere."""
    for cell in range(WORD0_CELLS):
        out[base + cell] = (lo >> cell) & 1
    for cell in range(WORD0_CELLS, CELLS):
        out[base + cell] = (hi >> (cell - WORD0_CELLS)) & 1


@jit
def spaces_to_next_leather(s: npt.NDArray[np.int64], position: int) -> int:
    """Distance from ``position`` to the next leather patch ahead, ``FINAL_SPACE + 1`` if none is left."""
    for space in range(position + 1, FINAL_SPACE + 1):
        if (s[LEATHER] >> space) & 1:
            return space - position
    return FINAL_SPACE + 1


@jit
def income_marks_ahead(position: int) -> int:
    """Income marks still ahead of a token on ``position``."""
    count = 0
    for m in INCOME_MARKS:
        if m > position:
            count += 1
    return count


@jit
def spaces_to_next_income(position: int) -> int:
    """Distance to the next income mark ahead (``FINAL_SPACE + 1 - position`` if none is left)."""
    for m in INCOME_MARKS:
        if m > position:
            return int(m - position)
    return FINAL_SPACE + 1 - position


# --- batched entry points (the vector engine) ----------------------------------------------
@jit
def legal_mask_batch(states: npt.NDArray[np.int64], out: npt.NDArray[Any], counts: npt.NDArray[np.int64]) -> None:
    for i in range(states.shape[0]):
        counts[i] = legal_mask_into(states[i], out[i])


@jit
def current_player_batch(states: npt.NDArray[np.int64], out: npt.NDArray[np.int64]) -> None:
    for i in range(states.shape[0]):
        out[i] = current_player(states[i])


@jit
def new_state_into(
    s: npt.NDArray[np.int64], circle: npt.NDArray[np.int64], first_player: int, layout: int, leather: int
) -> None:
    """Set ``s`` to the start of a game (``circle`` clockwise from the token, 1x2 patch last)."""
    s[:] = 0
    s[POS] = 0
    s[POS + 1] = 0
    s[BUTTONS] = STARTING_BUTTONS
    s[BUTTONS + 1] = STARTING_BUTTONS
    s[TOP] = first_player
    s[BONUS] = -1
    s[LEATHER] = leather
    s[FIRST53] = -1
    s[LAYOUT] = layout
    s[NCIRCLE] = circle.shape[0]
    for k in range(NUM_PATCHES):
        s[CIRCLE + k] = circle[k] if k < circle.shape[0] else -1
    for k in range(2 * MAX_PLACED):
        s[LOG + k] = -1


def set_position(
    s: npt.NDArray[np.int64],
    positions: tuple[int, int],
    buttons: tuple[int, int],
    pending: bool,
    bonus_owner: int,
    first_to_finish: int,
    ply: int,
) -> None:
    """Set the fields of a position that neither the deal (``new_state_into``) nor the quilts
    (``lay_patch``, ``lay_leather``) determine: tokens, buttons, a pending leather patch, the bonus
    tile's owner (-1: none), the first to reach the last space (-1: none), decisions taken. For
    rebuilding a described position (``serialize``); play changes them through ``step_into``."""
    s[POS], s[POS + 1] = positions
    s[BUTTONS], s[BUTTONS + 1] = buttons
    s[PENDING] = int(pending)
    s[BONUS] = bonus_owner
    s[FIRST53] = first_to_finish
    s[PLY] = ply


def placed_count(s: npt.NDArray[np.int64], player: int) -> int:
    return int(s[NPLACED + player])


def leather_mask(layout: str) -> int:
    mask = 0
    for space in LEATHER_LAYOUTS[layout]:
        mask |= 1 << space
    return mask
