"""Batched self-play PPO on the vector engine, with an opponent pool (in the spirit of CleanRL's ppo.py).

    python -m train.selfplay --config configs/quick.yaml
    python -m train.selfplay --config configs/selfplay.yaml            # MCTS distillation, then PPO
    python -m train.selfplay --config configs/selfplay.yaml seed=1 num_games=128
    python -m train.selfplay --config configs/quick.yaml total_updates=0   # evaluate the untrained net
    python -m train.selfplay --resume runs/<run>/checkpoints/latest.pt [total_updates=800]
    python -m train.selfplay --help-config        # every key, its type, default and meaning

Each update: ``rollout_steps`` vector steps over ``num_games`` games. At every step each game's
acting seat decides: the rows where the learner acts go through ONE forward pass of the learner;
the rows of frozen opponents are grouped per opponent (a forward pass per snapshot, one batched
call for greedy / random). Transitions are stored per (step, game) with the acting seat; GAE runs
per game and seat over the seat's own decisions (``agents.ppo.per_seat_gae``), so consecutive own
moves are ordinary consecutive transitions and the final reward reaches both seats. Then clipped
PPO on the learner's decisions. Opponents per game follow ``agents.opponent_pool`` (about half the
games learner vs learner, the rest against past snapshots, greedy and random; seats drawn per game).

With ``prior_scale > 0`` the network is a residual policy on greedy's one-ply evaluation
(``patchwork_env.players.network.NetConfig``): the rollout computes the prior terms of the learner's rows from the
game states (``patchwork_env.players.heuristic.greedy_prior``) and stores them for the update.

With a ``teacher`` (e.g. ``mcts:sims=100``) a fresh run first distils the teacher's choice of
move kind into the network (``agents.distill``: greedy self-play positions labelled in worker
processes, or as Ray tasks with ``distill_backend=ray`` and ``--address``, then supervised epochs
on the group choice only; logged as ``distill/``), evaluates that start as update 0, and then runs
PPO from it.

Every ``eval_every`` updates: arena games (``patchwork_env.evaluation.arena.play_pairs``, paired deals) against the
``eval_opponents``, logged as ``eval/win_rate_vs_<agent>`` (with ``keep_best``, the best of them
against one opponent is kept as ``checkpoints/best.pt`` and is what the final evaluation plays, on
deals the periodic evaluations never used); checkpoints every ``checkpoint_every``
updates; the run folder layout is in ``train.run_utils``. Resuming restores the network, the
optimizer, the counters, the opponent pool, the random generators and the evaluation history;
the games in progress are not saved (fresh deals are dealt on resume).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch.utils.tensorboard import SummaryWriter

from agents.distill import DistillStats, distill, legal_groups, sample_positions, student_positions, teacher_targets
from agents.opponent_pool import SELF, OpponentPool
from agents.ppo import PPOSettings, Rollout, per_seat_gae, ppo_update, shaped_final_rewards
from patchwork_env.core import rules
from patchwork_env.envs import observation
from patchwork_env.envs.vector import VectorGames
from patchwork_env.evaluation.backend import Backend, open_backend
from patchwork_env.evaluation.progress import progress_bar
from patchwork_env.players.heuristic import NUM_FEATURES
from patchwork_env.players.network import PatchworkNet, count_parameters, prior_for, sample_actions
from patchwork_env.players.policy import net_from_checkpoint, read_checkpoint, save_checkpoint
from train import run_utils
from train.cli import add_address_option, ray_address, run_trainer, trainer_parser
from train.config import ConfigError, SelfPlayConfig, from_dict, load_config, parse_overrides, to_yaml
from train.seeds import Stream, stream_rng, stream_seed


def main(
    config: SelfPlayConfig,
    resume: str | None = None,
    run_dir: str | None = None,
    config_name: str = "selfplay",
    address: str | None = None,
) -> dict[str, Any]:
    """Train; returns a summary (run folder, counters, the last and final evaluations).
    ``address``: the Ray cluster of the labelling with ``distill_backend=ray`` (None: a local runtime)."""
    config.validate()
    run_utils.set_threads(config.torch_threads)
    # the labelling's backend (distill_backend=ray: Ray joined before anything is written, left after it)
    distils = resume is None and bool(config.teacher)
    with open_backend(config.distill_backend if distils else "local", address, config.distill_workers) as labelling:
        run = open_run(config, resume, run_dir, config_name)
        learner, cfg = run.learner, run.cfg
        if run.fresh and cfg.teacher:
            run.distilled = distill_from_teacher(cfg, learner.net, run.writer, labelling)
            save_checkpoint(run.folder / "checkpoints" / "distilled.pt", learner.net)  # the warm start alone
    if run.fresh:
        learner.start.load_state_dict(learner.net.state_dict())  # PPO's start policy (diagnostics, anchor)
        save_checkpoint(run.folder / "checkpoints" / "start.pt", learner.net)  # the start alone, as an agent
        if cfg.eval_every:
            evaluate(run)  # the start: update 0 of the learning curve
        checkpoint(run)
    bar = open_progress_bar(run)
    try:
        while learner.update < cfg.total_updates:
            collected = collect_rollout(learner)
            metrics = update_policy(learner, collected)
            log_update(run, collected, metrics, bar)
            if evaluate_and_checkpoint(run, bar):
                break
    except KeyboardInterrupt:
        path = checkpoint(run)
        bar.close()
        print(f"\ninterrupted after {learner.update} updates; checkpoint: {path}")
        raise
    finally:
        bar.close()
    return finish(run)


# --- the learner: network, optimizer, opponents, games in progress ----------------------------------
@dataclass
class Learner:
    """Everything one PPO iteration reads and changes (no files): ``collect_rollout`` then
    ``update_policy``. ``start`` is a frozen copy of the policy PPO started from."""

    cfg: SelfPlayConfig
    net: PatchworkNet
    start: PatchworkNet
    optimizer: torch.optim.Adam
    pool: OpponentPool
    rng: np.random.Generator
    gen: torch.Generator
    settings: PPOSettings
    games: VectorGames
    codes: np.ndarray[Any, np.dtype[np.int64]]
    seats: np.ndarray[Any, np.dtype[np.int64]]
    game_length: np.ndarray[Any, np.dtype[np.int64]]
    buf: Rollout
    update: int = 0
    global_step: int = 0
    decisions: int = 0
    games_done: int = 0


def new_learner(cfg: SelfPlayConfig, net: PatchworkNet | None = None, trainer: dict[str, Any] | None = None) -> Learner:
    """A learner for ``cfg``: a fresh network (seeded) unless ``net`` is given; ``trainer`` (a
    checkpoint's trainer state) restores the optimizer, the pool, the generators and the counters."""
    train_seed = stream_seed(cfg.seed, Stream.TRAIN)
    torch.manual_seed(train_seed)
    net = (net if net is not None else PatchworkNet(cfg.net_config())).train()
    pool = OpponentPool(
        net.config, cfg.pool_size, cfg.latest_prob, cfg.random_weight, cfg.greedy_weight, cfg.snapshot_weight
    )
    rng = stream_rng(cfg.seed, Stream.TRAIN)
    gen = torch.Generator().manual_seed(train_seed)
    optimizer = make_optimizer(net, cfg)
    start = run_utils.frozen_copy(net)
    counters: dict[str, int] = {}
    if trainer:
        optimizer.load_state_dict(trainer["optimizer"])
        for group in optimizer.param_groups:  # checkpoints from before per-group learning rates
            group.setdefault("base_lr", cfg.learning_rate)
        pool.load_state_dict(trainer["pool"])
        rng.bit_generator.state = trainer["numpy_rng"]
        gen.set_state(trainer["torch_rng"])
        if trainer.get("start_model") is not None:  # older checkpoints: the resumed network is the start
            start.load_state_dict(trainer["start_model"])
        counters = {k: int(trainer[k]) for k in ("update", "global_step", "decisions", "games_done")}
    settings = PPOSettings(
        cfg.update_epochs,
        cfg.num_minibatches,
        cfg.clip_coef,
        cfg.clip_vloss,
        cfg.ent_coef,
        cfg.vf_coef,
        cfg.max_grad_norm,
        cfg.target_kl,
        cfg.anchor_coef,
    )
    n, steps = cfg.num_games, cfg.rollout_steps
    games = VectorGames(n, seed=int(rng.integers(2**63)))
    codes, seats = pool.draw(n, rng)
    buf = Rollout.allocate(
        steps, n, observation.OBS_DIM, rules.NUM_ACTIONS, prior_features=NUM_FEATURES if net.uses_prior else 0
    )
    return Learner(
        cfg,
        net,
        start,
        optimizer,
        pool,
        rng,
        gen,
        settings,
        games,
        codes,
        seats,
        np.zeros(n, np.int64),
        buf,
        **counters,
    )


@dataclass
class Collected:
    """One rollout's training batch and what it saw."""

    batch: dict[str, torch.Tensor]
    results: dict[str, list[float]]  # pool opponent name -> learner won (1.0) or not, per finished game
    lengths: list[int]  # plies of the finished games
    seconds: float


def collect_rollout(lr: Learner) -> Collected:
    """``rollout_steps`` vector steps: every game's acting seat decides, the learner's rows in one
    forward pass, the pool's rows grouped per opponent; then per-seat GAE over the learner's decisions."""
    t0 = time.perf_counter()
    cfg, net, games, buf = lr.cfg, lr.net, lr.games, lr.buf
    n = cfg.num_games
    results: dict[str, list[float]] = {}
    lengths: list[int] = []
    net.eval()
    for t in range(cfg.rollout_steps):
        actor = games.current_player.copy()
        obs = games.observe()
        masks = games.masks
        learner = (lr.codes == SELF) | (actor == lr.seats)
        actions = np.empty(n, dtype=np.int64)
        rows = np.flatnonzero(learner)
        prior = prior_for(net, games.states[rows], masks[rows])
        if buf.prior is not None and prior is not None:
            buf.prior[t, rows] = prior.numpy()
        with torch.no_grad():
            logits, value = net(torch.from_numpy(obs[rows]), torch.from_numpy(masks[rows]), prior)
            act = sample_actions(logits, lr.gen)
            logp = torch.log_softmax(logits, -1).gather(1, act.unsqueeze(1)).squeeze(1)
        actions[rows] = act.numpy()
        buf.logprobs[t, rows] = logp.numpy()
        buf.values[t, rows] = value.numpy()
        others = np.flatnonzero(~learner)
        if others.size:
            actions[others] = lr.pool.act(
                lr.codes[others], games.states[others], masks[others], obs[others], lr.rng, lr.gen
            )
        buf.obs[t] = obs
        buf.masks[t] = masks
        buf.actions[t] = actions
        buf.actor[t] = actor
        buf.learner[t] = learner
        res = games.step(actions)
        lr.game_length += 1
        buf.done[t] = res.done
        buf.outcome[t] = 0.0
        ended = np.flatnonzero(res.done)
        if ended.size:
            buf.outcome[t, ended] = shaped_final_rewards(
                res.winner[ended], res.scores[ended], cfg.reward_margin_weight, cfg.reward_margin_scale
            )
            for i in ended.tolist():
                if lr.codes[i] != SELF:
                    results.setdefault(lr.pool.name(int(lr.codes[i])), []).append(float(res.winner[i] == lr.seats[i]))
                lengths.append(int(lr.game_length[i]))
            lr.game_length[ended] = 0
            lr.codes[ended], lr.seats[ended] = lr.pool.draw(ended.size, lr.rng)
    lr.global_step += n * cfg.rollout_steps
    lr.decisions += int(buf.learner.sum())
    lr.games_done += len(lengths)

    # bootstrap each seat's unfinished trajectory from the position it is in
    last_values = np.zeros((n, 2), dtype=np.float32)
    with torch.no_grad():
        for seat in (0, 1):
            seat_obs = games.observe(np.full(n, seat, dtype=np.int64))
            last_values[:, seat] = net.values(torch.from_numpy(seat_obs)).numpy()
    games.observe()  # back to the acting seats' view
    advantages, returns = per_seat_gae(
        buf.values, buf.actor, buf.learner, buf.done, buf.outcome, last_values, cfg.gamma, cfg.gae_lambda
    )
    return Collected(buf.learner_batch(advantages, returns), results, lengths, time.perf_counter() - t0)


def update_policy(lr: Learner, collected: Collected) -> dict[str, float]:
    """One PPO update on the rollout's learner decisions (the value head alone during the
    critic warm-up); snapshots the learner into the pool every ``snapshot_every`` updates."""
    t0 = time.perf_counter()
    cfg = lr.cfg
    if cfg.anneal_lr:
        for group in lr.optimizer.param_groups:
            group["lr"] = group["base_lr"] * (1.0 - lr.update / cfg.total_updates)
    warmup = lr.update < cfg.critic_warmup_updates
    settings = dataclasses.replace(lr.settings, train_policy=not warmup, anchor_coef=0.0 if warmup else cfg.anchor_coef)
    lr.net.train()
    metrics = ppo_update(lr.net, lr.optimizer, collected.batch, settings, lr.gen, lr.start)
    lr.update += 1
    if lr.update % cfg.snapshot_every == 0:
        lr.pool.add(lr.net, lr.update)
        lr.codes = lr.pool.replace_missing(lr.codes)  # games against a dropped snapshot play the newest
    metrics["charts/update_seconds"] = time.perf_counter() - t0
    metrics["charts/critic_warmup"] = float(warmup)
    return metrics


# --- the run: folder, logs, evaluations, checkpoints ------------------------------------------------
@dataclass
class Run:
    """A training run around a ``Learner``: its folder, TensorBoard writer and evaluation history."""

    cfg: SelfPlayConfig
    folder: Path
    writer: Any
    learner: Learner
    fresh: bool
    history: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] = field(default_factory=dict)  # update and win rate of checkpoints/best.pt (keep_best)
    distilled: dict[str, Any] = field(default_factory=dict)
    latest_eval: dict[str, dict[str, Any]] = field(default_factory=dict)
    elapsed_before: float = 0.0
    wall_start: float = field(default_factory=time.time)
    stopped_early: bool = False
    diagnostics: dict[str, float] = field(default_factory=dict)  # the last update's losses/ and diag/ metrics

    def elapsed(self) -> float:
        return self.elapsed_before + time.time() - self.wall_start


