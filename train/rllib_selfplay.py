"""Multi-agent self-play PPO with Ray RLlib (new API stack) on the AEC env: one machine or a cluster.

    python -m train.rllib_selfplay --config configs/rllib_smoke.yaml          # a minute or two
    python -m train.rllib_selfplay --config configs/rllib.yaml                 # local Ray runtime
    python -m train.rllib_selfplay --config configs/rllib.yaml --address auto  # a running cluster
    python -m train.rllib_selfplay --help

The env is ``patchwork_env.env`` through RLlib's ``PettingZooEnv`` (``agents.rllib_module``). Both
seats map to modules through the policy mapping: in ``latest_prob`` of the games the learning
module ``learner`` plays both seats (one shared policy, both seats' decisions trained); in the
others it plays one seat (drawn per game) against an opponent drawn by the config's weights:
``greedy``, ``random`` (fixed ``AgentRLModule``s) or one of ``pool_size`` frozen past copies of the
learner (``snapshot_0``..., refreshed round robin every ``snapshot_every`` iterations; they start
as copies of the initial network). Only ``learner`` is trained. The learner module is
``PatchworkRLModule``: the project's network with the action mask inside it.

Ray: without ``address`` the command starts a local Ray runtime (and stops it at the end); with
``--address auto`` / ``HOST:PORT`` or ``RAY_ADDRESS`` it joins a cluster, where the
``num_env_runners`` EnvRunners sample on any node and the learner stays in this process.

The run folder (``train.run``) gets ``checkpoints/final.pt`` in the project's format (plays
as ``network:PATH`` in the arena, ``patchwork play`` and as a ``SingleAgentEnv`` opponent),
``checkpoints/rllib/`` (RLlib's own checkpoint of the end: ``Algorithm.from_checkpoint`` loads it),
``checkpoints/latest.pt`` with ``checkpoints/rllib-latest/`` (``--resume`` continues the run: ``train.loop``),
TensorBoard logs (``charts/`` throughput, ``losses/``, ``eval/``), ``eval_history.json``,
``learning_curve.png`` and ``final_eval.json``.
"""

from __future__ import annotations

import sys

from train.cli import parse_or_exit, run_trainer, train_or_report
from train.config import RLlibConfig

if __name__ == "__main__":
    COMMAND_LINE = parse_or_exit(RLlibConfig, __doc__)

import functools
import numbers
import random
import statistics
import time
import zlib
from pathlib import Path
from typing import Any

from patchwork_env.evaluation.backend import import_ray, init_ray
from patchwork_env.players.network import PatchworkNet
from train.config import ConfigError
from train.loop import Resumed, Trainer, open_run, run_loop
from train.run import Run, frozen_copy, load_network, preflight
from train.seeds import Stream, stream_seed

LEARNER = "learner"
ENV_NAME = "patchwork_aec"
SEATS = ("player_0", "player_1")


def opponent_ids(cfg: RLlibConfig) -> tuple[list[str], list[float]]:
    """The opponents' module ids and their drawing weights (a frozen copy's weight is shared)."""
    ids, weights = [], []
    for module, weight in (("random", cfg.random_weight), ("greedy", cfg.greedy_weight)):
        if weight > 0:
            ids.append(module)
            weights.append(weight)
    if cfg.snapshot_weight > 0:
        ids += [f"snapshot_{k}" for k in range(cfg.pool_size)]
        weights += [cfg.snapshot_weight / cfg.pool_size] * cfg.pool_size
    return ids, weights


def map_agent(
    agent_id: str, episode: Any, *, latest_prob: float, opponents: list[str], weights: list[float], **_: Any
) -> str:
    """The module that plays ``agent_id`` in ``episode``: drawn from the episode's id, so both
    seats of a game see the same draw."""
    rng = random.Random(zlib.crc32(str(episode.id_).encode()))
    if rng.random() < latest_prob:
        return LEARNER
    learner_seat = SEATS[rng.randrange(2)]
    return LEARNER if agent_id == learner_seat else rng.choices(opponents, weights)[0]


