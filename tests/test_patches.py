"""The patch data and the import-time tables: totals, shapes, orientations, placements, encoding."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from patchwork_env import ADVANCE, NUM_ACTIONS, decode_action, encode_buy, encode_leather, parse_action
from patchwork_env.core.actions import action_to_str
from patchwork_env.core.bitboard import (
    NUM_DISTINCT_ORIENTATIONS,
    NUM_PLACEMENTS,
    ORIENT_CANON,
    PL_CELLS,
    PL_HI,
    PL_LO,
    PL_OFFSET,
    PL_START,
    PLACEMENT_ROW,
    cells_to_words,
    orient,
)
from patchwork_env.core.patches import PATCHES, _is_connected

REFERENCE = json.loads((Path(__file__).parents[1] / "patchwork_env" / "data" / "patches.json").read_text())


def test_totals_match_the_rules() -> None:
    assert len(PATCHES) == 33
    assert sum(p.area for p in PATCHES) == 166
    assert sum(p.cost for p in PATCHES) == 133
    assert sum(p.time for p in PATCHES) == 107
    assert sum(p.buttons for p in PATCHES) == 38
    assert [p.id for p in PATCHES if p.area == 2] == [0]
    assert all(_is_connected(p.cells) for p in PATCHES)


def test_connectivity_check_rejects_a_split_shape() -> None:
    assert not _is_connected(((0, 0), (0, 2)))
    assert _is_connected(((0, 0), (0, 1), (1, 1)))


def test_orientations_and_placements_per_patch_match_reference() -> None:
    assert NUM_DISTINCT_ORIENTATIONS == 144
    assert NUM_PLACEMENTS == 7349
    for ref in REFERENCE["patches"]:
        pid = ref["id"]
        distinct = int((ORIENT_CANON[pid] == np.arange(8)).sum())
        assert distinct == ref["orientations"], pid
        assert PL_START[pid + 1] - PL_START[pid] == ref["placements_on_empty_board"], pid


def test_orientation_convention_mirror_then_rotate_clockwise() -> None:
    # patch 1 is "XX / X.": one quarter turn clockwise gives "XX / .X"
    assert orient(PATCHES[1].cells, 1) == ((0, 0), (0, 1), (1, 1))
    # mirrored left-right: ".X"-style corner "XX / .X"
    assert orient(PATCHES[1].cells, 4) == ((0, 0), (0, 1), (1, 1))
    # patch 17 is the 1x5 line: a quarter turn makes it vertical
    assert orient(PATCHES[17].cells, 1) == tuple((r, 0) for r in range(5))
    # the 2x2 square has a single distinct orientation, the 1x2 has two
    assert list(ORIENT_CANON[9]) == [0] * 8
    assert list(ORIENT_CANON[0]) == [0, 1, 0, 1, 0, 1, 0, 1]


def test_placement_rows_agree_with_their_cells_and_offsets() -> None:
    for i in range(0, NUM_PLACEMENTS, 7):
        cells = [int(c) for c in PL_CELLS[i] if c >= 0]
        assert cells_to_words(cells) == (int(PL_LO[i]), int(PL_HI[i]))
        patch = int(np.searchsorted(PL_START, i, side="right")) - 1
        assert PLACEMENT_ROW[patch, PL_OFFSET[i]] == i
        assert len(cells) == PATCHES[patch].area


def test_encoding_round_trips() -> None:
    assert NUM_ACTIONS == 2026 and ADVANCE == 2025
    assert encode_buy(1, 4, 5, 3) == (1 * 8 + 4) * 81 + 5 * 9 + 3
    assert encode_leather(0, 0) == 1944 and encode_leather(8, 8) == 2024
    for a in range(NUM_ACTIONS):
        d = decode_action(a)
        assert parse_action(str(d)) == a
        if d.kind == "buy":
            assert d.slot is not None and d.orientation is not None and d.row is not None and d.col is not None
            assert encode_buy(d.slot, d.orientation, d.row, d.col) == a
    assert action_to_str(encode_buy(1, 4, 5, 3)) == "buy s1 o4 r5c3"
    assert action_to_str(ADVANCE) == "advance"
    assert action_to_str(np.int32(1944)) == "leather r0c0"


@pytest.mark.parametrize("bad", [-1, 2026, 10**9])
def test_decode_rejects_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        decode_action(bad)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: encode_buy(3, 0, 0, 0), "slot must be an integer in 0..2"),
        (lambda: encode_buy(0, 8, 0, 0), "orientation must be an integer in 0..7"),
        (lambda: encode_leather(9, 0), "row must be an integer in 0..8"),
        (lambda: parse_action("buy s1"), "cannot read action"),
        (lambda: decode_action("7"), "out of range: actions are integers"),  # type: ignore[arg-type]
    ],
)
def test_encoding_errors_are_specific(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]
