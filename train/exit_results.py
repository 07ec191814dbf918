"""Expert iteration or distillation over seeds, measured: finished runs of ``train.exit`` or of
``train.distill`` (one per seed, all of one trainer), their networks on fresh deals, written as one
results file.

    python -m train.exit_results runs/exit-s0 runs/exit-s1 runs/exit-s2 --results results/exit.json
    python -m train.exit_results runs/dagger-az-s0 runs/dagger-az-s1 runs/dagger-az-s2 \
        --results results/distill-az.json
    python -m train.exit_results runs/exit-s0 --pairs 5 --curve-pairs 2        # a try

Per run: its final network and its start against greedy on the same paired deals (``--pairs``,
``--seed``), the final network against the first shipped network (``pretrained:net=v1``) on
them, and the curve: each ``checkpoints/minute-<m>.pt`` the run kept against greedy
(``--curve-pairs``); a run without minute checkpoints (``train.distill``'s recipes) gives instead
its own periodic evaluations against greedy (``eval_history.json``: its deals, its games). The deals
are the same for every run and none of them was played during training (the runs' own evaluations
use other seeds). ``--results`` writes the per-seed rows, the mean and the least, and the raw counts.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import yaml

from patchwork_env.core.bounds import MAX_ARENA_SEED, bounded
from patchwork_env.evaluation import results_file
from train.cli import RunFolder, RunsArgs, exit_quietly_on_ctrl_c, measure_runs, read_run
from train.config import CommonConfig, ConfigError, DistillConfig, ExItConfig

#: the network the final ones are measured against: the first shipped one (a pinned version, so
#: that shipping the next does not change what an earlier file's column measured)
REFERENCE = "pretrained:net=v1"


@dataclass(frozen=True)
class Trainer:
    """What a run folder of one trainer holds and how its results file calls it."""

    module: str
    config: type[CommonConfig]
    history: str
    """the run's file that only this trainer writes (its rows: the iterations, or the evaluations)"""
    unit: str
    """the count in each row of ``history`` beside its minutes, if it is an ``eval_history.json``"""
    title: str
    recipe: str
    headline: str


TRAINERS = (
    Trainer(
        "train.exit", ExItConfig, "exit_history.json", "",
        "Expert iteration (train.exit): the network alone, on several seeds",
        "`python -m train.exit --config configs/exit.yaml` (from the shipped network",
        "Expert iteration: the network alone against greedy",
    ),
    Trainer(
        "train.distill", DistillConfig, "eval_history.json", "round",
        "Distillation (train.distill): the network alone, on several seeds",
        "`python -m train.distill --config CONFIG` (the config is in each run's `config` in `raw`: its teacher",
        "Distillation of az's search: the network alone against greedy",
    ),
)  # fmt: skip


@dataclass
class ExitResultsArgs(RunsArgs):
    """Expert iteration or distillation over seeds, measured: finished runs, one results file."""

    trainers: ClassVar[str] = "train.exit or train.distill"
    pairs: int = bounded(200, 1, 10_000)
    """paired deals of each final figure (two games each)"""
    curve_pairs: int = bounded(100, 1, 10_000)
    """paired deals per point of the curve"""
    seed: int = bounded(5050, 0, MAX_ARENA_SEED)
    """the deals of every evaluation"""


def counts(a: str, b: str, pairs: int, args: ExitResultsArgs) -> dict[str, Any]:
    """``a`` against ``b`` on ``pairs`` paired deals: the raw counts and the win rate of ``a``."""
    from patchwork_env.evaluation.arena import play_pairs

    r = play_pairs(a, b, pairs, seed=args.seed, workers=args.workers)
    print(f"  {a} vs {b}: {100 * r.win_rate_a:.1f}% of {r.games}", flush=True)
    return {"games": r.games, "wins": r.wins_a, "losses": r.wins_b, "win_rate": r.win_rate_a, "ci95": list(r.ci95_a)}


def trainer_of(folder: Path) -> Trainer:
    """The trainer whose run ``folder`` is (by the history file it wrote; train.distill's also has
    a teacher in its config), else ``ConfigError``."""
    if (folder / "exit_history.json").is_file():
        return TRAINERS[0]
    try:
        if "teacher" in (yaml.safe_load((folder / "config.yaml").read_text()) or {}):
            return TRAINERS[1]
    except (OSError, UnicodeDecodeError, yaml.YAMLError, TypeError):
        pass
    raise ConfigError(
        f"{folder} is not a run folder of train.exit or train.distill (config.yaml and exit_history.json, or a teacher)"
    )


