"""The demo job (``make demo``): train a small self-play PPO agent, measure it, write a report.

    python -m train.demo                                   # configs/quick.yaml, about 10 minutes
    python -m train.demo --config configs/selfplay.yaml --pairs 200
    python -m train.demo --seed 1 --total-updates 50       # any option of python -m train.selfplay
    python -m train.demo --smoke                           # a tiny budget (< 1 minute): checks the pipeline

Three steps, with progress shown throughout:

1. training: ``train.selfplay.main`` with the config (the trainer's own progress bar, periodic
   arena evaluations, checkpoints, TensorBoard logs and ``learning_curve.png`` in the run folder);
2. evaluation: the final checkpoint (``checkpoints/best.pt`` if the config sets ``keep_best``) and
   the network training started from (``checkpoints/start.pt``) as the agents ``ppo:PATH`` in a
   round robin of paired games (``patchwork_env.evaluation.arena.round_robin``) against ``random`` and ``greedy``
   (``--opponents``) and each other, with 95% Wilson intervals and an Elo ladder: exactly what
   ``patchwork evaluate`` prints for the same agents, games and seed;
3. report: ``report.md`` in the run folder (config, training time, the start and the end side by
   side, the learning curve, links to replays of its games against greedy, the files, and the
   commands to reproduce, continue, evaluate and play against the agent), whose path is printed last.

The trainer's own final evaluation is switched off (``final_eval_pairs=0``): step 2 replaces it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchwork_env.cli.common import Parser, add_pairs_option
from patchwork_env.cli.evaluate import format_table, plot_elo
from patchwork_env.core.records import write_records
from patchwork_env.evaluation.arena import PairResult, TournamentResult, round_robin
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.registry import parse_spec
from patchwork_env.replay import write_replay
from train.cli import parse_config
from train.config import ConfigError, SelfPlayConfig
from train.run import eval_tag
from train.selfplay import main as train_main

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = "configs/quick.yaml"
DEFAULT_EVAL_PAIRS = 100  # paired deals per opponent (200 games)
DEFAULT_OPPONENTS = ("random", "greedy")
SMOKE_EVAL_PAIRS = 2
# --smoke: a few tiny updates of a tiny network, one evaluation, everything in this process
SMOKE_OVERRIDES = {
    "--num-games": "8",
    "--rollout-steps": "8",
    "--total-updates": "2",
    "--time-limit-minutes": "0",
    "--update-epochs": "1",
    "--num-minibatches": "1",
    "--critic-warmup-updates": "0",
    "--net.channels": "8",
    "--net.blocks": "1",
    "--net.hidden": "32",
    "--net.head-features": "8",
    "--net.head-hidden": "16",
    "--snapshot-every": "1",
    "--checkpoint-every": "1",
    "--eval-every": "0",
    "--eval-workers": "1",
}


@dataclass
class Plan:
    """Everything the demo will do, resolved and checked from the command line."""

    config: SelfPlayConfig
    config_path: Path
    config_name: str
    folder: Path
    opponents: list[str]
    eval_pairs: int  # paired deals per opponent, each played twice with the seats swapped
    eval_seed: int
    workers: int
    smoke: bool
    command: str  # as typed
    argv: list[str]
    overrides: list[str]  # trainer options applied to the config file (--final-eval-pairs 0 included)


# --- command line --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m train.demo",
        description="Train a self-play PPO agent, evaluate it against random and greedy, write a report.",
        epilog="Every other option is the trainer's (python -m train.selfplay --help lists them), "
        "e.g. python -m train.demo --seed 1 --total-updates 50",
    )
    p.add_argument("--config", default=DEFAULT_CONFIG, help=f"trainer config, YAML (default {DEFAULT_CONFIG})")
    p.add_argument("--run-dir", type=Path, default=None, help="run folder (default runs/demo-<config>-s<seed>-<time>)")
    add_pairs_option(p, DEFAULT_EVAL_PAIRS, f"against each opponent ({SMOKE_EVAL_PAIRS} with --smoke)")
    p.add_argument(
        "--opponents",
        nargs="+",
        default=list(DEFAULT_OPPONENTS),
        metavar="SPEC",
        help="agent specs to evaluate against (default: random greedy)",
    )
    p.add_argument("--eval-seed", type=int, default=0, help="seed of the evaluation deals (default 0)")
    p.add_argument("--workers", type=int, default=None, help="evaluation processes (default: the config's)")
    p.add_argument("--smoke", action="store_true", help="tiny budget (< 1 minute) to check that everything runs")
    return p


def find_config(text: str) -> Path | None:
    """The config file ``text`` names, relative to the working directory or else to the project root."""
    path = Path(text)
    for candidate in (path, ROOT / path):
        if candidate.is_file():
            return candidate
    return None


def make_plan(parser: argparse.ArgumentParser, args: argparse.Namespace, rest: list[str], argv: Sequence[str]) -> Plan:
    """Check every argument (``parser.error`` exits with a message saying what is allowed)."""
    config_path = find_config(args.config)
    if config_path is None:
        known = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "configs").glob("*.yaml"))
        parser.error(f"--config: no such file {args.config!r}; the project's configs are {known or 'missing'}")
    if args.eval_seed < 0:
        parser.error(f"--eval-seed must be >= 0, got {args.eval_seed}")
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    opponents = [o.strip() for o in args.opponents]
    for spec in opponents:
        try:
            entry, _ = parse_spec(spec)
        except AgentSpecError as exc:
            parser.error(f"--opponents: {str(exc).splitlines()[0]} (patchwork evaluate --list shows the agents)")
        if entry.name == "ppo":
            parser.error(f"--opponents: {spec!r} is a checkpoint; the demo measures its own agent against baselines")
    if len(set(opponents)) != len(opponents):
        parser.error(f"--opponents must be distinct, got {opponents}")
    smoke = [item for kv in SMOKE_OVERRIDES.items() for item in kv] if args.smoke else []
    items = [*smoke, *rest, "--final-eval-pairs", "0"]  # the demo evaluates the final checkpoint itself (step 2)
    name = f"demo-{config_path.stem}" + ("-smoke" if args.smoke else "")
    run_dir = str(args.run_dir) if args.run_dir else f"runs/{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        cfg, _ = parse_config(SelfPlayConfig, ["--config", str(config_path), *items, "--run-dir", run_dir])
    except ConfigError as exc:
        parser.error(f"{config_path}: {exc}")
    folder = Path(cfg.run_dir)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        parser.error(f"--run-dir: {folder} already exists and is not an empty folder; choose another or remove it")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        parser.error(f"--run-dir: {folder} already exists and is not an empty folder; choose another or remove it")
    eval_pairs = SMOKE_EVAL_PAIRS if args.smoke and "--pairs" not in argv else args.pairs
    workers = args.workers or (1 if args.smoke else cfg.eval_workers)
    command = " ".join(["python -m train.demo", *(shlex.quote(a) for a in argv)])
    return Plan(
        cfg,
        config_path,
        name,
        folder,
        opponents,
        eval_pairs,
        args.eval_seed,
        workers,
        args.smoke,
        command,
        list(argv),
        items,
    )


# --- the three steps -----------------------------------------------------------------------------------
def without_run_dir(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--run-dir DIR`` / ``--run-dir=DIR`` (to repeat a run in a new folder)."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--run-dir":
            skip = True
        elif not a.startswith("--run-dir="):
            out.append(a)
    return out


def banner(text: str) -> None:
    print(f"\n=== {text}", flush=True)


def evaluate(plan: Plan, checkpoint: Path, start: Path | None = None) -> TournamentResult:
    """The checkpoint (as the agent ``ppo:PATH``; then the start network, if given) against every
    opponent and the opponents among themselves: the round robin ``patchwork evaluate``
    plays for the same agents and seed."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # games played in this process: one thread is fastest for single positions
    try:
        agents = [f"ppo:{checkpoint}", *([f"ppo:{start}"] if start else []), *plan.opponents]
        return round_robin(
            agents, plan.eval_pairs, seed=plan.eval_seed, workers=plan.workers, progress=plan.config.progress
        )
    finally:
        torch.set_num_threads(threads)


