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

A model file is data (``patchwork_env.players.archive``): ``model.save`` pickles some of what it
saves (the policy class, the spaces, schedules: the ``":serialized:"`` items of the ``"data"``
entry), and unpickling runs whatever code the file names, so ``sb3:`` never unpickles. It reads the
plain JSON of ``"data"`` (the spaces' shapes and dtypes, the policy class's module, ``policy_kwargs``
where they are plain), builds the default policy (``MlpPolicy``) of the algorithm itself, and loads
``"policy.pth"`` into it with ``torch.load(weights_only=True)``. A custom policy class, a custom
feature extractor or activation, or weights that do not fit the rebuilt policy are refused in one
line saying so. The zip directory is checked before anything is read (``ZIP_LIMITS``; ``"data"``
within ``MAX_DATA_BYTES``, ``"policy.pth"`` within ``MAX_WEIGHTS_BYTES``), so a zip bomb is refused
without being unpacked.

Needs stable-baselines3 (and sb3-contrib for MaskablePPO): ``pip install "patchwork-env[sb3]"``.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from patchwork_env.core.rules import NUM_ACTIONS
from patchwork_env.core.state import GameState
from patchwork_env.envs.observation import OBS_DIM, observation_and_mask, observation_bounds
from patchwork_env.players.archive import (
    ArchiveError,
    NotAnArchiveError,
    ZipLimits,
    check_torch_file,
    open_archive,
    read_entry,
)
from patchwork_env.players.errors import AgentSpecError, MissingExtraError

SB3_INSTALL = 'pip install "patchwork-env[sb3]"'
ALGORITHMS = ("MaskablePPO", "PPO", "A2C", "DQN")
ZIP_LIMITS = ZipLimits(entries=32, entry_bytes=2 * 2**30, total_bytes=4 * 2**30)  # model.save writes 6 entries
MAX_DATA_BYTES = 32 * 2**20  # the JSON of the class parameters: about 30 kB for this env's spaces
MAX_WEIGHTS_BYTES = 2**30  # policy.pth: 1.3 MB for a default MlpPolicy on this env
WEIGHTS_LIMITS = ZipLimits(entries=4096, entry_bytes=MAX_WEIGHTS_BYTES, total_bytes=MAX_WEIGHTS_BYTES)
MAX_LAYERS = 64  # hidden layers in one net_arch
# the default policy (MlpPolicy) of each algorithm by its module, as data["policy_class"]["__module__"] names it
DEFAULT_POLICIES = {
    "sb3_contrib.common.maskable.policies": "MaskableActorCriticPolicy",  # MaskablePPO
    "stable_baselines3.common.policies": "ActorCriticPolicy",  # PPO, A2C
    "stable_baselines3.dqn.policies": "DQNPolicy",  # DQN
}
ACTIVATIONS = ("Tanh", "ReLU", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Softplus",
               "Hardtanh", "Identity")  # fmt: skip
FLATTEN = "<class 'stable_baselines3.common.torch_layers.FlattenExtractor'>"  # the default feature extractor
REBUILT_KWARGS = ("net_arch", "activation_fn", "share_features_extractor", "features_extractor_class",
                  "features_extractor_kwargs")  # fmt: skip
# policy_kwargs that change nothing a policy over discrete actions computes from its weights
IGNORED_KWARGS = ("optimizer_class", "optimizer_kwargs", "ortho_init", "log_std_init", "full_std", "use_expln",
                  "squash_output", "use_sde", "normalize_images")  # fmt: skip


class ModelFileError(ValueError):
    """A model file that ``sb3:`` cannot rebuild without running code (the message says why)."""


class NotAModelError(ModelFileError):
    """A zip archive that ``model.save`` did not write (no ``"data"`` entry, or not JSON)."""


@dataclass(frozen=True)
class SB3Policy:
    """The policy of a model file, rebuilt and loaded, and the algorithm that saved it."""

    policy: Any
    algorithm: str


def load_sb3_policy(path: str) -> SB3Policy:
    """The policy of the SB3 model at ``path``, rebuilt without unpickling (module docstring) and
    checked to play Patchwork's single-agent observation and actions; ``AgentSpecError`` saying why not."""
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        raise MissingExtraError(f"sb3:{path} needs stable-baselines3, which is not installed: {SB3_INSTALL}") from None
    if not Path(path).is_file():
        raise AgentSpecError(f"sb3:{path}: no such file (a model saved by model.save(), usually a .zip)")
    try:
        data, weights = _read_model(Path(path))
        _check_spaces(data)
        algorithm, class_name = _algorithm(data)
        policy = _build_policy(class_name, algorithm, _policy_kwargs(data.get("policy_kwargs"), algorithm), weights)
    except (NotAnArchiveError, NotAModelError) as exc:
        raise AgentSpecError(f"sb3:{path}: not a model saved by Stable-Baselines3 ({exc})") from None
    except (ArchiveError, ModelFileError) as exc:
        raise AgentSpecError(f"sb3:{path}: {exc}") from None
    return SB3Policy(policy, algorithm)