def open_run(cfg: SelfPlayConfig, resume: str | None, run_dir: str | None, config_name: str) -> Run:
    """A fresh run, or the run ``resume`` (a checkpoint with trainer state) continues; checks a
    resumed network's keys against ``cfg`` before anything is written."""
    ckpt = read_checkpoint(resume) if resume else None
    trainer: dict[str, Any] = ckpt.get("trainer", {}) if ckpt else {}
    if ckpt is not None and not trainer:
        raise ConfigError(f"{resume} holds a network but no trainer state: it cannot be resumed")
    if ckpt is not None:
        stored = dict(ckpt.get("net_config", {}))
        wanted = cfg.net_config().to_dict()
        changed = sorted(k for k in wanted if k in stored and stored[k] != wanted[k])
        if changed:
            detail = ", ".join(f"{k}: checkpoint {stored[k]!r}, config {wanted[k]!r}" for k in changed)
            raise ConfigError(
                f"cannot resume {resume} with a different network ({detail}); the network keys of a resumed run "
                "must match its checkpoint (start a new run to change them)"
            )
        if not run_dir:
            p = Path(resume or "")
            run_dir = str(p.parent.parent if p.parent.name == "checkpoints" else p.parent)
    folder = run_utils.run_folder(cfg, config_name, run_dir)
    run_utils.save_config(cfg, folder)
    net = net_from_checkpoint(ckpt, str(resume)) if ckpt else None
    learner = new_learner(cfg, net, trainer)
    writer = SummaryWriter(str(folder), purge_step=learner.global_step if ckpt else None)
    if not ckpt:
        writer.add_text("config", "```\n" + to_yaml(cfg) + "\n```")
    run = Run(cfg, folder, writer, learner, fresh=ckpt is None)
    if trainer:
        run.history = list(trainer["eval_history"])
        run.best = dict(trainer.get("best", {}))
        run.distilled = dict(trainer.get("distill", {}))
        run.elapsed_before = float(trainer["elapsed_seconds"])
    if run.history:
        last_update = run.history[-1]["update"]
        run.latest_eval = {h["opponent"]: h for h in run.history if h["update"] == last_update and not h.get("final")}
    return run