def learner_pairs(result: TournamentResult, agent: str | None = None) -> list[PairResult]:
    """The pairs in which ``agent`` (default: the trained agent, the first of the round robin) is A."""
    return [p for p in result.pairs if p.a == (agent or result.agents[0])]


def _md_start_and_end(result: TournamentResult, start: str, opponents: Sequence[str]) -> list[str]:
    """Start and end side by side: each agent's win rate against each baseline opponent."""
    end = {p.b: p for p in learner_pairs(result)}
    begin = {p.b: p for p in learner_pairs(result, start)}
    rows = ["| opponent | start: win rate [95% CI] | end: win rate [95% CI] | change |", "|---|---|---|---:|"]
    for spec in opponents:
        if spec in end and spec in begin:
            b, e = begin[spec], end[spec]
            rows.append(
                f"| `{spec}` | {b.win_rate_a:.1%} [{b.ci95_a[0]:.1%}, {b.ci95_a[1]:.1%}] "
                f"| {e.win_rate_a:.1%} [{e.ci95_a[0]:.1%}, {e.ci95_a[1]:.1%}] "
                f"| {100 * (e.win_rate_a - b.win_rate_a):+.1f} points |"
            )
    return rows


def write_replays(folder: Path, result: TournamentResult) -> list[Path]:
    """The trained agent's evaluation games against greedy (else its last opponent) as game
    records, ``games/demo-vs-<opponent>.jsonl``, and the replay pages of the first deal's two games
    (the agent in seat 0, then in seat 1): ``replay-vs-<opponent>-seat<k>.html``."""
    pairs = learner_pairs(result)
    pair = next((p for p in pairs if p.b == "greedy"), pairs[-1])
    records = pair.game_records(specs=(pair.a, pair.b))
    tag = eval_tag(pair.b)
    (folder / "games").mkdir(exist_ok=True)
    paths = [write_records(folder / "games" / f"demo-vs-{tag}.jsonl", records)]
    for rec in records[:2]:
        seat = rec.meta["seat_a"]
        paths.append(write_replay(folder / f"replay-vs-{tag}-seat{seat}.html", rec))
    return paths


