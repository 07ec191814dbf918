"""The 33 regular patches of Patchwork, loaded from ``data/patches.json`` and validated at import.

Ids follow ``patches.json``: id 0 is the 1x2 starting patch, ids 1..32 are sorted by
(cells, cost, time, buttons). The shape as listed is orientation 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

NUM_PATCHES = 33
STARTING_PATCH = 0


@dataclass(frozen=True)
class Patch:
    """One regular patch: price in buttons, time cost in spaces, button icons and shape."""

    id: int
    cost: int
    time: int
    buttons: int
    shape: tuple[str, ...]

    @property
    def cells(self) -> tuple[tuple[int, int], ...]:
        """Covered (row, col) cells of orientation 0."""
        return tuple((r, c) for r, line in enumerate(self.shape) for c, ch in enumerate(line) if ch == "X")

    @property
    def area(self) -> int:
        return len(self.cells)


def _is_connected(cells: tuple[tuple[int, int], ...]) -> bool:
    todo = [cells[0]]
    seen = {cells[0]}
    cellset = set(cells)
    while todo:
        r, c = todo.pop()
        for nb in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if nb in cellset and nb not in seen:
                seen.add(nb)
                todo.append(nb)
    return len(seen) == len(cells)


def _load() -> tuple[tuple[Patch, ...], dict[str, object]]:
    raw = json.loads(resources.files("patchwork_env").joinpath("data/patches.json").read_text())
    patches = tuple(
        Patch(int(p["id"]), int(p["cost"]), int(p["time"]), int(p["buttons"]), tuple(p["shape"]))
        for p in raw["patches"]
    )
    return patches, raw


def _validate(patches: tuple[Patch, ...]) -> None:
    problems = []
    if len(patches) != NUM_PATCHES:
        problems.append(f"expected {NUM_PATCHES} patches, found {len(patches)}")
    if [p.id for p in patches] != list(range(len(patches))):
        problems.append("patch ids must be 0..32 in order")
    totals = {
        "cells": sum(p.area for p in patches),
        "cost": sum(p.cost for p in patches),
        "time": sum(p.time for p in patches),
        "buttons": sum(p.buttons for p in patches),
    }
    expected = {"cells": 166, "cost": 133, "time": 107, "buttons": 38}
    for key, want in expected.items():
        if totals[key] != want:
            problems.append(f"total {key} is {totals[key]}, expected {want}")
    for p in patches:
        if not p.cells or not _is_connected(p.cells):
            problems.append(f"patch {p.id} is not 4-connected")
        if max(len(p.shape), max(len(line) for line in p.shape)) > 5:
            problems.append(f"patch {p.id} is larger than 5x5")
    two_cell = [p.id for p in patches if p.area == 2]
    if two_cell != [STARTING_PATCH]:
        problems.append(f"expected exactly one 2-cell patch (id 0), found {two_cell}")
    if problems:
        raise ValueError("invalid patch data: " + "; ".join(problems))


PATCHES, _RAW = _load()
_validate(PATCHES)
