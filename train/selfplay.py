"""Batched self-play PPO on the vector engine, with an opponent pool (in the spirit of CleanRL's ppo.py).

    python -m train.selfplay --config configs/quick.yaml
    python -m train.selfplay --config configs/quick.yaml --seed 1 --num-games 64
    python -m train.selfplay --config configs/selfplay.yaml --init-checkpoint runs/distill/checkpoints/final.pt
    python -m train.selfplay --resume runs/<run>/checkpoints/latest.pt --total-updates 800
    python -m train.selfplay --help                 # every option, its default and meaning

Each update: ``rollout_steps`` vector steps over ``num_games`` games. At every step each game's
acting seat decides: the rows where the learner acts go through one forward pass, the rows of
frozen opponents are grouped per opponent (``agents.opponent_pool``: about half the games learner
vs learner, the rest against past snapshots, greedy and random, seats drawn per game).
Transitions are stored per (step, game) with the acting seat; GAE runs per game and seat over the
seat's own decisions (``agents.ppo.per_seat_gae``), so consecutive own moves are ordinary
consecutive transitions and the final reward reaches both seats. Then clipped PPO on the
learner's decisions. With ``net.prior_scale > 0`` the network is a residual policy on greedy's
one-ply evaluation, whose terms the rollout computes from the game states and stores.

Read it top to bottom: the settings are ``train.config.SelfPlayConfig``'s fields (``--help``); ``Learner``
holds what an iteration reads and changes; ``collect_rollout`` plays the games and ends with per-seat
GAE; ``update_policy`` runs the clipped PPO update (the algorithm itself, storage, GAE and the loss, is
``agents/ppo.py``, one file read the same way); ``SelfPlay`` at the bottom is what the loop calls.
The loop around the step is ``train.loop``'s (time limit, evaluations every ``eval_every`` updates,
checkpoints, ``--resume``: the network, optimizer, pool, generators, counters and the games in
progress come back, so a resumed run continues exactly where it stopped).
"""

from __future__ import annotations

import sys

from train.cli import parse_or_exit, run_trainer, train_or_report
from train.config import SelfPlayConfig

if __name__ == "__main__":
    COMMAND_LINE = parse_or_exit(SelfPlayConfig, __doc__)

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agents.opponent_pool import SELF, OpponentPool
from agents.ppo import PPOSettings, Rollout, per_seat_gae, ppo_update, shaped_final_rewards
from patchwork_env.core import rules
from patchwork_env.envs import observation
from patchwork_env.envs.vector import VectorGames
from patchwork_env.players.heuristic import NUM_FEATURES
from patchwork_env.players.network import PatchworkNet, count_parameters, prior_for, sample_actions
from train.loop import Resumed, Trainer, initial_network, open_run, run_loop, starting_network
from train.run import Run, frozen_copy, load_network, preflight
from train.seeds import Stream, stream_rng, stream_seed


def main(cfg: SelfPlayConfig, name: str = "selfplay") -> dict[str, Any]:
    """Train; returns the summary (``train.run.Run.finish``)."""
    preflight(cfg)
    net = initial_network(cfg)
    run, resumed = open_run(cfg, name, "update")
    return run_loop(run, SelfPlay(run, net, resumed), cfg.total_updates, resumed)


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
    codes: np.ndarray[Any, np.dtype[np.int64]]  # each game's pool opponent (SELF: the learner plays both seats)
    seats: np.ndarray[Any, np.dtype[np.int64]]  # each game's learner seat
    game_length: np.ndarray[Any, np.dtype[np.int64]]
    rollout: Rollout
    update: int = 0
    global_step: int = 0
    decisions: int = 0
    games_done: int = 0