def open_progress_bar(run: Run) -> Any:
    bar = progress_bar(
        total=run.cfg.total_updates,
        initial=run.learner.update,
        unit="upd",
        dynamic_ncols=True,
        disable=not run.cfg.progress,
        file=sys.stdout,
    )
    bar.write(f"run folder: {run.folder}  (network: {count_parameters(run.learner.net):,} parameters)")
    return bar


def log_update(run: Run, collected: Collected, metrics: dict[str, float], bar: Any) -> None:
    """TensorBoard scalars of one update (``losses/``, ``diag/``, ``charts/``) and the progress bar."""
    lr = run.learner
    decisions = collected.batch["actions"].shape[0]
    metrics["charts/learning_rate"] = lr.optimizer.param_groups[0]["lr"]
    metrics["charts/decisions_per_second"] = decisions / (collected.seconds + metrics["charts/update_seconds"])
    metrics["charts/rollout_seconds"] = collected.seconds
    metrics["charts/learner_decisions"] = lr.decisions
    metrics["charts/games_finished"] = lr.games_done
    metrics["charts/pool_snapshots"] = len(lr.pool.snapshots)
    if collected.lengths:
        metrics["charts/game_length"] = float(np.mean(collected.lengths))
    for name, won in collected.results.items():
        metrics[f"charts/train_win_rate_vs_{name}"] = float(np.mean(won))
    for key, value in metrics.items():
        run.writer.add_scalar(key, value, lr.global_step)
    run.diagnostics = {k: v for k, v in metrics.items() if k.startswith(("losses/", "diag/"))}
    bar.update(1)
    bar.set_postfix(
        {"dps": f"{metrics['charts/decisions_per_second']:.0f}", **run_utils.short_rates(run.latest_eval)},
        refresh=False,
    )


