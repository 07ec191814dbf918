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
(``agents.network.NetConfig``): the rollout computes the prior terms of the learner's rows from the
game states (``agents.heuristic.greedy_prior``) and stores them for the update.

With a ``teacher`` (e.g. ``mcts:sims=100``) a fresh run first distils the teacher's choice of
move kind into the network (``agents.distill``: greedy self-play positions labelled in worker
processes, then supervised epochs on the group choice only; logged as ``distill/``), evaluates
that start as update 0, and then runs PPO from it.

Every ``eval_every`` updates: arena games (``agents.arena.play_pairs``, paired deals) against the
``eval_opponents``, logged as ``eval/win_rate_vs_<agent>`` (with ``keep_best``, the best of them
against one opponent is kept as ``checkpoints/best.pt`` and is what the final evaluation plays, on
deals the periodic evaluations never used); checkpoints every ``checkpoint_every``
updates; the run folder layout is in ``train.run_utils``. Resuming restores the network, the
optimizer, the counters, the opponent pool, the random generators and the evaluation history;
the games in progress are not saved (fresh deals are dealt on resume).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

from agents.distill import DistillStats, distill, legal_groups, sample_positions, teacher_groups
from agents.heuristic import NUM_FEATURES
from agents.network import PatchworkNet, count_parameters, prior_for, sample_actions
from agents.opponent_pool import SELF, OpponentPool
from agents.ppo import PPOSettings, Rollout, final_rewards, per_seat_gae, ppo_update
from agents.ppo_agent import net_from_checkpoint, read_checkpoint, save_checkpoint
from patchwork_env import rules as R
from patchwork_env.vector import VectorGames
from train import run_utils as U
from train.cli import Parser
from train.config import ConfigError, SelfPlayConfig, describe, from_dict, load_config, parse_overrides, to_yaml


