"""docs/rules.md (the rules users read) states the same constants the engine uses."""

from __future__ import annotations

import re
from pathlib import Path

from patchwork_env.core import rules
from patchwork_env.core.patches import PATCHES

DOC = (Path(__file__).resolve().parents[1] / "docs" / "rules.md").read_text(encoding="utf-8")


def _numbers(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]


def test_income_marks_and_final_space() -> None:
    line = re.search(r"Button-income marks: ([\d, ]+)\(", DOC)
    assert line is not None
    assert _numbers(line.group(1)) == list(rules.INCOME_MARKS)
    assert f"spaces 0..{rules.FINAL_SPACE}" in DOC


def test_leather_layouts() -> None:
    for name, spaces in rules.LEATHER_LAYOUTS.items():
        line = re.search(rf"`{name}`[^:]*: ([\d, ]+)", DOC)
        assert line is not None, name
        assert tuple(_numbers(line.group(1))) == spaces


def test_action_encoding_ranges() -> None:
    assert f"`NUM_ACTIONS = {rules.NUM_ACTIONS}`" in DOC
    assert f"`0 .. {rules.LEATHER_BASE - 1}`: buy" in DOC
    assert f"`{rules.LEATHER_BASE} .. {rules.ADVANCE - 1}`: place the pending leather" in DOC
    assert f"`{rules.ADVANCE}`: advance" in DOC


def test_bonus_and_patch_totals() -> None:
    assert f"bonus tile, worth {rules.BONUS_POINTS} points" in DOC
    totals = (
        len(PATCHES),
        sum(p.area for p in PATCHES),
        sum(p.cost for p in PATCHES),
        sum(p.time for p in PATCHES),
        sum(p.buttons for p in PATCHES),
    )
    line = re.search(r"(\d+) patches; (\d+) cells, cost (\d+), time (\d+), buttons (\d+) in total", DOC)
    assert line is not None
    assert tuple(int(g) for g in line.groups()) == totals