def build_algorithm(cfg: RLlibConfig, start: PatchworkNet | None = None) -> Any:
    """The PPO ``Algorithm`` for ``cfg`` (Ray must be running); the learner and the pool start as
    ``start`` if given."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.tune.registry import register_env

    from agents.rllib_module import AgentRLModule, PatchworkRLModule, make_multi_agent_env

    register_env(ENV_NAME, make_multi_agent_env)
    opponents, weights = opponent_ids(cfg)
    net_spec = RLModuleSpec(module_class=PatchworkRLModule, model_config={"net": cfg.net.to_dict()})
    specs = {LEARNER: net_spec}
    for module in opponents:
        if module.startswith("snapshot_"):
            specs[module] = net_spec
        else:
            specs[module] = RLModuleSpec(
                module_class=AgentRLModule, model_config={"spec": module, "seed": stream_seed(cfg.seed, Stream.TRAIN)}
            )
    mapping = functools.partial(map_agent, latest_prob=cfg.latest_prob, opponents=opponents, weights=weights)
    config = (
        PPOConfig()  # type: ignore[no-untyped-call]
        .environment(ENV_NAME, env_config={"reward": cfg.reward})
        .env_runners(
            num_env_runners=cfg.num_env_runners,
            num_envs_per_env_runner=cfg.num_envs_per_env_runner,
            num_cpus_per_env_runner=cfg.num_cpus_per_env_runner,
        )
        .resources(num_cpus_for_main_process=cfg.num_cpus_for_main_process)
        .learners(num_learners=0)
        .multi_agent(policies=set(specs), policy_mapping_fn=mapping, policies_to_train=[LEARNER])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .training(
            lr=cfg.learning_rate,
            gamma=cfg.gamma,
            lambda_=cfg.gae_lambda,
            entropy_coeff=cfg.ent_coef,
            vf_loss_coeff=cfg.vf_coef,
            grad_clip=cfg.max_grad_norm,
            clip_param=cfg.clip_coef,
            train_batch_size_per_learner=cfg.train_batch_size,
            minibatch_size=cfg.minibatch_size,
            num_epochs=cfg.epochs,
            use_kl_loss=False,
        )
        .debugging(seed=stream_seed(cfg.seed, Stream.TRAIN))
    )
    algo: Any = config.build_algo()
    if start is not None:
        algo.learner_group.set_weights({LEARNER: module_state(start)})
    state = algo.learner_group.get_weights([LEARNER])[LEARNER]
    snapshots = [m for m in opponents if m.startswith("snapshot_")]
    algo.learner_group.set_weights({m: state for m in snapshots})  # the pool starts as copies of the start
    algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, policies=[LEARNER, *snapshots])
    return algo


def initial_net(cfg: RLlibConfig) -> PatchworkNet:
    """The network of ``cfg.init_checkpoint``, checked against the config's network settings."""
    net = load_network(cfg.init_checkpoint, "init_checkpoint")
    if net.config != cfg.net:
        raise ConfigError(
            f"init_checkpoint {cfg.init_checkpoint} holds the network {net.config.to_dict()}, "
            f"the config asks for {cfg.net.to_dict()}"
        )
    return net


def module_state(net: PatchworkNet) -> dict[str, Any]:
    """``net``'s weights as a ``PatchworkRLModule`` state (its ``net.`` attribute)."""
    return {f"net.{k}": v.detach().numpy() for k, v in net.state_dict().items()}


def learner_net(algo: Any, cfg: RLlibConfig) -> PatchworkNet:
    """The learner's current network as the project's ``PatchworkNet``."""
    from agents.rllib_module import net_state_dict

    net = PatchworkNet(cfg.net)
    net.load_state_dict(net_state_dict(algo.learner_group.get_weights([LEARNER])[LEARNER]))
    return net.eval()


def throughput(result: dict[str, Any]) -> dict[str, float]:
    """Lifetime counters of one ``algo.train()`` result: env steps, learner decisions, games."""
    from ray.rllib.utils.metrics import (
        ENV_RUNNER_RESULTS,
        NUM_ENV_STEPS_SAMPLED_LIFETIME,
        NUM_EPISODES_LIFETIME,
        NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    )

    runners = result.get(ENV_RUNNER_RESULTS, {})
    return {
        "env_steps": float(runners.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)),
        "learner_decisions": float(runners.get(NUM_MODULE_STEPS_SAMPLED_LIFETIME, {}).get(LEARNER, 0)),
        "games": float(runners.get(NUM_EPISODES_LIFETIME, 0)),
    }


def main(cfg: RLlibConfig, name: str = "rllib") -> dict[str, Any]:
    """Train; returns the summary (``train.run.Run.finish``)."""
    preflight(cfg)
    import_ray()  # the ray extra: a missing one is an error line, not a traceback
    start = initial_net(cfg) if cfg.init_checkpoint and not cfg.resume else None  # one that does not fit fails first
    started = init_ray(cfg.address or None)  # a cluster that cannot be joined leaves no run folder
    try:
        run, resumed = open_run(cfg, name, "iteration")
        return run_loop(run, RLlibSelfPlay(run, start, resumed), cfg.iterations, resumed)
    finally:
        if started:
            import_ray().shutdown()


