"""Reference baselines from scratch: PPO from a random network, its strength after fixed minutes of
training, on several seeds, for researchers to compare with. ``--trainer selfplay`` (the default) is
the project's self-play PPO (``configs/selfplay_scratch.yaml``); ``--trainer sb3_maskable`` is
sb3-contrib's MaskablePPO with the same network and opponent pool (``configs/sb3.yaml``).

    python -m train.baselines --seeds 0 1 2 --minutes 10 30 60 --jobs 3 --results results/ppo-scratch.json
    python -m train.baselines --trainer sb3_maskable --seeds 0 1 2 --minutes 10 20 30 60 --jobs 3
    python -m train.baselines --seeds 0 --minutes 1 --pairs 5      # a try

Per seed: one run of the trainer (no periodic evaluation, so the minutes are training; by
default minutes of the run's CPU time, so that ``--jobs`` runs sharing the cores are not slowed
in the count) that keeps ``checkpoints/minute-<m>.pt`` at each mark; then each of those networks
plays ``--pairs`` paired deals against random and greedy on fresh deals (``--eval-seed``, the same
for every seed and mark). Each mark also records the learner's decisions trained on by then (the run's
``checkpoints/minute-<m>.json``): minutes depend on the machine's speed, decisions do not.
``--results`` writes the results file (per seed and mark, the decisions and the win rates with their raw counts).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from patchwork_env.core.bounds import MAX_ARENA_SEED, MAX_SEED, above, bounded
from patchwork_env.core.usage import fail
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.workers import WorkerError, run_unordered
from train.cli import check_results_path, command_line, exit_quietly_on_ctrl_c, parse_args, parse_config, write_results
from train.config import CommonConfig, ConfigError, SB3Config, SelfPlayConfig
from train.run import unusable_folder, used_files

OPPONENTS = ("random", "greedy")
CLOCK_WORDS = {"process": "the run's CPU time", "wall": "elapsed time"}


@dataclass(frozen=True)
class Trainer:
    """How the baselines run one trainer: its config's class and default file, its option that lifts
    the schedule's own length (the time limit then cuts the run), its run folders' prefix and its
    results' title."""

    config_class: type[CommonConfig]
    config: str
    unlimited: tuple[str, ...]
    prefix: str
    title: str


TRAINERS: dict[str, Trainer] = {
    "selfplay": Trainer(
        SelfPlayConfig, "configs/selfplay_scratch.yaml", ("--total-updates", "100000"), "ppo-scratch",
        "Self-play PPO from scratch: strength over minutes of training",
    ),
    "sb3_maskable": Trainer(
        SB3Config, "configs/sb3.yaml", ("--total-timesteps", str(10**10)), "sb3-maskable",
        "sb3-contrib MaskablePPO from scratch: strength over minutes of training",
    ),
}  # fmt: skip


@dataclass
class BaselinesArgs:
    """Reference baselines from scratch: PPO (self-play or MaskablePPO) from a random network on several seeds."""

    seeds: tuple[int, ...] = bounded((0,), 0, MAX_SEED)
    """training seeds, one run each"""
    minutes: tuple[float, ...] = above((10.0, 30.0, 60.0), 0.0, 10_000)
    """marks of training time"""
    pairs: int = bounded(100, 1, 10_000)
    """paired deals per opponent and mark (two games each)"""
    eval_seed: int = bounded(2000, 0, MAX_ARENA_SEED)
    """the deals of every evaluation"""
    trainer: Literal["selfplay", "sb3_maskable"] = "selfplay"
    """``train.selfplay`` (self-play PPO) or ``train.sb3_maskable`` (sb3-contrib MaskablePPO)"""
    config: str = ""
    """the trainer's config (empty: configs/selfplay_scratch.yaml or configs/sb3.yaml by --trainer)"""
    runs: Path = Path("runs/baselines")
    """folder of the run folders"""
    results: Path | None = None
    """write the results file here"""
    clock: Literal["process", "wall"] = "process"
    """what a minute of training is: the run's CPU time (fair when runs share cores) or elapsed time"""
    jobs: int = bounded(1, 1, 256)
    """seeds trained and evaluated at once (processes), at most one per seed"""

    def validate(self) -> None:
        if not self.seeds:
            raise ConfigError("--seeds: give one or more (one run each)")
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"--seeds must be distinct (each seed is one run folder), got {list(self.seeds)}")
        if self.jobs > len(self.seeds):
            raise ConfigError(f"--jobs must be in 1..{len(self.seeds)} (the number of seeds), got {self.jobs}")
        check_results_path(self.results)
        if self.trainer == "sb3_maskable" and importlib.util.find_spec("sb3_contrib") is None:
            raise ConfigError('--trainer sb3_maskable needs sb3-contrib: pip install -e ".[sb3]"')
        check_runs(self)


