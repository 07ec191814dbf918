"""Distil a network's value into a small compiled value model for az's leaves (``agents.value_distill``).

    python -m train.value_distill --checkpoint runs/value/v5-search-s1.pt --out runs/value/v5-small.npz \\
        --games 20000 --epochs 6 --seed 0
    python -m train.value_distill --checkpoint runs/value/v5-search-s1.pt --out runs/value/v5-small-2.npz \\
        --target search --model runs/value/v5-small.npz --sims 200 --games 8000 --workers 2 --learning-rate 5e-4
    patchwork evaluate --agents az:value=runs/value/v5-small.npz,rollouts=0,prior=greedy,expand=1 greedy

The network plays ``--games`` games (``agents.value_head.network_games``); the target of each
decision is the network's own value of it, or (``--target search``) the value az's compiled search
gives it with ``--model`` at its leaves and ``--sims`` simulations (``agents.value_head.tree_targets``),
the fit then starting from ``--model``'s weights (its sizes). Prints the held-out explained variance
(games never trained on) before and after each epoch, and both the model's and the network's error
against the held-out games' results. The model is an ``.npz`` file
(``patchwork_env.players.value_model``): ``az`` reads it with ``value=PATH``.
"""

# ruff: noqa: E402  (the command line is parsed before torch loads, so that --help is instant)
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from patchwork_env.core.bounds import MAX_SEED, above, bounded
from patchwork_env.core.files import check_output_path
from patchwork_env.players.registry import MAX_SIMS
from patchwork_env.players.value_model import MAX_HIDDEN
from train.cli import check_results_path, exit_quietly_on_ctrl_c, parse_args, reports_input_errors
from train.config import MAX_GAMES, ConfigError


@dataclass
class ValueModelArgs:
    """Distil a network's value into a small compiled value model for az's leaves."""

    checkpoint: str
    """the network whose value is distilled (a checkpoint of the project's format)"""
    out: str
    """where to write the value model (.npz)"""
    games: int = bounded(20000, 2, MAX_GAMES)
    """games the network plays (about 42 decisions each; a fifth of them, at least one, is held out)"""
    hidden1: int = bounded(128, 1, MAX_HIDDEN)
    """first hidden layer's size"""
    hidden2: int = bounded(64, 1, MAX_HIDDEN)
    """second hidden layer's size"""
    epochs: int = bounded(6, 1, 1000)
    """passes over the training games"""
    learning_rate: float = above(2e-3, 0.0)
    """Adam's peak learning rate (one cycle)"""
    margin_weight: float = bounded(0.2, 0.0, 1.0)
    """weight of the score margin in a game's result (the held-out results' scale)"""
    target: Literal["network", "search"] = "network"
    """each decision's target: the network's value of it, or az's compiled search's with --model"""
    model: str = ""
    """--target search: the value model at the search's leaves, and the fit's start"""
    sims: int = bounded(200, *MAX_SIMS)
    """--target search: simulations per position"""
    ptemp: float = above(20.0, 0.0)
    """--target search: the greedy prior's temperature in score points (az's ptemp)"""
    workers: int = bounded(1, 1, 256)
    """--target search: processes labelling the positions"""
    results: str = ""
    """also write the fit's statistics to this results file (JSON)"""
    seed: int = bounded(0, 0, MAX_SEED)
    """deals, sampling, initial weights and the held-out games"""
    threads: int = bounded(2, 1, 256)
    """torch threads"""

    def validate(self) -> None:
        if (self.target == "search") != bool(self.model):
            raise ConfigError(
                "--target search needs --model (the value model at the search's leaves), and only it takes one"
            )
        check_output_path(self.out, "--out")
        check_results_path(self.results)


if __name__ == "__main__":
    ARGS = parse_args(ValueModelArgs, None, __doc__.splitlines()[0])

import time

import torch

