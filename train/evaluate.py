"""Measure agents against each other: a round robin of paired games, a table and an Elo ladder.

    python -m train.evaluate --agents greedy random mcts:sims=200 --pairs 50 --seed 0 \\
        --json results.json --plot elo.png

``--pairs`` is the number of paired deals per pair of agents, like every evaluation size in the
project (``final_eval_pairs``, ``eval_opponents``): each deal is played twice with the seats
swapped (``--pairs 50`` = 100 games). Every pair of agents plays the same deals. The old
``--games N`` (N even, N/2 deals) still works.
The Elo ladder is anchored at ``random`` = 0 when it takes part (else at the first agent), with
95% intervals from the Fisher information; win rates carry 95% Wilson score intervals (see
``agents.stats``). ``--workers`` defaults to every core. ``python -m train.evaluate --list``
prints the agent specs and their parameters.

``--backend ray`` plays the games as Ray tasks (``agents.ray_backend``; needs the ``scale`` extra):
on a local Ray runtime started by the command, or with ``--address auto`` / ``HOST:PORT`` (or
``RAY_ADDRESS``) on a running cluster. The results are the same as with the local backend.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.arena import TournamentResult, round_robin
from agents.ray_backend import BACKENDS, RayBackend, import_ray
from agents.registry import AgentSpecError, describe_agents, make_agent
from patchwork_env.records import write_records
from train.cli import MAX_ARENA_SEED, Parser, add_pairs_option

DEFAULT_PAIRS = 50


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m train.evaluate",
        description="Round robin of paired Patchwork games between agents, with win rates and an Elo ladder.",
        epilog=describe_agents(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--agents", nargs="+", metavar="SPEC", help="two or more agent specs (see below)")
    add_pairs_option(
        p,
        "--pairs",
        "--games",
        DEFAULT_PAIRS,
        f"paired deals per pair of agents: each deal is played twice with the seats swapped, "
        f"2 x PAIRS games (default {DEFAULT_PAIRS})",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the deals and the agents' generators (default 0)")
    p.add_argument(
        "--workers", type=int, default=None, help="processes (default: every core); with --backend ray: local CPUs"
    )
    p.add_argument("--backend", choices=BACKENDS, default="local", help="where games run (default local processes)")
    p.add_argument("--address", default=None, help="--backend ray: a Ray cluster (auto or HOST:PORT); default local")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--plot", type=Path, default=None, help="draw the Elo ladder into this image (png, svg, pdf)")
    p.add_argument(
        "--records",
        type=Path,
        default=None,
        metavar="DIR",
        help="write every game to DIR/<A>-vs-<B>.jsonl (one game per line, a deal's two games together); "
        "python -m train.replay turns one into a page",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--list", action="store_true", help="print the agent specs and exit")
    return p


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject bad arguments with a message saying what is allowed (``parser.error`` exits)."""
    if not args.agents or len(args.agents) < 2:
        parser.error("--agents needs at least two agent specs, e.g. --agents greedy random")
    if len(set(a.strip() for a in args.agents)) != len(args.agents):
        parser.error(f"--agents must be distinct, got {args.agents}")
    for spec in args.agents:  # built, not only parsed: bad values and checkpoints fail here
        try:
            make_agent(spec)
        except AgentSpecError as exc:
            parser.error(f"--agents: {str(exc).splitlines()[0]}")
    if args.pairs < 1:
        parser.error(f"--pairs must be >= 1 (paired deals, each played twice with the seats swapped), got {args.pairs}")
    if not 0 <= args.seed <= MAX_ARENA_SEED:
        parser.error(f"--seed must be in 0..{MAX_ARENA_SEED}, got {args.seed}")
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if args.address is not None and args.backend != "ray":
        parser.error("--address needs --backend ray")
    if args.backend == "ray":
        try:
            import_ray()
        except ImportError as exc:
            parser.error(str(exc))
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path is not None and not path.resolve().parent.is_dir():
            parser.error(f"{option}: the directory {path.resolve().parent} does not exist")
    if args.records is not None and args.records.exists() and not args.records.is_dir():
        parser.error(f"--records: {args.records} exists and is not a folder")
    if args.plot is not None and args.plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        parser.error(f"--plot must end in .png, .svg or .pdf, got {args.plot}")


