"""Trainer configs: one dataclass per trainer. A field's docstring is its ``--help`` text (tyro reads
it); ``train.cli`` loads a YAML file into the dataclass and applies the command line's options.

Units: evaluation sizes count paired deals, each played twice with the seats swapped
(``eval_opponents``, ``final_eval_pairs``); ``*_every`` fields count the trainer's own step, named
in its docstring. ``validate`` checks values only (ranges and bounds, stated once in ``LIMITS``);
the agents and checkpoints a config names are built or read by the run, once, at its start.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any

from patchwork_env.cli.common import MAX_SEED
from patchwork_env.evaluation.backend import BACKENDS
from patchwork_env.players.net_config import NetConfig


class ConfigError(ValueError):
    """A config that cannot be used; the message names the field."""


# upper bounds of the sizes a run allocates or loops over: far above any config shipped here,
# low enough that a typo (2147483647 games) is refused before anything is allocated
LIMITS: dict[str, int] = {
    "torch_threads": 256,
    "eval_workers": 256,
    "final_eval_pairs": 100_000,
    "eval_pairs": 100_000,
    "pool_size": 1_000,
    "num_games": 65_536,
    "rollout_steps": 4_096,
    "games_x_steps": 2**21,  # num_games * rollout_steps: decisions held in one rollout buffer
    "total_updates": 10**7,
    "update_epochs": 1_000,
    "num_minibatches": 65_536,
    "positions": 10**7,
    "rounds": 1_000,
    "epochs": 1_000,
    "workers": 256,
    "iterations": 10**7,
    "games_per_iteration": 65_536,
    "sims": 100_000,
    "considered": 2_026,
    "buffer_size": 10**7,
    "batch_size": 1_048_576,
    "updates_per_iteration": 10**6,
    "warmup_games": 1_000_000,
    "warmup_steps": 10**7,
    "temp_plies": 1_000,
    "n_envs": 4_096,
    "n_steps": 65_536,
    "total_timesteps": 10**10,
    "env_runners": 1_024,
    "train_batch_size": 10**7,
    "period": 10**10,
    "position_stride": 1_000,
    "rollouts": 1_000,
    "search_batch": 65_536,
    "window": 1_000,
}
CLOCKS = ("wall", "process")
# the engine's sizes, for memory estimates without loading it (tests/test_config.py checks them)
OBS_DIM, NUM_ACTIONS, STATE_LEN, PRIOR_FEATURES = 1452, 2026, 129, 9
RUN_DIR = re.compile(r"^[A-Za-z0-9._/\-]*$")


@dataclass
class CommonConfig:
    """What every trainer shares: the run folder, seeds and threads, the network, the evaluations."""

    run_dir: str = ""
    """Run folder (letters, digits, ``._-/``); empty: ``runs/<config name>-s<seed>-<date-time>``. A
    folder that holds another run is refused (a run folder belongs to one run) unless the run
    resumes it or ``overwrite`` is set."""
    overwrite: bool = False
    """Start afresh in a ``run_dir`` that holds an earlier run: its files are removed first."""
    seed: int = 0
    """Seed of everything random in training (games, sampling, opponents, network init)."""
    torch_threads: int = 1
    """Threads torch may use. 1 leaves the other core to the game engine."""
    progress: bool = True
    """Show progress (bars, one line per evaluation)."""
    clock: str = "wall"
    """What a minute of training is (time limits, minute checkpoints, the curve's x axis): ``wall``
    (elapsed time) or ``process`` (this process's CPU time, so that runs sharing the cores get the
    same compute per minute; work done by Ray workers does not count)."""
    net: NetConfig = field(default_factory=NetConfig)
    """The network's sizes (``patchwork_env.players.net_config``)."""
    eval_opponents: dict[str, int] = field(default_factory=lambda: {"random": 20, "greedy": 50})
    """Periodic evaluation: agent spec -> paired deals."""
    eval_workers: int = 1
    """Processes of the evaluations (1: in this process)."""
    final_eval_pairs: int = 100
    """Paired deals against each of ``final_eval_opponents`` at the end, on deals no periodic
    evaluation played; 0: none."""
    final_eval_opponents: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """Agent specs of the final evaluation."""
    final_eval_start: bool = True
    """The final evaluation also plays the network the run started from, on the same deals."""
    # the loop (``train.loop``); a step is the trainer's unit: an update, an iteration, a round
    init_checkpoint: str = ""
    """Start from the network in this checkpoint (its sizes replace ``net``); empty: a fresh network."""
    time_limit_minutes: float = 0.0
    """Stop after the step that reaches this many minutes of training (then the final evaluation); 0: no limit."""
    eval_every: int = 10
    """Steps between periodic evaluations (also one at the start and one at the last step); 0: none
    (the final evaluation on fresh deals still runs)."""
    checkpoint_every: int = 10
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
        check_numbers(self)
        try:
            self.net.validate(prefix="net.")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if not RUN_DIR.match(self.run_dir) or ".." in self.run_dir.split("/"):
            raise ConfigError(f"run_dir may hold letters, digits and ._-/ (no '..'), got {self.run_dir!r}")
        between(self, "seed", 0, MAX_SEED)
        if self.clock not in CLOCKS:
            raise ConfigError(f"clock must be one of {', '.join(CLOCKS)}, got {self.clock!r}")
        between(self, "torch_threads", 1, LIMITS["torch_threads"])
        between(self, "eval_workers", 1, LIMITS["eval_workers"])
        between(self, "final_eval_pairs", 0, LIMITS["final_eval_pairs"])
        for spec, pairs in self.eval_opponents.items():
            if not spec.strip():
                raise ConfigError("eval_opponents: an agent spec must not be empty")
            if not 1 <= pairs <= LIMITS["eval_pairs"]:
                raise ConfigError(f"eval_opponents[{spec!r}] must be in 1..{LIMITS['eval_pairs']} pairs, got {pairs}")
        if any(not spec.strip() for spec in self.final_eval_opponents):
            raise ConfigError("final_eval_opponents: an agent spec must not be empty")
        between(self, "time_limit_minutes", 0.0, math.inf)
        between(self, "eval_every", 0, LIMITS["period"])
        between(self, "checkpoint_every", 1, LIMITS["period"])
        check_minutes(self, "checkpoint_minutes")


@dataclass
class PPOConfig(CommonConfig):
    """What the PPO trainers share (self-play, MaskablePPO, RLlib): the loss, the reward, the pool."""

    learning_rate: float = 3e-4
    """Adam learning rate (start value when annealed)."""
    gamma: float = 1.0
    """Discount per own decision (only the end of a game is rewarded: 1.0)."""
    gae_lambda: float = 0.95
    """GAE lambda over each seat's own decisions."""
    ent_coef: float = 0.01
    """Entropy bonus (entropy over legal actions only)."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Gradient norm clip."""
    reward_margin_weight: float = 0.0
    """Final reward = (1 - w) * (+1 win / -1 loss) + w * clip(margin / reward_margin_scale, -1, 1)."""
    reward_margin_scale: float = 30.0
    """Score margin (points) that counts as a full +1/-1 in the margin part of the reward."""
    pool_size: int = 8
    """Past snapshots of the learner kept as opponents (the oldest is dropped)."""
    latest_prob: float = 0.5
    """Share of games where the latest learner plays both seats; the others draw a pool opponent."""
    random_weight: float = 0.1
    """Weight of ``random`` among pool opponents."""
    greedy_weight: float = 0.3
    """Weight of ``greedy`` among pool opponents."""
    snapshot_weight: float = 0.6
    """Weight of the past snapshots (together; one drawn uniformly) among pool opponents."""

    def validate(self) -> None:
        super().validate()
        above(self, "learning_rate", 0.0)
        above(self, "reward_margin_scale", 0.0)
        above(self, "max_grad_norm", 0.0)
        for key in ("gamma", "gae_lambda", "reward_margin_weight", "latest_prob"):
            between(self, key, 0.0, 1.0)
        for key in ("ent_coef", "vf_coef", "random_weight", "greedy_weight", "snapshot_weight"):
            between(self, key, 0.0, math.inf)
        between(self, "pool_size", 0, LIMITS["pool_size"])
        if self.random_weight + self.greedy_weight + self.snapshot_weight <= 0:
            raise ConfigError("random_weight, greedy_weight and snapshot_weight: at least one must be positive")
        if self.snapshot_weight > 0 and self.pool_size < 1:
            raise ConfigError("pool_size must be >= 1 when snapshot_weight > 0")


@dataclass
class SelfPlayConfig(PPOConfig):
    """Batched self-play PPO (``train.selfplay``); its step is one update (rollout + optimisation)."""

    num_games: int = 128
    """Games stepped together on the vector engine (each step: one decision in every game)."""
    rollout_steps: int = 64
    """Vector steps per rollout; the learner's decisions among them form the PPO batch."""
    total_updates: int = 100
    """PPO updates in the run; 0 trains nothing (the final evaluation of the start)."""
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
    """Stop an update's passes early when the approximate KL exceeds this; 0: never."""
    critic_warmup_updates: int = 0
    """First updates that train only the value head (the policy stays the start policy). Must be
    below ``total_updates``, or the policy never trains."""
    anchor_coef: float = 0.0
    """Weight of ``KL(policy || start policy)`` in the loss; 0: no anchor."""
    prior_lr_scale: float = 1.0
    """Learning rate of the greedy prior's weighting layer relative to the rest (``net.prior_scale > 0``):
    its output multiplies greedy's value terms, so one step moves the policy far."""
    eval_sampled: bool = True
    """Periodic evaluations also play the sampled policy (``eval/win_rate_sampled_vs_<agent>``)."""
    snapshot_every: int = 10
    """Updates between snapshots of the learner added to the pool."""
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
        between(self, "num_games", 1, LIMITS["num_games"])
        between(self, "rollout_steps", 1, LIMITS["rollout_steps"])
        if self.num_games * self.rollout_steps > LIMITS["games_x_steps"]:
            raise ConfigError(
                f"num_games * rollout_steps must be <= {LIMITS['games_x_steps']} decisions per rollout "
                f"(the rollout buffer holds them all), got {self.num_games * self.rollout_steps}"
            )
        between(self, "total_updates", 0, LIMITS["total_updates"])
        between(self, "update_epochs", 1, LIMITS["update_epochs"])
        between(self, "num_minibatches", 1, LIMITS["num_minibatches"])
        between(self, "snapshot_every", 1, LIMITS["period"])
        for key in ("target_kl", "anchor_coef", "prior_lr_scale"):
            between(self, key, 0.0, math.inf)
        between(self, "critic_warmup_updates", 0, LIMITS["total_updates"])
        above(self, "clip_coef", 0.0)
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
class DistillConfig(CommonConfig):
    """Distillation with DAgger rounds (``train.distill``): a search teacher's choice of move kind
    (which market patch, leather or advance) taught to a greedy-prior network; placements stay
    the prior's. Its step is one round of labels."""

    net: NetConfig = field(
        default_factory=lambda: NetConfig(head_features=8, prior_scale=2.0, group_scale=True, kind_weights=True)
    )
    """The network's sizes; distillation needs the greedy prior (``prior_scale > 0``)."""
    teacher: str = "mcts:sims=100"
    """The agent spec whose move choices are distilled (root visit shares per kind of move)."""
    positions: int = 60_000
    """Greedy self-play positions labelled first (those with one legal kind of move are dropped)."""
    temp: float = 0.5
    """Softmax temperature (score points) of the greedy self-play that samples them."""
    rounds: int = 0
    """DAgger rounds after the first: each labels ``dagger_positions`` positions of the network's own
    games (half against greedy, half against itself) and trains again on every label so far."""
    dagger_positions: int = 40_000
    """Positions sampled per DAgger round."""
    epochs: int = 6
    """Passes over the labels per round."""
    lr: float = 1e-3
    """Adam learning rate."""
    workers: int = 2
    """Processes labelling positions (with ``backend=ray``: CPUs of the local Ray runtime)."""
    backend: str = "local"
    """Where the teacher labels: ``local`` (``workers`` processes) or ``ray`` (Ray tasks, on a local
    runtime or the cluster of ``address``); the same labels on both."""
    address: str = ""
    """With ``backend=ray``: the Ray cluster to join (``auto`` or HOST:PORT); empty: a local runtime."""

    def memory_bytes(self) -> int:
        """Every labelled position (state, targets) and its network inputs in a training pass."""
        positions = self.positions + self.rounds * self.dagger_positions
        return positions * (8 * STATE_LEN + 40 + 4 * OBS_DIM + NUM_ACTIONS + 2 * NUM_ACTIONS * PRIOR_FEATURES)

    def validate(self) -> None:
        super().validate()
        if not self.teacher.strip():
            raise ConfigError("teacher must be an agent spec, e.g. mcts:sims=100")
        if not self.init_checkpoint and self.net.prior_scale <= 0:
            raise ConfigError(
                "distillation trains the choice of move kind and needs net.prior_scale > 0 "
                "(placements come from the greedy prior)"
            )
        between(self, "positions", 2, LIMITS["positions"])  # one held out, one to train on
        between(self, "dagger_positions", 2, LIMITS["positions"])
        between(self, "rounds", 0, LIMITS["rounds"])
        between(self, "epochs", 1, LIMITS["epochs"])
        between(self, "workers", 1, LIMITS["workers"])
        between(self, "temp", 0.0, math.inf)
        above(self, "lr", 0.0)
        check_backend(self, "backend")
        if self.address and self.backend != "ray":
            raise ConfigError("address needs backend=ray (it names the Ray cluster of the labelling)")


@dataclass
class ExItConfig(CommonConfig):
    """Expert iteration (``train.exit``): the ``az`` search with the network labels positions of the
    network's own games, the network's choice of move kind is fitted to a window of recent labels,
    and a gate keeps the better of the fitted network and the one before. Its step is one iteration
    (positions, labels, fit, gate)."""

    net: NetConfig = field(
        default_factory=lambda: NetConfig(head_features=8, prior_scale=2.0, group_scale=True, kind_weights=True)
    )
    """The network's sizes when ``init_checkpoint`` is empty; it needs the greedy prior
    (``prior_scale > 0``): only the choice of move kind is trained."""
    iterations: int = 20
    """Iterations of positions -> labels -> fit -> gate."""
    positions_per_iteration: int = 1500
    """Positions labelled per iteration (all with a choice of move kind)."""
    greedy_share: float = 0.5
    """Share of the positions from the network's games against ``greedy`` (it plays its most
    probable move); the rest from its games against itself (sampled from its policy)."""
    position_stride: int = 4
    """Decisions played per position kept (a random subset is kept: positions from more games)."""
    sims: int = 100
    """Simulations of the labelling search per position (``az:sims``)."""
    rollouts: int = 4
    """Greedy rollouts per valued leaf of the search (``az:rollouts``; the leaf value is theirs alone)."""
    expand: int = 4
    """Visits of a leaf before the network expands it (``az:expand``)."""
    considered: int = 16
    """Gumbel root: kinds of move kept for sequential halving (``az:considered``)."""
    c_puct: float = 1.25
    """PUCT constant below the root (``az:c_puct``)."""
    target: str = "policy"
    """The label: ``policy``, the search's improved policy (Gumbel: softmax(logit + sigma(completed
    Q))), or ``visits``, its root visit shares."""
    unsure_sims: int = 0
    """Positions whose label is unsure (its two largest kinds of move within ``unsure_margin``) are
    searched again with this many simulations (more than ``sims``), that label kept; 0: off."""
    unsure_margin: float = 0.2
    """With ``unsure_sims``: the gap between a label's two largest kinds of move below which it is unsure."""
    search_batch: int = 64
    """Positions searched together (one forward pass per simulation step for all of them)."""
    label_backend: str = "local"
    """Where the search labels: ``local`` (this process) or ``ray`` (each batch of ``search_batch``
    positions a Ray task, on a local runtime or the cluster of ``address``); the same labels on both."""
    address: str = ""
    """With ``label_backend=ray``: the Ray cluster to join (``auto`` or HOST:PORT); empty: a local runtime."""
    window: int = 6
    """Iterations of labels the fit trains on (the newest)."""
    epochs: int = 2
    """Passes over the window per iteration."""
    lr: float = 1e-3
    """Adam learning rate of the fit."""
    batch_size: int = 256
    """Minibatch of the fit."""
    gate_pairs: int = 100
    """Paired deals of the gate (the fitted network against the one before it)."""
    gate_threshold: float = 0.5
    """The fitted network is kept only if its gate win rate is above this; else the old weights come back."""
    search_eval_opponents: dict[str, int] = field(default_factory=dict)
    """At each evaluation, also the ``az`` search with the current network (``search_eval_sims``
    simulations, the agent's other defaults) against these specs, paired deals each, e.g.
    ``{"mcts:sims=100": 20}``; empty: none. Costly: each az move is a search."""
    search_eval_sims: int = 300
    """Simulations per move of the ``az`` search in ``search_eval_opponents`` (the ``az`` agent's default)."""

    def memory_bytes(self) -> int:
        """The window's labelled positions and their network inputs in a training pass, and one
        iteration's search labels (float32 over every action)."""
        positions = self.window * self.positions_per_iteration
        per_position = 8 * STATE_LEN + 40 + 4 * OBS_DIM + NUM_ACTIONS + 2 * NUM_ACTIONS * PRIOR_FEATURES
        return positions * per_position + self.positions_per_iteration * 4 * NUM_ACTIONS

    def validate(self) -> None:
        super().validate()
        if not self.init_checkpoint and self.net.prior_scale <= 0:
            raise ConfigError(
                "expert iteration trains the choice of move kind and needs net.prior_scale > 0 "
                "(placements come from the greedy prior)"
            )
        between(self, "iterations", 1, LIMITS["iterations"])
        between(self, "positions_per_iteration", 2, LIMITS["positions"])  # one held out, one to train on
        between(self, "position_stride", 1, LIMITS["position_stride"])
        between(self, "window", 1, LIMITS["window"])
        if self.positions_per_iteration * self.position_stride > LIMITS["positions"]:
            raise ConfigError(
                f"positions_per_iteration * position_stride must be <= {LIMITS['positions']} decisions played "
                f"per iteration, got {self.positions_per_iteration * self.position_stride}"
            )
        if self.window * self.positions_per_iteration > LIMITS["positions"]:
            raise ConfigError(
                f"window * positions_per_iteration must be <= {LIMITS['positions']} labels trained on, "
                f"got {self.window * self.positions_per_iteration}"
            )
        between(self, "greedy_share", 0.0, 1.0)
        between(self, "sims", 1, LIMITS["sims"])
        between(self, "expand", 1, LIMITS["sims"])
        between(self, "rollouts", 1, LIMITS["rollouts"])
        between(self, "considered", 1, LIMITS["considered"])
        between(self, "c_puct", 0.0, math.inf)
        if self.target not in ("policy", "visits"):
            raise ConfigError(f"target must be 'policy' or 'visits', got {self.target!r}")
        between(self, "unsure_margin", 0.0, 1.0)
        if self.unsure_sims:
            between(self, "unsure_sims", self.sims + 1, LIMITS["sims"])
            above(self, "unsure_margin", 0.0)
        between(self, "search_batch", 1, LIMITS["search_batch"])
        check_backend(self, "label_backend")
        if self.address and self.label_backend != "ray":
            raise ConfigError("address needs label_backend=ray (it names the Ray cluster of the labelling)")
        between(self, "epochs", 1, LIMITS["epochs"])
        above(self, "lr", 0.0)
        between(self, "batch_size", 1, LIMITS["batch_size"])
        between(self, "gate_pairs", 1, LIMITS["eval_pairs"])
        between(self, "gate_threshold", 0.0, 1.0)

        for spec, pairs in self.search_eval_opponents.items():
            if not spec.strip():
                raise ConfigError("search_eval_opponents: an agent spec must not be empty")
            if not 1 <= pairs <= LIMITS["eval_pairs"]:
                raise ConfigError(
                    f"search_eval_opponents[{spec!r}] must be in 1..{LIMITS['eval_pairs']} pairs, got {pairs}"
                )


@dataclass
class AlphaZeroConfig(CommonConfig):
    """AlphaZero-style training (``train.alphazero``): batched search self-play, a replay buffer, a
    learner. Its step is one iteration (self-play games, then learner steps)."""

    iterations: int = 100
    """Iterations of self-play + learning."""
    games_per_iteration: int = 64
    """Self-play games per iteration, searched together (one forward pass per simulation step)."""
    sims: int = 16
    """Search simulations per self-play decision."""
    root: str = "gumbel"
    """Root of the search: ``gumbel`` (Gumbel top-k + sequential halving, target from the completed
    Q values) or ``puct`` (Dirichlet noise, visit-count target)."""
    considered: int = 8
    """Gumbel root: actions kept for sequential halving."""
    rescale_values: bool = False
    """Gumbel root: min-max rescale the Q values before the policy target (mctx's default)."""
    train_placements: bool = True
    """Train every parameter; False: the placement-only parameters stay as they start."""
    c_puct: float = 1.25
    """PUCT exploration constant below the root (and at a PUCT root)."""
    dirichlet_alpha: float = 0.3
    """PUCT root: Dirichlet noise parameter."""
    dirichlet_eps: float = 0.25
    """PUCT root: weight of the Dirichlet noise."""
    temp_plies: int = 8
    """Decisions from the start of a game whose move is sampled from the policy target."""
    selfplay_backend: str = "local"
    """Where the self-play games run: ``local`` or ``ray`` (chunks of ``selfplay_chunk`` games as Ray
    tasks, on a local runtime or the cluster of ``address``)."""
    selfplay_chunk: int = 0
    """Games per self-play chunk; 0: all ``games_per_iteration`` in one (needs > 0 with ray)."""
    address: str = ""
    """With ``selfplay_backend=ray``: the Ray cluster to join (``auto`` or HOST:PORT)."""
    learning_rate: float = 1e-3
    """AdamW learning rate."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient norm clip."""
    vf_coef: float = 1.0
    """Weight of the value loss."""
    reward_margin_weight: float = 0.0
    """Weight of the score margin (over 30 points) in the value target."""
    buffer_size: int = 60_000
    """Replay buffer capacity (positions; the newest are kept)."""
    batch_size: int = 256
    """Learner minibatch size."""
    updates_per_iteration: int = 40
    """Learner steps after each iteration's self-play."""
    warmup_games: int = 256
    """Greedy self-play games whose outcomes train the value head before the first iteration."""
    warmup_steps: int = 300
    """Value-only learner steps on the warm-up games."""
    warmup_temp: float = 0.5
    """Softmax temperature (score points) of the warm-up games' greedy play."""

    def memory_bytes(self) -> int:
        """The replay buffer (state, policy target, value per position) and the search trees."""
        return self.buffer_size * (8 * STATE_LEN + 4 * NUM_ACTIONS + 4) + self.games_per_iteration * self.sims * 20_000

    def validate(self) -> None:
        super().validate()
        for key in ("iterations", "games_per_iteration", "sims", "considered", "buffer_size", "batch_size"):
            between(self, key, 1, LIMITS[key])
        for key in ("updates_per_iteration", "warmup_games", "warmup_steps", "temp_plies"):
            between(self, key, 0, LIMITS[key])
        between(self, "selfplay_chunk", 0, LIMITS["games_per_iteration"])

        if self.address and self.selfplay_backend != "ray":
            raise ConfigError("address needs selfplay_backend=ray (it names the Ray cluster of the self-play)")
        if self.selfplay_backend == "ray" and not self.selfplay_chunk:
            raise ConfigError(
                "selfplay_backend=ray plays chunks of selfplay_chunk games as Ray tasks: "
                f"set selfplay_chunk > 0 (at most games_per_iteration = {self.games_per_iteration})"
            )
        for key in ("warmup_temp", "weight_decay", "c_puct", "vf_coef"):
            between(self, key, 0.0, math.inf)
        for key in ("learning_rate", "max_grad_norm", "dirichlet_alpha"):
            above(self, key, 0.0)
        for key in ("dirichlet_eps", "reward_margin_weight"):
            between(self, key, 0.0, 1.0)
        if self.root not in ("gumbel", "puct"):
            raise ConfigError(f"root must be 'gumbel' or 'puct', got {self.root!r}")


@dataclass
class SB3Config(PPOConfig):
    """sb3-contrib's MaskablePPO on ``SingleAgentEnv`` (``train.sb3_maskable``); its step is one
    update (a rollout of ``n_envs * n_steps`` learner decisions and its optimisation)."""

    n_envs: int = 8
    """Environments collecting experience; each has its own pool opponent."""
    n_steps: int = 256
    """Steps per environment per rollout."""
    batch_size: int = 256
    """Minibatch size."""
    n_epochs: int = 4
    """Passes over each rollout."""
    clip_range: float = 0.2
    """PPO ratio clip."""
    total_timesteps: int = 200_000
    """Learner decisions in the run (rounded up to whole updates of ``n_envs * n_steps``)."""
    snapshot_every: int = 10_000
    """Learner decisions between snapshots added to the opponent pool."""

    def memory_bytes(self) -> int:
        """SB3's rollout buffer: float32 observations and masks of every step of every env."""
        return self.n_envs * self.n_steps * 4 * (OBS_DIM + NUM_ACTIONS)

    def validate(self) -> None:
        super().validate()
        for key in ("n_envs", "n_steps", "batch_size", "total_timesteps"):
            between(self, key, 1, LIMITS[key])
        between(self, "n_epochs", 1, LIMITS["epochs"])

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

    reward: str = "score"
    """The AEC env's final reward: ``win`` (+1/-1) or ``score`` (margin / 100, clipped to [-1, 1])."""
    num_env_runners: int = 1
    """EnvRunner actors that sample games (one CPU each); 0 samples in the trainer's process."""
    num_envs_per_env_runner: int = 8
    """Games each EnvRunner steps side by side."""
    num_cpus_per_env_runner: int = 1
    """CPUs Ray reserves for each EnvRunner."""
    num_cpus_for_main_process: int = 1
    """CPUs Ray reserves for the trainer's process (which holds the learner)."""
    train_batch_size: int = 4000
    """Env steps (decisions of both seats) sampled per iteration."""
    minibatch_size: int = 500
    """PPO minibatch (learner decisions)."""
    num_epochs: int = 2
    """Passes over each iteration's batch."""
    clip_param: float = 0.2
    """PPO ratio clip."""
    total_iterations: int = 100
    """Training iterations (sample + update) in the run."""
    snapshot_every: int = 5
    """Iterations between copies of the learner into the frozen pool."""
    address: str = ""
    """The Ray cluster to join (``auto`` or HOST:PORT); empty: a local Ray runtime."""

    def memory_bytes(self) -> int:
        """One iteration's batch: float32 observations and masks of every env step."""
        return self.train_batch_size * 4 * (OBS_DIM + NUM_ACTIONS)

    def validate(self) -> None:
        super().validate()
        if self.reward not in ("win", "score"):
            raise ConfigError(f"reward must be 'win' or 'score', got {self.reward!r}")
        between(self, "num_env_runners", 0, LIMITS["env_runners"])
        for key in ("num_envs_per_env_runner", "num_cpus_per_env_runner", "num_cpus_for_main_process"):
            between(self, key, 1, LIMITS["env_runners"])
        for key in ("train_batch_size", "minibatch_size"):
            between(self, key, 1, LIMITS["train_batch_size"])
        between(self, "num_epochs", 1, LIMITS["epochs"])
        between(self, "total_iterations", 0, LIMITS["iterations"])

        if self.minibatch_size > self.train_batch_size:
            raise ConfigError(
                f"minibatch_size ({self.minibatch_size}) must be at most train_batch_size ({self.train_batch_size})"
            )


# --- value checks ------------------------------------------------------------------------------
def between(cfg: Any, key: str, low: float, high: float) -> None:
    value = getattr(cfg, key)
    if not low <= value <= high:
        raise ConfigError(f"{key} must be in [{low}, {high}], got {value!r}")


def above(cfg: Any, key: str, low: float) -> None:
    value = getattr(cfg, key)
    if not value > low:
        raise ConfigError(f"{key} must be > {low}, got {value!r}")


def check_minutes(cfg: Any, key: str) -> None:
    """A list of minute marks (``checkpoint_minutes``): at most 100 numbers in (0, 1e6]."""
    marks = getattr(cfg, key)
    if len(marks) > 100 or not all(
        isinstance(m, int | float) and not isinstance(m, bool) and 0 < m <= 10**6 for m in marks
    ):
        raise ConfigError(f"{key} must be at most 100 numbers in (0, 1e6], got {marks!r}")


def check_backend(cfg: Any, key: str) -> None:
    if getattr(cfg, key) not in BACKENDS:
        raise ConfigError(f"{key} must be one of {', '.join(BACKENDS)}, got {getattr(cfg, key)!r}")


def check_numbers(cfg: Any, prefix: str = "") -> None:
    """No bool where a number is meant, no NaN or infinity, no integer beyond 64 bits (YAML and the
    command line give any of them)."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            check_numbers(value, f"{prefix}{f.name}.")
            continue
        numbers = value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]
        for number in numbers:
            if isinstance(number, bool) and f.type not in ("bool", bool):
                raise ConfigError(f"{prefix}{f.name} must be a number, got {number!r}")
            if isinstance(number, float) and not math.isfinite(number):
                raise ConfigError(f"{prefix}{f.name} must be a finite number, got {value!r}")
            if isinstance(number, int) and abs(number) > 2**63 - 1:
                raise ConfigError(f"{prefix}{f.name} is too large, got {value!r}")