def _read_model(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The plain JSON of the ``"data"`` entry and the tensors of ``"policy.pth"``, each read only after
    the zip directory said it fits its limit."""
    archive, entries = open_archive(path, ZIP_LIMITS)
    with archive:
        for name, limit in (("data", MAX_DATA_BYTES), ("policy.pth", MAX_WEIGHTS_BYTES)):
            if name not in entries:
                raise NotAModelError(f"it has no {name!r} entry, which model.save writes")
            if entries[name].file_size > limit:
                raise ModelFileError(
                    f"its {name!r} entry would unpack to {entries[name].file_size} bytes, more than the "
                    f"{limit // 2**20} MiB allowed"
                )
        data = _parse_data(read_entry(archive, entries["data"]))
        weights = _load_weights(read_entry(archive, entries["policy.pth"]))
    return data, weights


def _parse_data(raw: bytes) -> dict[str, Any]:
    """The ``"data"`` entry as JSON; its ``":serialized:"`` items stay base64 text, never unpickled."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise NotAModelError(f"its 'data' entry is not JSON ({str(exc)[:120]})") from None
    if not isinstance(data, dict):
        raise NotAModelError("its 'data' entry is not a JSON object")
    return data


def _load_weights(raw: bytes) -> dict[str, Any]:
    """``"policy.pth"``'s state dict by ``torch.load(weights_only=True)``: tensors and plain
    containers only, after its own zip directory was checked."""
    import torch

    stream = io.BytesIO(raw)
    try:
        check_torch_file(stream, WEIGHTS_LIMITS)
    except ArchiveError as exc:
        raise ModelFileError(f"its policy.pth is refused: {exc}") from None
    try:
        weights = torch.load(stream, map_location="cpu", weights_only=True)
    except Exception as exc:  # anything torch raises for a damaged file: refused, nothing of it run
        first = (str(exc) or type(exc).__name__).splitlines()[0][:200]
        raise ModelFileError(f"its policy.pth cannot be loaded as weights ({first})") from None
    if not isinstance(weights, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()
    ):
        raise ModelFileError("its policy.pth is not a state dict (names to tensors)")
    return weights


def _space_kind(entry: dict[str, Any]) -> str:
    """``Box``, ``Discrete``, ... from a space's ``":type:"`` text (``<class 'gymnasium.spaces.box.Box'>``)."""
    match = re.fullmatch(r"<class '([\w.]+)'>", str(entry.get(":type:", "")))
    return match.group(1).rsplit(".", 1)[-1] if match else "an unknown space"


def _as_int(value: Any) -> int | None:
    """An integer written as a JSON number or as its decimal text (numpy integers are saved as text)."""
    if type(value) is int:
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,18}", value):
        return int(value)
    return None


def _describe(entry: Any) -> str:
    if not isinstance(entry, dict):
        return "an unknown space"
    if "n" in entry:
        return f"{_space_kind(entry)}({str(entry['n'])[:20]})"
    shape = entry.get("_shape", entry.get("shape"))
    shape_text = str(tuple(shape)) if isinstance(shape, list) else str(shape)
    return f"{_space_kind(entry)}({str(entry.get('dtype'))[:20]}, {shape_text[:40]})"


def _check_spaces(data: dict[str, Any]) -> None:
    """The model's spaces (their plain JSON fields) are the single-agent env's."""
    obs, act = data.get("observation_space"), data.get("action_space")
    obs_ok = (
        isinstance(obs, dict)
        and _space_kind(obs) == "Box"
        and obs.get("dtype") == "float32"
        and obs.get("_shape", obs.get("shape")) == [OBS_DIM]
    )
    act_ok = (
        isinstance(act, dict)
        and _space_kind(act) == "Discrete"
        and _as_int(act.get("n")) == NUM_ACTIONS
        and _as_int(act.get("start", 0)) == 0
    )
    if not (obs_ok and act_ok):
        raise ModelFileError(
            f"trained on observations {_describe(obs)} and actions {_describe(act)}; the players need a model "
            f"of the project's single-agent env: Box(float32, ({OBS_DIM},)) and Discrete({NUM_ACTIONS})"
        )


