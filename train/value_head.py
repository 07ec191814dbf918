"""Fit a checkpoint's value head to the results of its own games, for search (``agents.value_head``).

    python -m train.value_head --checkpoint patchwork_env/players/pretrained-v1.pt --out runs/value/pretrained.pt \\
        --games 2000 --epochs 10 --seed 0

The network plays ``--games`` games (its most probable move against greedy, seats alternating,
and one game in four sampled against itself); the value head alone is fitted to each decision's
final result from the mover's side; the policy is bit-identical in ``--out``. Prints the held-out
explained variance (games never trained on) of the head before and after.
"""

# ruff: noqa: E402  (the command line is parsed before torch loads, so that --help is instant)
from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchwork_env.cli.common import MAX_SEED, fail
from train.cli import parse_args


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
    for name in ("epochs", "threads"):
        if getattr(args, name) < 1:
            fail(f"--{name} must be >= 1, got {getattr(args, name)}")
    if not (math.isfinite(args.learning_rate) and args.learning_rate > 0):
        fail(f"--learning-rate must be a finite number > 0, got {args.learning_rate}")
    if not 0.0 <= args.margin_weight <= 1.0:
        fail(f"--margin-weight must be in [0, 1], got {args.margin_weight}")
    if Path(args.out).is_dir():
        fail(f"--out {args.out} is a folder; give a file path")
    return args


if __name__ == "__main__":
    ARGS = parse()

import time

import torch

from agents.value_head import fit_value_head, network_games
from patchwork_env.players.checkpoint import load_network, save_checkpoint
from patchwork_env.players.errors import CheckpointError


def main(argv: Sequence[str] | None = None, args: ValueHeadArgs | None = None) -> int:
    args = args or parse(argv)
    try:
        net = load_network(args.checkpoint)
    except (FileNotFoundError, CheckpointError) as exc:
        fail(exc)
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    states, values, games = network_games(net, args.games, args.seed, args.margin_weight)
    played = time.perf_counter() - start
    print(f"{args.games} games, {len(states):,} decisions in {played:.0f} s")
    history = fit_value_head(net, states, values, games, args.epochs, args.learning_rate, args.seed)
    for h in history:
        label = "before" if h.epoch == 0 else f"epoch {h.epoch}"
        print(f"  {label:>8}: held-out explained variance {h.val_explained_variance:.3f} (mse {h.val_mse:.4f})")
    try:
        save_checkpoint(args.out, net)
    except OSError as exc:
        fail(f"cannot write --out {args.out}: {exc.strerror or exc}")
    print(f"wrote {args.out} ({time.perf_counter() - start:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main(args=ARGS))