def new_learner(cfg: SelfPlayConfig, net: PatchworkNet) -> Learner:
    """A fresh learner around ``net``: optimizer, pool, generators, games (``SelfPlay.load_state_dict``
    puts back a resumed run's)."""
    net.train()
    pool = OpponentPool.of(net.config, cfg)
    rng = stream_rng(cfg.seed, Stream.TRAIN)
    gen = torch.Generator().manual_seed(stream_seed(cfg.seed, Stream.TRAIN))
    n, steps = cfg.num_games, cfg.rollout_steps
    games = VectorGames(n, seed=int(rng.integers(2**63)))
    codes, seats = pool.draw(n, rng)
    rollout = Rollout.allocate(
        steps, n, observation.OBS_DIM, rules.NUM_ACTIONS, prior_features=NUM_FEATURES if net.uses_prior else 0
    )
    return Learner(
        cfg=cfg,
        net=net,
        start=frozen_copy(net),
        optimizer=make_optimizer(net, cfg),
        pool=pool,
        rng=rng,
        gen=gen,
        settings=PPOSettings.of(cfg),
        games=games,
        codes=codes,
        seats=seats,
        game_length=np.zeros(n, np.int64),
        rollout=rollout,
    )


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


# --- one iteration: a rollout over the games in progress, then the PPO update -----------------------
@dataclass
class Collected:
    """One rollout's training batch and what it saw."""

    batch: dict[str, torch.Tensor]
    results: dict[str, list[float]]  # pool opponent name -> learner won (1.0) or not, per finished game
    lengths: list[int]  # plies of the finished games
    seconds: float


def collect_rollout(learner: Learner) -> Collected:
    """``rollout_steps`` vector steps: every game's acting seat decides, the learner's rows in one
    forward pass, the pool's rows grouped per opponent; then per-seat GAE over the learner's decisions."""
    t0 = time.perf_counter()
    cfg, net, games, buf = learner.cfg, learner.net, learner.games, learner.rollout
    n = cfg.num_games
    results: dict[str, list[float]] = {}
    lengths: list[int] = []
    net.eval()
    for t in range(cfg.rollout_steps):
        actor = games.current_player.copy()
        obs = games.observe()
        masks = games.masks
        mine = (learner.codes == SELF) | (actor == learner.seats)
        actions = np.empty(n, dtype=np.int64)
        rows = np.flatnonzero(mine)
        prior = prior_for(net, games.states[rows], masks[rows])
        if buf.prior is not None and prior is not None:
            buf.prior[t, rows] = prior.numpy()
        with torch.no_grad():
            logits, value = net(torch.from_numpy(obs[rows]), torch.from_numpy(masks[rows]), prior)
            act = sample_actions(logits, learner.gen)
            logp = torch.log_softmax(logits, -1).gather(1, act.unsqueeze(1)).squeeze(1)
        actions[rows] = act.numpy()
        buf.logprobs[t, rows] = logp.numpy()
        buf.values[t, rows] = value.numpy()
        others = np.flatnonzero(~mine)
        if others.size:
            actions[others] = learner.pool.act(
                learner.codes[others], games.states[others], masks[others], obs[others], learner.rng, learner.gen
            )
        buf.obs[t], buf.masks[t], buf.actions[t], buf.actor[t], buf.learner[t] = obs, masks, actions, actor, mine
        res = games.step(actions)
        learner.game_length += 1
        buf.done[t] = res.done
        buf.outcome[t] = 0.0
        ended = np.flatnonzero(res.done)
        if ended.size:
            buf.outcome[t, ended] = shaped_final_rewards(
                res.winner[ended], res.scores[ended], cfg.reward_margin_weight, cfg.reward_margin_scale
            )
            for i in ended.tolist():
                if learner.codes[i] != SELF:
                    name = learner.pool.name(int(learner.codes[i]))
                    results.setdefault(name, []).append(float(res.winner[i] == learner.seats[i]))
                lengths.append(int(learner.game_length[i]))
            learner.game_length[ended] = 0
            learner.codes[ended], learner.seats[ended] = learner.pool.draw(ended.size, learner.rng)
    learner.global_step += n * cfg.rollout_steps
    learner.decisions += int(buf.learner.sum())
    learner.games_done += len(lengths)

    # bootstrap each seat's unfinished trajectory from the position it is in
    last_values = np.zeros((n, 2), dtype=np.float32)
    with torch.no_grad():
        for seat in (0, 1):
            seat_obs = games.observe(np.full(n, seat, dtype=np.int64)).copy()  # the games' view is read-only
            last_values[:, seat] = net.values(torch.from_numpy(seat_obs)).numpy()
    games.observe()  # back to the acting seats' view
    advantages, returns = per_seat_gae(
        buf.values, buf.actor, buf.learner, buf.done, buf.outcome, last_values, cfg.gamma, cfg.gae_lambda
    )
    return Collected(buf.learner_batch(advantages, returns), results, lengths, time.perf_counter() - t0)