def load_runs(args: ExitResultsArgs) -> list[RunFolder[CommonConfig]]:
    """Every run folder, all of one trainer, ``load_run``: each checked before a game is played."""
    trainers = {trainer_of(folder) for folder in args.runs}
    if len(trainers) > 1:
        names = ", ".join(sorted(t.module for t in trainers))
        raise ConfigError(f"the run folders are of different trainers ({names}): give one's")
    trainer = trainers.pop()
    return [load_run(folder, trainer) for folder in args.runs]


def load_run(folder: Path, trainer: Trainer) -> RunFolder[CommonConfig]:
    """A finished run of ``trainer``: its config (read as a config file is) and history, its checkpoints
    loadable (else ``ConfigError``, or the agent's error, naming what is wrong)."""
    from patchwork_env.players.registry import make_agent

    more = ", final_eval.json" if trainer is TRAINERS[1] else ""
    try:
        config, history = read_run(folder, trainer.config, trainer.history, trainer.unit)
        if trainer is TRAINERS[1] and not isinstance(finished(folder)["rounds"], int):
            raise ValueError("final_eval.json: rounds is not a number")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"{folder} is not a finished run of {trainer.module} (config.yaml, {trainer.history}{more}: {exc})"
        ) from None
    for path in (folder / "checkpoints" / "start.pt", folder / "checkpoints" / "final.pt", *minute_checkpoints(folder)):
        make_agent(f"network:{path}")  # a missing or corrupt checkpoint: the registry says what
    return RunFolder(folder, config, history)


def finished(folder: Path) -> dict[str, Any]:
    """A finished run's summary (``final_eval.json``)."""
    summary: dict[str, Any] = json.loads((folder / "final_eval.json").read_text())
    return summary


def minute_checkpoints(folder: Path) -> list[Path]:
    """``checkpoints/minute-<m>.pt`` of a run, by ``m`` (other names are not the curve's)."""
    marks = {}
    for path in (folder / "checkpoints").glob("minute-*.pt"):
        try:
            marks[float(path.name.removeprefix("minute-").removesuffix(".pt"))] = path
        except ValueError:
            continue
    return [marks[m] for m in sorted(marks)]


def measure(run: RunFolder[CommonConfig], args: ExitResultsArgs) -> dict[str, Any]:
    """One run's figures (raw counts) and what it was (seed, iterations or rounds, gates kept,
    minutes)."""
    folder, config, history = run.folder, run.config, run.history
    checkpoints = folder / "checkpoints"
    final, start = f"network:{checkpoints / 'final.pt'}", f"network:{checkpoints / 'start.pt'}"
    minutes = minute_checkpoints(folder)
    exit_run = (folder / "exit_history.json").is_file()
    evaluations = [row for row in history if not exit_run and not row.get("final") and row.get("opponent") == "greedy"]
    return {
        "seed": config.seed,
        "config": dataclasses.asdict(config),  # the run's every setting (time limit, iterations, checkpoint minutes...)
        "iterations": len(history) - 1 if exit_run else int(finished(folder)["rounds"]),
        "kept": sum(bool(row.get("kept_new")) for row in history[1:]) if exit_run else None,
        "minutes": round(history[-1]["minutes"], 1),
        "final_vs_greedy": counts(final, "greedy", args.pairs, args),
        "start_vs_greedy": counts(start, "greedy", args.pairs, args),
        "final_vs_pretrained": counts(final, REFERENCE, args.pairs, args),
        "curve_vs_greedy": {
            p.name.removeprefix("minute-").removesuffix(".pt"): counts(f"network:{p}", "greedy", args.curve_pairs, args)
            for p in minutes
        }
        or {f"{row['minutes']:.6g}": run_evaluation(row) for row in evaluations if row.get("round", 0) > 0},
    }


def run_evaluation(row: dict[str, Any]) -> dict[str, Any]:
    """A run's own evaluation (a row of ``eval_history.json``) as ``counts`` gives a measurement."""
    wins = round(row["win_rate"] * row["games"])
    return {"games": row["games"], "wins": wins, "losses": row["games"] - wins, "win_rate": row["win_rate"],
            "ci95": [row["ci_low"], row["ci_high"]], "source": "the run's own evaluation"}  # fmt: skip


