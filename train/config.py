"""Trainer configs: one dataclass per trainer, a docstring per field, YAML loading and validation.

A config file is a flat YAML mapping of field names to values; ``key=value`` overrides apply on
top. Loading, type checking and override parsing are OmegaConf's (structured configs: the
dataclass is the schema); the value checks (``validate``) are ours. Anything malformed fails at
start with a ``ConfigError`` that names the key: an unknown key (with the closest known ones), a
value of the wrong type, an impossible value (a negative learning rate, a probability above 1, an
unknown agent spec...).

>>> cfg = load_config(None, SelfPlayConfig, ["num_games=8", "learning_rate=1e-3"])
>>> cfg.num_games, cfg.learning_rate
(8, 0.001)
>>> load_config(None, SelfPlayConfig, ["num_gmaes=8"])
Traceback (most recent call last):
...
train.config.ConfigError: unknown key 'num_gmaes' (from the command line); did you mean num_games, num_minibatches?
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib.util
import inspect
import itertools
import math
import textwrap
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from patchwork_env.evaluation.backend import BACKENDS
from patchwork_env.players.network import NetConfig
from train.cli import MAX_SEED

T = TypeVar("T")


class ConfigError(ValueError):
    """A config that cannot be used; the message names the offending key."""


MAX_INT = 2**31 - 1  # no integer setting needs more; larger ones overflow torch and numpy conversions


def _with_net_keys(after: str) -> Callable[[type[T]], type[T]]:
    """Class decorator (under ``@dataclass``): give the class ``NetConfig``'s fields, with their
    types and defaults, right after the field ``after``; their help text is ``NetConfig``'s field
    docs (``field_docs``). The network's sizes are defined once, in ``patchwork_env.players.network.NetConfig``,
    and stay flat config keys (``channels=64``)."""

    def insert(cls: type[T]) -> type[T]:
        own = inspect.get_annotations(cls)
        net = {f.name: f for f in dataclasses.fields(NetConfig)}
        if clash := net.keys() & own.keys():
            raise TypeError(f"{cls.__name__} redefines the network keys {sorted(clash)}")
        items = list(own.items())
        at = [name for name, _ in items].index(after) + 1
        cls.__annotations__ = dict(items[:at] + [(name, f.type) for name, f in net.items()] + items[at:])
        for name, f in net.items():
            setattr(cls, name, f.default)
        return cls

    return insert


@dataclass
@_with_net_keys(after="progress")
class CommonConfig:
    """Settings shared by every trainer: run folder, seed, network, reward, opponents, evaluation.

    The network keys (``channels``, ``blocks``, ..., ``prior_scale``) are ``NetConfig``'s fields,
    inserted after ``progress`` (``_with_net_keys``). Units: every evaluation size counts paired
    deals, each played twice with the seats swapped (``eval_opponents``, ``final_eval_pairs``, like
    ``patchwork evaluate --pairs``); the periodic keys (``*_every``) count the unit of the
    trainer's run length, named by ``period_unit``."""

    # (unit, run-length key) of the *_every keys: each trainer's own step (a PPO update, an SB3
    # timestep, an AlphaZero or RLlib iteration), so its shipped periods keep their meaning
    period_unit: ClassVar[tuple[str, str]] = ("", "")

    run_name: str = ""
    """Run folder name under ``runs_dir``; empty: ``<config name>-s<seed>-<date-time>``."""
    runs_dir: str = "runs"
    """Folder that holds the run folders (git-ignored)."""
    seed: int = 0
    """Seed of everything random in training (games, sampling, opponent draws, network init)."""
    torch_threads: int = 1
    """Threads torch may use. 1 is fastest on this shared 2-core machine (2 threads fight with the
    game engine and the other processes: several times slower under load); 2 pays only when idle."""
    progress: bool = True
    """Show a progress bar with ETA and the latest evaluation win rates."""

    learning_rate: float = 3e-4
    """Adam learning rate (start value when annealed)."""
    gamma: float = 1.0
    """Discount per own decision (games are short and only the end counts: 1.0)."""
    gae_lambda: float = 0.95
    """GAE lambda over each seat's own decisions."""
    ent_coef: float = 0.01
    """Entropy bonus (entropy over legal actions only)."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Gradient norm clip."""
    reward_margin_weight: float = 0.0
    """Final reward = (1 - w) * (+1 win / -1 loss) + w * clip(score margin / reward_margin_scale, -1, 1)."""
    reward_margin_scale: float = 30.0
    """Score margin (points) that counts as a full +1/-1 in the margin part of the reward."""

    pool_size: int = 8
    """Past snapshots of the learner kept as opponents (the oldest is dropped)."""
    random_weight: float = 0.1
    """Weight of ``random`` among pool opponents."""
    greedy_weight: float = 0.3
    """Weight of ``greedy`` among pool opponents."""
    snapshot_weight: float = 0.6
    """Weight of the past snapshots (together; one drawn uniformly) among pool opponents."""

    eval_opponents: dict[str, int] = field(default_factory=lambda: {"random": 20, "greedy": 50})
    """Periodic evaluation: agent spec -> paired deals (each played twice, seats swapped)."""
    eval_workers: int = 1
    """Processes the arena uses for evaluation (1: in-process; each extra-process evaluation pays
    about 10 s of start-up, so 2 pays only for long evaluations)."""
    final_eval_pairs: int = 100
    """Paired deals (each played twice, seats swapped) against each ``final_eval_opponents`` entry at
    the end of training (0: skip)."""
    final_eval_opponents: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """Agent specs of the final evaluation."""

    def net_config(self) -> NetConfig:
        """The network keys as the ``NetConfig`` they are the fields of."""
        return NetConfig(**{f.name: getattr(self, f.name) for f in dataclasses.fields(NetConfig)})

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first impossible value."""
        try:
            self.net_config().validate(prefix="")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        for key in ("torch_threads", "eval_workers"):
            _positive(self, key)
        _between(self, "seed", 0, MAX_SEED)
        _at_least(self, "final_eval_pairs", 0)
        _above(self, "learning_rate", 0.0)
        _above(self, "reward_margin_scale", 0.0)
        _above(self, "max_grad_norm", 0.0)
        for key in ("gamma", "gae_lambda", "reward_margin_weight"):
            _between(self, key, 0.0, 1.0)
        for key in ("ent_coef", "vf_coef", "random_weight", "greedy_weight", "snapshot_weight"):
            _at_least(self, key, 0.0)
        _at_least(self, "pool_size", 0)
        if self.random_weight + self.greedy_weight + self.snapshot_weight <= 0:
            raise ConfigError("random_weight, greedy_weight and snapshot_weight: at least one must be positive")
        if self.snapshot_weight > 0 and self.pool_size < 1:
            raise ConfigError("pool_size must be >= 1 when snapshot_weight > 0")
        if "/" in self.run_name or self.run_name in (".", ".."):
            raise ConfigError(f"run_name must be a plain folder name, got {self.run_name!r}")
        for spec, pairs in self.eval_opponents.items():
            _check_spec("eval_opponents", spec)
            if pairs < 1:
                raise ConfigError(f"eval_opponents[{spec!r}] must be a positive number of pairs, got {pairs}")
        for spec in self.final_eval_opponents:
            _check_spec("final_eval_opponents", spec)


@dataclass
class SelfPlayConfig(CommonConfig):
    """The batched self-play PPO trainer (``train.selfplay``)."""

    period_unit = ("updates", "total_updates")

    num_games: int = 128
    """Games stepped together on the vector engine (each step: one decision in every game)."""
    rollout_steps: int = 64
    """Vector steps per rollout; the learner's decisions among them form the PPO batch."""
    total_updates: int = 100
    """PPO updates (rollout + optimisation) in the whole run; 0 trains nothing and gives the final
    evaluation of the untrained network (the starting point of a run with the same seed)."""
    time_limit_minutes: float = 0.0
    """Stop early (with a checkpoint and the final evaluation) after this much training; 0: no limit."""
    anneal_lr: bool = True
    """Anneal the learning rate linearly to 0 over ``total_updates``."""
    update_epochs: int = 3
    """Passes over the batch per update."""
    num_minibatches: int = 4
    """Minibatches per pass."""
    clip_coef: float = 0.2
    """PPO ratio clip."""
    clip_vloss: bool = True
    """Clip the value update like the policy's."""
    target_kl: float = 0.0
    """Stop the update's passes early when the approximate KL exceeds this; 0: never."""
    critic_warmup_updates: int = 0
    """First updates that train only the value head (the policy stays exactly the start policy):
    a strong start policy (greedy prior, distillation) with an untrained critic otherwise learns
    from advantages that are mostly the critic's error."""
    anchor_coef: float = 0.0
    """Weight of ``KL(policy || start policy)`` in the PPO loss (the start: the network when PPO
    began, after any distillation); 0: no anchor."""
    prior_lr_scale: float = 1.0
    """Learning rate of the greedy prior's weighting layer (``prior_scale > 0``) relative to the
    rest of the network: its output multiplies greedy's value terms (up to tens of points), so one
    step moves the policy far more than a step of any other layer."""
    final_eval_start: bool = True
    """The final evaluation also plays the start network (update 0: the untrained or distilled
    policy) on the same deals, so the summary shows start and end side by side (``final_start_eval``)."""
    eval_sampled: bool = True
    """Periodic evaluations also play the sampled policy (``eval/win_rate_sampled_vs_<agent>``) next
    to the most probable move (``eval/win_rate_vs_<agent>``)."""
    latest_prob: float = 0.5
    """Share of games where the latest learner plays both seats (both seats' moves are trained on);
    the other games draw an opponent from the pool, and the learner's seat at random."""
    snapshot_every: int = 10
    """Updates (the unit of ``total_updates``) between snapshots of the learner added to the pool."""
    eval_every: int = 10
    """Updates (the unit of ``total_updates``) between arena evaluations (and one at the end); 0: only
    at the end."""
    checkpoint_every: int = 10
    """Updates (the unit of ``total_updates``) between checkpoints (always one at the end)."""
    keep_best: str = ""
    """An ``eval_opponents`` spec: every periodic evaluation that beats the best win rate so far
    against it saves ``checkpoints/best.pt``, and the final evaluation (on deals the periodic ones
    never used) plays that network instead of the last one. Empty: the last network."""

    teacher: str = ""
    """An agent spec (normally ``mcts:sims=100``) whose move choices are distilled into the network
    before PPO starts (``agents.distill``): its *kind* of move (which market patch, leather or
    advance; a search's root visit shares per kind) in ``distill_positions`` greedy self-play
    positions, then in ``distill_rounds`` rounds of the network's own games; placements stay the greedy
    prior's, so it needs ``prior_scale > 0``. Runs once, at the start of a fresh run. Empty: none."""
    distill_positions: int = 60_000
    """Positions sampled for distillation (those with a single legal kind of move are dropped)."""
    distill_temp: float = 0.5
    """Softmax temperature (score points) of the greedy self-play that samples the positions."""
    distill_epochs: int = 6
    """Passes over the labelled positions."""
    distill_lr: float = 1e-3
    """Adam learning rate of the distillation."""
    distill_rounds: int = 0
    """DAgger rounds after the first distillation: each samples ``dagger_positions`` positions of
    the network's own games (half against ``greedy``, half against itself), the teacher labels
    them, and the network trains again on every label so far. The first distillation only sees
    greedy self-play; these rounds show the teacher the positions its student actually reaches."""
    dagger_positions: int = 40_000
    """Positions sampled per DAgger round (those with a single legal kind of move are dropped)."""
    distill_workers: int = 2
    """Processes labelling positions with the teacher (labels do not depend on it); with
    ``distill_backend=ray``, the CPUs of the local Ray runtime the command starts."""
    distill_backend: str = "local"
    """Where the teacher labels: ``local`` (``distill_workers`` processes) or ``ray`` (chunks of
    positions as Ray tasks, ``patchwork_env.evaluation.backend``: on a local Ray runtime, or on the cluster of
    ``--address`` / ``RAY_ADDRESS``; needs the ``scale`` extra). The same labels on both."""

    def validate(self) -> None:
        super().validate()
        if self.teacher:
            _check_spec("teacher", self.teacher)
            if self.net_config().prior_scale <= 0:
                raise ConfigError(
                    "teacher needs prior_scale > 0: distillation trains only the kind of move, placements "
                    "come from the greedy prior"
                )
        _at_least(self, "distill_positions", 2)  # one held out, one to train on
        _at_least(self, "distill_rounds", 0)
        _at_least(self, "dagger_positions", 2)
        for key in ("distill_epochs", "distill_workers"):
            _positive(self, key)
        _check_backend(self, "distill_backend")
        _at_least(self, "distill_temp", 0.0)
        _above(self, "distill_lr", 0.0)
        if self.keep_best and self.keep_best not in self.eval_opponents:
            raise ConfigError(
                f"keep_best must be one of the eval_opponents {sorted(self.eval_opponents)} (or empty), "
                f"got {self.keep_best!r}"
            )
        if self.keep_best and not self.eval_every:
            raise ConfigError("keep_best needs periodic evaluations: set eval_every > 0")
        _at_least(self, "total_updates", 0)
        for key in ("num_games", "rollout_steps", "update_epochs", "num_minibatches"):
            _positive(self, key)
        for key in ("snapshot_every", "checkpoint_every"):
            _positive(self, key)
        _at_least(self, "eval_every", 0)
        _at_least(self, "time_limit_minutes", 0.0)
        _at_least(self, "target_kl", 0.0)
        _at_least(self, "critic_warmup_updates", 0)
        _at_least(self, "anchor_coef", 0.0)
        _at_least(self, "prior_lr_scale", 0.0)
        _above(self, "clip_coef", 0.0)
        _between(self, "latest_prob", 0.0, 1.0)
        if self.num_minibatches > self.num_games * self.rollout_steps // 2:
            raise ConfigError(
                f"num_minibatches ({self.num_minibatches}) is too large for num_games * rollout_steps = "
                f"{self.num_games * self.rollout_steps} decisions per rollout"
            )


