"""The stable-baselines3 / sb3-contrib adapters, in one place: ``SB3VecEnv`` (``PatchworkVectorEnv``
as an SB3 ``VecEnv``), ``PatchworkPolicy`` (the project's network as MaskablePPO's policy) and
``MarginReward`` (the final reward blended with the score margin). ``train.sb3_maskable`` trains
with all three.

SB3 does not take Gymnasium vector envs: it wants its own ``VecEnv`` class (``reset()`` returning
only observations, ``step_wait()`` returning ``dones`` and a list of per-game info dicts with
``"terminal_observation"``, ``env_method`` / ``get_attr``). This adapter speaks that API over one
``PatchworkVectorEnv``, whose games all step in one compiled call: no subprocesses, no per-game
Python env objects.

>>> from agents.sb3 import SB3VecEnv
>>> venv = SB3VecEnv(num_envs=4, opponent="random", seed=0)
>>> obs = venv.reset()
>>> obs.shape, venv.action_masks().shape
((4, 1452), (4, 2026))

With sb3-contrib (masks come from ``env_method("action_masks")``, which this class answers from
the batched mask array)::

    from sb3_contrib import MaskablePPO
    model = MaskablePPO("MlpPolicy", SB3VecEnv(num_envs=16, opponent="random"), n_steps=128)
    model.learn(100_000)

Episode statistics for SB3's logger: wrap with ``stable_baselines3.common.vec_env.VecMonitor``.
Plain (unmasked) PPO: create the env with ``illegal_action="lose"``, or an illegal action raises.
stable-baselines3 is imported by this module only; ``patchwork_env`` never imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium
import numpy as np
import numpy.typing as npt
import torch
from sb3_contrib.common.maskable.distributions import MaskableDistribution
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn
from torch import nn

from agents.ppo import shaped_final_rewards
from patchwork_env.envs.vector_env import PatchworkVectorEnv
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet


class SB3VecEnv(VecEnv):  # type: ignore[misc]
    """A stable-baselines3 ``VecEnv`` over one ``PatchworkVectorEnv`` (pass one, or its arguments)."""

    def __init__(self, venv: PatchworkVectorEnv | None = None, **kwargs: Any) -> None:
        if venv is None:
            venv = PatchworkVectorEnv(**kwargs)
        elif kwargs:
            raise ValueError(f"pass either a PatchworkVectorEnv or its arguments, not both (got {sorted(kwargs)})")
        self.venv = venv
        self._actions: npt.NDArray[np.int64] | None = None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)

    # --- the VecEnv API -------------------------------------------------------------------------
    def reset(self) -> VecEnvObs:
        """New episodes everywhere; a seed set by ``seed()`` applies to the whole batch (each game
        then gets its own stream from it)."""
        seed = self._seeds[0]
        obs, infos = self.venv.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{"seat": int(s)} for s in infos["seat"]]
        return obs

    def step_async(self, actions: npt.NDArray[Any]) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs).astype(np.int64)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async()")
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        self._actions = None
        dones = terminated | truncated
        out: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            final = infos["final_info"]
            for i in np.flatnonzero(dones).tolist():
                out[i] = {
                    "terminal_observation": infos["final_obs"][i],
                    "TimeLimit.truncated": bool(truncated[i]),
                    "won": bool(final["won"][i]),
                    "score": int(final["score"][i]),
                    "opponent_score": int(final["opponent_score"][i]),
                    "illegal_action": bool(final["illegal_action"][i]),
                }
        return obs, rewards, dones, out

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Bool (num_envs, 2026) legal masks (sb3-contrib's ``MaskablePPO`` calls this)."""
        return self.venv.action_masks()

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The vector env's attribute, once per requested game (all games share it)."""
        value = getattr(self, attr_name) if attr_name == "action_masks" else getattr(self.venv, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Sets the attribute on the vector env, that is for every game."""
        setattr(self.venv, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """``action_masks`` answers per game from the batched masks; any other method of the
        vector env is called once and its result repeated for every requested game."""
        rows = self._indices(indices)
        if method_name == "action_masks":
            masks = self.venv.action_masks()
            return [masks[i] for i in rows]
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in rows]

    def env_is_wrapped(
        self, wrapper_class: type[gymnasium.Wrapper[Any, Any, Any, Any]], indices: VecEnvIndices = None
    ) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def _indices(self, indices: VecEnvIndices) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        assert isinstance(indices, Iterable)
        return list(indices)


class PatchworkPolicy(MaskableActorCriticPolicy):  # type: ignore[misc]
    """MaskablePPO's policy with ``PatchworkNet`` as the whole actor-critic: the (identity) features
    extractor hands the flat observation to the network, which gets the masks as well."""

    def __init__(self, *args: Any, net_config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.net_config = NetConfig(**(net_config or {}))
        kwargs.update(net_arch=[], ortho_init=False)
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        self._build_mlp_extractor()
        self.net = PatchworkNet(self.net_config)
        self.action_net = nn.Identity()  # type: ignore[assignment]  # the network has its own heads
        self.value_net = nn.Identity()  # type: ignore[assignment]
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data: dict[str, Any] = super()._get_constructor_parameters()
        data.update(net_config=self.net_config.to_dict())
        for key in ("net_arch", "ortho_init"):
            data.pop(key, None)
        return data

    def _distribution(self, obs: torch.Tensor, action_masks: Any) -> tuple[MaskableDistribution, torch.Tensor]:
        features = self.extract_features(obs)
        assert isinstance(features, torch.Tensor)  # one shared extractor
        mask = None
        if action_masks is not None:
            mask = torch.as_tensor(action_masks, device=features.device).reshape(len(features), -1).bool()
        logits, values = self.net(features, mask)
        dist = self.action_dist.proba_distribution(action_logits=logits)
        if mask is not None:
            dist.apply_masking(mask)
        return dist, values.unsqueeze(-1)

    def forward(
        self, obs: torch.Tensor, deterministic: bool = False, action_masks: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        dist, values = self._distribution(obs, action_masks)
        actions = dist.get_actions(deterministic=deterministic)
        return actions, values, dist.log_prob(actions)

    def evaluate_actions(
        self, obs: torch.Tensor, actions: torch.Tensor, action_masks: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        dist, values = self._distribution(obs, action_masks)
        return values, dist.log_prob(actions), dist.entropy()

    def get_distribution(self, obs: Any, action_masks: Any = None) -> MaskableDistribution:
        return self._distribution(obs, action_masks)[0]

    def predict_values(self, obs: Any) -> torch.Tensor:
        features = self.extract_features(obs)
        assert isinstance(features, torch.Tensor)
        return self.net.values(features).unsqueeze(-1)


class MarginReward(VecEnvWrapper):  # type: ignore[misc]
    """Final rewards blended with the score margin, as ``agents.ppo.shaped_final_rewards`` does for the
    self-play trainer (the env's own reward is +1 / -1)."""

    def __init__(self, venv: Any, weight: float, scale: float) -> None:
        super().__init__(venv)
        self.weight, self.scale = weight, scale

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        for i in np.flatnonzero(dones).tolist():
            info = infos[i]
            if "score" in info:
                scores = np.array([[info["score"], info["opponent_score"]]])
                winner = np.array([0 if info["won"] else 1])
                rewards[i] = shaped_final_rewards(winner, scores, self.weight, self.scale)[0, 0]
        return obs, rewards, dones, infos
