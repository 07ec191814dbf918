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
from pathlib import Path
from typing import Literal

from patchwork_env.cli.common import MAX_SEED, fail
from patchwork_env.players.registry import MAX_SIMS
from train.cli import parse_args

MAX_GAMES = 100_000  # about 4 million positions; beyond it the games alone outgrow the memory


@dataclass
class ValueHeadArgs:
    """Fit a checkpoint's value head to the results of its own games, for search."""

    checkpoint: str
    """the network (a checkpoint of the project's format)"""
    out: str
    """where to write the network with the fitted value head"""
    games: int = 2000
    """games the network plays"""
    epochs: int = 10
    """passes over the training games"""
    learning_rate: float = 1e-3
    """Adam learning rate"""
    margin_weight: float = 0.2
    """weight of the score margin in a result"""
    target: Literal["results", "rollouts", "search"] = "results"
    """each decision's target: its game's result, the mean of --rollouts greedy rollouts from it, or
    the value an mcts:sims=<--sims> search gives it (mcts's result scale, not --margin-weight's)"""
    rollouts: int = 32
    """greedy rollouts per position (--target rollouts)"""
    sims: int = 100
    """mcts simulations per position (--target search)"""
    keep: float = 1.0
    """share of the decisions kept (a random subset: positions from more games for the same labelling)"""
    fit: Literal["head", "net"] = "head"
    """train the value head alone, or the trunk and the value head (the policy held by --kl-weight)"""
    kl_weight: float = 1.0
    """--fit net: weight of KL(start policy || policy) in the loss"""
    workers: int = 1
    """processes labelling the rollout targets"""
    results: str = ""
    """also write the fit's statistics to this results file (JSON)"""
    seed: int = 0
    """deals, sampling and the held-out games"""
    threads: int = 2
    """torch threads"""


def parse(argv: Sequence[str] | None = None) -> ValueHeadArgs:
    args = parse_args(ValueHeadArgs, argv, __doc__.splitlines()[0])
    if not 0 <= args.seed <= MAX_SEED:
        fail(f"--seed must be in [0, {MAX_SEED}], got {args.seed}")
    if args.games < 2:
        fail(f"--games must be >= 2 (a fifth of the games, at least one, is held out), got {args.games}")
    if args.games > MAX_GAMES:
        fail(f"--games must be <= {MAX_GAMES} (about 4 million positions), got {args.games}")
    for name in ("epochs", "threads", "workers", "rollouts", "sims"):
        if getattr(args, name) < 1:
            fail(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.sims > MAX_SIMS[1]:  # mcts's bound for an agent spec: a move of the largest takes minutes
        fail(f"--sims must be <= {MAX_SIMS[1]}, got {args.sims}")
    if not 0.0 < args.keep <= 1.0:
        fail(f"--keep must be in (0, 1], got {args.keep}")
    if not (math.isfinite(args.kl_weight) and args.kl_weight >= 0):
        fail(f"--kl-weight must be a finite number >= 0, got {args.kl_weight}")
    if not (math.isfinite(args.learning_rate) and args.learning_rate > 0):
        fail(f"--learning-rate must be a finite number > 0, got {args.learning_rate}")
    if not 0.0 <= args.margin_weight <= 1.0:
        fail(f"--margin-weight must be in [0, 1], got {args.margin_weight}")
    for option, path in (("--out", args.out), ("--results", args.results)):
        if path and Path(path).is_dir():
            fail(f"{option} {path} is a folder; give a file path")
        if path and not Path(path).resolve().parent.is_dir():
            fail(f"{option} {path}: {Path(path).parent} is not a folder")
    return args


if __name__ == "__main__":
    ARGS = parse()

import dataclasses
import functools
import shlex
import time

import numpy as np
import torch

from agents.value_head import (
    ValueStats,
    fit_value_head,
    fit_value_net,
    network_games,
    rollout_targets,
    search_targets,
)
from patchwork_env.players.az import MAX_ROLLOUTS
from patchwork_env.players.checkpoint import load_network, save_checkpoint
from patchwork_env.players.errors import CheckpointError
from train.cli import write_fit_run


def main(argv: Sequence[str] | None = None, args: ValueHeadArgs | None = None) -> int:
    args = args or parse(argv)
    if args.rollouts > MAX_ROLLOUTS:  # here: the bound lives with az, which loads torch (--help does not)
        fail(f"--rollouts must be <= {MAX_ROLLOUTS}, got {args.rollouts}")
    try:
        net = load_network(args.checkpoint)
    except (FileNotFoundError, CheckpointError) as exc:
        fail(exc)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    states, values, games = network_games(net, args.games, args.seed, args.margin_weight)
    if args.keep < 1.0:
        kept = np.flatnonzero(np.random.default_rng(args.seed).random(len(states)) < args.keep)
        states, values, games = states[kept], values[kept], games[kept]
        if len(np.unique(games)) < 2:
            fail(f"--keep {args.keep} kept positions of {len(np.unique(games))} game(s); the fit needs two or more")
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

    fit = fit_value_head if args.fit == "head" else functools.partial(fit_value_net, kl_weight=args.kl_weight)
    history = fit(net, states, values, games, args.epochs, args.learning_rate, args.seed, progress=show)
    try:
        save_checkpoint(args.out, net)
    except OSError as exc:
        fail(f"cannot write --out {args.out}: {exc.strerror or exc}")
    seconds = time.perf_counter() - start
    if args.results:
        command = shlex.join(["python", "-m", "train.value_head", *(sys.argv[1:] if argv is None else argv)])
        write_fit_results(args, command, len(states), history, seconds)
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
        Path(args.results),
        f"Value fit ({args.target} targets, {args.fit})",
        (
            f"train.value_head on {args.checkpoint}: {args.games} games, {positions} positions kept, "
            f"target {args.target}{labels_text}, fit {args.fit}; held-out: a fifth of the games"
        ),
        cells,
        args.seed,
        {"history": [dataclasses.asdict(h) for h in history], "args": dataclasses.asdict(args), "seconds": seconds},
        command,
    )


if __name__ == "__main__":
    sys.exit(main(args=ARGS))
