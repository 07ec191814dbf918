"""``patchwork evaluate``: a round robin of paired games, a table and an Elo ladder.

    patchwork evaluate --agents greedy random mcts:sims=200 --pairs 50 --seed 0 --json results.json

``--pairs`` counts paired deals per pair of agents (each deal played twice with the seats swapped:
``--pairs 50`` = 100 games); every pair of agents plays the same deals. Win rates carry 95% Wilson
intervals, the Elo ladder is anchored at ``random`` = 0 when it plays (else the first agent), with
95% intervals (``patchwork_env.evaluation.stats``). ``--backend ray`` plays the games as Ray tasks
(the ``ray`` extra) on a local Ray runtime, or with ``--address auto`` / ``HOST:PORT`` on a cluster;
the results are the same as with local processes. An illegal or wrong-type action forfeits its
game (the first few forfeits are printed with their reasons, all of them are in the JSON); an
exception of an agent stops the command with one error line naming the agent, the game and the
move, the games finished before it kept in the journal.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import re
import sys
import time
from pathlib import Path, PurePath
from typing import Any

from patchwork_env.cli.common import UsageError
from patchwork_env.cli.outcomes import format_forfeits, stopped_by_agent
from patchwork_env.core.files import check_output_folder, check_output_path, write_atomic
from patchwork_env.core.records import write_records
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.arena import AgentError, PairResult, TournamentResult, round_robin
from patchwork_env.evaluation.backend import RayBackend, import_ray
from patchwork_env.evaluation.journal import Journal
from patchwork_env.evaluation.provenance import provenance
from patchwork_env.evaluation.stats import format_win_rate
from patchwork_env.players.registry import canonical_spec, describe_agents, parse_spec

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def check_args(args: argparse.Namespace) -> None:
    """Reject bad arguments with a message saying what is allowed, before any game is played."""
    if not args.agents or len(args.agents) < 2:
        raise UsageError("--agents needs at least two agent specs, e.g. --agents greedy random")
    canonical: dict[str, str] = {}
    for spec in args.agents:
        same = canonical.setdefault(canonical_spec(spec), spec)
        if same is not spec:
            raise UsageError(f"--agents names one agent twice: {same!r} and {spec!r}")
    if args.plot is not None and importlib.util.find_spec("matplotlib") is None:
        raise UsageError('--plot needs matplotlib, which is not installed: pip install "patchwork-env[plot]"')
    for spec in args.agents:  # parsed here; each is built (a bad value, a missing checkpoint) before any game
        parse_spec(spec)
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.address is not None and args.backend != "ray":
        raise UsageError("--address needs --backend ray")
    if args.backend == "ray":
        import_ray()
    for option, path in (("--json", args.json), ("--plot", args.plot), ("--journal", args.journal)):
        if path is not None:
            check_output_path(path, option)
    if args.records is not None:
        check_output_folder(args.records, "--records")
    if args.plot is not None and args.plot.suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(f"--plot must end in .png, .svg or .pdf, got {args.plot}")


def journal_path(journal: Path | None, output: Path | None) -> Path | None:
    """Where finished deals are kept as they end: ``--journal``, else beside the run's output file
    (``<output>.partial.jsonl``, removed once the output is written), so that an interrupted run
    loses no game and the same command continues it."""
    if journal is not None:
        return Path(journal)
    if output is not None:
        path = output.with_name(output.name + ".partial.jsonl")
        check_output_path(path, f"{output} (its partial games file)")
        return path
    return None


def open_journal(path: Path | None, named: bool, output_option: str = "--json") -> Journal | None:
    """The journal at ``path`` (from ``journal_path``), whose refusals (a journal of another agent
    under a name of this run, or one from before journals knew their agents) say how to start
    afresh here: another ``--journal FILE`` when it was ``named``, else another ``output_option`` path."""
    if path is None:
        return None
    other = "--journal FILE" if named else f"{output_option} path"
    restart = f"delete {path}, or give another {other}" if named else f"give another {other}, or delete {path}"
    return Journal(path, restart=restart)


def format_table(result: TournamentResult) -> str:
    """The pairs and the Elo ladder as plain-text tables."""
    w = max(len(n) for n in result.agents)
    lines = [f"{'A':<{w}}  {'B':<{w}}  games  wins A  win rate A [95% CI]    margin A  empty A/B   ms/move A/B"]
    for p in result.pairs:
        lines.append(
            f"{p.a:<{w}}  {p.b:<{w}}  {p.games:5d}  {p.wins_a:6d}  {format_win_rate(p.win_rate_a, p.ci95_a):<22} "
            f"{p.mean_margin_a:+8.1f}  {p.mean_empty_a:4.1f}/{p.mean_empty_b:<4.1f}  "
            f"{1000 * p.mean_time_per_move_a:6.1f}/{1000 * p.mean_time_per_move_b:<6.1f}"
        )
    lines += ["", f"Elo (maximum likelihood, {result.anchor} = 0, 95% CI):"]
    for name, r in sorted(result.elo.items(), key=lambda kv: -kv[1].elo):
        lines.append(f"  {name:<{w}}  {r.elo:7.0f}  [{r.low:6.0f}, {r.high:6.0f}]")
    return "\n".join(lines)


def short_label(spec: str, limit: int = 28) -> str:
    """A spec as a plot label: a checkpoint path by its last two parts (``run/final.pt``)."""
    name, colon, rest = spec.partition(":")
    if colon and ("/" in rest or rest.endswith(".pt")):
        rest = "/".join(Path(rest).parts[-2:])
    label = f"{name}{colon}{rest}"
    return label if len(label) <= limit else "..." + label[-(limit - 3) :]


def plot_elo(result: TournamentResult, path: Path) -> None:
    """The Elo ladder as a bar chart (matplotlib; a bare Figure, so Jupyter's inline plots stay)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError('--plot needs matplotlib: pip install "patchwork-env[plot]"') from None
    ladder = sorted(result.elo.items(), key=lambda kv: kv[1].elo)
    names = [short_label(n) for n, _ in ladder]
    elo = [r.elo for _, r in ladder]
    err = [[r.elo - r.low for _, r in ladder], [r.high - r.elo for _, r in ladder]]
    fig = Figure(figsize=(7, 0.6 * len(names) + 1.5))
    ax = fig.subplots()
    ax.barh(names, elo, xerr=err, capsize=4, color="#4a7ab5", label="Elo, 95% interval")
    ax.set_xlabel(f"Elo ({short_label(result.anchor)} = 0)")
    ax.set_title("Patchwork agents")
    ax.legend(loc="lower right")
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format=path.suffix.lower().lstrip("."))
    write_atomic(path, image.getvalue())