def summarize(
    folders: Sequence[RunFolder[CommonConfig]], runs: list[dict[str, Any]], args: ExitResultsArgs, command: str
) -> dict[str, Any]:
    """The results file of the measured ``runs`` (``measure``'s, in the order of their ``folders``)."""
    from patchwork_env.evaluation.provenance import provenance
    from patchwork_env.evaluation.stats import format_win_rate

    trainer = trainer_of(folders[0].folder)

    # the table's curve columns: minute checkpoints, measured at the same marks in every run (a run's
    # own evaluations fall at minutes of its own: they are drawn, not tabled)
    marks = sorted({m for run in runs for m, r in run["curve_vs_greedy"].items() if "source" not in r}, key=float)
    steps = "iterations (kept)" if trainer is TRAINERS[0] else "rounds"
    columns = ["start vs greedy", "final vs greedy", "gain vs greedy", "final vs pretrained v1"]
    columns += [f"vs greedy at {m} min" for m in marks] + [steps, "minutes"]

    def cells(run: dict[str, Any]) -> dict[str, str]:
        gain = 100 * (run["final_vs_greedy"]["win_rate"] - run["start_vs_greedy"]["win_rate"])
        out = {key: format_win_rate(run[k]["win_rate"], run[k]["ci95"]) for key, k in (
            ("start vs greedy", "start_vs_greedy"), ("final vs greedy", "final_vs_greedy"),
            ("final vs pretrained v1", "final_vs_pretrained"))}  # fmt: skip
        out["gain vs greedy"] = f"{gain:+.1f} points"
        for m in marks:
            r = run["curve_vs_greedy"].get(m)
            out[f"vs greedy at {m} min"] = format_win_rate(r["win_rate"], r["ci95"]) if r else "-"
        out[steps] = f"{run['iterations']} ({run['kept']})" if run["kept"] is not None else str(run["iterations"])
        out["minutes"] = f"{run['minutes']:.0f}"
        return out

    def stat(fn: Any, key: str) -> str:
        return f"{100 * fn(run[key]['win_rate'] for run in runs):.1f}%"

    def spread(key: str) -> str:
        rates = [100 * run[key]["win_rate"] for run in runs]
        return f"{statistics.stdev(rates):.1f} points" if len(rates) > 1 else ""

    mean_final = stat(statistics.mean, "final_vs_greedy")
    blank = [""] * (len(marks) + 2)
    curve = (
        f"its minute checkpoints against greedy on {args.curve_pairs} of them"
        if marks
        else "its curve: its own periodic evaluations against greedy (`eval_history.json`: the run's deals)"
    )
    return {
        **provenance(command, [run["seed"] for run in runs]),
        "kind": results_file.TRAINING,
        "title": trainer.title,
        "description": f"Each seed one run of {trainer.recipe}; each run's settings are its `config` in `raw`), "
        f"then its start and final networks on {args.pairs} fresh paired deals (seed {args.seed}) against "
        f"greedy, the final one against `{REFERENCE}` (the first shipped network) on the same deals, and "
        f"{curve}. Raw counts in `raw`.",
        "columns": columns,
        "runs": [{"seed": run["seed"], "cells": cells(run)} for run in runs],
        "summary": {
            "mean": [
                stat(statistics.mean, "start_vs_greedy"),
                mean_final,
                "",
                stat(statistics.mean, "final_vs_pretrained"),
                *blank,
            ],
            "sd": ["", spread("final_vs_greedy"), "", spread("final_vs_pretrained"), *blank],
            "least": [
                stat(min, "start_vs_greedy"),
                stat(min, "final_vs_greedy"),
                "",
                stat(min, "final_vs_pretrained"),
                *blank,
            ],
        },
        "headline": [[f"{trainer.headline} (mean of {len(runs)} seeds)", mean_final]],
        "raw": {str(run["seed"]): run for run in runs},
    }


def main(argv: list[str] | None = None) -> int:
    return measure_runs("train.exit_results", ExitResultsArgs, argv, load_runs, measure, summarize)


if __name__ == "__main__":
    sys.exit(exit_quietly_on_ctrl_c(main))
