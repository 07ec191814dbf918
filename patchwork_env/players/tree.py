"""What the tree searches (``mcts``, ``batched_search``) share: subtree reuse (find the node of the
position now to move among the descendants of the node kept from the last decision), and the
positions a search warms its kernels on before its first timed move."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np

from patchwork_env.core import rules
from patchwork_env.core.state import GameState, new_game

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


def warm_positions() -> list[GameState]:
    """Positions for a search to run a few simulations from, once, when it is built, as its moves
    run (from ``GameState.array()``, read-only: numba compiles kernels for read-only arrays apart):
    the first position of a game, and three and one decisions before its end (so that the
    simulations also reach finished games). Every kernel a move calls is then compiled (or
    loaded from the disk cache) before any move is timed: a fresh install's first move would
    otherwise spend seconds of its time budget compiling and, taken for the search's speed, shrink
    the plans of the moves after it."""
    state = new_game(0)
    line = [state]
    while not state.is_terminal:  # advancing whenever it may: a short game
        legal = state.legal_actions()
        state = state.step(rules.ADVANCE if legal[-1] == rules.ADVANCE else int(legal[0]))
        line.append(state)
    return [line[0], line[max(0, len(line) - 4)], line[max(0, len(line) - 2)]]
