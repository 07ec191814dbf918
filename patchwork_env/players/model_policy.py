"""A value model's prior as a player: ``ModelPolicy`` plays the legal move of highest prior logit
(``value_model.prior_move``: its kind's logit plus the terms of the position after it weighted by
the placement head), no search. For a model without the prior heads this is greedy's move (the
greedy prior's maximum); for a model ``train.alphazero`` trained, the network alone."""

from __future__ import annotations

from typing import Any

import numpy as np

from patchwork_env.core import rules
from patchwork_env.core.jit import compile_notice
from patchwork_env.core.state import GameState
from patchwork_env.envs.observation import OBS_DIM
from patchwork_env.players.search_config import GREEDY_PRIOR_TEMP
from patchwork_env.players.value_model import ValueModel, prior_move


class ModelPolicy:
    """The most probable move of ``model``'s prior (greedy's weights over ``prior_temp`` where the
    model has no placement head)."""

    def __init__(self, model: ValueModel, name: str = "policy", prior_temp: float = GREEDY_PRIOR_TEMP) -> None:
        self.model = model
        self.name = name
        self.prior_temp = prior_temp
        compile_notice("the model's prior", prior_move, "5-20 s")
        h1, h2 = model.hidden
        self._wp, self._bp = model.head()
        self._wf, self._bf = model.placement(prior_temp)
        self._obs = np.zeros(OBS_DIM, np.float32)
        self._h1, self._h2 = np.empty(h1, np.float32), np.empty(h2, np.float32)
        self._acts = np.empty(rules.NUM_ACTIONS, np.int64)
        self._scores, self._logp = np.empty(rules.NUM_ACTIONS), np.empty(rules.NUM_ACTIONS)

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        if state.is_terminal:
            raise ValueError(f"{self.name}: the game is over, there is no action to take")
        m = self.model
        return prior_move(
            state.array(), m.w1, m.b1, m.w2, m.b2, self._wp, self._bp, self._wf, self._bf, self._obs, self._h1,
            self._h2, self._acts, self._scores, self._logp,
        )  # fmt: skip

    def __getstate__(self) -> dict[str, Any]:
        return {"model": self.model, "name": self.name, "prior_temp": self.prior_temp}

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.__init__(**data)  # type: ignore[misc]
