"""The glue between RLlib (new API stack) and this project: the env, the learning module, opponents.

* ``make_multi_agent_env(config)``: the AEC env (``patchwork_env.env``) through RLlib's own
  ``PettingZooEnv`` wrapper (non-alternating turns and the final rewards of both agents come
  through it unchanged). ``WithGameState`` adds the game's flat state array to every observation
  (``{"observation", "action_mask", "state"}``): the greedy prior of the network and the heuristic
  opponents are computed from game states, not from observations.
* ``PatchworkRLModule``: a ``TorchRLModule`` around ``patchwork_env.players.network.PatchworkNet`` with the
  action mask applied inside the network (illegal logits get ``MASK_VALUE``, so RLlib's
  categorical distribution never samples them) and RLlib's ``ValueFunctionAPI`` for PPO. Its
  ``net`` is exactly the project's network: ``net_state_dict`` turns the module's weights into a
  checkpoint that plays as ``network:PATH`` (``patchwork_env.players.policy``).
* ``AgentRLModule``: any agent spec of the registry (``greedy``, ``random``...) as a frozen RLModule
  that returns its actions directly (not trained; an opponent through the policy mapping).

Ray is imported here at module level: import this module only where the ``scale`` extra is
installed (``train.rllib_selfplay`` and the tests that need it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from pettingzoo.utils.wrappers import BaseWrapper
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

from patchwork_env import env as patchwork_aec_env
from patchwork_env.core import rules
from patchwork_env.core.state import GameState
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet, prior_for
from patchwork_env.players.registry import make_agent

STATE_BOUND = 2**62  # the flat state array holds counters and bitboard words (int64)


class WithGameState(BaseWrapper):  # type: ignore[misc]
    """The AEC env with the game's flat state array (int64, ``rules.STATE_LEN``) in every observation."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        state_space = spaces.Box(-STATE_BOUND, STATE_BOUND, shape=(rules.STATE_LEN,), dtype=np.int64)
        self._spaces = {
            agent: spaces.Dict({**env.observation_space(agent).spaces, "state": state_space})
            for agent in env.possible_agents
        }

    def observation_space(self, agent: str) -> spaces.Dict:
        return self._spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        obs = dict(super().observe(agent))
        obs["state"] = self.unwrapped.game_state.array().copy()
        return obs


def make_multi_agent_env(config: dict[str, Any] | None = None) -> PettingZooEnv:
    """RLlib's multi-agent view of the AEC env (``config``: ``reward`` "win" or "score")."""
    reward = (config or {}).get("reward", "win")
    return PettingZooEnv(WithGameState(patchwork_aec_env(reward=reward)))  # type: ignore[no-untyped-call]


def _inputs(batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Observations (float), masks (bool) and game states (numpy int64) of a batch."""
    obs = batch[Columns.OBS]
    states = obs["state"]
    return (
        torch.as_tensor(obs["observation"]).float(),
        torch.as_tensor(obs["action_mask"]).bool(),
        states.cpu().numpy() if isinstance(states, torch.Tensor) else np.asarray(states),
    )


def _settings(module: Any) -> dict[str, Any]:
    """The module's ``model_config`` (always a dict here)."""
    config = module.model_config
    assert isinstance(config, dict), f"model_config must be a dict, got {type(config).__name__}"
    return config


class PatchworkRLModule(TorchRLModule, ValueFunctionAPI):  # type: ignore[misc]
    """The project's ``PatchworkNet`` as an RLlib module; ``model_config["net"]``: a ``NetConfig`` dict."""

    def setup(self) -> None:
        self.net = PatchworkNet(NetConfig(**dict(_settings(self)["net"])))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        x, mask, states = _inputs(batch)
        logits, value = self.net(x, mask, prior_for(self.net, states, mask.numpy()))
        # the value of the same pass travels as the "embeddings" PPO hands back to compute_values
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: value}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is not None:
            return embeddings  # type: ignore[no-any-return]
        values: torch.Tensor = self.net.values(batch[Columns.OBS]["observation"].float())
        return values


def net_state_dict(module_state: dict[str, Any]) -> dict[str, torch.Tensor]:
    """A ``PatchworkRLModule``'s state (``get_state()``, numpy arrays) as the net's ``state_dict``."""
    prefix = "net."
    return {k[len(prefix) :]: torch.as_tensor(np.asarray(v)) for k, v in module_state.items() if k.startswith(prefix)}


class AgentRLModule(RLModule):  # type: ignore[misc]
    """A registry agent (``model_config["spec"]``, e.g. ``greedy``) as a frozen RLlib module. Not a
    torch module, so RLlib's learner gives it no optimizer (it has no parameters)."""

    def setup(self) -> None:
        settings = _settings(self)
        self.agent = make_agent(str(settings["spec"]))
        self.rng = np.random.default_rng(int(settings.get("seed", 0)))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        _, mask, states = _inputs(batch)
        act_batch = getattr(self.agent, "act_batch", None)
        if callable(act_batch):
            actions = np.asarray(act_batch(states, mask.numpy(), self.rng), dtype=np.int64)
        else:
            actions = np.array([self.agent.act(GameState._wrap(s.copy()), self.rng) for s in states], dtype=np.int64)
        return {Columns.ACTIONS: actions}

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward(batch)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward(batch)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError(f"{_settings(self)['spec']} is a fixed opponent: it is never trained")
