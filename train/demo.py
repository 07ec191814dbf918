"""The main job (``make demo``): a network learns, is measured against where it started, and a
report says so.

    python -m train.demo                          # configs/demo.yaml, about 5-7 minutes on 2 cores
    python -m train.demo --seed 1 --pairs 200     # any option of python -m train.distill
    python -m train.demo --smoke                  # a tiny network and budget (under a minute): the pipeline
    python -m train.demo --seeds 0 1 2 --results results/demo.json   # the published measurement

What it does: the greedy-prior network (untrained, it plays a softened greedy) learns a search
teacher's choice of move kind (``train.distill``: ``az:sims=300``, the compiled search, labels 16,000
greedy self-play positions, then one DAgger round of 16,000 positions of the network's own games;
placements stay greedy's). Then the final network and its start play each other and ``random`` and ``greedy`` on
the same fresh deals (``--pairs`` paired deals per pair, seats swapped: a round robin with Wilson
intervals and Elo), and ``report.md`` shows the start and the end side by side with the learning
curve (the network against greedy at the start and after each round, 100 games a point), replays
of its games and the commands to go on.
"""

# ruff: noqa: E402  (the command line is parsed before torch loads, so that --help is instant)
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from patchwork_env.core.bounds import MAX_ARENA_SEED, MAX_PAIRS, MAX_SEED, bounded
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.registry import parse_spec
from train.cli import check_results_path, parse_known_args
from train.config import ConfigError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = "configs/demo.yaml"
DEFAULT_PAIRS = 100  # paired deals per pair of agents (200 games)
SMOKE_PAIRS = 2
EVAL_SEED = 1000  # fresh deals: the trainer's evaluations use other streams
# what the results file keeps of each seed's ``demo_eval.json``
RAW = ("seeds", "seconds", "positions", "end_vs_start", "start_vs_greedy", "end_vs_greedy", "start_vs_random",
       "end_vs_random")  # fmt: skip
# --smoke: a tiny network (8 channels, 1 block) and a few positions labelled by a tiny search
SMOKE = ["--net.channels", "8", "--net.blocks", "1", "--net.hidden", "32", "--net.head-features", "4",
         "--net.head-hidden", "8", "--teacher", "mcts:sims=4", "--positions", "60", "--dagger-positions", "40",
         "--epochs", "1", "--workers", "1", "--eval-opponents.greedy", "1"]  # fmt: skip


@dataclass
class DemoArgs:
    """Train a network for a few minutes, measure the end against its start, write a report.

    Every other option is python -m train.distill's (its --help lists them), e.g. --seed 1."""

    config: str = DEFAULT_CONFIG
    """the trainer's YAML config"""
    pairs: int = bounded(DEFAULT_PAIRS, 1, MAX_PAIRS)
    """paired deals per pair of agents in the final evaluation (2 with --smoke), each played twice"""
    opponents: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """baselines the start and the end both play"""
    eval_seed: int = bounded(EVAL_SEED, 0, MAX_ARENA_SEED)
    """seed of the final evaluation's deals"""
    workers: int = bounded(2, 1, 256)
    """processes of the final evaluation"""
    smoke: bool = False
    """a tiny network and budget: checks the pipeline in under a minute; the numbers mean nothing"""
    seeds: tuple[int, ...] | None = bounded(None, 0, MAX_SEED)
    """run the demo once per seed (with --results: the published measurement)"""
    results: Path | None = None
    """with --seeds: write the summary results file here"""

    def validate(self) -> None:
        config_path(self.config)
        opponents = [o.strip() for o in self.opponents]
        for spec in opponents:
            try:
                entry, _ = parse_spec(spec)
            except AgentSpecError as exc:
                raise ConfigError(
                    f"--opponents: {str(exc).splitlines()[0]} (patchwork evaluate --list shows the agents)"
                ) from None
            if entry.name == "network":  # network:PATH, or its old name ppo:PATH
                raise ConfigError(
                    f"--opponents: {spec!r} is a checkpoint; the demo measures its own network against baselines"
                )
        if len(set(opponents)) != len(opponents):
            raise ConfigError(f"--opponents must be distinct, got {opponents}")
        if self.results is not None and not self.seeds:
            raise ConfigError("--results needs --seeds (one demo per seed)")
        check_results_path(self.results)


