"""Subtree reuse, shared by the tree searches (``mcts``, ``az_search``): find the node of the
position now to move among the descendants of the node kept from the last decision."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np

from patchwork_env.core import rules

NodeT = TypeVar("NodeT")


def find_below(
    kept: NodeT | None,
    target: np.ndarray[Any, np.dtype[np.int64]],
    state: Callable[[NodeT], np.ndarray[Any, np.dtype[np.int64]]],
    children: Callable[[NodeT], Iterable[NodeT | None]],
) -> NodeT | None:
    """The node below ``kept`` whose state equals ``target``, or None. Plies count every decision
    (a player's consecutive moves and leather placements too), so only the nodes exactly
    ``ply(target) - ply(kept)`` levels down can hold it; ``children`` may yield None (unbuilt)."""
    if kept is None:
        return None
    depth = int(target[rules.PLY]) - int(state(kept)[rules.PLY])
    if depth < 0:
        return None
    level = [kept]
    for _ in range(depth):
        level = [child for node in level for child in children(node) if child is not None]
    for node in level:
        if np.array_equal(state(node), target):
            return node
    return None