@dataclass
class SB3Config(CommonConfig):
    """The sb3-contrib MaskablePPO trainer (``train.sb3_maskable``) on ``SingleAgentEnv``."""

    period_unit = ("learner decisions", "total_timesteps")

    n_envs: int = 8
    """Environments (DummyVecEnv) collecting experience; each has its own pool opponent."""
    n_steps: int = 256
    """Steps per environment per rollout."""
    batch_size: int = 256
    """Minibatch size."""
    n_epochs: int = 4
    """Passes over each rollout."""
    clip_range: float = 0.2
    """PPO ratio clip."""
    total_timesteps: int = 200_000
    """Learner decisions in the whole run."""
    time_limit_minutes: float = 0.0
    """Stop early after this much training (then checkpoint and final evaluation); 0: no limit."""
    latest_prob: float = 0.5
    """Share of episodes played against the latest snapshot of the learner (else a pool opponent)."""
    snapshot_every: int = 10_000
    """Learner decisions (the unit of ``total_timesteps``) between snapshots added to the opponent pool."""
    eval_every: int = 50_000
    """Learner decisions (the unit of ``total_timesteps``) between arena evaluations (and one at the
    end); 0: only at the end."""
    checkpoint_every: int = 50_000
    """Learner decisions (the unit of ``total_timesteps``) between checkpoints (always one at the end)."""

    def validate(self) -> None:
        super().validate()
        for key in ("n_envs", "n_steps", "batch_size", "n_epochs", "total_timesteps", "snapshot_every"):
            _positive(self, key)
        _positive(self, "checkpoint_every")
        _at_least(self, "eval_every", 0)
        _at_least(self, "time_limit_minutes", 0.0)
        _above(self, "clip_range", 0.0)
        _between(self, "latest_prob", 0.0, 1.0)
        if (prior_scale := self.net_config().prior_scale) != 0:
            raise ConfigError(
                f"prior_scale must be 0 for the MaskablePPO trainer, got {prior_scale}: its policy sees "
                "observations only, and the greedy prior is computed from game states (use train.selfplay)"
            )
        if self.batch_size > self.n_envs * self.n_steps:
            raise ConfigError(
                f"batch_size ({self.batch_size}) must be at most n_envs * n_steps = {self.n_envs * self.n_steps}"
            )