def _class_name(entry: dict[str, Any]) -> str | None:
    """The policy class's name, as the texts of its methods in the JSON give it
    (``<function ActorCriticPolicy.forward at 0x...>``); None if they name none or several."""
    names = set()
    for value in entry.values():
        match = re.match(r"<function ([\w.]+)\.\w+ at ", value) if isinstance(value, str) else None
        if match:
            names.add(match.group(1))
    return names.pop() if len(names) == 1 else None


def _algorithm(data: dict[str, Any]) -> tuple[str, str]:
    """(the algorithm, its default policy class) from the policy class's module in the JSON; a
    policy of another class is refused: rebuilding it would run its code."""
    entry = data.get("policy_class")
    module = entry.get("__module__") if isinstance(entry, dict) else None
    name = _class_name(entry) if isinstance(entry, dict) else None
    default = DEFAULT_POLICIES.get(module) if isinstance(module, str) else None
    if default is None or name not in (None, default):
        label = f"{module}.{name}" if name else f"of module {module}" if isinstance(module, str) else "not named"
        ours = " (train.sb3_maskable's checkpoints/*.pt play as network:PATH)" if module == "agents.sb3" else ""
        raise ModelFileError(
            f"its policy class ({str(label)[:120]}) is not the default MlpPolicy of {', '.join(ALGORITHMS)}: sb3: "
            f"rebuilds only those, since it never runs code a model file holds or names{ours}"
        )
    if default == "MaskableActorCriticPolicy":
        return "MaskablePPO", default
    if default == "DQNPolicy":
        return "DQN", default
    return ("PPO" if "clip_range" in data else "A2C"), default


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _layers(value: Any) -> list[int]:
    if not (isinstance(value, list) and len(value) <= MAX_LAYERS and all(type(w) is int and w >= 1 for w in value)):
        raise ModelFileError(f"its net_arch {_short(value)} is not a list of at most {MAX_LAYERS} layer sizes")
    return value


def _net_arch(value: Any, algorithm: str) -> list[int] | dict[str, list[int]]:
    """``net_arch`` checked: layer sizes, or for actor-critic policies ``{"pi": [...], "vf": [...]}``
    (also in the list SB3 wrote before 1.8, ``[{"pi": ..., "vf": ...}]``)."""
    if algorithm != "DQN":
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
            value = value[0]
        if isinstance(value, dict):
            if not set(value) <= {"pi", "vf"}:
                raise ModelFileError(f"its net_arch {_short(value)} has keys other than 'pi' and 'vf'")
            return {key: _layers(layers) for key, layers in value.items()}
    return _layers(value)


def _activation(value: Any) -> Any:
    """A torch activation class from its text in the JSON (``<class 'torch.nn.modules.activation.ReLU'>``)."""
    from torch import nn

    known = {f"<class '{cls.__module__}.{cls.__qualname__}'>": cls for cls in (getattr(nn, n) for n in ACTIVATIONS)}
    if value not in known:
        raise ModelFileError(f"its activation_fn {_short(value)} is not one of torch.nn's {', '.join(ACTIVATIONS)}")
    return known[value]


def _policy_kwargs(entry: Any, algorithm: str) -> dict[str, Any]:
    """The policy's constructor arguments from the plain JSON of ``policy_kwargs`` (a pickled dict
    keeps its first-level items beside the pickle: values as JSON, classes as their text)."""
    if entry is None:
        return {}
    if not isinstance(entry, dict):
        raise ModelFileError(f"its policy_kwargs {_short(entry)} are not a dict")
    items = {key: value for key, value in entry.items() if key not in (":type:", ":serialized:")}
    unknown = sorted(set(items) - set(REBUILT_KWARGS) - set(IGNORED_KWARGS))
    if unknown:
        raise ModelFileError(
            f"its policy_kwargs {', '.join(map(_short, unknown))} cannot be rebuilt without running code: sb3: "
            f"rebuilds {', '.join(REBUILT_KWARGS)}"
        )
    if items.get("features_extractor_class", FLATTEN) != FLATTEN or items.get("features_extractor_kwargs") not in (
        None,
        {},
    ):
        raise ModelFileError("its feature extractor is not the default FlattenExtractor: sb3: rebuilds only that one")
    kwargs: dict[str, Any] = {}
    if "net_arch" in items and items["net_arch"] is not None:
        kwargs["net_arch"] = _net_arch(items["net_arch"], algorithm)
    if "activation_fn" in items:
        kwargs["activation_fn"] = _activation(items["activation_fn"])
    if "share_features_extractor" in items and algorithm != "DQN":
        if type(items["share_features_extractor"]) is not bool:
            raise ModelFileError("its share_features_extractor is not true or false")
        kwargs["share_features_extractor"] = items["share_features_extractor"]
    return kwargs


