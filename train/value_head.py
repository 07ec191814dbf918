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

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from patchwork_env.cli.common import MAX_SEED, Parser, fail, positive_int


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m train.value_head", description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", required=True, help="the network (a checkpoint of the project's format)")
    p.add_argument("--out", required=True, help="where to write the network with the fitted value head")
    p.add_argument("--games", type=positive_int, default=2000, help="games the network plays (default 2000)")
    p.add_argument("--epochs", type=positive_int, default=10, help="passes over the training games (default 10)")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    p.add_argument("--margin-weight", type=float, default=0.2, help="weight of the score margin in a result (0.2)")
    p.add_argument("--seed", type=int, default=0, help=f"deals, sampling and the held-out games (0..{MAX_SEED})")
    p.add_argument("--threads", type=positive_int, default=2, help="torch threads (default 2)")
    return p


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if not 0 <= args.seed <= MAX_SEED:
        fail(f"--seed must be in [0, {MAX_SEED}], got {args.seed}")
    if args.games < 2:
        fail(f"--games must be >= 2 (a fifth of the games, at least one, is held out), got {args.games}")
    if not (math.isfinite(args.lr) and args.lr > 0):
        fail(f"--lr must be a finite number > 0, got {args.lr}")
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


def main(argv: Sequence[str] | None = None, args: argparse.Namespace | None = None) -> int:
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
    history = fit_value_head(net, states, values, games, args.epochs, args.lr, args.seed)
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