# --- checks ------------------------------------------------------------------------------------
def _positive(cfg: Any, key: str) -> None:
    _at_least(cfg, key, 1)


def _at_least(cfg: Any, key: str, low: float) -> None:
    value = getattr(cfg, key)
    if value < low:
        raise ConfigError(f"{key} must be >= {low}, got {value!r}")


def _above(cfg: Any, key: str, low: float) -> None:
    value = getattr(cfg, key)
    if not value > low:
        raise ConfigError(f"{key} must be > {low}, got {value!r}")


def _between(cfg: Any, key: str, low: float, high: float) -> None:
    value = getattr(cfg, key)
    if not low <= value <= high:
        raise ConfigError(f"{key} must be in [{low}, {high}], got {value!r}")


def _check_backend(cfg: Any, key: str) -> None:
    """A backend name of ``patchwork_env.evaluation.backend.BACKENDS``; ``ray`` only with ray installed."""
    value = getattr(cfg, key)
    if value not in BACKENDS:
        raise ConfigError(f"{key} must be one of {', '.join(map(repr, BACKENDS))}, got {value!r}")
    if value == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError(f'{key}=ray needs the optional extra "scale": pip install -c constraints.txt -e ".[scale]"')


def _check_spec(key: str, spec: str) -> None:
    """``spec`` must build (not only parse): bad values, missing or broken checkpoints fail here, at
    load, before the run folder is written."""
    from patchwork_env.players.registry import AgentSpecError, make_agent

    try:
        make_agent(spec)
    except AgentSpecError as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(f"{key}: {first}") from None