def run_folder(args: BaselinesArgs, seed: int) -> Path:
    return args.runs / f"{TRAINERS[args.trainer].prefix}-s{seed}"


def run_options(args: BaselinesArgs, seed: int) -> list[str]:
    """The trainer's command line for one seed's run."""
    return [
        "--config", config_of(args), "--seed", str(seed), "--run-dir", str(run_folder(args, seed)),
        "--time-limit-minutes", str(max(args.minutes)), *TRAINERS[args.trainer].unlimited, "--clock", args.clock,
        "--checkpoint-minutes", *[f"{m:g}" for m in args.minutes],
        "--eval-every", "0", "--final-eval-pairs", "0", "--no-progress",
    ]  # fmt: skip


def check_runs(args: BaselinesArgs) -> None:
    """Before any run starts: each seed's command line parses and validates as its trainer will read
    it (the trainer's own parser), and its run folder can be made and holds no other run's files, so
    that no seed fails after the others have trained. Raises ``ConfigError``."""
    path = config_of(args)
    if not Path(path).is_file():
        raise ConfigError(f"--config: no such file: {path}")
    for seed in args.seeds:
        try:
            parse_config(TRAINERS[args.trainer].config_class, run_options(args, seed))
        except (ValueError, OSError) as exc:
            raise ConfigError(f"--config {path} for --trainer {args.trainer}: {exc}") from None
        problem = unusable_folder(run_folder(args, seed))
        if problem:
            raise ConfigError(f"--runs: {problem}; give another --runs")
        used = used_files(run_folder(args, seed))
        if used:
            raise ConfigError(
                f"--runs: {run_folder(args, seed)} holds another run ({', '.join(sorted(used)[:3])}); give a new --runs"
            )


def train_seed(args: BaselinesArgs, seed: int) -> Path:
    """One run of the trainer up to the last mark; returns its folder."""
    module = importlib.import_module(f"train.{args.trainer}")
    if module.cli(run_options(args, seed)) != 0:
        fail(f"the run of seed {seed} failed (its folder: {run_folder(args, seed)})")
    return run_folder(args, seed)


def config_of(args: BaselinesArgs) -> str:
    """The config the runs read: ``--config``, else the trainer's own."""
    return args.config or TRAINERS[args.trainer].config


@dataclass
class Marks:
    """One seed's marks: ``counts`` (mark -> opponent -> raw counts) and ``trained`` (mark -> the
    run's ``minute-<m>.json``: minutes, steps and the learner's decisions by then)."""

    counts: dict[str, dict[str, Any]]
    trained: dict[str, dict[str, Any]]


def mark_path(folder: Path, m: float) -> Path:
    """The run's checkpoint at the mark ``m`` (``train.run`` writes it, its record beside it)."""
    return folder / "checkpoints" / f"minute-{m:g}.pt"


def read_mark(folder: Path, m: float) -> dict[str, Any]:
    """What was trained by the mark ``m`` (its ``minute-<m>.json``), its checkpoint checked to be there:
    else one ``error:`` line naming the file."""
    path = mark_path(folder, m)
    record = path.with_suffix(".json")
    if not path.is_file():
        fail(f"{path} is missing: the run ended before {m:g} minutes of training")
    if not record.is_file():
        fail(f"{record} is missing: what was trained by {m:g} minutes is not on record")
    try:
        trained = json.loads(record.read_text())
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        fail(f"cannot read {record}: {exc}")
    if not isinstance(trained, dict):
        fail(f"{record} must hold a JSON object (minutes, steps, decisions), got {type(trained).__name__}")
    return trained