def format_table(result: TournamentResult) -> str:
    """The pairs and the Elo ladder as plain-text tables."""
    w = max(len(n) for n in result.agents)
    lines = [
        f"{'A':<{w}}  {'B':<{w}}  games  wins A  win rate A [95% CI]     margin A  empty A/B   ms/move A/B",
    ]
    for p in result.pairs:
        lines.append(
            f"{p.a:<{w}}  {p.b:<{w}}  {p.games:5d}  {p.wins_a:6d}  {p.win_rate_a:6.1%} "
            f"[{p.ci95_a[0]:5.1%}, {p.ci95_a[1]:5.1%}]  {p.mean_margin_a:+8.1f}  "
            f"{p.mean_empty_a:4.1f}/{p.mean_empty_b:<4.1f}  "
            f"{1000 * p.mean_time_per_move_a:6.1f}/{1000 * p.mean_time_per_move_b:<6.1f}"
        )
    lines += ["", f"Elo (maximum likelihood, {result.anchor} = 0, 95% CI):"]
    for name, r in sorted(result.elo.items(), key=lambda kv: -kv[1].elo):
        lines.append(f"  {name:<{w}}  {r.elo:7.0f}  [{r.low:6.0f}, {r.high:6.0f}]")
    return "\n".join(lines)


def plot_elo(result: TournamentResult, path: Path) -> None:
    # a bare Figure: no pyplot state and no backend switch (inline plots in Jupyter keep working)
    from matplotlib.figure import Figure

    ladder = sorted(result.elo.items(), key=lambda kv: kv[1].elo)
    names = [n for n, _ in ladder]
    elo = [r.elo for _, r in ladder]
    err = [[r.elo - r.low for _, r in ladder], [r.high - r.elo for _, r in ladder]]
    fig = Figure(figsize=(7, 0.6 * len(names) + 1.5))
    ax = fig.subplots()
    ax.barh(names, elo, xerr=err, capsize=4, color="#4a7ab5")
    ax.set_xlabel(f"Elo ({result.anchor} = 0), 95% CI")
    ax.set_title("Patchwork agents")
    fig.tight_layout()
    fig.savefig(path)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        print(describe_agents())
        return {}
    check_args(parser, args)
    if "torch" in sys.modules:  # network agents: batch-1 forward passes, where extra threads only contend
        sys.modules["torch"].set_num_threads(1)
    t0 = time.perf_counter()
    backend = RayBackend(args.address, num_cpus=args.workers) if args.backend == "ray" else None
    try:
        if backend is not None:
            try:
                backend.start()
            except ConnectionError as exc:
                parser.error(str(exc))
        result = round_robin(
            [a.strip() for a in args.agents],
            num_pairs=args.pairs,
            seed=args.seed,
            workers=args.workers,
            progress=not args.no_progress,
            backend=backend,
        )
    finally:
        if backend is not None:
            backend.close()
    seconds = time.perf_counter() - t0
    print(format_table(result))
    print(f"\n{args.pairs} paired deals ({2 * args.pairs} games) per pair of agents, seed {args.seed}, {seconds:.0f} s")
    out = {
        "command": "python -m train.evaluate " + " ".join(sys.argv[1:] if argv is None else argv),
        "num_pairs": args.pairs,
        "games_per_pair": 2 * args.pairs,
        "seed": args.seed,
        "seconds": seconds,
        **result.to_dict(),
    }
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {args.json}")
    if args.plot is not None:
        plot_elo(result, args.plot)
        print(f"wrote {args.plot}")
    if args.records is not None:
        for path in write_game_records(result, args.records):
            print(f"wrote {path}")
    return out


def write_game_records(result: TournamentResult, folder: Path) -> list[Path]:
    """Every game of every pair into ``folder/<A>-vs-<B>.jsonl`` (agent names as file names)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for p in result.pairs:
        name = re.sub(r"[^A-Za-z0-9.=_-]+", "_", f"{p.a}-vs-{p.b}").strip("_")
        path = folder / f"{name}.jsonl"
        if path in paths:  # two names that differ only in characters a file name cannot hold
            path = folder / f"{name}-{len(paths)}.jsonl"
        paths.append(write_records(path, p.game_records(specs=(p.a, p.b))))
    return paths


if __name__ == "__main__":
    main()