def _check_checkpoint(key: str, path: str) -> None:
    """``path`` (if given) must be a readable checkpoint whose network builds: an unreadable file
    fails here, at load, not after the run folder is written."""
    if not path:
        return
    if not Path(path).is_file():
        raise ConfigError(f"{key}: no such file {path!r}")
    from patchwork_env.players.policy import net_from_checkpoint, read_checkpoint

    try:
        net_from_checkpoint(read_checkpoint(path), path)
    except (ValueError, OSError) as exc:  # CheckpointError is a ValueError
        raise ConfigError(f"{key}: {str(exc).splitlines()[0]}") from None


# --- loading (OmegaConf structured configs) --------------------------------------------------
C = TypeVar("C", bound=CommonConfig)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _offending(data: dict[str, Any], full_key: str) -> Any:
    """The value at OmegaConf's ``full_key`` (``a.b``) in the mapping the user gave."""
    value: Any = data
    for part in str(full_key).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _check_numbers(cfg: CommonConfig) -> None:
    """What OmegaConf lets through: NaN/inf floats, integers too large for torch and numpy."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        numbers = value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]
        for number in numbers:
            if isinstance(number, float) and not math.isfinite(number):
                raise ConfigError(f"{f.name} must be a finite number, got {value!r}")
            if isinstance(number, int) and not isinstance(number, bool) and abs(number) > MAX_INT:
                raise ConfigError(f"{f.name} must be an integer of magnitude <= {MAX_INT}, got {value!r}")


def from_dict(cls: type[C], data: dict[str, Any], source: str = "the config") -> C:
    """A validated ``cls`` from a mapping of field names to values: OmegaConf checks the types
    against the dataclass (each given key replaces the default whole, dicts included), then
    ``validate`` checks the values."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must be a mapping of keys to values, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    schema = OmegaConf.structured(cls)
    for key, value in data.items():
        if key not in hints:
            close = difflib.get_close_matches(str(key), names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; known keys: {', '.join(names)}"
            raise ConfigError(f"unknown key {key!r} ({source}){hint}")
        if hints[key] is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # YAML's 8 for a float key (OmegaConf no longer converts implicitly)
        try:
            setattr(schema, key, value)
        except (OmegaConfBaseException, TypeError, ValueError) as exc:
            full_key = str(getattr(exc, "full_key", "") or key)
            bad = _offending(data, full_key)
            inner = typing.get_args(hints[key])  # an entry of a dict or list: its own type
            expected = _type_name(hints[key] if full_key == key or not inner else inner[-1])
            entry = full_key if "." not in full_key else f"{key}[{full_key.split('.', 1)[1]!r}]"
            raise ConfigError(f"{entry} must be {expected}, got {type(bad).__name__} {bad!r}") from None
    cfg = typing.cast(C, OmegaConf.to_object(schema))
    _check_numbers(cfg)
    cfg.validate()
    return cfg


def _one_line(exc: Exception) -> str:
    """A multi-line parser message on one line (command-line errors are one line)."""
    return " ".join(str(exc).split())


def parse_overrides(overrides: list[str]) -> dict[str, Any]:
    """``["key=value", ...]`` to a mapping, values parsed by OmegaConf's dotlist grammar (``3``,
    ``1e-3``, ``true``, ``{greedy: 50}``...); ``key=`` gives the empty string."""
    for item in overrides:
        key, eq, _ = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"override {item!r} must look like key=value")
    try:
        parsed = OmegaConf.to_container(OmegaConf.from_dotlist([o.strip() for o in overrides]))
    except (OmegaConfBaseException, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot parse the overrides {overrides}: {_one_line(exc)}") from None
    return {str(k): "" if v is None else v for k, v in typing.cast(dict[str, Any], parsed).items()}


def read_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found: {p}")
    try:
        data = OmegaConf.to_container(OmegaConf.load(p))
    except (OmegaConfBaseException, yaml.YAMLError) as exc:
        raise ConfigError(f"{p} is not valid YAML: {_one_line(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p} must hold a mapping of keys to values, got {type(data).__name__}")
    return {str(k): v for k, v in data.items()}


def load_config(path: str | Path | None, cls: type[C], overrides: list[str] | None = None) -> C:
    """The config in the YAML file ``path`` (defaults if None) with ``key=value`` overrides."""
    data = read_yaml(path) if path is not None else {}
    source = str(path) if path is not None else "defaults"
    if data:
        from_dict(cls, data, source)  # report file errors against the file
    extra = parse_overrides(overrides or [])
    return from_dict(cls, {**data, **extra}, "from the command line" if extra else source)


def to_yaml(cfg: CommonConfig) -> str:
    """The resolved config as YAML (every field, in declaration order)."""
    return yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=False)