def update_policy(learner: Learner, collected: Collected) -> dict[str, float]:
    """One PPO update on the rollout's learner decisions (the value head alone during the critic
    warm-up); snapshots the learner into the pool every ``snapshot_every`` updates."""
    t0 = time.perf_counter()
    cfg = learner.cfg
    if cfg.anneal_lr:
        for group in learner.optimizer.param_groups:
            group["lr"] = group["base_lr"] * (1.0 - learner.update / cfg.total_updates)
    warmup = learner.update < cfg.critic_warmup_updates
    settings = dataclasses.replace(
        learner.settings, train_policy=not warmup, anchor_coef=0.0 if warmup else cfg.anchor_coef
    )
    learner.net.train()
    metrics = ppo_update(learner.net, learner.optimizer, collected.batch, settings, learner.gen, learner.start)
    learner.update += 1
    if learner.update % cfg.snapshot_every == 0:
        learner.pool.add(learner.net, learner.update)
        learner.codes = learner.pool.replace_missing(learner.codes)  # games against a dropped snapshot play the newest
    metrics["charts/update_seconds"] = time.perf_counter() - t0
    metrics["charts/critic_warmup"] = float(warmup)
    return metrics


# --- what the run records ---------------------------------------------------------------------------
def log_update(run: Run, learner: Learner, collected: Collected, metrics: dict[str, float]) -> None:
    """TensorBoard scalars of one update (``losses/``, ``diag/``, ``charts/``)."""
    decisions = collected.batch["actions"].shape[0]
    metrics["charts/learning_rate"] = learner.optimizer.param_groups[0]["lr"]
    metrics["charts/decisions_per_second"] = decisions / (collected.seconds + metrics["charts/update_seconds"])
    metrics["charts/rollout_seconds"] = collected.seconds
    metrics["charts/learner_decisions"] = learner.decisions
    metrics["charts/games_finished"] = learner.games_done
    metrics["charts/pool_snapshots"] = len(learner.pool.snapshots)
    if collected.lengths:
        metrics["charts/game_length"] = float(np.mean(collected.lengths))
    for name, won in collected.results.items():
        metrics[f"charts/train_win_rate_vs_{name}"] = float(np.mean(won))
    for key, value in metrics.items():
        run.writer.add_scalar(key, value, learner.global_step)