from agents.value_distill import VAL_SHARE, ModelStats, fit_value_model
from agents.value_head import held_out_split, network_games, network_values, tree_targets
from patchwork_env.players.checkpoint import load_network
from patchwork_env.players.value_model import ValueModelError, load_value_model
from train.cli import command_line, save_out, write_fit_run


@reports_input_errors
def main(argv: Sequence[str] | None = None, args: ValueModelArgs | None = None) -> int:
    args = args or parse_args(ValueModelArgs, argv, __doc__.splitlines()[0])
    net = load_network(args.checkpoint)
    try:
        leaves = load_value_model(args.model) if args.model else None
    except ValueModelError as exc:
        raise ConfigError(str(exc)) from None
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    states, results, games = network_games(net, args.games, args.seed, args.margin_weight)
    net_values = network_values(net, states).numpy()
    targets = net_values
    if leaves is not None:
        targets = tree_targets(states, leaves, args.sims, args.ptemp, args.margin_weight, args.workers)
        print(f"  az's compiled search of each ({args.sims} simulations), {time.perf_counter() - start:.0f} s so far")
    print(f"{args.games} games, {len(states):,} decisions and their targets in {time.perf_counter() - start:.0f} s")

    def show(h: ModelStats) -> None:
        label = "before" if h.epoch == 0 else f"epoch {h.epoch}"
        print(
            f"  {label:>8}: held-out explained variance {h.val_explained_variance:.3f} (mse {h.val_mse:.4f}), "
            f"mse against the results {h.val_result_mse:.4f}, {time.perf_counter() - start:.0f} s so far",
            flush=True,
        )

    model, history = fit_value_model(
        states, targets, results, games, (args.hidden1, args.hidden2), args.epochs, args.learning_rate, args.seed,
        progress=show, init=leaves,
    )  # fmt: skip
    rows = held_out_split(games, VAL_SHARE, args.seed)[1]  # the fit's held-out games
    result_mse = {
        name: float(((values[rows] - results[rows]) ** 2).mean())
        for name, values in (("network", net_values), ("search", targets if leaves is not None else None))
        if values is not None
    }
    for name, mse in result_mse.items():
        print(f"  the {name}'s own mse against the held-out results: {mse:.4f}")
    save_out(model.save, args.out)
    seconds = time.perf_counter() - start
    if args.results:
        command = command_line("train.value_distill", argv)
        write_fit_results(args, command, len(states), model.hidden, history, result_mse, seconds)
    print(f"wrote {args.out} ({seconds:.0f} s in all)")
    return 0


def write_fit_results(
    args: ValueModelArgs,
    command: str,
    positions: int,
    hidden: tuple[int, int],
    history: list[ModelStats],
    result_mse: dict[str, float],
    seconds: float,
) -> None:
    """The fit as a ``training`` results file (one run; the epochs in ``raw``), rendered on the
    results page (``tools/render_results.py``); ``result_mse``: the network's (and the search's)
    mean squared error against the held-out results."""
    last = history[-1]
    search = args.target == "search"
    cells = {
        "positions": positions,
        "hidden": f"{hidden[0]}, {hidden[1]}",
        f"held-out explained variance of the {'search' if search else 'network'}'s values": round(
            last.val_explained_variance, 3
        ),
        "held-out mse against results, model": round(last.val_result_mse, 4),
        **{name: round(mse, 4) for name, mse in result_mse.items()},
    }
    title, source = "Value model distilled from a network (train.value_distill)", f"on {args.checkpoint}"
    if search:
        title = "Value model fitted to az's compiled search (train.value_distill --target search)"
        source = f"from {args.model} (its search's values, {args.sims} simulations), games of {args.checkpoint}"
    write_fit_run(
        args,
        title,
        (
            f"train.value_distill {source}: {args.games} games, {positions} positions, "
            f"hidden {hidden[0]}, {hidden[1]}, {args.epochs} epochs; held-out: a fifth of the games"
        ),
        cells,
        history,
        seconds,
        command,
    )


if __name__ == "__main__":
    sys.exit(exit_quietly_on_ctrl_c(lambda: main(args=ARGS)))
