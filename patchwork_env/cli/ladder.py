"""``patchwork ladder``: an agent's rating on the fixed Patchwork ladder (``evaluation.ladder``).

patchwork ladder greedy --budget quick
patchwork ladder ppo:runs/run/checkpoints/final.pt --budget standard --json rating.json
patchwork ladder --table                      # the reference ratings of the ladder
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

from patchwork_env.cli.common import UsageError
from patchwork_env.cli.evaluate import write_pair_records
from patchwork_env.evaluation.arena import PairResult
from patchwork_env.evaluation.backend import RayBackend, import_ray
from patchwork_env.evaluation.ladder import build_scale, load_scale, rate, references
from patchwork_env.evaluation.provenance import provenance
from patchwork_env.evaluation.stats import format_win_rate
from patchwork_env.players.registry import make_agent

MAX_NAME = 80  # characters of --name


def run(args: argparse.Namespace) -> None:
    if args.name is not None and (args.table or args.rebuild is not None):
        raise UsageError("--name names a rated agent: it goes with SPEC, not with --table or --rebuild")
    if args.table:
        scale = load_scale()
        print(f"Patchwork ladder {scale['ladder']} (random = 0; {scale['command']}):")
        for ref in reversed(references(scale)):
            print(f"  {ref.spec:<16} {ref.elo:7.0f}  [{ref.low:6.0f}, {ref.high:6.0f}]")
        return
    if args.rebuild is None and not args.spec:
        raise UsageError("give the agent to rate (e.g. patchwork ladder greedy), or --table")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.address is not None and args.backend != "ray":
        raise UsageError("--address needs --backend ray")
    if args.backend == "ray":
        import_ray()
    for option, path in (("--json", args.json), ("--rebuild", args.rebuild)):
        if path is not None and not path.resolve().parent.is_dir():
            raise UsageError(f"{option}: the directory {path.resolve().parent} does not exist")
    if args.records is not None and args.records.exists() and not args.records.is_dir():
        raise UsageError(f"--records: {args.records} exists and is not a folder")
    if args.name is not None and not (0 < len(args.name) <= MAX_NAME and args.name.isprintable()):
        raise UsageError(f"--name must be 1..{MAX_NAME} printable characters, got {args.name!r}")
    if args.spec:
        make_agent(args.spec)  # a spec that does not build is an error line before any game
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    backend = RayBackend(args.address, num_cpus=args.workers) if args.backend == "ray" else None
    started = time.perf_counter()
    try:
        if backend is not None:
            backend.start()
        if args.rebuild is not None:
            if not 1 <= args.pairs <= 10_000:
                raise UsageError(f"--pairs must be in 1..10000, got {args.pairs}")
            data = build_scale(args.pairs, args.workers, backend, progress=not args.no_progress)
            data = {**provenance(args.command_line, [data["seed"]]), **data, "seconds": time.perf_counter() - started}
            args.rebuild.write_text(json.dumps(data, indent=1) + "\n")
            print(f"wrote {args.rebuild}")
            return
        scale = load_scale()
        pairs: list[PairResult] = []
        result = rate(args.spec.strip(), args.budget, args.workers, backend, not args.no_progress, scale, pairs)
    finally:
        if backend is not None:
            backend.close()
    if args.name is not None:
        result = dataclasses.replace(result, agent=args.name)
    print(f"{result.agent}: {result.summary()}")
    print(
        f"  {result.games} games ({args.budget}), {result.illegal_actions} lost by an illegal action, "
        f"{time.perf_counter() - started:.0f} s"
    )
    for row in result.per_opponent:
        rate_text = format_win_rate(row["win_rate"], tuple(row["ci95"]))
        print(f"  vs {row['opponent']:<16} ({row['opponent_elo']:5.0f})  {rate_text:<22} {row['games']} games")
    if args.json is not None:
        out = {
            **provenance(args.command_line, [scale["seed"]]),
            **result.to_dict(),
            "spec": args.spec.strip(),
            "budget": args.budget,
        }
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    if args.records is not None:
        for path in write_pair_records(pairs, args.records):
            print(f"wrote {path}")
