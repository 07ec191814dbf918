"""``greedy``: a one-ply heuristic player.

It scores every legal action (each distinct placement of each market patch, advance, each leather
cell) by ``heuristic.position_value`` of the resulting position, for the player to move, and
plays the best one (ties broken with the agent's generator). The value is an estimate of the final
score: button economy over the remaining income marks, time left, empty cells, holes that only a
leather patch or the 1x2 patch can fill, the perimeter of the empty area (compact placement) and
progress towards the 7x7 bonus; details and weights in ``patchwork_env.players.heuristic``. All positions come
from the compiled rules; the whole choice runs in one numba call (a fraction of a millisecond per
decision: ``make bench`` measures it).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.jit import compile_notice
from patchwork_env.core.state import GameState
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, greedy_action, greedy_batch, rng_state


class GreedyAgent:
    """Plays the action with the best one-ply heuristic value; ``temp > 0`` samples a softmax of
    the values (in score points) instead, for variety."""

    def __init__(self, temp: float = 0.0, weights: npt.ArrayLike | None = None) -> None:
        if temp < 0:
            raise ValueError(f"greedy: temp must be >= 0, got {temp}")
        self.temp = float(temp)
        self.weights = np.array(DEFAULT_WEIGHTS if weights is None else weights, dtype=np.float64)
        if self.weights.shape != DEFAULT_WEIGHTS.shape:
            raise ValueError(f"greedy: weights must have {len(DEFAULT_WEIGHTS)} entries, got {self.weights.shape}")
        self.name = "greedy" if self.temp == 0 else f"greedy:temp={self.temp:g}"
        compile_notice("the greedy and search kernels", greedy_action, "5-20 s")
        self._mask = np.empty(rules.NUM_ACTIONS, dtype=np.bool_)
        self._acts = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
        self._scores = np.empty(rules.NUM_ACTIONS, dtype=np.float64)

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        st = rng_state(int(rng.integers(1 << 62)))
        a = greedy_action(state.array(), self.weights, self.temp, 0, st, self._mask, self._acts, self._scores)
        if a < 0:
            raise ValueError("greedy: the game is over, there is no action to take")
        return int(a)

    def act_batch(
        self, states: npt.NDArray[np.int64], masks: npt.NDArray[np.bool_], rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        out = np.empty(len(states), dtype=np.int64)
        greedy_batch(
            np.ascontiguousarray(states, dtype=np.int64),
            self.weights,
            self.temp,
            rng_state(int(rng.integers(1 << 62))),
            out,
        )
        return out