def evaluate_and_checkpoint(run: Run, bar: Any) -> bool:
    """Periodic evaluation and checkpoint; True when the time limit stops the run."""
    cfg, update = run.cfg, run.learner.update
    out_of_time = cfg.time_limit_minutes > 0 and run.elapsed() > 60 * cfg.time_limit_minutes
    last = update >= cfg.total_updates or out_of_time
    if (cfg.eval_every and update % cfg.eval_every == 0) or last:
        evaluate(run)
        bar.set_postfix(run_utils.short_rates(run.latest_eval))
    if update % cfg.checkpoint_every == 0 or last:
        checkpoint(run)
    if out_of_time and update < cfg.total_updates:
        run.stopped_early = True
        bar.write(f"time limit of {cfg.time_limit_minutes} minutes reached after {update} updates")
        return True
    return False


def play_eval(
    run: Run, pairs: dict[str, int], final: bool = False, deterministic: bool = True, start: bool = False
) -> dict[str, dict[str, Any]]:
    """Arena games of the current network (of the start network with ``start``); periodic
    evaluations replay the same deals (comparable over time), the final one uses others."""
    seed = stream_seed(run.cfg.seed, Stream.FINAL_EVAL if final else Stream.EVAL)
    progress = final and run.cfg.progress
    net = run.learner.start if start else run.learner.net
    # two games per opponent of every evaluation of the most probable move, as game records
    name = f"eval-{'start' if start else f'{run.learner.update:05d}'}{'-final' if final else ''}.jsonl"
    records = run.folder / "games" / name if deterministic else None
    results = run_utils.evaluate(
        net,
        pairs,
        seed=seed,
        workers=run.cfg.eval_workers,
        progress=progress,
        records=records,
        deterministic=deterministic,
    )
    run.learner.net.train()
    return results