def _class_docs(klass: type) -> dict[str, str]:
    """The docstrings (string literals under the fields) in ``klass``'s own body."""
    docs: dict[str, str] = {}
    tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    for node, nxt in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal under it in the class body), base classes first;
    the network keys have ``NetConfig``'s."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is CommonConfig:
            docs.update({name: f"Network: {doc[:1].lower()}{doc[1:]}" for name, doc in _class_docs(NetConfig).items()})
        if dataclasses.is_dataclass(klass):
            docs.update(_class_docs(klass))
    return docs


def describe(cls: type[CommonConfig]) -> str:
    """Help text: every key with its type, default and docstring."""
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    unit, length = cls.period_unit
    lines = [
        f"{cls.__name__} keys (YAML file and key=value overrides). Units: *_every keys count {unit} "
        f"(as {length} does); evaluation sizes count paired deals (each deal played twice, seats swapped)."
    ]
    default = cls()
    for f in dataclasses.fields(cls):
        lines.append(f"  {f.name}: {_type_name(hints[f.name])} = {getattr(default, f.name)!r}")
        lines.append(f"      {docs.get(f.name, '')}")
    return "\n".join(lines)


@dataclass
class AlphaZeroConfig(CommonConfig):
    """The AlphaZero-style trainer (``train.alphazero``): batched search self-play, a replay buffer,
    a learner. Of the shared keys it uses the run folder, seed, threads, network, ``learning_rate``,
    ``max_grad_norm``, ``vf_coef``, ``reward_margin_weight`` (the value target's weight of the score
    margin, over a fixed 30 points: ``patchwork_env.players.az_search.final_value``) and the evaluation keys; the
    PPO-only keys (gamma, gae_lambda, ent_coef, reward_margin_scale, the opponent pool) are ignored."""

    period_unit = ("iterations", "iterations")

    init_checkpoint: str = ""
    """Start from the network in this checkpoint (e.g. a distilled one); empty: a fresh network
    (with ``prior_scale > 0``: a softened greedy)."""
    iterations: int = 100
    """Iterations of self-play + learning."""
    time_limit_minutes: float = 0.0
    """Stop after this much training (then checkpoint and the final evaluation); 0: no limit."""
    games_per_iteration: int = 64
    """Self-play games per iteration, all searched together (one forward pass per simulation step)."""
    sims: int = 16
    """Search simulations per self-play decision."""
    root: str = "gumbel"
    """Root of the search: ``gumbel`` (Gumbel top-k + sequential halving, policy target from the
    completed Q values) or ``puct`` (Dirichlet noise, visit-count target)."""
    considered: int = 8
    """Gumbel root: actions kept for sequential halving."""
    rescale_values: bool = False
    """Gumbel root: min-max rescale the Q values before they enter the policy target (mctx's
    default; see ``patchwork_env.players.az_search.SearchConfig.rescale_values`` for why it is off)."""
    train_placements: bool = True
    """Train every parameter. False: the placement-only parameters (``agents.distill.PLACEMENT_ONLY``)
    stay as they start, so placements stay the greedy prior's (``agents.distill`` measured that
    retraining them against a search teacher placed worse) and the search teaches which kind of move."""
    c_puct: float = 1.25
    """PUCT exploration constant below the root (and at a PUCT root)."""
    dirichlet_alpha: float = 0.3
    """PUCT root: Dirichlet noise parameter."""
    dirichlet_eps: float = 0.25
    """PUCT root: weight of the Dirichlet noise."""
    temp_plies: int = 8
    """Self-play decisions (from the start of a game) whose move is sampled from the policy target;
    later moves are the search's choice."""
    selfplay_backend: str = "local"
    """Where the self-play games run: ``local`` (this process) or ``ray`` (each chunk of
    ``selfplay_chunk`` games one Ray task, ``agents.az_backend``: on a local Ray runtime, or on the
    cluster of ``--address`` / ``RAY_ADDRESS``; needs the ``scale`` extra). The same samples on both
    for the same ``selfplay_chunk``."""
    selfplay_chunk: int = 0
    """Games per self-play chunk (searched together, one forward pass per simulation step); 0: all
    ``games_per_iteration`` in one. Each game's deal and random stream do not depend on it, but a
    batch of another size may round the network's outputs differently (``agents.az_backend``).
    Needs > 0 with ``selfplay_backend=ray``."""
    buffer_size: int = 60_000
    """Replay buffer capacity (positions; the newest are kept)."""
    batch_size: int = 256
    """Learner minibatch size."""
    updates_per_iteration: int = 40
    """Learner steps after each iteration's self-play."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    warmup_games: int = 256
    """Greedy self-play games whose outcomes train the value head before the first iteration (0: none)."""
    warmup_steps: int = 300
    """Value-only learner steps on the warm-up games."""
    warmup_temp: float = 0.5
    """Softmax temperature (score points) of the warm-up games' greedy play."""
    eval_every: int = 5
    """Iterations (the unit of ``iterations``) between arena evaluations of the network alone (and
    one at the end); 0: only at the end."""
    checkpoint_every: int = 1
    """Iterations (the unit of ``iterations``) between checkpoints (``latest.pt``, and ``iter_<k>.pt``
    at every evaluation)."""

    def validate(self) -> None:
        super().validate()
        for key in ("iterations", "games_per_iteration", "sims", "considered", "buffer_size", "batch_size"):
            _positive(self, key)
        for key in (
            "updates_per_iteration",
            "warmup_games",
            "warmup_steps",
            "temp_plies",
            "eval_every",
            "selfplay_chunk",
        ):
            _at_least(self, key, 0)
        _check_backend(self, "selfplay_backend")
        if self.selfplay_backend == "ray" and not self.selfplay_chunk:
            raise ConfigError(
                "selfplay_backend=ray plays chunks of selfplay_chunk games as Ray tasks: set selfplay_chunk > 0 "
                f"(at most games_per_iteration = {self.games_per_iteration})"
            )
        _positive(self, "checkpoint_every")
        _at_least(self, "time_limit_minutes", 0.0)
        _at_least(self, "warmup_temp", 0.0)
        _at_least(self, "weight_decay", 0.0)
        _at_least(self, "c_puct", 0.0)
        _above(self, "dirichlet_alpha", 0.0)
        _between(self, "dirichlet_eps", 0.0, 1.0)
        if self.root not in ("gumbel", "puct"):
            raise ConfigError(f"root must be 'gumbel' or 'puct', got {self.root!r}")
        _check_checkpoint("init_checkpoint", self.init_checkpoint)