def _chain(width: int, layers: list[int]) -> int:
    """The parameters of linear layers of these sizes after an input of ``width``."""
    total = 0
    for size in layers:
        total, width = total + (width + 1) * size, size
    return total


def _parameter_count(kwargs: dict[str, Any], algorithm: str) -> int:
    """The parameters the rebuilt policy will have (its networks over the observation)."""
    arch = kwargs.get("net_arch")
    if algorithm == "DQN":
        return 2 * _chain(OBS_DIM, [*(arch or [64, 64]), NUM_ACTIONS])  # q_net and q_net_target
    arch = {"pi": [64, 64], "vf": [64, 64]} if arch is None else arch
    pi, vf = (arch.get("pi", []), arch.get("vf", [])) if isinstance(arch, dict) else (arch, arch)
    return _chain(OBS_DIM, [*pi, NUM_ACTIONS]) + _chain(OBS_DIM, [*vf, 1])


def _policy_type(class_name: str) -> Any:
    if class_name == "MaskableActorCriticPolicy":
        try:
            from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
        except ImportError:
            raise MissingExtraError(
                f"a model of sb3-contrib needs sb3-contrib, which is not installed: {SB3_INSTALL}"
            ) from None
        return MaskableActorCriticPolicy
    if class_name == "DQNPolicy":
        from stable_baselines3.dqn.policies import DQNPolicy

        return DQNPolicy
    from stable_baselines3.common.policies import ActorCriticPolicy

    return ActorCriticPolicy


def _no_learning(_: float) -> float:
    return 0.0  # the learning-rate schedule a policy is built with: it only plays


def _build_policy(class_name: str, algorithm: str, kwargs: dict[str, Any], weights: dict[str, Any]) -> Any:
    """The default policy of ``class_name`` over the env's spaces, built only if its size is
    what the weights hold, with the weights loaded (every name and shape must match)."""
    from gymnasium import spaces

    policy_type = _policy_type(class_name)
    wanted, held = _parameter_count(kwargs, algorithm), sum(int(t.numel()) for t in weights.values())
    if wanted > held:
        raise ModelFileError(
            f"its policy_kwargs ask for a policy ({class_name}) of {wanted} parameters, its weights hold {held}"
        )
    low, high = observation_bounds()
    observations = spaces.Box(low=low, high=high, shape=(OBS_DIM,), dtype=np.float32)
    init = {} if algorithm == "DQN" else {"ortho_init": False}  # the weights are loaded next: no costly init
    policy = policy_type(observations, spaces.Discrete(NUM_ACTIONS), _no_learning, **kwargs, **init)
    try:
        policy.load_state_dict(weights)
    except RuntimeError as exc:
        detail = " ".join(line.strip() for line in str(exc).splitlines()[1:])[:300]
        raise ModelFileError(
            f"its weights do not fit the default {class_name} with policy_kwargs {_short(kwargs)} ({detail})"
        ) from None
    policy.set_training_mode(False)
    return policy


class SB3Agent:
    """A Stable-Baselines3 model as an agent that plays legal moves only (module docstring)."""

    def __init__(self, path: str, sample: bool = False) -> None:
        loaded = load_sb3_policy(path)
        self.policy, self.algorithm = loaded.policy, loaded.algorithm
        self.masked = self.algorithm == "MaskablePPO"  # trained with the legal-action mask
        if sample and self.algorithm == "DQN":
            raise AgentSpecError(f"sb3:{path}: a DQN model has no policy to sample from (leave out sample=1)")
        self.sample = sample
        self.name = f"sb3:{path}"

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
            action, _ = self.policy.predict(obs, deterministic=True, action_masks=mask)
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

        policy = self.policy
        with torch.no_grad():
            tensor, _ = policy.obs_to_tensor(obs)
            if self.algorithm == "DQN":
                values = policy.q_net(tensor)
            else:
                masks = {"action_masks": mask} if self.masked else {}
                values = policy.get_distribution(tensor, **masks).distribution.logits
        scores: npt.NDArray[np.float64] = values[0].double().numpy()
        return scores
