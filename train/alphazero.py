"""AlphaZero-style training: batched search self-play -> replay buffer -> learner.

    python -m train.alphazero --config configs/alphazero.yaml
    python -m train.alphazero --config configs/alphazero_smoke.yaml      # seconds (tests)
    python -m train.alphazero --config configs/alphazero.yaml seed=1 sims=32
    python -m train.alphazero --help-config

Steps, in order (``train`` reads the same way):

1. **Start**: a fresh network (with ``prior_scale > 0`` a softened greedy) or ``init_checkpoint``.
2. **Value warm-up**: the greedy prior gives the policy a head start, the value head has none, and
   the search needs both; ``warmup_games`` greedy self-play games train the value head alone.
3. **Iterations**: self-play ``games_per_iteration`` games with the search
   (``agents.az_selfplay.play_games``: one forward pass per simulation step over all games; with
   ``selfplay_chunk`` in chunks of games, and with ``selfplay_backend=ray`` [``--address``] each
   chunk a Ray task: ``agents.az_backend``), add
   the samples to the replay buffer, then ``updates_per_iteration`` learner steps on uniform
   minibatches (policy cross-entropy to the search's targets + value MSE to the game results).
4. **Evaluate and checkpoint**: every ``eval_every`` iterations the network alone (its most
   probable legal move, as the ``pretrained`` agent plays) against ``eval_opponents`` on paired
   deals; ``checkpoints/latest.pt`` every ``checkpoint_every`` iterations and ``iter_<k>.pt`` at
   every evaluation (the project's checkpoint format: ``ppo:PATH`` / ``az:path=PATH`` load them).
5. **Finish**: the final evaluation on fresh deals, ``final.pt``, the learning curve, a summary.

The run folder layout is ``train.run_utils``'s (TensorBoard: ``selfplay/``, ``losses/``, ``eval/``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from agents.az_backend import play_chunked
from agents.az_selfplay import ReplayBuffer, Samples, greedy_value_samples, learn_step
from agents.distill import group_parameters
from patchwork_env.core import rules
from patchwork_env.evaluation.backend import Backend, open_backend
from patchwork_env.players.az import NetEvaluator, load_net
from patchwork_env.players.az_search import BatchedSearch, SearchConfig
from patchwork_env.players.network import PatchworkNet, count_parameters
from patchwork_env.players.policy import save_checkpoint
from train import run_utils
from train.cli import add_address_option, ray_address, run_trainer, trainer_parser
from train.config import AlphaZeroConfig
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


def main(
    config: AlphaZeroConfig, run_dir: str | None = None, config_name: str = "alphazero", address: str | None = None
) -> dict[str, Any]:
    """Train; returns a summary (run folder, counters, evaluations). With ``selfplay_backend=ray``
    the self-play runs on Ray (``address``: a cluster; None: a local runtime), joined before
    anything is written."""
    config.validate()
    with open_backend(config.selfplay_backend, address) as backend:
        return train(config, run_dir, config_name, backend)


def train(config: AlphaZeroConfig, run_dir: str | None, config_name: str, backend: Backend | None) -> dict[str, Any]:
    """The run of ``main`` (self-play on ``backend`` if given, else in this process)."""
    cfg = config
    run_utils.set_threads(cfg.torch_threads)
    torch.manual_seed(stream_seed(cfg.seed, Stream.TRAIN))
    rng = stream_rng(cfg.seed, Stream.TRAIN)
    folder = run_utils.run_folder(cfg, config_name, run_dir)
    run_utils.save_config(cfg, folder)
    writer = SummaryWriter(str(folder))
    start = time.time()

    def minutes() -> float:
        return (time.time() - start) / 60

    def log(text: str) -> None:
        if cfg.progress:
            print(f"[{minutes():6.1f} min] {text}", flush=True)

    # 1. start -------------------------------------------------------------------------------------
    net = load_net(cfg.init_checkpoint) if cfg.init_checkpoint else PatchworkNet(cfg.net_config())
    trained = list(net.parameters()) if cfg.train_placements else group_parameters(net)
    optimizer = torch.optim.AdamW(trained, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    log(f"network: {count_parameters(net):,} parameters; run folder {folder}")
    history: list[dict[str, Any]] = []
    ckpt_dir = folder / "checkpoints"

    def evaluate(iteration: int, opponents: dict[str, int], seed: int, final: bool = False) -> dict[str, Any]:
        results = run_utils.evaluate(net, opponents, seed=seed, workers=cfg.eval_workers)
        run_utils.log_eval(writer, results, iteration, "final_eval" if final else "eval")
        for spec, r in results.items():
            history.append({"minutes": minutes(), "iteration": iteration, "opponent": spec, "final": final, **r})
            log(f"iteration {iteration}: vs {spec} {r['win_rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]")
        run_utils.write_history(history, folder)
        return results

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
        log(f"value warm-up: {len(states)} positions, {cfg.warmup_steps} steps, value loss {warm['value_loss']:.3f}")
    if cfg.eval_every:
        evaluate(0, cfg.eval_opponents, seed=stream_seed(cfg.seed, Stream.EVAL))
    save_checkpoint(ckpt_dir / "iter_0.pt", net)

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
        log(
            f"iteration {iteration}: {len(samples)} positions in {selfplay_seconds:.0f} s "
            f"({evaluations / selfplay_seconds:.0f} leaf evals/s), learner {learn_seconds:.0f} s, "
            + ", ".join(f"{k} {v:.3f}" for k, v in losses.items())
        )

        # 4. evaluate and checkpoint -----------------------------------------------------------------
        out_of_time = cfg.time_limit_minutes > 0 and minutes() >= cfg.time_limit_minutes
        last = iteration == cfg.iterations or out_of_time
        if iteration % cfg.checkpoint_every == 0 or last:
            save_checkpoint(ckpt_dir / "latest.pt", net, {"iteration": iteration, "games": games})
        if cfg.eval_every and (iteration % cfg.eval_every == 0 or last):
            save_checkpoint(ckpt_dir / f"iter_{iteration}.pt", net, {"iteration": iteration, "games": games})
            evaluate(iteration, cfg.eval_opponents, seed=stream_seed(cfg.seed, Stream.EVAL))
        if out_of_time:
            log(f"time limit of {cfg.time_limit_minutes} minutes reached")
            break

    # 5. finish ------------------------------------------------------------------------------------------
    save_checkpoint(ckpt_dir / "final.pt", net)
    training_minutes = minutes()
    final: dict[str, Any] = {}
    if cfg.final_eval_pairs:
        opponents = dict.fromkeys(cfg.final_eval_opponents, cfg.final_eval_pairs)
        # on deals the periodic evaluations never used
        final = evaluate(iteration, opponents, seed=stream_seed(cfg.seed, Stream.FINAL_EVAL), final=True)
        (folder / "final_eval.json").write_text(json.dumps(final, indent=1))
    run_utils.plot_learning_curve(history, folder / "learning_curve.png", f"AlphaZero ({config_name}, seed {cfg.seed})")
    writer.close()
    summary = {
        "run_dir": str(folder),
        "iterations": iteration,
        "games": games,
        "training_minutes": training_minutes,
        "final_eval": final,
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def cli(argv: list[str] | None = None) -> int:
    parser = trainer_parser(
        "python -m train.alphazero",
        "AlphaZero-style training for Patchwork (see the module docstring).",
        "configs/alphazero.yaml, configs/alphazero_smoke.yaml",
        "sims=32 games_per_iteration=128",
    )
    add_address_option(parser, "selfplay_backend")

    def run(cfg: AlphaZeroConfig, args: argparse.Namespace, name: str) -> None:
        main(cfg, run_dir=args.run_dir, config_name=name, address=ray_address(args, cfg, "selfplay_backend"))

    return run_trainer(parser, argv, AlphaZeroConfig, "alphazero", run, run_errors=(ConnectionError,))


if __name__ == "__main__":
    sys.exit(cli())
