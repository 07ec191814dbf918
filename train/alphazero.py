"""AlphaZero-style training: batched search self-play -> replay buffer -> learner.

    python -m train.alphazero --config configs/alphazero.yaml
    python -m train.alphazero --config configs/alphazero_smoke.yaml      # seconds (tests)
    python -m train.alphazero --config configs/alphazero.yaml --seed 1 --sims 32
    python -m train.alphazero --help

Steps, in order (``train`` reads the same way):

1. **Start**: a fresh network (with ``prior_scale > 0`` a softened greedy) or ``init_checkpoint``.
2. **Value warm-up**: the greedy prior gives the policy a head start, the value head has none, and
   the search needs both; ``warmup_games`` greedy self-play games train the value head alone.
3. **Iterations**: self-play ``games_per_iteration`` games with the search
   (``agents.az_selfplay.play_games``: one forward pass per simulation step over all games; with
   ``selfplay_chunk`` in chunks of games, and with ``selfplay_backend=ray`` [``address``] each
   chunk a Ray task: ``agents.az_backend``), add
   the samples to the replay buffer, then ``updates_per_iteration`` learner steps on uniform
   minibatches (policy cross-entropy to the search's targets + value MSE to the game results).
4. **Evaluate and checkpoint**: every ``eval_every`` iterations the network alone (its most
   probable legal move, as the ``pretrained`` agent plays) against ``eval_opponents`` on paired
   deals; ``checkpoints/latest.pt`` every ``checkpoint_every`` iterations and ``iter_<k>.pt`` at
   every evaluation (the project's checkpoint format: ``ppo:PATH`` / ``az:path=PATH`` load them).
5. **Finish**: the final evaluation on fresh deals, ``final.pt``, the learning curve, a summary.

The run folder is ``train.run``'s (TensorBoard: ``selfplay/``, ``losses/``, ``eval/``).
"""

from __future__ import annotations

import sys

from train.cli import parse_or_exit, run_trainer, train_or_report
from train.config import AlphaZeroConfig

if __name__ == "__main__":
    COMMAND_LINE = parse_or_exit(AlphaZeroConfig, __doc__)

import time
from typing import Any

import numpy as np
import torch

from agents.az_backend import play_chunked
from agents.az_selfplay import ReplayBuffer, Samples, greedy_value_samples, learn_step
from agents.distill import group_parameters
from patchwork_env.core import rules
from patchwork_env.evaluation.backend import Backend, open_backend
from patchwork_env.players.az import NetEvaluator
from patchwork_env.players.az_search import BatchedSearch, SearchConfig
from patchwork_env.players.network import PatchworkNet, count_parameters
from train.run import Run, frozen_copy, load_network, preflight
from train.seeds import Stream, stream_rng, stream_seed


def search_config(cfg: AlphaZeroConfig) -> SearchConfig:
    return SearchConfig(
        sims=cfg.sims,
        root=cfg.root,
        c_puct=cfg.c_puct,
        considered=cfg.considered,
        dirichlet_alpha=cfg.dirichlet_alpha,
        dirichlet_eps=cfg.dirichlet_eps,
        margin_weight=cfg.reward_margin_weight,
        rescale_values=cfg.rescale_values,
    )


def main(cfg: AlphaZeroConfig, name: str = "alphazero") -> dict[str, Any]:
    """Train; returns the summary (``train.run.Run.finish``). With ``selfplay_backend=ray`` the
    self-play runs on Ray (``address``: a cluster; empty: a local runtime), joined before anything
    is written."""
    cfg.validate()
    preflight(cfg)
    net = load_network(cfg.init_checkpoint, "init_checkpoint") if cfg.init_checkpoint else None
    with open_backend(cfg.selfplay_backend, cfg.address or None) as backend:
        return train(cfg, name, net, backend)