def main(
    config: SelfPlayConfig,
    resume: str | None = None,
    run_dir: str | None = None,
    config_name: str = "selfplay",
) -> dict[str, Any]:
    """Train; returns a summary (run folder, counters, the last and final evaluations)."""
    cfg = config
    cfg.validate()
    U.set_threads(cfg.torch_threads)
    wall_start = time.time()

    # --- state: fresh or from a checkpoint -------------------------------------------------------
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
    if ckpt is not None and not run_dir:
        p = Path(resume or "")
        run_dir = str(p.parent.parent if p.parent.name == "checkpoints" else p.parent)
    folder = U.run_folder(cfg, config_name, run_dir)
    U.save_config(cfg, folder)
    torch.manual_seed(cfg.seed)
    net = net_from_checkpoint(ckpt, str(resume)).train() if ckpt else PatchworkNet(cfg.net_config())
    optimizer = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, eps=1e-5)
    pool = OpponentPool(
        net.config, cfg.pool_size, cfg.latest_prob, cfg.random_weight, cfg.greedy_weight, cfg.snapshot_weight
    )
    rng = np.random.default_rng(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    update, global_step, decisions, games_done = 0, 0, 0, 0
    history: list[dict[str, Any]] = []
    best: dict[str, Any] = {}  # update and win rate of checkpoints/best.pt (keep_best)
    elapsed_before = 0.0
    if ckpt is not None:
        optimizer.load_state_dict(trainer["optimizer"])
        pool.load_state_dict(trainer["pool"])
        rng.bit_generator.state = trainer["numpy_rng"]
        gen.set_state(trainer["torch_rng"])
        update, global_step = trainer["update"], trainer["global_step"]
        decisions, games_done = trainer["decisions"], trainer["games_done"]
        history = list(trainer["eval_history"])
        best = dict(trainer.get("best", {}))
        elapsed_before = float(trainer["elapsed_seconds"])
    settings = PPOSettings(
        cfg.update_epochs,
        cfg.num_minibatches,
        cfg.clip_coef,
        cfg.clip_vloss,
        cfg.ent_coef,
        cfg.vf_coef,
        cfg.max_grad_norm,
        cfg.target_kl,
    )
    writer = SummaryWriter(str(folder), purge_step=global_step if ckpt else None)
    if not ckpt:
        writer.add_text("config", "```\n" + to_yaml(cfg) + "\n```")
    n, steps = cfg.num_games, cfg.rollout_steps
    games = VectorGames(n, seed=int(rng.integers(2**63)))
    codes, seats = pool.draw(n, rng)
    game_length = np.zeros(n, dtype=np.int64)
    buf = Rollout.allocate(steps, n, R.OBS_DIM, R.NUM_ACTIONS, prior_features=NUM_FEATURES if net.uses_prior else 0)
    latest_eval: dict[str, dict[str, Any]] = {}
    if history:
        last_update = history[-1]["update"]
        latest_eval = {h["opponent"]: h for h in history if h["update"] == last_update}

    def elapsed() -> float:
        return elapsed_before + time.time() - wall_start

    def run_eval(pairs: dict[str, int], progress: bool = False, final: bool = False) -> dict[str, dict[str, Any]]:
        # periodic evaluations replay the same deals (comparable over time); the final one uses others
        seed = cfg.seed + (20_000 if final else 10_000)
        games = folder / "games" / f"eval-{update:05d}{'-final' if final else ''}.jsonl"
        results = U.evaluate(net, pairs, seed=seed, workers=cfg.eval_workers, progress=progress, records=games)
        net.train()
        return results

    def checkpoint(name: str = "latest.pt") -> Path:
        return save_checkpoint(
            folder / "checkpoints" / name,
            net,
            trainer={
                "config": dataclasses.asdict(cfg),
                "optimizer": optimizer.state_dict(),
                "pool": pool.state_dict(),
                "numpy_rng": rng.bit_generator.state,
                "torch_rng": gen.get_state(),
                "update": update,
                "global_step": global_step,
                "decisions": decisions,
                "games_done": games_done,
                "eval_history": history,
                "best": best,
                "distill": distilled,
                "elapsed_seconds": elapsed(),
            },
        )

    def periodic_eval() -> dict[str, dict[str, Any]]:
        nonlocal best
        results = run_eval(cfg.eval_opponents)
        U.log_eval(writer, results, global_step)
        for spec, r in results.items():
            history.append(
                {"opponent": spec, "update": update, "global_step": global_step, "minutes": elapsed() / 60, **r}
            )
        U.write_history(history, folder)
        U.plot_learning_curve(history, folder / "learning_curve.png", f"self-play PPO ({folder.name})")
        rate = results[cfg.keep_best]["win_rate"] if cfg.keep_best else None
        if rate is not None and rate > best.get("win_rate", -1.0):
            best = {"update": update, "win_rate": rate, "opponent": cfg.keep_best}
            save_checkpoint(folder / "checkpoints" / "best.pt", net)
        return results

    distilled: dict[str, Any] = dict(trainer.get("distill", {}))
    if cfg.teacher and ckpt is None:
        distilled = distill_from_teacher(cfg, net, writer)
        save_checkpoint(folder / "checkpoints" / "distilled.pt", net)  # the warm start alone, as an agent
        if cfg.eval_every:
            latest_eval = periodic_eval()  # the distilled start: update 0 of the learning curve
        checkpoint()

    bar = tqdm(
        total=cfg.total_updates,
        initial=update,
        unit="upd",
        dynamic_ncols=True,
        disable=not cfg.progress,
        file=sys.stdout,
    )
    bar.write(f"run folder: {folder}  (network: {count_parameters(net):,} parameters)")
    stopped_early = False
    try:
        while update < cfg.total_updates:
            t0 = time.perf_counter()
            if cfg.anneal_lr:
                optimizer.param_groups[0]["lr"] = cfg.learning_rate * (1.0 - update / cfg.total_updates)
            results: dict[str, list[float]] = {}
            lengths: list[int] = []

            # --- rollout: every game's acting seat decides, learner rows in one forward pass ---------
            net.eval()
            for t in range(steps):
                actor = games.current_player.copy()
                obs = games.observe()
                masks = games.masks
                learner = (codes == SELF) | (actor == seats)
                actions = np.empty(n, dtype=np.int64)
                rows = np.flatnonzero(learner)
                prior = prior_for(net, games.states[rows], masks[rows])
                if buf.prior is not None and prior is not None:
                    buf.prior[t, rows] = prior.numpy()
                with torch.no_grad():
                    logits, value = net(torch.from_numpy(obs[rows]), torch.from_numpy(masks[rows]), prior)
                    act = sample_actions(logits, gen)
                    logp = torch.log_softmax(logits, -1).gather(1, act.unsqueeze(1)).squeeze(1)
                actions[rows] = act.numpy()
                buf.logprobs[t, rows] = logp.numpy()
                buf.values[t, rows] = value.numpy()
                others = np.flatnonzero(~learner)
                if others.size:
                    actions[others] = pool.act(
                        codes[others], games.states[others], masks[others], obs[others], rng, gen
                    )
                buf.obs[t] = obs
                buf.masks[t] = masks
                buf.actions[t] = actions
                buf.actor[t] = actor
                buf.learner[t] = learner
                res = games.step(actions)
                game_length += 1
                buf.done[t] = res.done
                buf.outcome[t] = 0.0
                ended = np.flatnonzero(res.done)
                if ended.size:
                    buf.outcome[t, ended] = final_rewards(
                        res.winner[ended], res.scores[ended], cfg.reward_margin_weight, cfg.reward_margin_scale
                    )
                    for i in ended.tolist():
                        if codes[i] != SELF:
                            results.setdefault(pool.name(int(codes[i])), []).append(float(res.winner[i] == seats[i]))
                        lengths.append(int(game_length[i]))
                    game_length[ended] = 0
                    codes[ended], seats[ended] = pool.draw(ended.size, rng)
            global_step += n * steps
            decisions += int(buf.learner.sum())
            games_done += len(lengths)

            # --- bootstrap each seat's unfinished trajectory from the position it is in ---------------
            last_values = np.zeros((n, 2), dtype=np.float32)
            with torch.no_grad():
                for seat in (0, 1):
                    seat_obs = games.observe(np.full(n, seat, dtype=np.int64))
                    last_values[:, seat] = net.values(torch.from_numpy(seat_obs)).numpy()
            games.observe()  # back to the acting seats' view
            advantages, returns = per_seat_gae(
                buf.values, buf.actor, buf.learner, buf.done, buf.outcome, last_values, cfg.gamma, cfg.gae_lambda
            )

            # --- PPO update on the learner's decisions -------------------------------------------
            net.train()
            t1 = time.perf_counter()
            metrics = ppo_update(net, optimizer, buf.learner_batch(advantages, returns), settings, gen)
            update += 1
            if update % cfg.snapshot_every == 0:
                pool.add(net, update)
                codes = pool.replace_missing(codes)  # games against a dropped snapshot play the newest

            # --- logging --------------------------------------------------------------------------
            t2 = time.perf_counter()
            metrics["charts/learning_rate"] = optimizer.param_groups[0]["lr"]
            metrics["charts/decisions_per_second"] = int(buf.learner.sum()) / (t2 - t0)
            metrics["charts/rollout_seconds"] = t1 - t0
            metrics["charts/update_seconds"] = t2 - t1
            metrics["charts/learner_decisions"] = decisions
            metrics["charts/games_finished"] = games_done
            metrics["charts/pool_snapshots"] = len(pool.snapshots)
            if lengths:
                metrics["charts/game_length"] = float(np.mean(lengths))
            for name, won in results.items():
                metrics[f"charts/train_win_rate_vs_{name}"] = float(np.mean(won))
            for key, value in metrics.items():
                writer.add_scalar(key, value, global_step)
            bar.update(1)
            postfix = {"dps": f"{metrics['charts/decisions_per_second']:.0f}", **U.short_rates(latest_eval)}
            bar.set_postfix(postfix, refresh=False)

            # --- evaluation, checkpoint, time limit -------------------------------------------------
            out_of_time = cfg.time_limit_minutes > 0 and elapsed() > 60 * cfg.time_limit_minutes
            last = update >= cfg.total_updates or out_of_time
            if (cfg.eval_every and update % cfg.eval_every == 0) or last:
                latest_eval = periodic_eval()
                bar.set_postfix({**postfix, **U.short_rates(latest_eval)})
            if update % cfg.checkpoint_every == 0 or last:
                checkpoint()
            if out_of_time and update < cfg.total_updates:
                stopped_early = True
                bar.write(f"time limit of {cfg.time_limit_minutes} minutes reached after {update} updates")
                break
    except KeyboardInterrupt:
        path = checkpoint()
        bar.close()
        print(f"\ninterrupted after {update} updates; checkpoint: {path}")
        raise
    finally:
        bar.close()

    # --- final evaluation -----------------------------------------------------------------------------
    save_checkpoint(folder / "checkpoints" / "final.pt", net)
    evaluated = folder / "checkpoints" / "final.pt"
    if best:
        evaluated = folder / "checkpoints" / "best.pt"
        net.load_state_dict(read_checkpoint(evaluated)["model"])
        print(
            f"keep_best: evaluating checkpoints/best.pt (update {best['update']}, "
            f"periodic win rate {best['win_rate']:.3f} vs {best['opponent']})"
        )
    final: dict[str, dict[str, Any]] = {}
    if cfg.final_eval_pairs > 0:
        print(f"final evaluation: {cfg.final_eval_pairs} paired deals against {', '.join(cfg.final_eval_opponents)}")
        pairs = {spec: cfg.final_eval_pairs for spec in cfg.final_eval_opponents}
        final = run_eval(pairs, progress=cfg.progress, final=True)
        U.log_eval(writer, final, global_step, prefix="eval_final")
        for spec, r in final.items():
            history.append(
                {
                    "opponent": spec,
                    "update": update,
                    "global_step": global_step,
                    "minutes": elapsed() / 60,
                    "final": True,
                    "checkpoint_update": best.get("update", update),
                    **r,
                }
            )
        U.write_history(history, folder)
        U.plot_learning_curve(history, folder / "learning_curve.png", f"self-play PPO ({folder.name})")
    writer.close()
    summary = {
        "run_folder": str(folder),
        "checkpoint": str(folder / "checkpoints" / "latest.pt"),
        "evaluated_checkpoint": str(evaluated),
        "best": best,
        "distill": distilled,
        "updates": update,
        "learner_decisions": decisions,
        "games_finished": games_done,
        "training_minutes": elapsed() / 60,
        "stopped_early": stopped_early,
        "last_eval": latest_eval,
        "final_eval": final,
    }
    (folder / "final_eval.json").write_text(json.dumps(summary, indent=1))
    for spec, r in final.items():
        print(
            f"  vs {spec:<14} win rate {r['win_rate']:.3f}  95% CI [{r['ci_low']:.3f}, {r['ci_high']:.3f}]  "
            f"({r['games']} games, mean margin {r['mean_margin']:+.1f})"
        )
    print(f"run folder: {folder}  ({elapsed() / 60:.1f} minutes)")
    return summary


def distill_from_teacher(cfg: SelfPlayConfig, net: PatchworkNet, writer: Any) -> dict[str, Any]:
    """The distillation warm start (``agents.distill``): sample positions, label them with
    ``cfg.teacher``, train the network's choice of move kind; returns what it did and measured."""
    t0 = time.time()
    states = sample_positions(cfg.distill_positions, seed=cfg.seed + 30_000, temp=cfg.distill_temp)
    states = states[legal_groups(states).sum(1) > 1]
    print(f"distillation: {cfg.teacher} labels {len(states):,} positions with a choice of move kind")
    with tqdm(total=len(states), unit="pos", dynamic_ncols=True, disable=not cfg.progress, file=sys.stdout) as bar:
        groups = teacher_groups(states, cfg.teacher, seed=cfg.seed, workers=cfg.distill_workers, progress=bar.update)
    labelled = time.time()

    def log(stats: DistillStats) -> None:
        writer.add_scalar("distill/val_accuracy", stats.val_accuracy, stats.epoch)
        writer.add_scalar("distill/val_loss", stats.val_loss, stats.epoch)
        if stats.epoch:
            writer.add_scalar("distill/train_loss", stats.train_loss, stats.epoch)
        print(
            f"  epoch {stats.epoch}: held-out accuracy {stats.val_accuracy:.3f}, loss {stats.val_loss:.3f}"
            + (f" (train {stats.train_loss:.3f})" if stats.epoch else " (before training)")
        )

    stats = distill(net, states, groups, cfg.distill_epochs, cfg.distill_lr, seed=cfg.seed, log=log)
    return {
        "teacher": cfg.teacher,
        "positions": len(states),
        "labelling_minutes": (labelled - t0) / 60,
        "training_minutes": (time.time() - labelled) / 60,
        "val_accuracy": [s.val_accuracy for s in stats],
        "label_counts": np.bincount(groups, minlength=5).tolist(),
    }


def cli(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="python -m train.selfplay",
        description="Batched self-play PPO for Patchwork (see the module docstring).",
        epilog="Overrides: key=value after the options, e.g. num_games=64 learning_rate=1e-3.",
    )
    parser.add_argument("--config", help="YAML config (configs/quick.yaml, configs/selfplay.yaml)")
    parser.add_argument("--resume", help="checkpoint to continue from (its config is used, then overrides)")
    parser.add_argument("--run-dir", help="run folder (default runs/<run_name>, or the resumed run's folder)")
    parser.add_argument("--help-config", action="store_true", help="list every config key and exit")
    parser.add_argument("overrides", nargs="*", help="key=value")
    args = parser.parse_args(argv)
    if args.help_config:
        print(describe(SelfPlayConfig))
        return 0
    try:
        if args.resume:
            trainer = read_checkpoint(args.resume).get("trainer", {})
            if "config" not in trainer:
                raise ConfigError(f"{args.resume} has no trainer state: it cannot be resumed")
            cfg = from_dict(SelfPlayConfig, {**trainer["config"], **parse_overrides(args.overrides)}, "resume")
        elif args.config:
            cfg = load_config(args.config, SelfPlayConfig, args.overrides)
        else:
            cfg = load_config(None, SelfPlayConfig, args.overrides)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    name = Path(args.config).stem if args.config else "selfplay"
    try:
        main(cfg, resume=args.resume, run_dir=args.run_dir, config_name=name)
    except ConfigError as exc:  # raised before anything is written (e.g. a resume that changes the network)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(cli())
