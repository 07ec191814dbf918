"""The compiled-search AlphaZero loop over seeds: finished runs of ``train.tree_loop`` (one per seed)
as one results file, their curves as measured during the runs.

    python -m train.tree_loop_results runs/tree-loop-s0 runs/tree-loop-s1 runs/tree-loop-s2 \\
        --results results/tree-loop.json

Per run and evaluation opponent: the start (iteration 0) and the last iteration's win rate, the
best iteration's, and the slope of the win rate over the last third of the iterations (a least
squares line, points per iteration: is the curve still rising at the end?). Every point was played
on the same paired deals (the runs' ``eval_seed``), never played in self-play. ``--results`` writes
the per-seed rows, their mean, and the raw counts (``curve_vs_<opponent>`` by minute: the results
page draws them).
"""

from __future__ import annotations

import json
import shlex
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tyro

from patchwork_env.cli.common import fail
from patchwork_env.evaluation import results_file
from train.cli import checked_results_path, parse_args, write_results


@dataclass
class TreeLoopResultsArgs:
    """The compiled-search AlphaZero loop over seeds: finished runs of train.tree_loop, one results file."""

    runs: tyro.conf.Positional[tuple[Path, ...]]
    """run folders of train.tree_loop (one per seed)"""
    results: Path | None = None
    """write the results file here"""


SETTINGS_READ = ("seed", "iterations", "games", "sims", "init", "eval_pairs", "eval_seed")  # what the file reports
Run = tuple[dict[str, Any], list[dict[str, Any]]]  # settings, history


def load(folder: Path) -> Run:
    """A run's settings and history (at least one iteration after the start), else one ``error:`` line."""
    try:
        settings = json.loads((folder / "settings.json").read_text())
        history = json.loads((folder / "history.json").read_text())
        if len(history) < 2 or not all(row["eval"] for row in history):
            raise ValueError("it needs the start and one iteration, each evaluated")
        missing = [key for key in SETTINGS_READ if key not in settings]
        if missing:
            raise ValueError(f"settings.json lacks {', '.join(missing)}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        fail(f"{folder} is not a run folder of train.tree_loop (settings.json, history.json: {exc})")
    return settings, history


def last_third_slope(rates: list[float]) -> float:
    """Least-squares slope (win rate per iteration) over the last third of the points (at least 3)."""
    tail = rates[-max(3, len(rates) // 3) :]
    xs = list(range(len(tail)))
    return statistics.linear_regression(xs, tail).slope if len(tail) > 1 else 0.0


def summarize(runs: list[Run], command: str) -> dict[str, Any]:
    from patchwork_env.evaluation.provenance import provenance
    from patchwork_env.evaluation.stats import format_win_rate

    opponents = list(runs[0][1][0]["eval"])
    columns = []
    for o in opponents:
        columns += [f"start vs {o}", f"last vs {o}", f"best vs {o} (iteration)", f"slope of the last third vs {o}"]
    columns += ["iterations", "minutes"]
    rows, raw = [], {}
    means: dict[str, list[float]] = {c: [] for c in columns}
    for settings, history in runs:
        cells: dict[str, str] = {}
        entry: dict[str, Any] = {"settings": settings, "history": history, "minutes": history[-1]["minutes"]}
        for o in opponents:
            points = [row["eval"][o] for row in history]
            rates = [p["win_rate"] for p in points]
            best = max(range(1, len(points)), key=lambda k: rates[k])
            slope = last_third_slope(rates)
            cells[f"start vs {o}"] = format_win_rate(rates[0], points[0]["ci95"])
            cells[f"last vs {o}"] = format_win_rate(rates[-1], points[-1]["ci95"])
            cells[f"best vs {o} (iteration)"] = f"{format_win_rate(rates[best], points[best]['ci95'])} ({best})"
            cells[f"slope of the last third vs {o}"] = f"{100 * slope:+.1f} points per iteration"
            means[f"last vs {o}"].append(100 * rates[-1])
            means[f"slope of the last third vs {o}"].append(100 * slope)
            entry[f"start_vs_{o}"] = points[0]
            entry[f"final_vs_{o}"] = points[-1]
            entry[f"curve_vs_{o}"] = {f"{row['minutes']:.6g}": row["eval"][o] for row in history[1:-1]}
        cells["iterations"] = str(len(history) - 1)
        cells["minutes"] = f"{history[-1]['minutes']:.0f}"
        rows.append({"seed": settings["seed"], "cells": cells})
        raw[str(settings["seed"])] = entry
    mean = [f"{statistics.mean(means[c]):.1f}%" if means[c] and "last vs" in c else "" for c in columns]
    mean = [
        f"{statistics.mean(means[c]):+.1f} points per iteration" if means[c] and "slope" in c else m
        for c, m in zip(columns, mean, strict=True)
    ]
    settings = runs[0][0]
    return {
        **provenance(command, [s["seed"] for s, _ in runs]),
        "kind": results_file.TRAINING,
        "title": "AlphaZero with the compiled search (train.tree_loop): value model and move-kind prior",
        "description": f"Each seed one run of `python -m train.tree_loop` ({settings['iterations']} iterations of "
        f"{settings['games']} self-play games at {settings['sims']} simulations a move, from value model "
        f"`{settings['init']}`; each run's settings in `raw`), its search with each iteration's model against "
        f"{', '.join(f'`{o}`' for o in opponents)} on the same {settings['eval_pairs']} paired deals (seed "
        f"{settings['eval_seed']}) every iteration. The slope: a least-squares line through the last third of "
        "the iterations' win rates. Raw counts in `raw`.",
        "columns": columns,
        "runs": rows,
        "summary": {"mean": mean},
        "raw": raw,
    }


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(TreeLoopResultsArgs, argv, __doc__.splitlines()[0])
    if not args.runs:
        fail("give the run folders of train.tree_loop to summarize (one per seed)")
    checked_results_path(args.results)
    runs = [load(folder) for folder in args.runs]
    seeds = [settings["seed"] for settings, _ in runs]
    if len(set(seeds)) != len(seeds):
        fail(f"two runs have the same seed ({seeds}): each folder is one seed")
    if len({tuple(history[0]["eval"]) for _, history in runs}) > 1:
        fail("the runs were evaluated against different opponents: give runs of one recipe")
    for folder, (_, history) in zip(args.runs, runs, strict=True):
        rates = {o: [f"{100 * row['eval'][o]['win_rate']:.0f}" for row in history] for o in history[0]["eval"]}
        print(f"{folder}: " + "; ".join(f"vs {o}: {' '.join(r)}" for o, r in rates.items()))
    if args.results is not None:
        command = shlex.join(["python", "-m", "train.tree_loop_results", *argv])
        write_results(args.results, summarize(runs, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
