"""``mcts``: UCT search over the engine's states, with a budget in simulations or seconds per move.

Choices, all documented here because Patchwork is unlike the textbook two-player game:

* **Values per player, not per ply.** Turns do not alternate (the player behind moves, possibly
  several times in a row, and a leather patch is an extra decision by the same player). Every
  node stores the sum of simulation results from player 0's point of view; at a node, the player
  to move there reads a child's mean as ``q`` (player 0) or ``1 - q`` (player 1). No sign flip
  per level is ever assumed.
* **Candidate actions.** A position can have 1,000+ legal actions, most of them the same patch in
  slightly different places. A node searches only ``advance`` plus the ``width`` best placements of
  each market patch by the greedy value (``heuristic.candidate_actions``; ``width`` best cells
  for a pending leather patch), so that the tree chooses *which* patch and *when* to advance,
  and the greedy evaluation chooses *where* it goes. Unvisited candidates are tried best first.
  The defaults (``width=1``, greedy rollouts, ``c=0.4``, ``rtemp=2``) were the strongest settings
  in paired games between variants at the same budget (the changelog has the history).
* **Selection:** UCT, ``q + c * sqrt(ln N / n)`` with results in [0, 1].
* **Rollouts** run to the end of the game inside one numba call: ``greedy`` (default) plays a
  softmax (temperature ``rtemp`` score points) over the values of advance plus ``rcands - 1``
  sampled legal actions; ``random`` plays uniformly. A result is
  ``0.9 * win + 0.1 * (1 + tanh(margin / 20)) / 2`` for player 0, so that among won (or lost)
  lines a larger margin is still preferred.
* **Budget:** ``sims`` simulations and/or ``time`` seconds per move, whichever ends first
  (``sims=400`` if neither is given). ``time`` counts CPU seconds of this process (``clock=cpu``,
  the default: the same search on a busy machine) or wall seconds (``clock=wall``;
  ``patchwork_env.players.clock``). With ``time`` the agent is not reproducible. The kernels are
  compiled (or loaded) when the agent is built, by a few simulations from two positions that no game
  keeps, so that no timed move spends its budget compiling.
* **Subtree reuse:** after a move the chosen child becomes the root; on the next call the new
  position is looked up among the nodes exactly ``ply`` difference deeper (plies count every
  decision, so no other depth can hold it), and its subtree is kept if found.
* The move played is the most visited root candidate; ``last_visits`` keeps every root
  candidate's visit count (the distillation's soft targets, ``agents.distill``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from patchwork_env.core import rules
from patchwork_env.core.jit import compile_notice
from patchwork_env.core.state import GameState
from patchwork_env.players.clock import DEFAULT_CLOCK, Deadline, check_clock
from patchwork_env.players.heuristic import (
    DEFAULT_WEIGHTS,
    ROLLOUT_CANDIDATES,
    ROLLOUT_GREEDY,
    ROLLOUT_RANDOM,
    ROLLOUT_TEMP,
    candidate_actions,
    rng_state,
    rollout,
)
from patchwork_env.players.tree import find_below, warm_positions

MARGIN_WEIGHT = 0.1
MARGIN_SCALE = 20.0


class Node:
    """A position in the tree; ``w0`` sums results for player 0 over ``n`` visits."""

    __slots__ = ("actions", "arr", "children", "n", "next_new", "player", "ply", "terminal", "w0")

    def __init__(self, arr: np.ndarray[Any, np.dtype[np.int64]]) -> None:
        self.arr = arr
        self.ply = int(arr[rules.PLY])
        self.terminal = bool(rules.is_terminal(arr))
        self.player = -1 if self.terminal else int(rules.current_player(arr))
        self.actions: list[int] | None = None
        self.children: list[Node] = []
        self.next_new = 0
        self.n = 0
        self.w0 = 0.0


def result_for_player0(winner: int, margin: int) -> float:
    """A finished game as a number in [0, 1] for player 0 (mostly the win, a little the margin)."""
    win = 1.0 if winner == 0 else 0.0
    return (1.0 - MARGIN_WEIGHT) * win + MARGIN_WEIGHT * 0.5 * (1.0 + math.tanh(margin / MARGIN_SCALE))


class MCTSAgent:
    """UCT with greedy-pruned candidates and compiled rollouts (see the module docstring)."""

    def __init__(
        self,
        sims: int | None = None,
        time: float | None = None,
        rollout: str = "greedy",
        c: float = 0.4,
        width: int = 1,
        rtemp: float = ROLLOUT_TEMP,
        rcands: int = ROLLOUT_CANDIDATES,
        reuse: bool = True,
        clock: str = DEFAULT_CLOCK,
    ) -> None:
        if sims is not None and sims < 1:
            raise ValueError(f"mcts: sims must be >= 1, got {sims}")
        if time is not None and not time > 0:
            raise ValueError(f"mcts: time must be > 0 seconds, got {time}")
        if rollout not in ("greedy", "random"):
            raise ValueError(f"mcts: rollout must be 'greedy' or 'random', got {rollout!r}")
        if c < 0 or width < 1 or rtemp < 0 or rcands < 1:
            raise ValueError(
                f"mcts: need c >= 0, width >= 1, rtemp >= 0, rcands >= 1; got c={c}, width={width}, "
                f"rtemp={rtemp}, rcands={rcands}"
            )
        compile_notice("the greedy and search kernels", candidate_actions, "5-20 s")
        self.sims = 400 if sims is None and time is None else sims
        self.time = time
        self.clock = check_clock(clock)
        self.rollout = rollout
        self.c = float(c)
        self.width = int(width)
        self.rtemp = float(rtemp)
        self.rcands = int(rcands)
        self.reuse = bool(reuse)
        budget = [f"sims={self.sims}"] if self.sims is not None else []
        budget += [f"time={self.time:g}"] if self.time is not None else []
        self.name = "mcts:" + ",".join(budget)
        self.weights = DEFAULT_WEIGHTS.copy()
        self._policy = ROLLOUT_GREEDY if rollout == "greedy" else ROLLOUT_RANDOM
        self._acts = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
        self._vals = np.empty(rules.NUM_ACTIONS, dtype=np.float64)
        self._root: Node | None = None
        self.last_sims = 0  # simulations run for the last decision (for statistics)
        self.last_visits: list[tuple[int, int]] = []  # (root candidate, visits) of the last decision
        self.last_value: float | None = None
        """The last decision's searched value for the player to move, in [0, 1] (``result_for_player0``'s
        scale): the mean result of the move played; None when the search ran no simulation (a single
        candidate). A value target for leaf evaluation (``agents.value_head.search_targets``)."""
        self._warm()

    def _warm(self) -> None:
        """A few simulations from each of ``tree.warm_positions`` (no tree kept, down to finished
        games): every kernel a move calls is compiled (or loaded from disk) now, not in the first
        timed move."""
        st = rng_state(0)
        for state in warm_positions():
            root = Node(state.array().copy())
            self._expand(root)
            for _ in range(8):
                self._simulate(root, st)
            rules.winner(root.arr)  # what a finished game's node asks
            rules.score(root.arr, 0)

    def reset(self) -> None:
        """Forget the tree (the arena calls this before each game)."""
        self._root = None

    # --- the search ------------------------------------------------------------------------
    def act(self, state: GameState, rng: np.random.Generator) -> int:
        if state.is_terminal:
            raise ValueError("mcts: the game is over, there is no action to take")
        root = self._find(state) if self.reuse else None
        if root is None:
            root = Node(state.array().copy())
        self._expand(root)
        assert root.actions is not None
        self.last_sims = 0
        if len(root.actions) > 1:
            st = rng_state(int(rng.integers(1 << 62)))
            deadline = None if self.time is None else Deadline(self.time, self.clock)
            while (self.sims is None or self.last_sims < self.sims) and (deadline is None or not deadline.reached()):
                self._simulate(root, st)
                self.last_sims += 1
        visits = [child.n for child in root.children]
        self.last_visits = list(zip(root.actions, visits, strict=False))
        best = visits.index(max(visits)) if visits else 0
        self.last_value = None
        if self.last_sims:
            mean0 = root.children[best].w0 / root.children[best].n
            self.last_value = mean0 if root.player == 0 else 1.0 - mean0
        self._root = root.children[best] if self.reuse and root.children else None
        return root.actions[best]

    def _find(self, state: GameState) -> Node | None:
        """The node holding ``state`` below the last move's child, if the search saw it coming."""
        return find_below(self._root, state.array(), lambda node: node.arr, lambda node: node.children)

    def _expand(self, node: Node) -> None:
        if node.actions is None:
            k = candidate_actions(node.arr, self.weights, self.width, self._acts, self._vals)
            node.actions = self._acts[:k].tolist()

    def _simulate(self, root: Node, st: np.ndarray[Any, np.dtype[np.uint64]]) -> None:
        node = root
        path = [root]
        while True:
            if node.terminal:
                value = result_for_player0(
                    int(rules.winner(node.arr)), int(rules.score(node.arr, 0) - rules.score(node.arr, 1))
                )
                break
            self._expand(node)
            assert node.actions is not None
            if node.next_new < len(node.actions):
                arr = node.arr.copy()
                rules.step_into(arr, node.actions[node.next_new])
                node.next_new += 1
                child = Node(arr)
                node.children.append(child)
                path.append(child)
                winner, margin = rollout(arr, self._policy, self.weights, self.rtemp, self.rcands, st)
                value = result_for_player0(int(winner), int(margin))
                break
            node = self._select(node)
            path.append(node)
        for visited in path:
            visited.n += 1
            visited.w0 += value

    def _select(self, node: Node) -> Node:
        log_n = math.log(node.n)
        flip = node.player == 1
        best_child = node.children[0]
        best = -1.0
        for child in node.children:
            q = child.w0 / child.n
            if flip:
                q = 1.0 - q
            u = q + self.c * math.sqrt(log_n / child.n)
            if u > best:
                best = u
                best_child = child
        return best_child
