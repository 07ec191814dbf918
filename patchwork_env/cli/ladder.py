"""``patchwork ladder``: an agent's rating on the fixed Patchwork ladder (``evaluation.ladder``).

patchwork ladder greedy --budget quick
patchwork ladder network:runs/run/checkpoints/final.pt --budget standard --json rating.json
patchwork ladder my_agent.py:act --workers 2          # a function or agent of your own
patchwork ladder sb3:model.zip                        # a Stable-Baselines3 / sb3-contrib model
patchwork ladder --table [--ladder v1]                # the reference ratings of a version

An illegal or wrong-type action of the rated agent forfeits its game (the first few forfeits are
printed with their reasons, all of them are in the JSON); an exception it raises stops the command
with one error line naming the game and the move, the games finished before it kept in the journal.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

from patchwork_env.cli.common import UsageError
from patchwork_env.cli.evaluate import journal_path, open_journal, write_pair_records
from patchwork_env.cli.outcomes import format_forfeits, stopped_by_agent
from patchwork_env.core.files import check_output_folder, check_output_path
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.arena import AgentError, PairResult
from patchwork_env.evaluation.backend import RayBackend, import_ray
from patchwork_env.evaluation.journal import Journal
from patchwork_env.evaluation.ladder import (
    PRECISION,
    VERSION,
    build_scale,
    check_scale,
    load_scale,
    rate,
    references,
)
from patchwork_env.evaluation.provenance import provenance
from patchwork_env.evaluation.stats import format_win_rate
from patchwork_env.players.registry import parse_spec

MAX_NAME = 80  # characters of --name
MAX_REBUILD_PAIRS = 2_000
DEFAULT_REBUILD_PAIRS = 10


def _check_options(args: argparse.Namespace) -> None:
    """Options that do not apply to what was asked are errors, not silently ignored."""
    rating = {"--name": args.name, "--json": args.json, "--records": args.records, "--budget": args.budget}
    if args.table:
        given = [o for o, v in {"SPEC": args.spec, "--rebuild": args.rebuild, **rating}.items() if v is not None]
        if given:
            raise UsageError(f"--table prints the reference ratings: {', '.join(given)} do not go with it")
        return
    if args.rebuild is not None:
        options = {"SPEC": args.spec, "--name": args.name, "--records": args.records, "--budget": args.budget}
        given = [o for o, v in {**options, "--ladder": args.ladder}.items() if v]
        if given:
            raise UsageError(f"--rebuild builds the reference scale: {', '.join(given)} do not go with it")
        if args.json is not None:
            raise UsageError("--rebuild writes the version file to its OUT: --json does not go with it")
    else:
        if not args.spec:
            raise UsageError("give the agent to rate (e.g. patchwork ladder greedy), or --table")
        for option, value in (("--pairs", args.pairs), ("--precision", args.precision)):
            if value is not None:
                raise UsageError(f"{option} goes with --rebuild (a rating's games are set by --budget)")


def run(args: argparse.Namespace) -> None:
    _check_options(args)
    args.budget = args.budget or "quick"
    args.ladder = args.ladder or VERSION
    if args.table:
        scale = load_scale(version=args.ladder)
        print(f"Patchwork ladder {scale['ladder']} (random = 0; {scale['command']}):")
        for ref in reversed(references(scale)):
            print(f"  {ref.spec:<18} {ref.elo:7.0f}  [{ref.low:6.0f}, {ref.high:6.0f}]")
        print("(each rung plays with every parameter pinned: patchwork_env.evaluation.ladder.PINNED)")
        return
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.address is not None and args.backend != "ray":
        raise UsageError("--address needs --backend ray")
    if args.backend == "ray":
        import_ray()
    for option, path in (("--json", args.json), ("--rebuild", args.rebuild), ("--journal", args.journal)):
        if path is not None:
            check_output_path(path, option)
    if args.records is not None:
        check_output_folder(args.records, "--records")
    if args.name is not None and not (0 < len(args.name.strip()) <= MAX_NAME and args.name.isprintable()):
        raise UsageError(f"--name must be 1..{MAX_NAME} printable characters, not blank, got {args.name!r}")
    if args.rebuild is not None:
        pairs = DEFAULT_REBUILD_PAIRS if args.pairs is None else args.pairs
        precision = PRECISION if args.precision is None else args.precision
        if not 1 <= pairs <= MAX_REBUILD_PAIRS:
            raise UsageError(f"--pairs must be in 1..{MAX_REBUILD_PAIRS}, got {pairs}")
        if not 5.0 <= precision <= 1000.0:
            raise UsageError(f"--precision must be in 5..1000 Elo, got {precision}")
    else:
        parse_spec(args.spec)  # a spec that does not parse is an error line here, one that does not build in rate
    journal_file = journal_path(args.journal, args.rebuild if args.rebuild is not None else args.json)
    output_option = "--rebuild" if args.rebuild is not None else "--json"
    journal = open_journal(journal_file, named=args.journal is not None, output_option=output_option)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # batch-1 forward passes: torch imported later gets one thread
    backend = RayBackend(args.address, num_cpus=args.workers) if args.backend == "ray" else None
    started = time.perf_counter()
    try:
        if backend is not None:
            backend.start()
        if args.rebuild is not None:
            _rebuild(args, pairs, precision, backend, journal, started)
            if args.journal is None and journal_file is not None:
                journal_file.unlink(missing_ok=True)  # the games are in the version file now
            return
        scale = load_scale(version=args.ladder)
        played: list[PairResult] = []
        result = rate(
            args.spec.strip(),
            args.budget,
            args.workers,
            backend,
            not args.no_progress,
            scale,
            played,
            name=args.name.strip() if args.name else None,
            ladder=args.ladder,
            journal=journal,
            command=args.command_line,
        )
    except AgentError as exc:
        raise stopped_by_agent(exc, journal_file, args.records, write_pair_records) from exc
    finally:
        if backend is not None:
            backend.close()
    print(f"{result.agent}: {result.summary()}")
    print(
        f"  {result.games} games ({args.budget}), {result.illegal_actions} lost by an illegal action, "
        f"{time.perf_counter() - started:.0f} s"
    )
    for row in result.per_opponent:
        rate_text = format_win_rate(row["win_rate"], tuple(row["ci95"]))
        print(f"  vs {row['opponent']:<18} ({row['opponent_elo']:5.0f})  {rate_text:<22} {row['games']} games")
    if result.agent_info:
        print("  " + ", ".join(f"{key.replace('_', ' ')}: {value}" for key, value in result.agent_info.items()))
    for line in format_forfeits(result.forfeits):
        print(line)
    if args.json is not None:
        results_file.write(args.json, {**result.to_dict(), "spec": args.spec.strip()})
        print(f"wrote {args.json}")
        if args.journal is None and journal_file is not None:
            journal_file.unlink(missing_ok=True)  # the games are in the JSON now
    if args.records is not None:
        for path in write_pair_records(played, args.records):
            print(f"wrote {path}")


def _rebuild(
    args: argparse.Namespace,
    pairs: int,
    precision: float,
    backend: RayBackend | None,
    journal: Journal | None,
    started: float,
) -> None:
    data = build_scale(
        pairs, args.workers, backend, not args.no_progress, precision=precision, journal=journal, log=print
    )
    usage = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    compute = {
        "seconds": time.perf_counter() - started,
        "cpu_seconds": sum(u.ru_utime + u.ru_stime for u in usage),
        "games": sum(p["games"] for p in data["pairs"]),
        "workers": args.workers,
    }
    out = {
        **provenance(args.command_line, [data["seed"]]),
        "kind": results_file.LADDER_REFERENCE,
        **data,
        "compute": compute,
    }
    results_file.write(args.rebuild, out)
    print(f"wrote {args.rebuild}")
    for problem in check_scale(out, precision=precision):
        print(f"  not met: {problem}")
