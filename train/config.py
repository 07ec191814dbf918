"""Trainer configs: one dataclass per trainer. A field's docstring is its ``--help`` text (tyro reads
it); ``train.cli`` loads a YAML file into the dataclass and applies the command line's options.

Units: evaluation sizes count paired deals, each played twice with the seats swapped
(``eval_opponents``, ``final_eval_pairs``); ``*_every`` fields count the trainer's own step, named
in its docstring. A field's bounds stand beside it (``bounded``, ``above``: far above any config
shipped here, low enough that a typo such as 2147483647 games is refused before anything is
allocated) and one check reads them all (``check_bounds``: the rule of ``patchwork_env.core.bounds``,
which the agent specs and the nested groups ``net:`` and ``search:`` use too); ``validate`` adds
what spans fields. The agents and checkpoints a config names are built or read by the run, once.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agents.expert import SearchSettings
from patchwork_env.core.bounds import MAX_PAIRS, MAX_SEED, above, bounded, field_problem, one_of
from patchwork_env.evaluation.backend import BACKENDS
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.search_config import SearchConfig


class ConfigError(ValueError):
    """A config that cannot be used; the message names the field."""


CLOCKS = ("wall", "process")
# the engine's sizes, for memory estimates without loading it (tests/test_config.py checks them)
OBS_DIM, NUM_ACTIONS, STATE_LEN, PRIOR_FEATURES = 1452, 2026, 129, 9
RUN_DIR = re.compile(r"^[A-Za-z0-9._/\-]*$")
NAME_MAX = 255  # bytes of a file name on Linux and macOS (run_dir's characters are one byte each)
INF = math.inf
MAX_POSITIONS = 10**7  # positions labelled, played or trained on
MAX_GAMES = 100_000  # a value fit's games: about 4 million positions, beyond it they outgrow the memory
# a labelled position of distillation and expert iteration: its state, targets and network inputs
LABEL_BYTES = 8 * STATE_LEN + 40 + 4 * OBS_DIM + NUM_ACTIONS + 2 * NUM_ACTIONS * PRIOR_FEATURES


@dataclass
class CommonConfig:
    """What every trainer shares: the run folder, seeds and threads, the network, the evaluations."""

    run_dir: str = ""
    """Run folder (letters, digits, ``._-/``); empty: ``runs/<config name>-s<seed>-<date-time>``. A
    folder that holds another run is refused (a run folder belongs to one run) unless the run
    resumes it or ``overwrite`` is set."""
    overwrite: bool = False
    """Start afresh in a ``run_dir`` that holds an earlier run: its files are removed first."""
    seed: int = bounded(0, 0, MAX_SEED)
    """Seed of everything random in training (games, sampling, opponents, network init)."""
    torch_threads: int = bounded(1, 1, 256)
    """Threads torch may use. 1 leaves the other core to the game engine."""
    progress: bool = True
    """Show progress (bars, one line per evaluation)."""
    clock: str = one_of("wall", *CLOCKS)
    """What a minute of training is (time limits, minute checkpoints, the curve's x axis): ``wall``
    (elapsed time) or ``process`` (this process's CPU time, so that runs sharing the cores get the
    same compute per minute; work done by Ray workers does not count)."""
    net: NetConfig = field(default_factory=NetConfig)
    """The network's sizes (``patchwork_env.players.net_config``)."""
    learning_rate: float = above(1e-3, 0.0)
    """Adam learning rate of the network (AdamW in AlphaZero; the start value when annealed)."""
    eval_opponents: dict[str, int] = field(default_factory=lambda: {"random": 20, "greedy": 50})
    """Periodic evaluation: agent spec -> paired deals."""
    eval_workers: int = bounded(1, 1, 256)
    """Processes of the evaluations (1: in this process)."""
    final_eval_pairs: int = bounded(100, 0, MAX_PAIRS)
    """Paired deals against each of ``final_eval_opponents`` at the end, on deals no periodic
    evaluation played; 0: none."""
    final_eval_opponents: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """Agent specs of the final evaluation."""
    final_eval_start: bool = True
    """The final evaluation also plays the network the run started from, on the same deals."""
    # the loop (``train.loop``); a step is the trainer's unit: an update, an iteration, a round
    init_checkpoint: str = ""
    """Start from the network in this checkpoint (its sizes replace ``net``); empty: a fresh network."""
    time_limit_minutes: float = bounded(0.0, 0.0, INF)
    """Stop after the step that reaches this many minutes of training (then the final evaluation); 0: no limit."""
    eval_every: int = bounded(10, 0, 10**10)
    """Steps between periodic evaluations (also one at the start and one at the last step); 0: none
    (the final evaluation on fresh deals still runs)."""
    checkpoint_every: int = bounded(10, 1, 10**10)
    """Steps between resumable checkpoints ``checkpoints/latest.pt`` (also at the last step and on Ctrl-C)."""
    checkpoint_minutes: list[float] = field(default_factory=list)
    """Also keep ``checkpoints/minute-<m>.pt``, the network after the step that passes ``m``
    minutes of training (for curves over compute, e.g. ``[10, 30, 60]``)."""
    resume: str = ""
    """A run's ``checkpoints/latest.pt`` to continue: its config is the starting point of the options
    given; its network, optimizer, pools, buffers, generators, counters and minutes are restored."""

    def memory_bytes(self) -> int:
        """A rough estimate of the largest buffers the run allocates (checked against the machine's
        free memory at the start of a run: ``train.run.preflight``)."""
        return 0

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first impossible value."""
        check_bounds(self)
        if not RUN_DIR.match(self.run_dir) or ".." in self.run_dir.split("/"):
            raise ConfigError(f"run_dir may hold letters, digits and ._-/ (no '..'), got {self.run_dir!r}")
        longest = max(self.run_dir.split("/"), key=len)
        if len(longest) > NAME_MAX:
            raise ConfigError(f"run_dir: a folder name is at most {NAME_MAX} characters, got {len(longest)}")
        check_opponents(self, "eval_opponents")
        if any(not spec.strip() for spec in self.final_eval_opponents):
            raise ConfigError("final_eval_opponents: an agent spec must not be empty")
        check_minutes(self, "checkpoint_minutes")


@dataclass
class PPOConfig(CommonConfig):
    """What the PPO trainers share (self-play, MaskablePPO, RLlib): the loss, the reward, the pool."""

    gamma: float = bounded(1.0, 0.0, 1.0)
    """Discount per own decision (only the end of a game is rewarded: 1.0)."""
    gae_lambda: float = bounded(0.95, 0.0, 1.0)
    """GAE lambda over each seat's own decisions."""
    ent_coef: float = bounded(0.01, 0.0, INF)
    """Entropy bonus (entropy over legal actions only)."""
    vf_coef: float = bounded(0.5, 0.0, INF)
    """Weight of the value loss."""
    max_grad_norm: float = above(0.5, 0.0)
    """Gradient norm clip."""
    reward_margin_weight: float = bounded(0.0, 0.0, 1.0)
    """Final reward = (1 - w) * (+1 win / -1 loss) + w * clip(margin / reward_margin_scale, -1, 1)."""
    reward_margin_scale: float = above(30.0, 0.0)
    """Score margin (points) that counts as a full +1/-1 in the margin part of the reward."""
    pool_size: int = bounded(8, 0, 1000)
    """Past snapshots of the learner kept as opponents (the oldest is dropped)."""
    latest_prob: float = bounded(0.5, 0.0, 1.0)
    """Share of games where the latest learner plays both seats; the others draw a pool opponent."""
    random_weight: float = bounded(0.1, 0.0, INF)
    """Weight of ``random`` among pool opponents."""
    greedy_weight: float = bounded(0.3, 0.0, INF)
    """Weight of ``greedy`` among pool opponents."""
    snapshot_weight: float = bounded(0.6, 0.0, INF)
    """Weight of the past snapshots (together; one drawn uniformly) among pool opponents."""
    snapshot_every: int = bounded(10, 1, 10**10)
    """Steps between snapshots of the learner added to the pool."""
    epochs: int = bounded(2, 1, 1000)
    """Passes over each step's batch."""
    clip_coef: float = above(0.2, 0.0)
    """PPO ratio clip."""

    def validate(self) -> None:
        super().validate()
        if self.random_weight + self.greedy_weight + self.snapshot_weight <= 0:
            raise ConfigError("random_weight, greedy_weight and snapshot_weight: at least one must be positive")
        if self.snapshot_weight > 0 and self.pool_size < 1:
            raise ConfigError("pool_size must be >= 1 when snapshot_weight > 0")


@dataclass
class SelfPlayConfig(PPOConfig):
    """Batched self-play PPO (``train.selfplay``); its step is one update (rollout + optimisation)."""

    num_games: int = bounded(128, 1, 65_536)
    """Games stepped together on the vector engine (each step: one decision in every game)."""
    rollout_steps: int = bounded(64, 1, 4096)
    """Vector steps per rollout; the learner's decisions among them form the PPO batch."""
    total_updates: int = bounded(100, 0, 10**7)
    """PPO updates in the run; 0 trains nothing (the final evaluation of the start)."""
    anneal_lr: bool = True
    """Anneal the learning rate linearly to 0 over ``total_updates``."""
    num_minibatches: int = bounded(4, 1, 65_536)
    """Minibatches per pass."""
    clip_vloss: bool = True
    """Clip the value update like the policy's."""
    target_kl: float = bounded(0.0, 0.0, INF)
    """Stop an update's passes early when the approximate KL exceeds this; 0: never."""
    critic_warmup_updates: int = bounded(0, 0, 10**7)
    """First updates that train only the value head (the policy stays the start policy). Must be
    below ``total_updates``, or the policy never trains."""
    anchor_coef: float = bounded(0.0, 0.0, INF)
    """Weight of ``KL(policy || start policy)`` in the loss; 0: no anchor."""
    prior_lr_scale: float = bounded(1.0, 0.0, INF)
    """Learning rate of the greedy prior's weighting layer relative to the rest (``net.prior_scale > 0``):
    its output multiplies greedy's value terms, so one step moves the policy far."""
    eval_sampled: bool = True
    """Periodic evaluations also play the sampled policy (``eval/win_rate_sampled_vs_<agent>``)."""
    keep_best: str = ""
    """An ``eval_opponents`` spec: the network of the best periodic win rate against it is kept as
    ``checkpoints/best.pt``, and the final evaluation plays it. Empty: the last network."""

    def memory_bytes(self) -> int:
        """The rollout buffer and its training batch: observation, mask and greedy-prior terms
        (float16) of every decision."""
        prior = 2 * NUM_ACTIONS * PRIOR_FEATURES if self.net.prior_scale > 0 else 0
        return 2 * self.num_games * self.rollout_steps * (4 * OBS_DIM + NUM_ACTIONS + prior)

    def validate(self) -> None:
        super().validate()
        check_product(self, "num_games", "rollout_steps", 2**21, "decisions per rollout (the buffer holds them all)")
        if self.total_updates and self.critic_warmup_updates >= self.total_updates:
            raise ConfigError(
                f"critic_warmup_updates ({self.critic_warmup_updates}) must be below total_updates "
                f"({self.total_updates}): the policy would never train"
            )
        if self.keep_best and self.keep_best not in self.eval_opponents:
            raise ConfigError(
                f"keep_best must be one of the eval_opponents {sorted(self.eval_opponents)} "
                f"(or empty), got {self.keep_best!r}"
            )
        if self.keep_best and not self.eval_every:
            raise ConfigError("keep_best needs periodic evaluations: set eval_every > 0")
        if self.num_minibatches > self.num_games * self.rollout_steps // 2:
            raise ConfigError(
                f"num_minibatches ({self.num_minibatches}) is too large for num_games * rollout_steps "
                f"= {self.num_games * self.rollout_steps} decisions per rollout"
            )


@dataclass
class ParallelConfig(CommonConfig):
    """What the trainers whose work can run on Ray share (distillation and expert iteration label
    positions, AlphaZero plays its self-play games): where that work runs."""

    backend: str = one_of("local", *BACKENDS)
    """Where the trainer's labelling or self-play runs: ``local`` (this machine) or ``ray`` (Ray tasks,
    on a local runtime or the cluster of ``address``); the same results on both."""
    address: str = ""
    """With ``backend=ray``: the Ray cluster to join (``auto`` or HOST:PORT); empty: a local runtime."""

    def validate(self) -> None:
        super().validate()
        if self.address and self.backend != "ray":
            raise ConfigError("address needs backend=ray (it names the Ray cluster the work runs on)")


@dataclass
class KindConfig(ParallelConfig):
    """What the trainers of the choice of move kind share (distillation, expert iteration): a
    greedy-prior network whose choice of kind is trained, its placements staying the prior's."""

    method: ClassVar[str] = "distillation"  # in the error that asks for the prior
    net: NetConfig = field(
        default_factory=lambda: NetConfig(head_features=8, prior_scale=2.0, group_scale=True, kind_weights=True)
    )
    """The network's sizes when ``init_checkpoint`` is empty; it needs the greedy prior
    (``prior_scale > 0``): only the choice of move kind is trained."""

    def validate(self) -> None:
        super().validate()
        if not self.init_checkpoint and self.net.prior_scale <= 0:
            raise ConfigError(
                f"{self.method} trains the choice of move kind and needs net.prior_scale > 0 "
                "(placements come from the greedy prior)"
            )


@dataclass
class DistillConfig(KindConfig):
    """Distillation with DAgger rounds (``train.distill``): a search teacher's choice of move kind
    (which market patch, leather or advance) taught to a greedy-prior network; placements stay
    the prior's. Its step is one round of labels."""

    teacher: str = "mcts:sims=100"
    """The agent spec whose move choices are distilled (root visit shares per kind of move)."""
    positions: int = bounded(60_000, 2, 10**7)
    """Greedy self-play positions labelled first (those with one legal kind of move are dropped)."""
    temp: float = bounded(0.5, 0.0, INF)
    """Softmax temperature (score points) of the greedy self-play that samples them."""
    rounds: int = bounded(0, 0, 1000)
    """DAgger rounds after the first: each labels ``dagger_positions`` positions of the network's own
    games (half against greedy, half against itself) and trains again on every label so far."""
    dagger_positions: int = bounded(40_000, 2, 10**7)
    """Positions sampled per DAgger round."""
    epochs: int = bounded(6, 1, 1000)
    """Passes over the labels per round."""
    workers: int = bounded(2, 1, 256)
    """Processes labelling positions (with ``backend=ray``: CPUs of the local Ray runtime)."""

    def memory_bytes(self) -> int:
        """Every labelled position (state, targets) and its network inputs in a training pass."""
        positions = self.positions + self.rounds * self.dagger_positions
        return positions * LABEL_BYTES

    def validate(self) -> None:
        super().validate()
        if not self.teacher.strip():
            raise ConfigError("teacher must be an agent spec, e.g. mcts:sims=100")


@dataclass
class ExItConfig(SearchSettings, KindConfig):
    """Expert iteration (``train.exit``): the ``az`` search with the network labels positions of the
    network's own games, the network's choice of move kind is fitted to a window of recent labels,
    and a gate keeps the better of the fitted network and the one before. Its step is one iteration
    (positions, labels, fit, gate). The labelling search's settings are the expert's
    (``agents.expert.SearchSettings``: ``search``, ``rollouts``, ``target``, ``search_batch``,
    ``unsure_sims``, ``unsure_margin``)."""

    method: ClassVar[str] = "expert iteration"
    iterations: int = bounded(20, 1, 10**7)
    """Iterations of positions -> labels -> fit -> gate."""
    positions_per_iteration: int = bounded(1500, 2, 10**7)
    """Positions labelled per iteration (all with a choice of move kind)."""
    greedy_share: float = bounded(0.5, 0.0, 1.0)
    """Share of the positions from the network's games against ``greedy`` (it plays its most
    probable move); the rest from its games against itself (sampled from its policy)."""
    position_stride: int = bounded(4, 1, 1000)
    """Decisions played per position kept (a random subset is kept: positions from more games)."""
    window: int = bounded(6, 1, 1000)
    """Iterations of labels the fit trains on (the newest)."""
    epochs: int = bounded(2, 1, 1000)
    """Passes over the window per iteration."""
    batch_size: int = bounded(256, 1, 1_048_576)
    """Minibatch of the fit."""
    gate_pairs: int = bounded(100, 1, MAX_PAIRS)
    """Paired deals of the gate (the fitted network against the one before it)."""
    gate_threshold: float = bounded(0.5, 0.0, 1.0)
    """The fitted network is kept only if its gate win rate is above this; else the old weights come back."""
    search_eval_opponents: dict[str, int] = field(default_factory=dict)
    """At each evaluation, also the ``az`` search with the current network (``search_eval_sims``
    simulations, the agent's other defaults) against these specs, paired deals each, e.g.
    ``{"mcts:sims=100": 20}``; empty: none. Costly: each az move is a search."""
    search_eval_sims: int = bounded(300, 1, 100_000)
    """Simulations per move of the ``az`` search in ``search_eval_opponents`` (the ``az`` agent's default)."""

    def memory_bytes(self) -> int:
        """The window's labelled positions and their network inputs in a training pass, and one
        iteration's search labels (float32 over every action)."""
        return (self.window * LABEL_BYTES + 4 * NUM_ACTIONS) * self.positions_per_iteration

    def validate(self) -> None:
        super().validate()
        check_product(
            self, "positions_per_iteration", "position_stride", MAX_POSITIONS, "decisions played per iteration"
        )
        check_product(self, "window", "positions_per_iteration", MAX_POSITIONS, "labels trained on")
        try:
            self.search_config()  # what spans the expert's settings (unsure_sims above search.sims)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        check_opponents(self, "search_eval_opponents")


@dataclass
class AlphaZeroConfig(ParallelConfig):
    """Gumbel AlphaZero with the compiled search (``train.alphazero``): the search's own games teach
    the compiled model at its leaves and its prior over whole moves. Its step is one iteration
    (self-play games, then learner steps on a window of the newest decisions)."""

    eval_opponents: dict[str, int] = field(default_factory=lambda: {"az:value=v1,sims=128": 50})
    """Periodic evaluation of the search with the model (``eval_sims``): agent spec -> paired deals."""
    final_eval_opponents: list[str] = field(default_factory=lambda: ["greedy", "az:value=v1,sims=128"])
    """Agent specs of the final evaluation (the search with the model, ``eval_sims``)."""
    iterations: int = bounded(200, 1, 10**7)
    """Iterations of self-play + learning."""
    games_per_iteration: int = bounded(384, 1, 65_536)
    """Self-play games per iteration."""
    search: SearchConfig = field(default_factory=lambda: SearchConfig(sims=256, considered=16, margin_weight=0.2))
    """The full search of self-play (``search.sims`` simulations; its policy target is recorded);
    ``margin_weight`` also weighs the score margin in the value target."""
    fast_sims: int = bounded(64, 1, 100_000)
    """Simulations of the fast searches (the decisions that are not full searches: values only)."""
    full_share: float = bounded(0.25, 0.0, 1.0)
    """Share of the decisions searched in full (playout-cap randomisation)."""
    opening: int = bounded(8, 0, 1000)
    """Decisions from the start of a game whose move is sampled (Gumbel) in a fast search too."""
    width: int = bounded(2, 1, 64)
    """Candidates of each kind of move at a node of the search (the prior's best of each kind)."""
    prior_temp: float = above(20.0, 0.0)
    """Temperature (score points) of the greedy prior the model starts from."""
    init: str = "scratch"
    """The value the model starts from: ``scratch`` (fresh layers, value 0 everywhere) or a value
    model (a shipped version such as ``v1``, or a file); the prior starts as greedy's either way."""
    hidden: list[int] = field(default_factory=lambda: [128, 64])
    """Hidden sizes of a model started from scratch."""
    q_weight: float = bounded(0.25, 0.0, 1.0)
    """Value target: ``(1 - q_weight) * game result + q_weight * the search's root value``."""
    weight_decay: float = bounded(1e-4, 0.0, INF)
    """AdamW weight decay."""
    max_grad_norm: float = above(1.0, 0.0)
    """Gradient norm clip."""
    batch_size: int = bounded(512, 1, 1_048_576)
    """Learner minibatch (decisions, sampled uniformly from the window)."""
    window: int = bounded(400_000, 1, MAX_POSITIONS)
    """Decisions of the newest iterations the learner samples from (whole iterations, at least the newest)."""
    reuse: float = above(4.0, 0.0, 1000.0)
    """Learner steps per iteration: ``reuse * new decisions / batch_size`` (each decision seen about
    ``reuse`` times)."""
    eval_sims: int = bounded(128, 1, 100_000)
    """Simulations per move of the search with the model in the evaluations."""
    policy_eval_opponents: dict[str, int] = field(default_factory=lambda: {"greedy": 50})
    """Periodic evaluation of the model's prior alone (no search): agent spec -> paired deals."""
    workers: int = bounded(1, 1, 256)
    """Processes of the self-play (with ``backend=ray``: CPUs of a local Ray runtime)."""
    chunk: int = bounded(16, 1, 65_536)
    """Games per self-play work item (a process's task or a Ray task)."""

    def memory_bytes(self) -> int:
        """The window's decisions: state, candidates, targets, terms (float32), values."""
        k = 5 * self.width
        return self.window * (8 * STATE_LEN + 8 * k + 4 * k + 4 * k * PRIOR_FEATURES + 16)

    def validate(self) -> None:
        super().validate()
        if len(self.hidden) != 2 or not all(1 <= h <= 4096 for h in self.hidden):
            raise ConfigError(f"hidden must be two sizes in 1..4096, got {self.hidden!r}")
        if not self.init.strip():
            raise ConfigError("init must be scratch or a value model (v1, or a file)")
        if self.init_checkpoint:
            raise ConfigError(
                "init_checkpoint names a network; train.alphazero starts from init (scratch or a value model)"
            )
        check_opponents(self, "policy_eval_opponents")


@dataclass
class SB3Config(PPOConfig):
    """sb3-contrib's MaskablePPO on ``SingleAgentEnv`` (``train.sb3_maskable``); its step is one
    update (a rollout of ``n_envs * n_steps`` learner decisions and its optimisation)."""

    n_envs: int = bounded(8, 1, 4096)
    """Environments collecting experience; each has its own pool opponent."""
    n_steps: int = bounded(256, 1, 65_536)
    """Steps per environment per rollout."""
    batch_size: int = bounded(256, 1, 1_048_576)
    """Minibatch size."""
    total_timesteps: int = bounded(200_000, 1, 10**10)
    """Learner decisions in the run (rounded up to whole updates of ``n_envs * n_steps``)."""

    def memory_bytes(self) -> int:
        """SB3's rollout buffer: float32 observations and masks of every step of every env."""
        return self.n_envs * self.n_steps * 4 * (OBS_DIM + NUM_ACTIONS)

    def validate(self) -> None:
        super().validate()
        if self.net.prior_scale != 0:
            raise ConfigError(
                f"net.prior_scale must be 0 for MaskablePPO, got {self.net.prior_scale}: its policy "
                "sees observations only, the greedy prior needs game states (use train.selfplay)"
            )
        if self.batch_size > self.n_envs * self.n_steps:
            raise ConfigError(
                f"batch_size ({self.batch_size}) must be at most n_envs * n_steps = {self.n_envs * self.n_steps}"
            )


@dataclass
class RLlibConfig(PPOConfig):
    """RLlib PPO (new API stack), multi-agent self-play on the AEC env (``train.rllib_selfplay``);
    its step is one iteration. ``reward_margin_*`` are not used (see ``reward``)."""

    reward: str = one_of("score", "win", "score")
    """The AEC env's final reward: ``win`` (+1/-1) or ``score`` (margin / 100, clipped to [-1, 1])."""
    num_env_runners: int = bounded(1, 0, 1024)
    """EnvRunner actors that sample games (one CPU each); 0 samples in the trainer's process."""
    num_envs_per_env_runner: int = bounded(8, 1, 1024)
    """Games each EnvRunner steps side by side."""
    num_cpus_per_env_runner: int = bounded(1, 1, 1024)
    """CPUs Ray reserves for each EnvRunner."""
    num_cpus_for_main_process: int = bounded(1, 1, 1024)
    """CPUs Ray reserves for the trainer's process (which holds the learner)."""
    train_batch_size: int = bounded(4000, 1, 10**7)
    """Env steps (decisions of both seats) sampled per iteration."""
    minibatch_size: int = bounded(500, 1, 10**7)
    """PPO minibatch (learner decisions)."""
    iterations: int = bounded(100, 0, 10**7)
    """Training iterations (sample + update) in the run."""
    address: str = ""
    """The Ray cluster to join (``auto`` or HOST:PORT); empty: a local Ray runtime."""

    def memory_bytes(self) -> int:
        """One iteration's batch: float32 observations and masks of every env step."""
        return self.train_batch_size * 4 * (OBS_DIM + NUM_ACTIONS)

    def validate(self) -> None:
        super().validate()
        if self.minibatch_size > self.train_batch_size:
            raise ConfigError(
                f"minibatch_size ({self.minibatch_size}) must be at most train_batch_size ({self.train_batch_size})"
            )


# --- value checks ------------------------------------------------------------------------------
def check_bounds(cfg: Any) -> None:
    """Every number of its type and within its declared bounds, every choice allowed
    (``patchwork_env.core.bounds.field_problem``), and every nested group (``net``, ``search``)
    passing its own ``validate``."""
    problem = field_problem(cfg)
    if problem:
        raise ConfigError(problem)
    for f in dataclasses.fields(cfg):
        group = getattr(cfg, f.name)
        if dataclasses.is_dataclass(group):
            try:
                group.validate(prefix=f"{f.name}.")  # type: ignore[union-attr]
            except ValueError as exc:
                raise ConfigError(str(exc)) from None


def check_product(cfg: Any, first: str, second: str, limit: int, what: str) -> None:
    """Two size fields whose product (what the run allocates or plays) is at most ``limit``."""
    product = getattr(cfg, first) * getattr(cfg, second)
    if product > limit:
        raise ConfigError(f"{first} * {second} must be <= {limit} {what}, got {product}")


def check_opponents(cfg: Any, key: str) -> None:
    """A mapping of agent specs to paired deals (``eval_opponents``): specs not empty, 1..MAX_PAIRS pairs."""
    for spec, pairs in getattr(cfg, key).items():
        if not spec.strip():
            raise ConfigError(f"{key}: an agent spec must not be empty")
        if isinstance(pairs, bool) or not isinstance(pairs, int) or not 1 <= pairs <= MAX_PAIRS:
            raise ConfigError(f"{key}[{spec!r}] must be in 1..{MAX_PAIRS} pairs, got {pairs}")


def check_minutes(cfg: Any, key: str) -> None:
    """A list of minute marks (``checkpoint_minutes``): at most 100 numbers in (0, 1e6]."""
    marks = getattr(cfg, key)
    if len(marks) > 100 or not all(
        isinstance(m, int | float) and not isinstance(m, bool) and 0 < m <= 10**6 for m in marks
    ):
        raise ConfigError(f"{key} must be at most 100 numbers in (0, 1e6], got {marks!r}")