def config_path(name: str) -> Path:
    """The trainer's config file ``name``, in the working folder or the checkout."""
    path = next((p for p in (Path(name), ROOT / name) if p.is_file()), None)
    if path is None:
        raise ConfigError(f"--config: no such file {name!r}")
    return path


def parse(argv: list[str]) -> tuple[DemoArgs, list[str]]:
    """The demo's own options (checked: one ``error:`` line and exit 2) and the trainer's."""
    return parse_known_args(DemoArgs, argv)


if __name__ == "__main__":
    PARSED = parse(sys.argv[1:])  # --help ends here, before torch loads

import json
import os
import statistics
import time
from typing import Any

from patchwork_env.cli.evaluate import format_table, plot_elo
from patchwork_env.core.files import write_atomic
from patchwork_env.core.records import write_records
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.arena import PairResult, TournamentResult, round_robin
from patchwork_env.evaluation.provenance import provenance
from patchwork_env.evaluation.stats import format_win_rate
from patchwork_env.replay import write_replay
from train.cli import command_line, exit_quietly_on_ctrl_c, parse_config, reports_input_errors, write_results
from train.config import DistillConfig
from train.distill import main as train_main
from train.run import eval_tag


@dataclass
class Plan:
    """Everything one demo run will do, checked before it starts."""

    config: DistillConfig
    config_path: Path
    folder: Path
    opponents: list[str]
    pairs: int
    eval_seed: int
    workers: int
    smoke: bool
    command: str


def make_plan(args: DemoArgs, rest: list[str], argv: list[str], seed: int | None = None) -> Plan:
    """The run of one seed, its trainer's options checked (``ConfigError`` otherwise; the demo's own
    were checked when they were parsed: ``DemoArgs.validate``)."""
    path = config_path(args.config)
    opponents = [o.strip() for o in args.opponents]
    options = [*(SMOKE if args.smoke else []), *rest, *(["--seed", str(seed)] if seed is not None else [])]
    options += ["--final-eval-pairs", "0"]  # the demo evaluates the end and the start itself
    try:
        cfg, name = parse_config(DistillConfig, ["--config", str(path), *options])
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    folder = Path(cfg.run_dir or f"runs/demo-{name}-s{cfg.seed}-{time.strftime('%Y%m%d-%H%M%S')}")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ConfigError(f"--run-dir: {folder} already exists and is not an empty folder; choose another or remove it")
    cfg.run_dir = str(folder)
    pairs = SMOKE_PAIRS if args.smoke and "--pairs" not in argv else args.pairs
    typed = argv if seed is None else [*_without(argv, ("--seeds", "--results")), "--seed", str(seed)]
    workers = 1 if args.smoke else args.workers
    return Plan(
        cfg, path, folder, opponents, pairs, args.eval_seed, workers, args.smoke, command_line("train.demo", typed)
    )