def evaluate_marks(args: BaselinesArgs, folder: Path) -> Marks:
    """Each minute checkpoint against random and greedy: the raw counts; and what was trained by each
    mark (its ``minute-<m>.json``: steps and the learner's decisions), every mark read before any game."""
    from patchwork_env.evaluation.arena import play_pairs

    trained = {f"{m:g}": read_mark(folder, m) for m in args.minutes}
    out: dict[str, dict[str, Any]] = {}
    for m in args.minutes:
        path = mark_path(folder, m)
        out[f"{m:g}"] = {}
        for spec in OPPONENTS:
            r = play_pairs(f"network:{path}", spec, args.pairs, seed=args.eval_seed, workers=1)
            out[f"{m:g}"][spec] = {"games": r.games, "wins": r.wins_a, "losses": r.wins_b,
                                   "win_rate": r.win_rate_a, "ci95": list(r.ci95_a)}  # fmt: skip
            print(f"  {path}: vs {spec} {100 * r.win_rate_a:.1f}% of {r.games}", flush=True)
    return Marks(out, trained)


def train_and_evaluate(args: BaselinesArgs, seed: int) -> Marks:
    """One seed: its run, then its marks' raw counts."""
    return evaluate_marks(args, train_seed(args, seed))


def summarize(args: BaselinesArgs, runs: dict[int, Marks], command: str) -> dict[str, Any]:
    from patchwork_env.evaluation.provenance import provenance
    from patchwork_env.evaluation.stats import format_win_rate

    def decisions(marks: Marks, m: float) -> float:
        return float(marks.trained[f"{m:g}"]["decisions"])

    def millions(n: float) -> str:
        return f"{n / 1e6:.2f}M"

    def cells(marks: Marks, m: float) -> dict[str, str]:
        out = {f"decisions by {m:g} min": millions(decisions(marks, m))}
        for spec in OPPONENTS:
            r = marks.counts[f"{m:g}"][spec]
            out[f"vs {spec} at {m:g} min"] = format_win_rate(r["win_rate"], r["ci95"])
        return out

    table = {seed: {k: v for m in args.minutes for k, v in cells(marks, m).items()} for seed, marks in runs.items()}
    means = []
    for m in args.minutes:
        means.append(millions(statistics.mean(decisions(marks, m) for marks in runs.values())))
        means += [f"{100 * statistics.mean(marks.counts[f'{m:g}'][spec]['win_rate'] for marks in runs.values()):.1f}%"
                  for spec in OPPONENTS]  # fmt: skip
    return {
        **provenance(command, list(runs)),
        "kind": results_file.TRAINING,
        "title": TRAINERS[args.trainer].title,
        "description": f"`python -m train.{args.trainer} --config {config_of(args)}` from a random network on each "
        f"seed (one thread, no periodic evaluation; minutes of {CLOCK_WORDS[args.clock]}), its network at each mark "
        f"against random and greedy: {args.pairs} paired deals each on fresh deals (seed {args.eval_seed}); the "
        "learner's decisions trained on by each mark (they do not depend on the machine's speed, the minutes do). "
        "Raw counts in `raw`, what was trained by each mark in `trained`.",
        "columns": list(next(iter(table.values()))),
        "runs": [{"seed": seed, "cells": row} for seed, row in table.items()],
        "summary": {"mean": means},
        "raw": {str(seed): marks.counts for seed, marks in runs.items()},
        "trained": {str(seed): marks.trained for seed, marks in runs.items()},
    }


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(BaselinesArgs, argv, __doc__.splitlines()[0])
    if args.jobs == 1:
        runs = {seed: train_and_evaluate(args, seed) for seed in args.seeds}
    else:  # the library's worker pool (a dead worker is an error line, never a hang)
        try:
            done = dict(run_unordered(functools.partial(train_and_evaluate, args), args.seeds, args.jobs))
        except WorkerError as exc:
            fail(f"{exc}; see the run folders in --runs")
        runs = {seed: done[seed] for seed in args.seeds}
    if args.results is not None:
        write_results(args.results, summarize(args, runs, command_line("train.baselines", argv)))
    return 0


if __name__ == "__main__":
    sys.exit(exit_quietly_on_ctrl_c(main))
