"""Fit a checkpoint's value to its games, for search (``agents.value_head``).

    python -m train.value_head --checkpoint patchwork_env/players/pretrained-v1.pt --out runs/value/pretrained.pt \\
        --games 2000 --epochs 10 --seed 0
    python -m train.value_head --checkpoint patchwork_env/players/pretrained-v1.pt --out runs/value/rollouts.pt \\
        --target rollouts --fit net --games 5000 --keep 0.5 --rollouts 32 --epochs 8 --workers 2 --seed 0

The network plays ``--games`` games (its most probable move against greedy, seats alternating,
and one game in four sampled against itself); a ``--keep`` share of their decisions is kept. The
target of each: ``results``, its game's final result from the mover's side; ``rollouts``, the mean
of ``--rollouts`` greedy rollouts from it (``az``'s leaf value); ``search``, the value an
``mcts:sims=--sims`` search gives it (``agents.value_head.search_targets``). ``--fit head``: the
value head alone (the policy bit-identical in ``--out``); ``net``: the trunk too, with ``--kl-weight`` x KL(start
policy || policy) keeping the policy where it was. Prints the held-out explained variance (games
never trained on) before and after each epoch.
"""

# ruff: noqa: E402  (the command line is parsed before torch loads, so that --help is instant)
from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from patchwork_env.core.bounds import MAX_SEED, above, bounded
from patchwork_env.core.files import check_output_path
from patchwork_env.players.registry import MAX_SIMS
from train.cli import check_results_path, parse_args, reports_input_errors
from train.config import MAX_GAMES, ConfigError

MAX_ROLLOUTS = 1000  # = patchwork_env.players.az_network.MAX_ROLLOUTS (a test keeps them equal; az loads torch)


@dataclass
class ValueHeadArgs:
    """Fit a checkpoint's value head to the results of its own games, for search."""

    checkpoint: str
    """the network (a checkpoint of the project's format)"""
    out: str
    """where to write the network with the fitted value head"""
    games: int = bounded(2000, 2, MAX_GAMES)
    """games the network plays (a fifth of them, at least one, is held out)"""
    epochs: int = bounded(10, 1, 1000)
    """passes over the training games"""
    learning_rate: float = above(1e-3, 0.0)
    """Adam learning rate"""
    margin_weight: float = bounded(0.2, 0.0, 1.0)
    """weight of the score margin in a result"""
    target: Literal["results", "rollouts", "search"] = "results"
    """each decision's target: its game's result, the mean of --rollouts greedy rollouts from it, or
    the value an mcts:sims=<--sims> search gives it (mcts's result scale, not --margin-weight's)"""
    rollouts: int = bounded(32, 1, MAX_ROLLOUTS)
    """greedy rollouts per position (--target rollouts)"""
    sims: int = bounded(100, *MAX_SIMS)  # mcts's bound in an agent spec: a move of the largest takes minutes
    """mcts simulations per position (--target search)"""
    keep: float = above(1.0, 0.0, 1.0)
    """share of the decisions kept (a random subset: positions from more games for the same labelling)"""
    fit: Literal["head", "net"] = "head"
    """train the value head alone, or the trunk and the value head (the policy held by --kl-weight)"""
    kl_weight: float = bounded(1.0, 0.0, math.inf)
    """--fit net: weight of KL(start policy || policy) in the loss"""
    workers: int = bounded(1, 1, 256)
    """processes labelling the rollout targets"""
    results: str = ""
    """also write the fit's statistics to this results file (JSON)"""
    seed: int = bounded(0, 0, MAX_SEED)
    """deals, sampling and the held-out games"""
    threads: int = bounded(2, 1, 256)
    """torch threads"""

    def validate(self) -> None:
        check_output_path(self.out, "--out")
        check_results_path(self.results)


if __name__ == "__main__":
    ARGS = parse_args(ValueHeadArgs, None, __doc__.splitlines()[0])

import time

import numpy as np
import torch

from agents.value_head import (
    ValueStats,
    fit_value,
    network_games,
    rollout_targets,
    search_targets,
)
from patchwork_env.players.checkpoint import load_network, save_checkpoint
from train.cli import command_line, save_out, write_fit_run


@reports_input_errors
def main(argv: Sequence[str] | None = None, args: ValueHeadArgs | None = None) -> int:
    args = args or parse_args(ValueHeadArgs, argv, __doc__.splitlines()[0])
    net = load_network(args.checkpoint)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    states, values, games = network_games(net, args.games, args.seed, args.margin_weight)
    if args.keep < 1.0:
        kept = np.flatnonzero(np.random.default_rng(args.seed).random(len(states)) < args.keep)
        states, values, games = states[kept], values[kept], games[kept]
        if len(np.unique(games)) < 2:
            raise ConfigError(
                f"--keep {args.keep} kept positions of {len(np.unique(games))} game(s); the fit needs two or more"
            )
    print(f"{args.games} games, {len(states):,} decisions kept in {time.perf_counter() - start:.0f} s")
    if args.target == "rollouts":
        values = rollout_targets(states, args.rollouts, args.margin_weight, args.seed, args.workers)
        print(f"  {args.rollouts} rollouts from each, {time.perf_counter() - start:.0f} s so far")
    elif args.target == "search":
        values = search_targets(states, args.sims, args.seed, args.workers)
        print(f"  an mcts:sims={args.sims} search from each, {time.perf_counter() - start:.0f} s so far", flush=True)

    def show(h: ValueStats) -> None:
        label = "before" if h.epoch == 0 else f"epoch {h.epoch}"
        kl = f", policy KL from the start {h.val_policy_kl:.4f}" if args.fit == "net" else ""
        line = f"held-out explained variance {h.val_explained_variance:.3f} (mse {h.val_mse:.4f}){kl}"
        print(f"  {label:>8}: {line}, {time.perf_counter() - start:.0f} s so far", flush=True)

    history = fit_value(net, states, values, games, args.epochs, args.learning_rate, args.seed, trunk=args.fit == "net",
                        kl_weight=args.kl_weight, progress=show)  # fmt: skip
    save_out(lambda path: save_checkpoint(path, net), args.out)
    seconds = time.perf_counter() - start
    if args.results:
        write_fit_results(args, command_line("train.value_head", argv), len(states), history, seconds)
    print(f"wrote {args.out} ({seconds:.0f} s in all)")
    return 0


def write_fit_results(
    args: ValueHeadArgs, command: str, positions: int, history: list[ValueStats], seconds: float
) -> None:
    """The fit as a ``training`` results file (one run: its held-out numbers before and after; the
    epochs in ``raw``), rendered on the results page (``tools/render_results.py``)."""
    first, last = history[0], history[-1]
    cells = {
        "positions": positions,
        "held-out explained variance, before": round(first.val_explained_variance, 3),
        "after": round(last.val_explained_variance, 3),
        "held-out mse, after": round(last.val_mse, 4),
        "policy KL from the start": round(last.val_policy_kl, 4),
    }
    labels = {"rollouts": f" ({args.rollouts} greedy rollouts each)", "search": f" (mcts:sims={args.sims} each)"}
    labels_text = labels.get(args.target, "")
    write_fit_run(
        args,
        f"Value fit ({args.target} targets, {args.fit})",
        (
            f"train.value_head on {args.checkpoint}: {args.games} games, {positions} positions kept, "
            f"target {args.target}{labels_text}, fit {args.fit}; held-out: a fifth of the games"
        ),
        cells,
        history,
        seconds,
        command,
    )


if __name__ == "__main__":
    sys.exit(main(args=ARGS))