def evaluate(run: Run) -> None:
    """The periodic evaluation: the most probable move (and the sampled policy, ``eval_sampled``)
    against ``eval_opponents``; history, learning curve, and ``best.pt`` with ``keep_best``."""
    cfg, lr = run.cfg, run.learner
    results = play_eval(run, cfg.eval_opponents)
    run_utils.log_eval(run.writer, results, lr.global_step)
    sampled = play_eval(run, cfg.eval_opponents, deterministic=False) if cfg.eval_sampled else {}
    run_utils.log_eval(run.writer, sampled, lr.global_step, policy="sampled")
    for spec, r in results.items():
        r.update({"sampled_" + k: v for k, v in sampled.get(spec, {}).items() if k != "seconds"})
        run.history.append(
            {"opponent": spec, "update": lr.update, "global_step": lr.global_step, "minutes": run.elapsed() / 60} | r
        )
    run_utils.write_history(run.history, run.folder)
    run_utils.plot_learning_curve(run.history, run.folder / "learning_curve.png", f"self-play PPO ({run.folder.name})")
    run.latest_eval = results
    rate = results[cfg.keep_best]["win_rate"] if cfg.keep_best else None
    if rate is not None and rate > run.best.get("win_rate", -1.0):
        run.best = {"update": lr.update, "win_rate": rate, "opponent": cfg.keep_best}
        save_checkpoint(run.folder / "checkpoints" / "best.pt", lr.net)