class RLlibSelfPlay(Trainer[PatchworkNet, RLlibConfig]):
    """The loop's step: one ``algo.train()`` (sampling on the EnvRunners, one PPO update), then the
    pool's round-robin refresh. ``--resume`` restores RLlib's own checkpoint of the algorithm
    (``checkpoints/rllib-latest``, written with every ``latest.pt``); its games are dealt anew."""

    def __init__(self, run: Run, start: PatchworkNet | None, resumed: Resumed | None) -> None:
        super().__init__(run)
        cfg = self.cfg
        self.algo = build_algorithm(cfg, start)
        self.snapshots = [m for m in opponent_ids(cfg)[0] if m.startswith("snapshot_")]
        self.train_seconds = 0.0  # in algo.train() alone (sampling + update), for throughput
        self.counts = {"env_steps": 0.0, "learner_decisions": 0.0, "games": 0.0}
        self.sampling: list[float] = []  # env steps per second of sampling alone, per iteration
        self.net = learner_net(self.algo, cfg)
        self.start = frozen_copy(start if start is not None else self.net)
        self.resume(resumed)

    def step(self, step: int) -> None:
        cfg, writer, algo = self.cfg, self.run.writer, self.algo
        started = time.time()
        result = algo.train()
        self.train_seconds += time.time() - started
        previous, self.counts = self.counts, throughput(result)
        counts, seconds = self.counts, self.train_seconds
        env_step = int(counts["env_steps"])
        timers = result.get("timers", {})  # RLlib's own (smoothed) seconds per iteration
        if timers.get("env_runner_sampling_timer"):
            self.sampling.append((counts["env_steps"] - previous["env_steps"]) / timers["env_runner_sampling_timer"])
            writer.add_scalar("charts/sampling_env_steps_per_second", self.sampling[-1], env_step)
        if timers.get("learner_update_timer"):
            writer.add_scalar("charts/update_seconds", timers["learner_update_timer"], env_step)
        writer.add_scalar("charts/env_steps_per_second", counts["env_steps"] / seconds, env_step)
        writer.add_scalar("charts/learner_decisions_per_second", counts["learner_decisions"] / seconds, env_step)
        writer.add_scalar("charts/games", counts["games"], env_step)
        learner_stats = result.get("learners", {}).get(LEARNER, {})
        for key in ("policy_loss", "vf_loss", "entropy", "vf_explained_var"):
            if isinstance(learner_stats.get(key), numbers.Real):
                writer.add_scalar(f"losses/{key}", float(learner_stats[key]), env_step)
        self.run.log(
            f"iteration {step}: {env_step:,} env steps, {int(counts['learner_decisions']):,} learner decisions, "
            f"{counts['env_steps'] / seconds:,.0f} env steps/s"
        )
        if self.snapshots and step % cfg.snapshot_every == 0:
            slot = self.snapshots[(step // cfg.snapshot_every - 1) % len(self.snapshots)]
            algo.learner_group.set_weights({slot: algo.learner_group.get_weights([LEARNER])[LEARNER]})
            algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, policies=[slot])
        self.net.load_state_dict(learner_net(algo, cfg).state_dict())

    def state_dict(self) -> dict[str, Any]:
        path = (self.run.folder / "checkpoints" / "rllib-latest").resolve()
        self.algo.save_to_path(str(path))
        return {
            "rllib_checkpoint": str(path),
            "train_seconds": self.train_seconds,
            "counts": dict(self.counts),
            "sampling": list(self.sampling),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        path = Path(state["rllib_checkpoint"])
        if not path.is_dir():
            raise ConfigError(f"resume: RLlib's checkpoint of the run, {path}, is missing")
        self.algo.restore_from_path(str(path))
        self.train_seconds = float(state["train_seconds"])
        self.counts = {k: float(v) for k, v in state["counts"].items()}
        self.sampling = [float(v) for v in state["sampling"]]
        self.net.load_state_dict(learner_net(self.algo, self.cfg).state_dict())

    def finish(self) -> tuple[PatchworkNet | None, dict[str, Any]]:
        algo, counts, seconds = self.algo, self.counts, max(self.train_seconds, 1e-9)
        algo.save_to_path(str((self.run.folder / "checkpoints" / "rllib").resolve()))
        algo.stop()
        return None, {
            "rllib_checkpoint": str(self.run.folder / "checkpoints" / "rllib"),
            "env_steps": int(counts["env_steps"]),
            "learner_decisions": int(counts["learner_decisions"]),
            "games": int(counts["games"]),
            "env_steps_per_second": counts["env_steps"] / seconds,
            "learner_decisions_per_second": counts["learner_decisions"] / seconds,
            "sampling_env_steps_per_second_median": statistics.median(self.sampling) if self.sampling else None,
        }


def cli(argv: list[str] | None = None) -> int:
    return run_trainer(RLlibConfig, main, argv, __doc__)


if __name__ == "__main__":
    sys.exit(train_or_report(main, *COMMAND_LINE))