def train(cfg: AlphaZeroConfig, name: str, net: PatchworkNet | None, backend: Backend | None) -> dict[str, Any]:
    """The run of ``main`` (self-play on ``backend`` if given, else in this process)."""
    torch.manual_seed(stream_seed(cfg.seed, Stream.TRAIN))
    rng = stream_rng(cfg.seed, Stream.TRAIN)
    run = Run(cfg, name, "iteration")

    # 1. start -------------------------------------------------------------------------------------
    net = net if net is not None else PatchworkNet(cfg.net)
    trained = list(net.parameters()) if cfg.train_placements else group_parameters(net)
    optimizer = torch.optim.AdamW(trained, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    run.log(f"network: {count_parameters(net):,} parameters; run folder {run.folder}")
    writer = run.writer

    # 2. value warm-up -------------------------------------------------------------------------------
    if cfg.warmup_games and cfg.warmup_steps:
        states, values = greedy_value_samples(
            cfg.warmup_games, stream_seed(cfg.seed, Stream.WARMUP), cfg.warmup_temp, cfg.reward_margin_weight
        )
        no_policy = np.zeros((cfg.batch_size, rules.NUM_ACTIONS), dtype=np.float32)
        for step in range(cfg.warmup_steps):
            idx = rng.integers(len(states), size=cfg.batch_size)
            batch = Samples(states[idx], no_policy, values[idx])
            warm = learn_step(net, optimizer, batch, cfg.vf_coef, cfg.max_grad_norm, policy=False)
            writer.add_scalar("warmup/value_loss", warm["value_loss"], step)
        run.log(
            f"value warm-up: {len(states)} positions, {cfg.warmup_steps} steps, value loss {warm['value_loss']:.3f}"
        )
    start = frozen_copy(net)  # the policy as it starts (the warm-up trains the value head alone)
    run.checkpoint(net, "start.pt")
    if cfg.eval_every:
        run.evaluate(net, 0)

    # 3. iterations: self-play -> buffer -> learner ----------------------------------------------------
    search = BatchedSearch(NetEvaluator(net), search_config(cfg))
    buffer = ReplayBuffer(cfg.buffer_size)
    games = 0
    iteration = 0
    for iteration in range(1, cfg.iterations + 1):
        t0 = time.time()
        seed = stream_seed(cfg.seed, Stream.SELFPLAY, iteration)
        samples, stats = play_chunked(
            search, cfg.games_per_iteration, seed, cfg.temp_plies, cfg.selfplay_chunk, backend
        )
        selfplay_seconds = time.time() - t0
        evaluations = stats["leaf_evaluations"]
        buffer.add(samples)
        games += cfg.games_per_iteration
        t1 = time.time()
        losses: dict[str, Any] = {}
        for _ in range(cfg.updates_per_iteration):
            losses = learn_step(net, optimizer, buffer.sample(cfg.batch_size, rng), cfg.vf_coef, cfg.max_grad_norm)
        learn_seconds = time.time() - t1
        writer.add_scalar("selfplay/games", games, iteration)
        writer.add_scalar("selfplay/decisions_per_game", stats["decisions_per_game"], iteration)
        writer.add_scalar("selfplay/leaf_evaluations_per_second", evaluations / selfplay_seconds, iteration)
        writer.add_scalar("selfplay/seconds", selfplay_seconds, iteration)
        writer.add_scalar("losses/seconds", learn_seconds, iteration)
        for key, value in losses.items():
            writer.add_scalar(f"losses/{key}", value, iteration)
        run.log(
            f"iteration {iteration}: {len(samples)} positions in {selfplay_seconds:.0f} s "
            f"({evaluations / selfplay_seconds:.0f} leaf evals/s), learner {learn_seconds:.0f} s, "
            + ", ".join(f"{k} {v:.3f}" for k, v in losses.items())
        )

        # 4. evaluate and checkpoint -----------------------------------------------------------------
        out_of_time = 0 < cfg.time_limit_minutes <= run.minutes()
        last = iteration == cfg.iterations or out_of_time
        if iteration % cfg.checkpoint_every == 0 or last:
            run.checkpoint(net, "latest.pt", {"iteration": iteration, "games": games})
        if cfg.eval_every and (iteration % cfg.eval_every == 0 or last):
            run.checkpoint(net, f"iter_{iteration}.pt", {"iteration": iteration, "games": games})
            run.evaluate(net, iteration)
        if out_of_time:
            run.log(f"time limit of {cfg.time_limit_minutes} minutes reached")
            break

    # 5. finish: the final evaluation of the network and its start, on fresh deals -----------------------
    return run.finish(net, start, iteration, {"games": games})


def cli(argv: list[str] | None = None) -> int:
    return run_trainer(AlphaZeroConfig, main, argv, __doc__)


if __name__ == "__main__":
    sys.exit(train_or_report(main, *COMMAND_LINE))