# --- the loop's step, evaluations and checkpoint state (train.loop runs it) -------------------------
class SelfPlay(Trainer[PatchworkNet, SelfPlayConfig]):
    """The loop's step: one rollout over the games in progress, one PPO update on it."""

    def __init__(self, run: Run, net: PatchworkNet | None, resumed: Resumed | None) -> None:
        super().__init__(run)
        cfg = self.cfg
        self.learner = new_learner(cfg, starting_network(cfg, net, resumed))
        self.net, self.start = self.learner.net, self.learner.start
        self.best: dict[str, Any] = {}
        self.diagnostics: dict[str, float] = {}
        self.resume(resumed)
        self.bar = run.progress_bar(cfg.total_updates, "upd", initial=self.learner.update)
        self.bar.write(f"run folder: {run.folder}  (network: {count_parameters(self.net):,} parameters)")

    def step(self, step: int) -> None:
        collected = collect_rollout(self.learner)
        metrics = update_policy(self.learner, collected)
        log_update(self.run, self.learner, collected, metrics)
        self.diagnostics = {k: v for k, v in metrics.items() if k.startswith(("losses/", "diag/"))}
        self.bar.update(1)
        self.bar.set_postfix(dps=f"{metrics['charts/decisions_per_second']:.0f}", refresh=False)

    def learner_decisions(self) -> int:
        return self.learner.decisions

    def evaluate(self, step: int) -> None:
        """The periodic evaluation (and of the sampled policy with ``eval_sampled``); with ``keep_best``
        a better win rate against that opponent saves ``checkpoints/best.pt``."""
        cfg, learner = self.cfg, self.learner
        results = self.run.evaluate(learner.net, learner.update)
        if cfg.eval_sampled:
            self.run.evaluate(learner.net, learner.update, deterministic=False)
        rate = results[cfg.keep_best]["win_rate"] if cfg.keep_best else None
        if rate is not None and rate > self.best.get("win_rate", -1.0):
            self.best.update(update=learner.update, win_rate=rate, opponent=cfg.keep_best)
            self.run.checkpoint(learner.net, "best.pt")

    def state_dict(self) -> dict[str, Any]:
        learner = self.learner
        return {
            "optimizer": learner.optimizer.state_dict(),
            "pool": learner.pool.state_dict(),
            "numpy_rng": learner.rng.bit_generator.state,
            "torch_rng": learner.gen.get_state(),
            # tensors, as a checkpoint holds them (the streams' uint64 words as int64 bits)
            "games": {k: torch.from_numpy(v.view(np.int64)) for k, v in learner.games.snapshot().items()},
            "codes": torch.from_numpy(learner.codes.copy()),
            "seats": torch.from_numpy(learner.seats.copy()),
            "game_length": torch.from_numpy(learner.game_length.copy()),
            "counters": {k: getattr(learner, k) for k in ("update", "global_step", "decisions", "games_done")},
            "best": self.best,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        learner = self.learner
        learner.optimizer.load_state_dict(state["optimizer"])
        learner.pool.load_state_dict(state["pool"])
        learner.rng.bit_generator.state = state["numpy_rng"]
        learner.gen.set_state(state["torch_rng"])
        games = {k: v.numpy() for k, v in state["games"].items()}
        learner.games.restore(
            {**games, "deal_rng": games["deal_rng"].view(np.uint64), "play_rng": games["play_rng"].view(np.uint64)}
        )
        learner.codes, learner.seats = state["codes"].numpy().copy(), state["seats"].numpy().copy()
        learner.game_length = state["game_length"].numpy().copy()
        for key, value in state["counters"].items():
            setattr(learner, key, int(value))
        self.best = dict(state["best"])

    def finish(self) -> tuple[PatchworkNet | None, dict[str, Any]]:
        evaluated: PatchworkNet | None = None
        path = self.run.folder / "checkpoints" / "final.pt"
        if self.best:  # keep_best: the final evaluation plays the best periodic network
            path = self.run.folder / "checkpoints" / "best.pt"
            evaluated = load_network(str(path), "keep_best")
            print(
                f"keep_best: evaluating checkpoints/best.pt (update {self.best['update']}, "
                f"periodic win rate {self.best['win_rate']:.3f} vs {self.best['opponent']})"
            )
        summary = {
            "evaluated_checkpoint": str(path),
            "last_update_diagnostics": self.diagnostics,
            "best": self.best,
            "learner_decisions": self.learner.decisions,
            "games_finished": self.learner.games_done,
        }
        return evaluated, summary

    def close(self) -> None:
        self.bar.close()


def start_network(cfg: SelfPlayConfig) -> PatchworkNet:
    """A fresh network (seeded), or the one of ``init_checkpoint`` (what the benchmarks train)."""
    return starting_network(cfg, initial_network(cfg), None)


def cli(argv: list[str] | None = None) -> int:
    return run_trainer(SelfPlayConfig, main, argv, __doc__)


if __name__ == "__main__":
    sys.exit(train_or_report(main, *COMMAND_LINE))