def write_game_records(result: TournamentResult, folder: Path) -> list[Path]:
    """Every game of every pair into ``folder/<A>-vs-<B>.jsonl`` (``record_name`` of each agent)."""
    return write_pair_records(result.pairs, folder)


_PATH_LIKE = re.compile(r"[/\\]|\.(zip|pt|py|npz|json)$")


def record_name(spec: str) -> str:
    """An agent's part of a records file name: its spec with every file path in it by the file's stem
    (``sb3:../w2/maskppo.zip`` -> ``sb3_maskppo``, ``my_agent.py:act`` -> ``my_agent_act``), other
    characters than letters, digits and ``.=_-`` as one ``_``, no leading or trailing ``._-``."""
    parts = [PurePath(part).stem if _PATH_LIKE.search(part) else part for part in re.split(r"([:,=])", spec)]
    name = re.sub(r"[^A-Za-z0-9.=_-]+", "_", "".join(parts))
    return re.sub(r"_+", "_", name).strip("._-") or "agent"


def write_pair_records(pairs: list[PairResult], folder: Path) -> list[Path]:
    """Every game of each pair into ``folder/<A>-vs-<B>.jsonl`` (``record_name`` of each agent)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for p in pairs:
        name = f"{record_name(p.a)}-vs-{record_name(p.b)}"
        path = folder / f"{name}.jsonl"
        if path in paths:  # two names that differ only in characters a file name cannot hold
            path = folder / f"{name}-{len(paths)}.jsonl"
        paths.append(write_records(path, p.game_records(specs=(p.a, p.b))))
    return paths


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.list:
        print(describe_agents())
        return {}
    check_args(args)
    if "torch" in sys.modules:  # network agents: batch-1 forward passes, where extra threads only contend
        sys.modules["torch"].set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # and torch imported later by an agent starts with one
    journal = journal_path(args.journal, args.json)
    t0 = time.perf_counter()
    backend = RayBackend(args.address, num_cpus=args.workers) if args.backend == "ray" else None
    try:
        if backend is not None:
            backend.start()
        result = round_robin(
            [a.strip() for a in args.agents],
            num_pairs=args.pairs,
            seed=args.seed,
            workers=args.workers,
            progress=not args.no_progress,
            backend=backend,
            journal=open_journal(journal, named=args.journal is not None),
        )
    except AgentError as exc:
        raise stopped_by_agent(exc, journal, args.records, write_pair_records) from exc
    finally:
        if backend is not None:
            backend.close()
    seconds = time.perf_counter() - t0
    print(format_table(result))
    for line in format_forfeits(result.forfeits):
        print(line)
    print(f"\n{args.pairs} paired deals ({2 * args.pairs} games) per pair of agents, seed {args.seed}, {seconds:.0f} s")
    out = {
        **provenance(args.command_line, [args.seed]),
        "kind": results_file.EVALUATION,
        "num_pairs": args.pairs,
        "games_per_pair": 2 * args.pairs,
        "seed": args.seed,
        "seconds": seconds,
        **result.to_dict(),
    }
    # in order of their value: the numbers, the games, then the picture
    if args.json is not None:
        results_file.write(args.json, out, indent=2)
        print(f"wrote {args.json}")
        if args.journal is None and journal is not None:
            journal.unlink(missing_ok=True)  # the games are in the JSON now
    if args.records is not None:
        for path in write_game_records(result, args.records):
            print(f"wrote {path}")
    if args.plot is not None:
        plot_elo(result, args.plot)
        print(f"wrote {args.plot}")
    return out