def checkpoint(run: Run, name: str = "latest.pt") -> Path:
    """The network with everything a resume needs (format: ``patchwork_env.players.policy``)."""
    lr = run.learner
    return save_checkpoint(
        run.folder / "checkpoints" / name,
        lr.net,
        trainer={
            "config": dataclasses.asdict(run.cfg),
            "optimizer": lr.optimizer.state_dict(),
            "pool": lr.pool.state_dict(),
            "numpy_rng": lr.rng.bit_generator.state,
            "torch_rng": lr.gen.get_state(),
            "update": lr.update,
            "global_step": lr.global_step,
            "decisions": lr.decisions,
            "games_done": lr.games_done,
            "eval_history": run.history,
            "best": run.best,
            "distill": run.distilled,
            "elapsed_seconds": run.elapsed(),
            "start_model": lr.start.state_dict(),
        },
    )


def finish(run: Run) -> dict[str, Any]:
    """``final.pt``, the final evaluation (of ``best.pt`` with ``keep_best``) on fresh deals, the
    summary (``final_eval.json``, returned: the start's, the last periodic (most probable move and
    ``sampled_*``) and the final evaluations, the last update's diagnostics)."""
    cfg, lr, folder = run.cfg, run.learner, run.folder
    save_checkpoint(folder / "checkpoints" / "final.pt", lr.net)
    evaluated = folder / "checkpoints" / "final.pt"
    if run.best:
        evaluated = folder / "checkpoints" / "best.pt"
        lr.net.load_state_dict(read_checkpoint(evaluated)["model"])
        print(
            f"keep_best: evaluating checkpoints/best.pt (update {run.best['update']}, "
            f"periodic win rate {run.best['win_rate']:.3f} vs {run.best['opponent']})"
        )
    final: dict[str, dict[str, Any]] = {}
    final_start: dict[str, dict[str, Any]] = {}
    if cfg.final_eval_pairs > 0:
        print(f"final evaluation: {cfg.final_eval_pairs} paired deals against {', '.join(cfg.final_eval_opponents)}")
        pairs = {spec: cfg.final_eval_pairs for spec in cfg.final_eval_opponents}
        final = play_eval(run, pairs, final=True)
        if cfg.final_eval_start:  # the same deals: start and end side by side
            final_start = play_eval(run, pairs, final=True, start=True)
        run_utils.log_eval(run.writer, final, lr.global_step, prefix="eval_final")
        for spec, r in final.items():
            run.history.append(
                {"opponent": spec, "update": lr.update, "global_step": lr.global_step, "minutes": run.elapsed() / 60}
                | {"final": True, "checkpoint_update": run.best.get("update", lr.update)}
                | r
            )
        run_utils.write_history(run.history, folder)
        run_utils.plot_learning_curve(run.history, folder / "learning_curve.png", f"self-play PPO ({folder.name})")
    run.writer.close()
    summary = {
        "run_folder": str(folder),
        "checkpoint": str(folder / "checkpoints" / "latest.pt"),
        "evaluated_checkpoint": str(evaluated),
        "start_checkpoint": str(folder / "checkpoints" / "start.pt"),
        "best": run.best,
        "distill": run.distilled,
        "updates": lr.update,
        "learner_decisions": lr.decisions,
        "games_finished": lr.games_done,
        "training_minutes": run.elapsed() / 60,
        "stopped_early": run.stopped_early,
        "start_eval": start_eval(run.history),
        "last_eval": run.latest_eval,
        "last_update_diagnostics": run.diagnostics,
        "final_eval": final,
        "final_start_eval": final_start,
    }
    (folder / "final_eval.json").write_text(json.dumps(summary, indent=1))
    if final_start:
        print("the start network (update 0) on the same deals:")
        run_utils.print_final_eval(final_start)
        print(f"the {'best' if run.best else 'final'} network:")
    run_utils.print_final_eval(final)
    print(f"run folder: {folder}  ({run.elapsed() / 60:.1f} minutes)")
    return summary


