"""``random``: uniform over the legal actions, the anchor of every Elo table (0 by definition).

One game at a time it draws from ``GameState.legal_actions``; for a batch of rows of the vector
engine it draws in one compiled call (``vector_kernels.sample_rows``). Both draw from the agent's
generator only, so a seeded arena replays the same games.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from patchwork_env.core.state import GameState
from patchwork_env.envs.vector_kernels import sample_rows


class RandomAgent:
    """Uniform over the legal actions."""

    name = "random"

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        legal = state.legal_actions()
        return int(legal[int(rng.random() * len(legal))])

    def act_batch(
        self, states: npt.NDArray[np.int64], masks: npt.NDArray[np.bool_], rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        out = np.empty(len(masks), dtype=np.int64)
        sample_rows(masks, rng.random(len(masks)), out)
        return out