def _without(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """``argv`` without ``options`` and their values (the values run up to the next option)."""
    out: list[str] = []
    skipping = False
    for a in argv:
        if a in options:
            skipping = True
        elif skipping and not a.startswith("--"):
            continue
        else:
            skipping = False
            out.append(a)
    return out


def banner(text: str) -> None:
    print(f"\n=== {text}", flush=True)


# --- the three steps ------------------------------------------------------------------------------
def evaluate(plan: Plan) -> TournamentResult:
    """The end, the start and the baselines in a round robin on the same fresh deals."""
    import torch

    torch.set_num_threads(1)  # games: one position at a time, where extra threads only contend
    end, start = (f"network:{plan.folder / 'checkpoints' / name}" for name in ("final.pt", "start.pt"))
    return round_robin(
        [end, start, *plan.opponents],
        plan.pairs,
        seed=plan.eval_seed,
        workers=plan.workers,
        progress=plan.config.progress,
    )


def pair(result: TournamentResult, a: str, b: str) -> PairResult:
    return next(p for p in result.pairs if p.a == a and p.b == b)


def write_replays(folder: Path, result: TournamentResult) -> list[Path]:
    """The end's games against greedy (else its last opponent): a records file and the replay pages
    of the first deal's two games (the network in seat 0, then in seat 1)."""
    mine = [p for p in result.pairs if p.a == result.agents[0]]
    chosen = next((p for p in mine if p.b == "greedy"), mine[-1])
    records = chosen.game_records(specs=(chosen.a, chosen.b))
    tag = eval_tag(chosen.b)
    (folder / "games").mkdir(exist_ok=True)
    paths = [write_records(folder / "games" / f"demo-vs-{tag}.jsonl", records)]
    for rec in records[:2]:
        paths.append(write_replay(folder / f"replay-vs-{tag}-seat{rec.meta['seat_a']}.html", rec))
    return paths


def measures(result: TournamentResult, opponents: list[str]) -> dict[str, Any]:
    """The demo's numbers: the end against the start head to head, and both against each baseline."""
    end, start = result.agents[0], result.agents[1]
    out: dict[str, Any] = {"end_vs_start": pair(result, end, start).to_dict()}
    for spec in opponents:
        out[f"end_vs_{spec}"] = pair(result, end, spec).to_dict()
        out[f"start_vs_{spec}"] = pair(result, start, spec).to_dict()
    return out


def report_text(
    plan: Plan, summary: dict[str, Any], result: TournamentResult, seconds: dict[str, float], replays: list[Path]
) -> str:
    """The markdown report, at most 20 lines (paths relative to the run folder where they are links);
    docs/training.md says what the demo does and why it works."""
    cfg, folder = plan.config, plan.folder
    end, start = result.agents[0], result.agents[1]
    head = pair(result, end, start)
    checkpoint = f"network:{folder / 'checkpoints' / 'final.pt'}"
    rows = [f"| its start, head to head | | **{format_win_rate(head.win_rate_a, head.ci95_a)}** |"]
    for spec in plan.opponents:
        s, e = pair(result, start, spec), pair(result, end, spec)
        cells = (format_win_rate(r.win_rate_a, r.ci95_a) for r in (s, e))
        rows.append(f"| `{spec}` | {' | '.join(cells)} |")
    watch = ", ".join(f"[seat {p.stem[-1]}]({p.name})" for p in replays[1:])
    lines = [
        f"# Demo run: {folder.name}" + (" (smoke test: tiny budget, the numbers mean nothing)" if plan.smoke else ""),
        "",
        f"A greedy-prior network learned `{cfg.teacher}`'s choice of move kind on {summary['positions']:,} "
        f"positions (placements stay greedy's) in {seconds['training'] / 60:.1f} minutes on {os.cpu_count()} cores; "
        f"then the end, its start and the baselines played {plan.pairs} paired deals per pair on fresh deals "
        f"(seed {plan.eval_seed}):",
        "",
        "| the end against | start: win rate [95% CI] | end: win rate [95% CI] |",
        "|---|---|---|",
        *rows,
        "",
        "[Learning curve](learning_curve.png), [Elo](elo.png)"
        + (f", its games against greedy replayed: {watch}" if watch else "")
        + f". Written by `{plan.command}`.",
        "",
        "```bash",
        f"patchwork play --opponent {checkpoint}     # play against it",
        f"patchwork ladder {checkpoint}              # its rating on the Patchwork ladder",
        f"tensorboard --logdir {folder}              # the training's curves",
        "```",
    ]
    return "\n".join(lines) + "\n"


def run_once(plan: Plan) -> dict[str, Any]:
    """Train, evaluate, report; returns the measurement (also ``demo_eval.json``)."""
    cfg = plan.config
    banner(f"1/3 training: {plan.config_path}, seed {cfg.seed} -> {plan.folder}")
    t0 = time.perf_counter()
    summary = train_main(cfg, "demo")
    training = time.perf_counter() - t0
    banner(f"2/3 evaluation: the end, its start and {', '.join(plan.opponents)}: {plan.pairs} paired deals per pair")
    t1 = time.perf_counter()
    result = evaluate(plan)
    evaluation = time.perf_counter() - t1
    print(format_table(result))
    plot_elo(result, plan.folder / "elo.png")
    seconds = {"training": training, "evaluation": evaluation, "total": time.perf_counter() - t0}
    data = {
        **provenance(plan.command, [cfg.seed]),
        "eval_seed": plan.eval_seed,
        "num_pairs": plan.pairs,
        "seconds": seconds,
        "positions": summary["positions"],
        **measures(result, plan.opponents),
        "round_robin": result.to_dict(),
    }
    write_atomic(plan.folder / "demo_eval.json", json.dumps(data, indent=1) + "\n")
    banner("3/3 report")
    report = plan.folder / "report.md"
    write_atomic(report, report_text(plan, summary, result, seconds, write_replays(plan.folder, result)))
    head = pair(result, result.agents[0], result.agents[1])
    print(f"  the end against its start: {format_win_rate(head.win_rate_a, head.ci95_a)}")
    for spec in plan.opponents:
        s, e = pair(result, result.agents[1], spec), pair(result, result.agents[0], spec)
        print(
            f"  vs {spec:<8} start {format_win_rate(s.win_rate_a, s.ci95_a):<22} end "
            f"{format_win_rate(e.win_rate_a, e.ci95_a)}"
        )
    print(f"total {seconds['total'] / 60:.1f} minutes; report: {report}")
    return data


def summarize(runs: list[dict[str, Any]], command: str) -> dict[str, Any]:
    """The results file of several seeds (``--seeds ... --results``): per seed, and the mean."""
    columns = ["end vs start", "start vs greedy", "end vs greedy", "gain vs greedy", "minutes"]
    rows, gains, heads, ends = [], [], [], []
    for run in runs:
        head, s, e = run["end_vs_start"], run["start_vs_greedy"], run["end_vs_greedy"]
        gain = 100 * (e["win_rate_a"] - s["win_rate_a"])
        gains.append(gain)
        heads.append(100 * head["win_rate_a"])
        ends.append(100 * e["win_rate_a"])
        rows.append(
            {
                "seed": run["seeds"][0],
                "cells": {
                    "end vs start": format_win_rate(head["win_rate_a"], head["ci95_a"]),
                    "start vs greedy": format_win_rate(s["win_rate_a"], s["ci95_a"]),
                    "end vs greedy": format_win_rate(e["win_rate_a"], e["ci95_a"]),
                    "gain vs greedy": f"{gain:+.1f} points",
                    "minutes": f"{run['seconds']['total'] / 60:.1f}",
                },
            }
        )
    summary = {
        "mean": [
            f"{statistics.mean(heads):.1f}%",
            "",
            f"{statistics.mean(ends):.1f}%",
            f"{statistics.mean(gains):+.1f} points",
            "",
        ],
        "min": [f"{min(heads):.1f}%", "", f"{min(ends):.1f}%", f"{min(gains):+.1f} points", ""],
    }
    headline = [
        (
            "`make demo`: the end against greedy (mean of seeds; the least)",
            f"{statistics.mean(ends):.1f}% ({min(ends):.1f}%)",
        ),
        ("`make demo`: the end against its start, head to head (mean of seeds)", f"{statistics.mean(heads):.1f}%"),
    ]
    return {
        **provenance(command, [r["seeds"][0] for r in runs]),
        "kind": results_file.TRAINING,
        "title": "The demo (make demo): the end against its start",
        "description": "configs/demo.yaml on each seed: train.distill, then the end, its start, random and greedy "
        f"in a round robin of {runs[0]['num_pairs']} paired deals per pair on fresh deals (seed "
        f"{runs[0]['eval_seed']}). Raw counts in `runs` (each seed's demo_eval.json).",
        "columns": columns,
        "runs": rows,
        "summary": summary,
        "headline": headline,
        "raw": [{k: run[k] for k in RAW if k in run} for run in runs],
    }


@reports_input_errors
def main(argv: list[str] | None = None, parsed: tuple[DemoArgs, list[str]] | None = None) -> Path:
    """Run the demo (once, or once per ``--seeds``); returns the path of the (last) report."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args, rest = parsed or parse(argv)
    runs = []
    seeds: list[int | None] = list(args.seeds) if args.seeds else [None]
    for seed in seeds:
        plan = make_plan(args, rest, argv, seed)
        runs.append(run_once(plan))
    if args.results is not None:
        write_results(args.results, summarize(runs, command_line("train.demo", argv)))
    return plan.folder / "report.md"


if __name__ == "__main__":
    sys.exit(exit_quietly_on_ctrl_c(lambda: main(parsed=PARSED)))