def start_eval(history: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The periodic evaluation of the start policy (update 0), per opponent; empty if none."""
    return {h["opponent"]: h for h in history if h["update"] == 0 and not h.get("final")}


def make_optimizer(net: PatchworkNet, cfg: SelfPlayConfig) -> torch.optim.Adam:
    """Adam over the network; the greedy prior's weighting layer in its own group at
    ``prior_lr_scale`` x the learning rate (each group keeps its ``base_lr`` for annealing)."""
    special = list(net.prior_weights.parameters()) if net.uses_prior and cfg.prior_lr_scale != 1.0 else []
    ids = {id(p) for p in special}
    groups: list[dict[str, Any]] = [
        {"params": [p for p in net.parameters() if id(p) not in ids], "base_lr": cfg.learning_rate}
    ]
    if special:
        lr = cfg.learning_rate * cfg.prior_lr_scale
        groups.append({"params": special, "base_lr": lr, "lr": lr})
    return torch.optim.Adam(groups, lr=cfg.learning_rate, eps=1e-5)


def distill_from_teacher(
    cfg: SelfPlayConfig, net: PatchworkNet, writer: Any, backend: Backend | None = None
) -> dict[str, Any]:
    """The distillation warm start (``agents.distill``): sample greedy self-play positions, label
    them with ``cfg.teacher`` (on ``backend`` if given, else in ``distill_workers`` processes),
    train the network's choice of move kind; then ``distill_rounds`` DAgger rounds, each adding
    the teacher's targets in positions of the network's own games and training again on all of
    them. Returns what it did and measured."""
    t0 = time.time()
    seed = stream_seed(cfg.seed, Stream.DISTILL)
    states = sample_positions(cfg.distill_positions, seed=seed, temp=cfg.distill_temp)
    states, targets = _label_choices(cfg, states, seed, backend, "greedy self-play")
    labelling = time.time() - t0
    held_out = _held_out(len(states), seed)
    log = _distill_log(writer, 0)
    stats = distill(net, states, targets, cfg.distill_epochs, cfg.distill_lr, seed=seed, log=log, held_out=held_out)
    accuracy = [[s.val_accuracy for s in stats]]
    for round_ in range(1, cfg.distill_rounds + 1):
        t1 = time.time()
        round_seed = stream_seed(cfg.seed, Stream.DISTILL, round_)
        half = max(1, cfg.dagger_positions // 2)
        new = np.concatenate(
            [student_positions(half, round_seed, net), student_positions(half, round_seed + 1, net, mirror=True)]
        )
        new, new_targets = _label_choices(cfg, new, round_seed, backend, f"round {round_}: the network's games")
        states, targets = np.concatenate([states, new]), np.concatenate([targets, new_targets])
        held_out = np.concatenate([held_out, _held_out(len(new), round_seed)])
        labelling += time.time() - t1
        log = _distill_log(writer, round_ * (cfg.distill_epochs + 1))
        stats = distill(
            net, states, targets, cfg.distill_epochs, cfg.distill_lr, seed=round_seed, log=log, held_out=held_out
        )
        accuracy.append([s.val_accuracy for s in stats])
    return {
        "teacher": cfg.teacher,
        "positions": len(states),
        "rounds": cfg.distill_rounds,
        "labelling_minutes": labelling / 60,
        "training_minutes": (time.time() - t0 - labelling) / 60,
        "val_accuracy": accuracy,
        "label_counts": np.bincount(targets.argmax(1), minlength=5).tolist(),
    }


def _held_out(n: int, seed: int, share: float = 0.1) -> npt.NDArray[np.bool_]:
    """A random ``share`` of ``n`` new positions, never trained on (every round's accuracy is on
    positions the network has not seen)."""
    chosen = np.zeros(n, dtype=np.bool_)
    chosen[np.random.default_rng(seed).permutation(n)[: max(1, round(share * n))]] = True
    return chosen


def _label_choices(
    cfg: SelfPlayConfig, states: npt.NDArray[np.int64], seed: int, backend: Backend | None, source: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The positions that offer a choice of move kind, and the teacher's targets in them."""
    states = states[legal_groups(states).sum(1) > 1]
    print(f"distillation: {cfg.teacher} labels {len(states):,} positions of {source} with a choice of move kind")
    with progress_bar(
        total=len(states), unit="pos", dynamic_ncols=True, disable=not cfg.progress, file=sys.stdout
    ) as bar:
        targets = teacher_targets(
            states, cfg.teacher, seed=seed, workers=cfg.distill_workers, progress=bar.update, backend=backend
        )
    return states, targets


def _distill_log(writer: Any, offset: int) -> Callable[[DistillStats], None]:
    """Prints and logs a distillation's epochs (TensorBoard step ``offset + epoch``: rounds in sequence)."""

    def log(stats: DistillStats) -> None:
        step = offset + stats.epoch
        writer.add_scalar("distill/val_accuracy", stats.val_accuracy, step)
        writer.add_scalar("distill/val_loss", stats.val_loss, step)
        if stats.epoch:
            writer.add_scalar("distill/train_loss", stats.train_loss, step)
        print(
            f"  epoch {stats.epoch}: held-out accuracy {stats.val_accuracy:.3f}, loss {stats.val_loss:.3f}"
            + (f" (train {stats.train_loss:.3f})" if stats.epoch else " (before training)")
        )

    return log


def cli(argv: list[str] | None = None) -> int:
    parser = trainer_parser(
        "python -m train.selfplay",
        "Batched self-play PPO for Patchwork (see the module docstring).",
        "configs/quick.yaml, configs/selfplay.yaml",
        "num_games=64 learning_rate=1e-3",
    )
    parser.add_argument("--resume", help="checkpoint to continue from (its config is used, then overrides)")
    add_address_option(parser, "distill_backend")

    def load(args: argparse.Namespace) -> SelfPlayConfig:
        if not args.resume:
            return load_config(args.config, SelfPlayConfig, args.overrides)
        trainer = read_checkpoint(args.resume).get("trainer", {})
        if "config" not in trainer:
            raise ConfigError(f"{args.resume} has no trainer state: it cannot be resumed")
        return from_dict(SelfPlayConfig, {**trainer["config"], **parse_overrides(args.overrides)}, "resume")

    def train(cfg: SelfPlayConfig, args: argparse.Namespace, name: str) -> None:
        address = ray_address(args, cfg, "distill_backend")
        main(cfg, resume=args.resume, run_dir=args.run_dir, config_name=name, address=address)

    return run_trainer(parser, argv, SelfPlayConfig, "selfplay", train, load, run_errors=(ConnectionError,))


if __name__ == "__main__":
    sys.exit(cli())
