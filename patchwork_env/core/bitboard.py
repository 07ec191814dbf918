"""All bit-level representation of quilts and patches, and the lookup tables built at import.

A quilt is 81 cells, ``cell = row * 9 + col``, stored as two int64 words so that every bit
operation stays inside signed 64-bit integers (numba and numpy agree on them)::

    word 0: cells  0..62  (rows 0-6), bit  = cell
    word 1: cells 63..80  (rows 7-8), bit  = cell - 63

       col 0 1 2 3 4 5 6 7 8
    row 0    0 1 2 3 4 5 6 7 8     word 0
    row 1    9 ...         17      word 0
    ...
    row 6   54 ...         62      word 0
    row 7   63 ...         71      word 1 (bits 0..8)
    row 8   72 ...         80      word 1 (bits 9..17)

Orientation ``o = 4 * mirror + k``: the listed shape is mirrored left-right when ``mirror == 1``,
then turned ``k`` quarter turns clockwise; (row, col) of a placement is the top-left cell of the
oriented shape's bounding box. Symmetric patches repeat cell sets: only the lowest such ``o`` is
distinct (``ORIENT_CANON[p, o] == o``).

Placement tables (one row per placement on an empty board, grouped by patch, ordered by
orientation, row, col)::

    PL_START[p] .. PL_START[p + 1]   rows of patch p      (PL_START[33] == 7349)
    PL_LO, PL_HI                     the placement's bits (words 0 and 1)
    PL_OFFSET                        o * 81 + row * 9 + col (position inside a market slot's
                                     648 actions)
    PL_CELLS                         covered cells, padded with -1 (8 columns: the largest
                                     patch has 8 cells)
    PLACEMENT_ROW[p, o * 81 + row * 9 + col]
                                     the placement's row in these tables, or -1 (off the board
                                     or not distinct)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from patchwork_env.core.jit import jit
from patchwork_env.core.patches import NUM_PATCHES, PATCHES

BOARD = 9
CELLS = BOARD * BOARD
WORD0_CELLS = 63
NUM_ORIENTATIONS = 8
MAX_CELLS = 8
SHAPE_BOX = 5
BONUS_SIDE = 7  # the bonus tile's square: 7x7 cells, all covered
BONUS_SQUARES = (BOARD - BONUS_SIDE + 1) ** 2  # 9 positions of that square on the board

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Cells = tuple[tuple[int, int], ...]


def cell_bit(cell: int) -> tuple[int, int]:
    """The (word 0, word 1) bits of one cell."""
    if cell < WORD0_CELLS:
        return 1 << cell, 0
    return 0, 1 << (cell - WORD0_CELLS)


def cells_to_words(cells: list[int] | tuple[int, ...]) -> tuple[int, int]:
    lo = hi = 0
    for cell in cells:
        a, b = cell_bit(cell)
        lo |= a
        hi |= b
    return lo, hi


def words_to_cells(lo: int, hi: int) -> list[int]:
    """The covered cells of a quilt given as its two words, ascending."""
    return [c for c in range(WORD0_CELLS) if (lo >> c) & 1] + [
        c for c in range(WORD0_CELLS, CELLS) if (hi >> (c - WORD0_CELLS)) & 1
    ]


def words_to_board(lo: int, hi: int) -> BoolArray:
    """An (9, 9) bool array of covered cells."""
    bits = np.zeros(CELLS, dtype=np.bool_)
    for cell in words_to_cells(lo, hi):
        bits[cell] = True
    return bits.reshape(BOARD, BOARD)


def popcount(lo: int, hi: int) -> int:
    return int(lo).bit_count() + int(hi).bit_count()


# --- compiled bit helpers (the rules, the state check and the heuristic use these) -------------
ROW_BITS = (1 << BOARD) - 1  # 0x1FF: one row of nine cells as a 9-bit mask (bit c = column c)


@jit
def bit_count(x: int) -> int:
    """Set bits of one non-negative word."""
    n = 0
    while x:
        x &= x - 1
        n += 1
    return n


@jit
def row_masks(lo: int, hi: int, out: IntArray) -> None:
    """``out[r]`` = the covered cells of row ``r`` (0..8) as a 9-bit mask, from the two words."""
    rows_in_word0 = WORD0_CELLS // BOARD  # 7
    for r in range(rows_in_word0):
        out[r] = (lo >> (BOARD * r)) & ROW_BITS
    for r in range(rows_in_word0, BOARD):
        out[r] = (hi >> (BOARD * (r - rows_in_word0))) & ROW_BITS


@jit
def with_left_neighbour(row: int) -> int:
    """Cells of a 9-bit row mask whose left neighbour (column c - 1) is in ``row``."""
    return (row << 1) & ROW_BITS


@jit
def with_right_neighbour(row: int) -> int:
    """Cells of a 9-bit row mask whose right neighbour (column c + 1) is in ``row``."""
    return row >> 1


@jit
def row_boundaries(row: int) -> int:
    """Boundaries along a row between a cell in ``row`` and one outside it or the border (0..10)."""
    return bit_count((row ^ (row << 1)) & ((1 << (BOARD + 1)) - 1))


@jit
def count_in_columns(row: int, first: int, width: int) -> int:
    """Cells of ``row`` in columns ``first .. first + width - 1``."""
    return bit_count((row >> first) & ((1 << width) - 1))


def orient(cells: Cells, o: int) -> Cells:
    """Cells of orientation ``o`` (mirror left-right, then ``k`` clockwise quarter turns)."""
    mirror, k = divmod(o, 4)
    pts = list(cells)
    if mirror:
        width = max(c for _, c in pts) + 1
        pts = [(r, width - 1 - c) for r, c in pts]
    for _ in range(k):
        height = max(r for r, _ in pts) + 1
        pts = [(c, height - 1 - r) for r, c in pts]
    r0 = min(r for r, _ in pts)
    c0 = min(c for _, c in pts)
    return tuple(sorted((r - r0, c - c0) for r, c in pts))


def _build_tables() -> dict[str, IntArray]:
    canon = np.zeros((NUM_PATCHES, NUM_ORIENTATIONS), dtype=np.int64)
    start = np.zeros(NUM_PATCHES + 1, dtype=np.int64)
    lo_list: list[int] = []
    hi_list: list[int] = []
    off_list: list[int] = []
    cell_rows: list[list[int]] = []
    dense = np.full((NUM_PATCHES, NUM_ORIENTATIONS * CELLS), -1, dtype=np.int64)
    shape5 = np.zeros((NUM_PATCHES, SHAPE_BOX * SHAPE_BOX), dtype=np.int64)
    for p in PATCHES:
        for r, c in p.cells:
            shape5[p.id, r * SHAPE_BOX + c] = 1
        seen: dict[Cells, int] = {}
        for o in range(NUM_ORIENTATIONS):
            shape = orient(p.cells, o)
            canon[p.id, o] = seen.setdefault(shape, o)
        start[p.id] = len(lo_list)
        for o in range(NUM_ORIENTATIONS):
            if canon[p.id, o] != o:
                continue
            shape = orient(p.cells, o)
            height = max(r for r, _ in shape) + 1
            width = max(c for _, c in shape) + 1
            for row in range(BOARD - height + 1):
                for col in range(BOARD - width + 1):
                    cells = [(row + r) * BOARD + col + c for r, c in shape]
                    lo, hi = cells_to_words(cells)
                    offset = o * CELLS + row * BOARD + col
                    dense[p.id, offset] = len(lo_list)
                    lo_list.append(lo)
                    hi_list.append(hi)
                    off_list.append(offset)
                    cell_rows.append(cells + [-1] * (MAX_CELLS - len(cells)))
    start[NUM_PATCHES] = len(lo_list)
    bonus_lo = np.zeros(BONUS_SQUARES, dtype=np.int64)
    bonus_hi = np.zeros(BONUS_SQUARES, dtype=np.int64)
    for i in range(BONUS_SQUARES):
        r0, c0 = divmod(i, BOARD - BONUS_SIDE + 1)
        lo, hi = cells_to_words([(r0 + r) * BOARD + c0 + c for r in range(BONUS_SIDE) for c in range(BONUS_SIDE)])
        bonus_lo[i], bonus_hi[i] = lo, hi
    return {
        "canon": canon,
        "start": start,
        "lo": np.array(lo_list, dtype=np.int64),
        "hi": np.array(hi_list, dtype=np.int64),
        "offset": np.array(off_list, dtype=np.int64),
        "cells": np.array(cell_rows, dtype=np.int64),
        "dense": dense,
        "shape5": shape5,
        "bonus_lo": bonus_lo,
        "bonus_hi": bonus_hi,
    }


_T = _build_tables()
ORIENT_CANON: IntArray = _T["canon"]
PL_START: IntArray = _T["start"]
PL_LO: IntArray = _T["lo"]
PL_HI: IntArray = _T["hi"]
PL_OFFSET: IntArray = _T["offset"]
PL_CELLS: IntArray = _T["cells"]
PLACEMENT_ROW: IntArray = _T["dense"]
SHAPE5: IntArray = _T["shape5"]
BONUS_LO: IntArray = _T["bonus_lo"]
BONUS_HI: IntArray = _T["bonus_hi"]
NUM_PLACEMENTS = int(PL_START[-1])
NUM_DISTINCT_ORIENTATIONS = int(sum((ORIENT_CANON[p] == np.arange(8)).sum() for p in range(NUM_PATCHES)))
for _arr in (ORIENT_CANON, PL_START, PL_LO, PL_HI, PL_OFFSET, PL_CELLS, PLACEMENT_ROW, SHAPE5, BONUS_LO, BONUS_HI):
    _arr.setflags(write=False)

if NUM_DISTINCT_ORIENTATIONS != 144 or NUM_PLACEMENTS != 7349:
    raise ValueError(
        f"orientation tables are wrong: {NUM_DISTINCT_ORIENTATIONS} orientations (expected 144), "
        f"{NUM_PLACEMENTS} placements (expected 7349)"
    )
