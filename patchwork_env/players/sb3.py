"""A model saved by Stable-Baselines3 or sb3-contrib as a player: ``sb3:PATH``.

    patchwork ladder sb3:model.zip
    patchwork evaluate --agents sb3:model.zip greedy --pairs 50
    patchwork evaluate --agents sb3:path=model.zip,sample=1 greedy     # sample from the policy

The model must have been trained on the project's single-agent observation and actions
(``SingleAgentEnv``, ``PatchworkVectorEnv``: ``Box(float32, (1452,))`` and ``Discrete(2026)``); it
sees the observation from the seat of the player to move, as the envs show it to the learner.

Every model plays a legal move: the legal-action mask is applied to what the model computes over
the actions. ``MaskablePPO`` (sb3-contrib) gets the mask as ``action_masks()`` gives it in training
(its ``predict`` with ``action_masks``); ``PPO`` and ``A2C``, trained without masks, have their
action distribution's illegal actions removed, and ``DQN`` its illegal actions' values. Moves are
the most probable legal action (the best legal value for DQN) unless ``sample=1``: then they are
drawn from the policy's distribution over the legal actions (with the arena's generator, so a game
is reproducible from its seed); DQN has no policy to sample from. ``agent_info()`` (in the results
files as ``agent_info``) says which algorithm saved the model and whether it was trained with
masks. A model of another observation or action space is one clear error.

Needs stable-baselines3 (and sb3-contrib for MaskablePPO): ``pip install "patchwork-env[sb3]"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from patchwork_env.core.rules import NUM_ACTIONS
from patchwork_env.core.state import GameState
from patchwork_env.envs.observation import OBS_DIM, observation_and_mask
from patchwork_env.players.errors import AgentSpecError, MissingExtraError

SB3_INSTALL = 'pip install "patchwork-env[sb3]"'
ALGORITHMS = ("MaskablePPO", "PPO", "A2C", "DQN")


def _algorithm(policy_class: type, data: dict[str, Any]) -> Any:
    """The SB3 algorithm class that saved a model with this policy class."""
    from stable_baselines3 import A2C, DQN, PPO
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.dqn.policies import DQNPolicy

    if policy_class.__module__.startswith("sb3_contrib") or "Maskable" in policy_class.__name__:
        try:
            from sb3_contrib import MaskablePPO
            from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
        except ImportError:
            raise MissingExtraError(
                f"a model of sb3-contrib needs sb3-contrib, which is not installed: {SB3_INSTALL}"
            ) from None
        if issubclass(policy_class, MaskableActorCriticPolicy):
            return MaskablePPO
    else:
        if any(c.__name__ == "MaskableActorCriticPolicy" for c in policy_class.__mro__):  # a custom subclass
            from sb3_contrib import MaskablePPO

            return MaskablePPO
        if issubclass(policy_class, DQNPolicy):
            return DQN
        if issubclass(policy_class, ActorCriticPolicy):
            return PPO if "clip_range" in data else A2C
    raise AgentSpecError(
        f"a model with policy {policy_class.__module__}.{policy_class.__name__}: sb3: plays models of "
        f"{', '.join(ALGORITHMS)}"
    )


def load_sb3_model(path: str) -> Any:
    """The SB3 model at ``path``, checked to play Patchwork's single-agent observation and actions."""
    try:
        import stable_baselines3  # noqa: F401
        from stable_baselines3.common.save_util import load_from_zip_file
    except ImportError:
        raise MissingExtraError(f"sb3:{path} needs stable-baselines3, which is not installed: {SB3_INSTALL}") from None
    if not Path(path).is_file():
        raise AgentSpecError(f"sb3:{path}: no such file (a model saved by model.save(), usually a .zip)")
    try:
        data, _, _ = load_from_zip_file(path, device="cpu", print_system_info=False)
    except Exception as exc:
        raise AgentSpecError(
            f"sb3:{path}: not a model saved by Stable-Baselines3 ({type(exc).__name__}: {exc})"
        ) from None
    data = data or {}
    policy_class = data.get("policy_class")
    if not isinstance(policy_class, type):
        raise AgentSpecError(
            f"sb3:{path}: its policy class cannot be loaded (a custom policy must be importable here, e.g. from the "
            "checkout that trained it)"
        )
    obs_space, act_space = data.get("observation_space"), data.get("action_space")
    obs_ok = getattr(obs_space, "shape", None) == (OBS_DIM,)
    act_ok = type(act_space).__name__ == "Discrete" and int(getattr(act_space, "n", -1)) == NUM_ACTIONS
    if not (obs_ok and act_ok):
        raise AgentSpecError(
            f"sb3:{path}: trained on observations {_describe(obs_space)} and actions {_describe(act_space)}; the "
            "players need a model "
            f"of the project's single-agent env: Box(float32, ({OBS_DIM},)) and Discrete({NUM_ACTIONS})"
        )
    algorithm = _algorithm(policy_class, data)
    try:
        return algorithm.load(path, device="cpu")  # type: ignore[attr-defined]
    except Exception as exc:
        raise AgentSpecError(f"sb3:{path}: {algorithm.__name__}.load failed ({type(exc).__name__}: {exc})") from None


def _describe(space: Any) -> str:
    if hasattr(space, "n"):
        return f"{type(space).__name__}({space.n})"
    shape, dtype = getattr(space, "shape", None), getattr(space, "dtype", None)
    return f"{type(space).__name__}({dtype}, {shape})" if shape is not None else type(space).__name__


class SB3Agent:
    """A Stable-Baselines3 model as an agent that plays legal moves only (module docstring)."""

    def __init__(self, path: str, sample: bool = False) -> None:
        self.model = load_sb3_model(path)
        self.algorithm = type(self.model).__name__
        self.masked = self.algorithm == "MaskablePPO"  # trained with the legal-action mask
        if sample and self.algorithm == "DQN":
            raise AgentSpecError(f"sb3:{path}: a DQN model has no policy to sample from (leave out sample=1)")
        self.sample = sample
        self.name = f"sb3:{path}"
        self.model.policy.set_training_mode(False)

    def agent_info(self) -> dict[str, Any]:
        """What the results files say of the model."""
        if self.sample:
            moves = "sampled from its policy over the legal actions"
        elif self.algorithm == "DQN":
            moves = "the legal action of the highest value"
        else:
            moves = "the most probable legal action"
        return {"algorithm": self.algorithm, "trained_with_masks": self.masked, "moves": moves}

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        obs, mask = observation_and_mask(state)
        if self.masked and not self.sample:
            action, _ = self.model.predict(obs, deterministic=True, action_masks=mask)
            return int(action)
        scores = self._scores(obs, mask)
        legal = np.flatnonzero(mask)
        if not self.sample:
            return int(legal[np.argmax(scores[legal])])
        logp = scores[legal] - scores[legal].max()
        probs = np.exp(logp)
        return int(legal[rng.choice(len(legal), p=probs / probs.sum())])

    def _scores(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
        """The model's score of every action: the log-probabilities of its action distribution (the
        masked one for MaskablePPO), or DQN's action values."""
        import torch

        policy = self.model.policy
        with torch.no_grad():
            tensor, _ = policy.obs_to_tensor(obs)
            if self.algorithm == "DQN":
                values = policy.q_net(tensor)
            else:
                masks = {"action_masks": mask} if self.masked else {}
                values = policy.get_distribution(tensor, **masks).distribution.logits
        scores: npt.NDArray[np.float64] = values[0].double().numpy()
        return scores