@dataclass
class RLlibConfig(CommonConfig):
    """RLlib PPO (new API stack), multi-agent self-play on the AEC env (``train.rllib_selfplay``).

    From ``CommonConfig``: the network keys, ``learning_rate``, ``gamma``, ``gae_lambda``,
    ``ent_coef``, ``vf_coef``, ``max_grad_norm``, the opponent weights (``random_weight``,
    ``greedy_weight``, ``snapshot_weight``; ``pool_size`` frozen past copies) and the evaluation
    keys. ``reward_margin_weight`` and ``reward_margin_scale`` are not used: see ``reward``."""

    period_unit = ("iterations", "total_iterations")

    reward: str = "score"
    """The AEC env's final reward: "win" (+1/-1) or "score" (score margin / 100, clipped to [-1, 1])."""
    num_env_runners: int = 1
    """RLlib EnvRunner actors that sample games (one CPU each, anywhere on the Ray cluster); 0 samples
    in the trainer's own process."""
    num_envs_per_env_runner: int = 8
    """Games each EnvRunner steps side by side (one batched forward pass per step)."""
    num_cpus_per_env_runner: int = 1
    """CPUs Ray reserves for each EnvRunner."""
    num_cpus_for_main_process: int = 1
    """CPUs Ray reserves for the trainer's process, which also holds the (single, local) learner."""
    train_batch_size: int = 4000
    """Env steps (decisions of both seats) sampled per training iteration."""
    minibatch_size: int = 500
    """PPO minibatch (learner decisions)."""
    num_epochs: int = 2
    """Passes over each iteration's batch."""
    clip_param: float = 0.2
    """PPO ratio clip."""
    total_iterations: int = 100
    """Training iterations (sample + PPO update) in the whole run."""
    time_limit_minutes: float = 0.0
    """Stop early (checkpoint, then the final evaluation) after this much training; 0: no limit."""
    latest_prob: float = 0.5
    """Share of games where the learner plays both seats; the others put a pool opponent in one seat
    (greedy, random or a frozen past copy, by the weights), the learner's seat drawn per game."""
    snapshot_every: int = 5
    """Iterations (the unit of ``total_iterations``) between copies of the learner into the frozen
    pool (oldest slot replaced)."""
    eval_every: int = 5
    """Iterations (the unit of ``total_iterations``) between arena evaluations (and one at the end);
    0: only at the end."""
    checkpoint_every: int = 10
    """Iterations (the unit of ``total_iterations``) between checkpoints (final.pt and RLlib's own
    checkpoint at the end)."""
    init_checkpoint: str = ""
    """A checkpoint of this project (e.g. ``train.selfplay``'s ``final.pt``) whose network starts the
    learner and the frozen pool; its network settings must equal the config's. Empty: a fresh network."""

    def validate(self) -> None:
        super().validate()
        _check_checkpoint("init_checkpoint", self.init_checkpoint)
        if self.reward not in ("win", "score"):
            raise ConfigError(f"reward must be 'win' or 'score', got {self.reward!r}")
        _at_least(self, "num_env_runners", 0)
        for key in (
            "num_envs_per_env_runner",
            "num_cpus_per_env_runner",
            "num_cpus_for_main_process",
            "train_batch_size",
            "minibatch_size",
            "num_epochs",
            "snapshot_every",
            "checkpoint_every",
        ):
            _positive(self, key)
        _at_least(self, "total_iterations", 0)
        _at_least(self, "eval_every", 0)
        _at_least(self, "time_limit_minutes", 0.0)
        _above(self, "clip_param", 0.0)
        _between(self, "latest_prob", 0.0, 1.0)
        if self.minibatch_size > self.train_batch_size:
            raise ConfigError(
                f"minibatch_size ({self.minibatch_size}) must be at most train_batch_size ({self.train_batch_size})"
            )
