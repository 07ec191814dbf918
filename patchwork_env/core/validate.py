"""One check of a raw state array before the compiled rules ever see it.

Every entry point that takes a state array from outside calls ``check_state_array``: a position
(``GameState(array)``, unpickling, ``VectorGames.set_state`` and ``VectorGames.set_states``, all
through ``state.reachable_array``), or ``check_state_rows`` for a block of rows that only a compiled
kernel reads (``observation.observe_movers``, ``players.inference.NetInference``, the az search).
The engine's own states (``GameState.step``, the vector kernels) are never re-checked: the rules
only produce valid states.

The check covers every field of the layout in ``rules`` and the relations the kernels rely on, so
that no compiled function can read or write out of bounds, and its bounds are closed under play:
every state the engine plays from an accepted state is accepted too, and no observation of any of
them leaves the observation space:

- quilt words hold only board cells (tests may cover cells without logging a placement);
- positions 0..53; buttons 0..5 + position + 38 per income mark passed (what the most a player
  can have gained by then: every advanced space and the largest income at each mark; at most
  ``MAX_BUTTONS``); income = the button icons of the logged patches;
- ``TOP``/``PENDING``/``LAYOUT`` 0..1, ``BONUS``/``FIRST53`` -1..1, ``FIRST53`` consistent with
  the positions, ``PENDING`` only while the quilt on ``TOP`` has an empty cell;
- the leather bitmask is a subset of the layout's spaces beyond the furthest token;
- the circle holds ``NCIRCLE`` distinct patch ids then -1, the log holds ``NPLACED`` valid entries
  then -1, no patch is in the circle or logged twice (test scenarios may leave patches out), and
  each player's log has room for every placement still possible;
- at most 5 leather patches placed, pending or left; ``PLY`` at least the number of placements and
  at most both positions plus the leather placements (every other decision moves its player).

A failure is a ``ValueError`` naming the field, its index in the array and what is allowed.
``serialize.array_from_dict`` (through ``state.reachable_array``) checks the stricter rules of
reachability on top of this.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.bitboard import CELLS, PL_START, WORD0_CELLS, bit_count
from patchwork_env.core.jit import jit
from patchwork_env.core.patches import NUM_PATCHES

IntArray = npt.NDArray[np.int64]

# the patch of every placement row (PL_START[p] <= row < PL_START[p + 1])
PLACEMENT_PATCH = np.repeat(np.arange(NUM_PATCHES, dtype=np.int64), np.diff(PL_START))
NUM_LEATHER = len(rules.LEATHER_LAYOUTS["revised"])
LAYOUT_MASKS = np.array([rules.leather_mask(name) for name in rules.LAYOUT_NAMES], dtype=np.int64)
# each decision moves its player at least one space (patch times >= 1, an advance passes the
# opponent), leather placements aside: 53 per player plus the leather patches
MAX_PLY = 2 * rules.FINAL_SPACE + NUM_LEATHER
HI_LIMIT = 1 << (CELLS - WORD0_CELLS)

# error codes of ``_state_error``: (field, what is allowed)
_FIELDS: tuple[tuple[str, str], ...] = (
    ("", ""),
    ("quilt word 0", f"a bitmask of cells 0..{WORD0_CELLS - 1}: 0 <= value < 2**{WORD0_CELLS}"),
    ("quilt word 1", f"a bitmask of cells {WORD0_CELLS}..{CELLS - 1}: 0 <= value < 2**{CELLS - WORD0_CELLS}"),
    ("position", f"in 0..{rules.FINAL_SPACE}"),
    ("buttons", f"in 0..{rules.STARTING_BUTTONS} + position + {rules.MAX_INCOME} per income mark passed"),
    ("income", f"in 0..{rules.MAX_INCOME} and the button icons of the logged patches"),
    ("TOP", "0 or 1"),
    ("BONUS", "-1 (unclaimed), 0 or 1"),
    ("PENDING", "0 or 1, and 1 only while the quilt of the player on TOP has an empty cell"),
    ("LEATHER", "a subset of the layout's leather spaces beyond the furthest token"),
    ("FIRST53", "-1 while nobody is on space 53, else a player on space 53"),
    ("LAYOUT", "0 (revised) or 1 (original)"),
    ("NCIRCLE", f"in 0..{NUM_PATCHES}"),
    ("PLY", f"in 0..{MAX_PLY}, at least the placements, at most both positions + the leather placements"),
    ("CIRCLE", f"NCIRCLE distinct patch ids 0..{NUM_PATCHES - 1}, then -1"),
    ("NPLACED", f"in 0..{rules.MAX_PLACED}"),
    ("LOG", f"NPLACED placement rows 0..{rules.LEATHER_PLACEMENT - 1} or leather entries "
            f"{rules.LEATHER_PLACEMENT}..{rules.LEATHER_PLACEMENT + CELLS - 1}, then -1"),
    ("LOG", "no patch twice in the circle or on a quilt, with room in the log for the patches and "
            "leather patches still to place"),
    ("LEATHER", f"at most {NUM_LEATHER} leather patches placed, pending or left"),
)  # fmt: skip
(_OK, _Q0, _Q1, _POS, _BUT, _INC, _TOP, _BON, _PEN, _LEA, _F53, _LAY, _NC, _PLY, _CIR, _NP, _LOG, _PAT,
 _NLE) = range(len(_FIELDS))  # fmt: skip


@jit
def _state_error(s: IntArray, placement_patch: IntArray, layout_masks: IntArray) -> tuple[int, int]:
    """(error code, index of the offending entry), or (0, -1) for a valid state."""
    for p in range(2):
        if s[rules.QUILT + 2 * p] < 0:  # bit 63 is the sign bit: not a cell
            return _Q0, rules.QUILT + 2 * p
        if not 0 <= s[rules.QUILT + 2 * p + 1] < HI_LIMIT:
            return _Q1, rules.QUILT + 2 * p + 1
        if not 0 <= s[rules.POS + p] <= rules.FINAL_SPACE:
            return _POS, rules.POS + p
        pos = s[rules.POS + p]
        passed = 0
        for m in rules.INCOME_MARKS:
            passed += m <= pos
        if not 0 <= s[rules.BUTTONS + p] <= rules.STARTING_BUTTONS + pos + passed * rules.MAX_INCOME:
            return _BUT, rules.BUTTONS + p
        if not 0 <= s[rules.INCOME + p] <= rules.MAX_INCOME:
            return _INC, rules.INCOME + p
    for i, lo, hi, code in ((rules.TOP, 0, 1, _TOP), (rules.BONUS, -1, 1, _BON),
                            (rules.PENDING, 0, 1, _PEN), (rules.FIRST53, -1, 1, _F53),
                            (rules.LAYOUT, 0, 1, _LAY), (rules.NCIRCLE, 0, NUM_PATCHES, _NC),
                            (rules.PLY, 0, MAX_PLY, _PLY), (rules.NPLACED, 0, rules.MAX_PLACED, _NP),
                            (rules.NPLACED + 1, 0, rules.MAX_PLACED, _NP)):  # fmt: skip
        if not lo <= s[i] <= hi:
            return code, i
    furthest = max(s[rules.POS], s[rules.POS + 1])
    beyond = ~((np.int64(2) << furthest) - 1)  # bits of the spaces after the furthest token
    if s[rules.LEATHER] & ~(layout_masks[s[rules.LAYOUT]] & beyond):
        return _LEA, rules.LEATHER
    # the circle: n distinct ids, then -1
    seen = np.zeros(NUM_PATCHES, dtype=np.bool_)
    n = s[rules.NCIRCLE]
    for k in range(NUM_PATCHES):
        c = s[rules.CIRCLE + k]
        if k < n:
            if not 0 <= c < NUM_PATCHES or seen[c]:
                return _CIR, rules.CIRCLE + k
            seen[c] = True
        elif c != -1:
            return _CIR, rules.CIRCLE + k
    # the logs: valid entries, then -1; every patch once in the circle or on a quilt
    leathers = 0
    for p in range(2):
        base = rules.LOG + p * rules.MAX_PLACED
        count = s[rules.NPLACED + p]
        income = 0
        for k in range(rules.MAX_PLACED):
            e = s[base + k]
            if k >= count:
                if e != -1:
                    return _LOG, base + k
            elif 0 <= e < rules.LEATHER_PLACEMENT:
                patch = placement_patch[e]
                if seen[patch]:
                    return _PAT, base + k
                seen[patch] = True
                income += rules.PATCH_BUTTONS[patch]
            elif rules.LEATHER_PLACEMENT <= e < rules.LEATHER_PLACEMENT + CELLS:
                leathers += 1
            else:
                return _LOG, base + k
        if income != s[rules.INCOME + p]:
            return _INC, rules.INCOME + p
    to_place = s[rules.NCIRCLE] + s[rules.PENDING] + bit_count(s[rules.LEATHER])
    for p in range(2):
        if s[rules.NPLACED + p] + to_place > rules.MAX_PLACED:
            return _PAT, rules.NPLACED + p
    if leathers + s[rules.PENDING] + bit_count(s[rules.LEATHER]) > NUM_LEATHER:
        return _NLE, rules.LEATHER
    if not s[rules.NPLACED] + s[rules.NPLACED + 1] <= s[rules.PLY] <= s[rules.POS] + s[rules.POS + 1] + leathers:
        return _PLY, rules.PLY
    if s[rules.PENDING]:
        top = s[rules.TOP]
        if bit_count(s[rules.QUILT + 2 * top]) + bit_count(s[rules.QUILT + 2 * top + 1]) == CELLS:
            return _PEN, rules.PENDING
    first = s[rules.FIRST53]
    if (first >= 0) != (furthest == rules.FINAL_SPACE) or (first >= 0 and s[rules.POS + first] != rules.FINAL_SPACE):
        return _F53, rules.FIRST53
    return _OK, -1


@jit
def _first_error(states: IntArray, placement_patch: IntArray, layout_masks: IntArray) -> tuple[int, int, int]:
    """(row, error code, index) of the first invalid row of ``states``, or (-1, 0, -1)."""
    for i in range(states.shape[0]):
        code, index = _state_error(states[i], placement_patch, layout_masks)
        if code:
            return i, code, index
    return -1, 0, -1


def _as_int64(array: Any, batch: bool, what: str) -> IntArray:
    arr = np.asarray(array)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{what} must hold integers (int64), got dtype {arr.dtype}")
    if arr.ndim != 1 + batch or arr.shape[-1] != rules.STATE_LEN:
        want = f"(N, {rules.STATE_LEN})" if batch else f"({rules.STATE_LEN},)"
        raise ValueError(f"{what} must have shape {want}, got {arr.shape}")
    if arr.dtype != np.int64:
        if arr.size and (int(arr.min()) < np.iinfo(np.int64).min or int(arr.max()) > np.iinfo(np.int64).max):
            raise ValueError(f"{what} holds values outside int64")
        arr = arr.astype(np.int64)
    return np.ascontiguousarray(arr)


def _message(code: int, index: int, values: IntArray, row: int | None = None) -> str:
    field, allowed = _FIELDS[code]
    where = f"row {row}: " if row is not None else ""
    return f"invalid state array: {where}{field} (entry {index}) must be {allowed}; got {int(values[index])}"


def check_state_array(array: Any) -> IntArray:
    """A fresh int64 copy of ``array`` (shape ``(STATE_LEN,)``) that the compiled rules can use
    safely, or a ValueError naming the first field out of range or inconsistent."""
    arr = np.array(_as_int64(array, False, "a state array"), dtype=np.int64, copy=True)
    code, index = _state_error(arr, PLACEMENT_PATCH, LAYOUT_MASKS)
    if code:
        raise ValueError(_message(code, index, arr))
    return arr


def check_state_rows(states: IntArray) -> None:
    """Raise a ValueError naming the first invalid row of ``states`` (N, STATE_LEN), if any."""
    arr = _as_int64(states, True, "states")
    row, code, index = _first_error(arr, PLACEMENT_PATCH, LAYOUT_MASKS)
    if row >= 0:
        raise ValueError(_message(code, index, arr[row], row))


def state_from_bytes(data: Any) -> IntArray:
    """The validated array of a pickled state's payload (exactly ``8 * STATE_LEN`` bytes)."""
    if not isinstance(data, bytes | bytearray | memoryview) or len(data) != 8 * rules.STATE_LEN:
        size = len(data) if isinstance(data, bytes | bytearray | memoryview) else type(data).__name__
        raise ValueError(f"a pickled state holds {8 * rules.STATE_LEN} bytes (int64 x {rules.STATE_LEN}), got {size}")
    return check_state_array(np.frombuffer(data, dtype=np.int64))