def _md_pair_rows(pairs: Sequence[PairResult]) -> list[str]:
    rows = [
        "| opponent | games | wins | win rate | 95% CI | mean score margin | deals won both / split / lost both |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for p in pairs:
        rows.append(
            f"| `{p.b}` | {p.games} | {p.wins_a} | {p.win_rate_a:.1%} | [{p.ci95_a[0]:.1%}, {p.ci95_a[1]:.1%}] "
            f"| {p.mean_margin_a:+.1f} | {p.deals_a_won_both} / {p.deals_split} / {p.deals_b_won_both} |"
        )
    return rows


def report_text(plan: Plan, summary: dict[str, Any], train_seconds: float, result: TournamentResult,
                eval_seconds: float, checkpoint: Path, resumable: Path,
                replays: Sequence[Path] = ()) -> str:  # fmt: skip
    """The markdown report (paths relative to the run folder where they are links)."""
    cfg = plan.config
    folder = plan.folder
    learner = result.agents[0]
    eval_cmd = (
        f"patchwork evaluate --agents {learner} {' '.join(plan.opponents)} --pairs {plan.eval_pairs} "
        f"--seed {plan.eval_seed}"
    )
    overrides = " ".join(shlex.quote(o) for o in plan.overrides)
    more = f"--total-updates {2 * cfg.total_updates}"
    if cfg.time_limit_minutes:
        more += f" --time-limit-minutes {2 * cfg.time_limit_minutes:g}"
    budget = f"{cfg.total_updates} updates of {cfg.num_games} games x {cfg.rollout_steps} steps"
    if cfg.time_limit_minutes:
        budget += f", or {cfg.time_limit_minutes:g} minutes, whichever comes first"
    lines = [
        f"# Demo run: {folder.name}" + (" (smoke test: tiny budget, numbers mean nothing)" if plan.smoke else ""),
        "",
        f"Written by `{plan.command}` on {time.strftime('%Y-%m-%d %H:%M')} ({os.cpu_count()} cores; "
        f"torch threads: {cfg.torch_threads}).",
        "",
        "## Training",
        "",
        f"- config: `{plan.config_path}` (resolved: [`config.yaml`](config.yaml)); budget: {budget}; seed {cfg.seed}",
        f"- training time: {summary.get('training_minutes', train_seconds / 60):.1f} minutes wall-clock "
        "(the periodic evaluations included)",
        f"- {summary.get('updates', '?')} updates, {summary.get('learner_decisions', 0):,} learner decisions, "
        f"{summary.get('games_finished', 0):,} self-play games finished"
        + (" (stopped at the time limit)" if summary.get("stopped_early") else ""),
        "",
        "## Strength",
        "",
        f"The final checkpoint, playing its most probable legal action, in paired games (each deal played twice "
        f"with the seats swapped), seed {plan.eval_seed}, {eval_seconds:.0f} s:",
        "",
        *_md_pair_rows(learner_pairs(result)),
        "",
        *(
            [
                "Start and end side by side (the start: the network training began from, "
                "`checkpoints/start.pt`; same deals):",
                "",
                *_md_start_and_end(result, result.agents[1], plan.opponents),
                "",
            ]
            if len(result.agents) > len(plan.opponents) + 1
            else []
        ),
        f"Elo (maximum likelihood, `{result.anchor}` = 0, 95% CI; every pair played the same "
        f"{plan.eval_pairs} deals, {2 * plan.eval_pairs} games):",
        "",
        "| agent | Elo | 95% CI |",
        "|---|---:|---|",
        *[
            f"| `{name}` | {r.elo:.0f} | [{r.low:.0f}, {r.high:.0f}] |"
            for name, r in sorted(result.elo.items(), key=lambda kv: -kv[1].elo)
        ],
        "",
    ]
    if (folder / "learning_curve.png").is_file():
        lines += [
            "## Learning curve",
            "",
            "Win rate of the periodic evaluations during training (paired arena games, 95% CI band):",
            "",
            "![learning curve](learning_curve.png)",
            "",
        ]
    if replays:
        records, *pages = replays
        lines += [
            "## Watch it play",
            "",
            "Replays of its first evaluation deal (open in a browser; arrow keys step through the game): "
            + ", ".join(f"[{page.name}]({page.name})" for page in pages)
            + f". Every evaluation game of that pair is in [`games/{records.name}`](games/{records.name}); "
            f"`patchwork replay {records} --game K -o game.html` shows game K.",
            "",
        ]
    lines += [
        "## Files",
        "",
        f"- `{checkpoint}`: the trained network (the agent `ppo:{checkpoint}`)",
        f"- `{resumable}`: the same with the trainer's state (optimizer, opponent pool, counters), to continue",
        f"- `{folder}/events.out.tfevents.*`: TensorBoard logs (`charts/`, `losses/`, `eval/`)",
        f"- `{folder / 'eval_history.json'}`, `{folder / 'learning_curve.png'}`: the periodic evaluations",
        f"- `{folder / 'demo_eval.json'}`, `{folder / 'elo.png'}`: the evaluation above",
        "",
        "## Commands",
        "",
        "From the project root, with the project's environment active (`source .venv/bin/activate`):",
        "",
        "```bash",
        "# run it again (in a new dated folder under runs/"
        + (
            "; the time limit makes the number of updates depend on the machine's load)"
            if cfg.time_limit_minutes
            else ")"
        ),
        " ".join(["python -m train.demo", *(shlex.quote(a) for a in without_run_dir(plan.argv))]),
        "# the same in two steps: train, then evaluate",
        f"python -m train.selfplay --config {plan.config_path} --run-dir runs/{plan.config_name}-again {overrides}",
        eval_cmd,
        "# continue training from here (the budget counts the updates and minutes already done)",
        f"python -m train.selfplay --resume {resumable} {more}",
        "# play against the agent in the terminal",
        f"patchwork play --opponent ppo:{checkpoint}",
        "# watch the curves",
        f"tensorboard --logdir {folder}",
        "```",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> Path:
    """Run the demo; returns the path of the report."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, rest = parser.parse_known_args(args_list)
    plan = make_plan(parser, args, rest, args_list)
    cfg = plan.config
    budget = f"{cfg.total_updates} updates"
    if cfg.time_limit_minutes:
        budget += f" or {cfg.time_limit_minutes:g} minutes"
    banner(f"1/3 training: {plan.config_path} ({budget}) -> {plan.folder}")
    t0 = time.perf_counter()
    try:
        summary = train_main(cfg, plan.config_name)
    except KeyboardInterrupt:
        latest = plan.folder / "checkpoints" / "latest.pt"
        print(f"\ninterrupted; continue with: python -m train.selfplay --resume {latest}", file=sys.stderr)
        raise SystemExit(130) from None
    train_seconds = time.perf_counter() - t0
    # the last network, or the best periodic one when the config sets keep_best
    best = plan.folder / "checkpoints" / "best.pt"
    checkpoint = best if summary.get("best") else plan.folder / "checkpoints" / "final.pt"
    resumable = plan.folder / "checkpoints" / "latest.pt"
    if not checkpoint.is_file():
        raise SystemExit(f"error: training ended without writing {checkpoint}")

    banner(
        f"2/3 evaluation: {plan.eval_pairs} paired deals ({2 * plan.eval_pairs} games) "
        f"against each of {', '.join(plan.opponents)}"
    )
    t1 = time.perf_counter()
    start = Path(summary.get("start_checkpoint", plan.folder / "checkpoints" / "start.pt"))
    result = evaluate(plan, checkpoint, start if start.is_file() else None)
    eval_seconds = time.perf_counter() - t1
    print(format_table(result))
    record = {
        "command": plan.command,
        "num_pairs": plan.eval_pairs,
        "games_per_pair": 2 * plan.eval_pairs,
        "seed": plan.eval_seed,
    }
    record |= {"seconds": eval_seconds, **result.to_dict()}
    (plan.folder / "demo_eval.json").write_text(json.dumps(record, indent=2) + "\n")
    plot_elo(result, plan.folder / "elo.png")
    replays = write_replays(plan.folder, result)

    banner("3/3 report")
    report = plan.folder / "report.md"
    report.write_text(report_text(plan, summary, train_seconds, result, eval_seconds, checkpoint, resumable, replays))
    begin = {p.b: p for p in learner_pairs(result, result.agents[1])} if start.is_file() else {}
    for p in learner_pairs(result):
        ci = f"[{p.ci95_a[0]:.1%}, {p.ci95_a[1]:.1%}]"
        was = f"  (start: {begin[p.b].win_rate_a:6.1%})" if p.b in begin else ""
        print(f"  vs {p.b:<10} win rate {p.win_rate_a:6.1%}  95% CI {ci}  ({p.games} games){was}")
    print(f"play against it: patchwork play --opponent ppo:{checkpoint}")
    print(f"total {(time.perf_counter() - t0) / 60:.1f} minutes; report: {report}")
    return report


if __name__ == "__main__":
    main()
