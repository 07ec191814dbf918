"""How well do leaf values estimate a position's worth? Held-out positions, each labelled by the mean
of many greedy rollouts, against the few-rollout estimates ``az`` uses and each network's value.

    python -m train.value_check --checkpoints runs/value/v4-s0.pt --games 1000 --positions 5000 --workers 2 \\
        --results results/value-check.json

The positions: every decision of ``--games`` games of ``--games-of`` (``agents.value_head.network_games``:
its most probable move against greedy, seats alternating, one game in four against itself; deals
of ``--seed``, which no fit of ``train.value_head`` with another seed has seen), a random
``--positions`` of them. Each is labelled by the mean of ``--label-rollouts`` greedy rollouts (the
quantity ``az``'s rollout leaves estimate, with little noise left). Each estimator, the
``--rollouts`` few-rollout means and the value of the shipped network and of each of
``--checkpoints``, is scored by its mean squared error against the label, the explained variance
(1 - MSE / the label's variance) and its mean squared error against the game's result.
"""

# ruff: noqa: E402  (the command line is parsed before torch loads, so that --help is instant)
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchwork_env.core.bounds import MAX_SEED, bounded
from patchwork_env.players.shipped import NEWEST_NETWORK, SHIPPED_NETWORKS
from train.cli import check_results_path, parse_args, reports_input_errors
from train.config import ConfigError

SHIPPED = "pretrained"  # the shipped network (``patchwork_env.players.shipped``), wherever it is installed


@dataclass
class ValueCheckArgs:
    """Score leaf-value estimators against a many-rollout label of held-out positions."""

    checkpoints: list[str] = field(default_factory=list)
    """networks whose value is scored (besides --games-of's)"""
    games_of: str = SHIPPED
    """the network whose games give the positions (its value is scored too); ``pretrained``: the shipped one"""
    games: int = bounded(300, 1, 100_000)
    """games played"""
    positions: int = bounded(1500, 1, 1_000_000)
    """positions drawn from their decisions"""
    label_rollouts: int = bounded(64, 2, 1024)
    """greedy rollouts per position in the label"""
    rollouts: tuple[int, ...] = bounded((4, 8), 1, 1023)
    """few-rollout estimators scored (az's leaf value: 4 by default), each below --label-rollouts"""
    margin_weight: float = bounded(0.2, 0.0, 1.0)
    """weight of the score margin in a value (az's and train.value_head's default)"""
    workers: int = bounded(1, 1, 256)
    """processes labelling rollouts"""
    results: str = ""
    """also write the table to this results file (JSON)"""
    seed: int = bounded(7, 0, MAX_SEED)
    """deals and the positions drawn (train.value_head fits use seed 0)"""

    def validate(self) -> None:
        if not all(k < self.label_rollouts for k in self.rollouts):
            raise ConfigError(f"--rollouts must be in [1, --label-rollouts), got {list(self.rollouts)}")
        for path in (self.games_of, *self.checkpoints):
            if not Path(checkpoint_path(path)).is_file():
                raise ConfigError(f"checkpoint not found: {path}")
        check_results_path(self.results)


def checkpoint_path(name: str) -> str:
    """A checkpoint's path: ``pretrained`` is the shipped network's file."""
    return str(SHIPPED_NETWORKS[NEWEST_NETWORK]) if name == SHIPPED else name


if __name__ == "__main__":
    ARGS = parse_args(ValueCheckArgs, None, __doc__.splitlines()[0])

import numpy as np
import numpy.typing as npt
import torch

from agents.value_head import network_games, network_values, rollout_targets
from patchwork_env.evaluation.provenance import provenance
from patchwork_env.players.checkpoint import load_network
from train.cli import command_line, write_results

COLUMNS = ("mse vs the label", "explained variance", "mse vs the result")


def scores(
    estimate: npt.NDArray[np.float32], label: npt.NDArray[np.float32], result: npt.NDArray[np.float32]
) -> dict[str, float]:
    """One estimator's row: its errors against the many-rollout label and the game's result."""
    mse = float(np.mean((estimate - label) ** 2))
    return dict(zip(COLUMNS, (round(mse, 4), round(1.0 - mse / float(np.var(label)), 3),
                              round(float(np.mean((estimate - result) ** 2)), 4)), strict=True))  # fmt: skip


@reports_input_errors
def main(argv: Sequence[str] | None = None, args: ValueCheckArgs | None = None) -> int:
    args = args or parse_args(ValueCheckArgs, argv, __doc__.splitlines()[0])
    torch.set_num_threads(1)
    nets = {name: load_network(checkpoint_path(name)) for name in dict.fromkeys([args.games_of, *args.checkpoints])}
    states, results, _ = network_games(nets[args.games_of], args.games, args.seed, args.margin_weight)
    rows = np.sort(np.random.default_rng(args.seed).permutation(len(states))[: args.positions])
    states, results = states[rows], results[rows]
    label = rollout_targets(states, args.label_rollouts, args.margin_weight, args.seed, args.workers)
    print(f"{len(states)} positions of {args.games} games of {args.games_of}, label: {args.label_rollouts} rollouts")
    table = {}
    for k in args.rollouts:  # other generators than the label's: independent estimates
        estimate = rollout_targets(states, k, args.margin_weight, args.seed + 1 + k, args.workers)
        table[f"{k} greedy rollouts"] = scores(estimate, label, results)
    for path, net in nets.items():
        table[f"value of {path}"] = scores(network_values(net, states).numpy(), label, results)
    for name, cells in table.items():
        print(f"  {name:50s} " + "  ".join(f"{c} {v}" for c, v in cells.items()))
    if args.results:
        write_results(Path(args.results), {
            "kind": "training",
            "title": "Leaf values against a many-rollout label",
            "description": (
                f"`python -m train.value_check`: {len(states)} positions of {args.games} games of {args.games_of} "
                f"(deals of seed {args.seed}), each labelled by the mean of {args.label_rollouts} greedy rollouts "
                f"(margin weight {args.margin_weight}); each estimator's mean squared error against that label, "
                "its explained variance, and its mean squared error against the game's result."
            ),
            "columns": list(COLUMNS),
            "runs": [{"seed": name, "cells": cells} for name, cells in table.items()],
            "raw": {"label_variance": float(np.var(label)), "positions": len(states)},
            **provenance(command_line("train.value_check", argv), [args.seed]),
        })  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(args=ARGS))
