"""``patchwork compare A B``: is A better than B? A is the candidate, B the baseline (the order
chess engine testers write ``new base``). Paired games until a sequential test decides
(``evaluation.compare``).

patchwork compare network:runs/new/checkpoints/final.pt network:runs/old/checkpoints/final.pt --workers 2
patchwork compare mcts:sims=100,c=0.6 mcts:sims=100 --json c.json     # a setting against the default
patchwork compare my_agent.py:act mcts:sims=300 --max-pairs 500       # your agent against a ladder rung

The decision, A's Elo over B with its 95% interval, the likelihood of superiority and the test's
log-likelihood ratio go to the screen (a live line while it plays); ``--json`` writes them as a
``comparison`` results file. ``--journal`` (default with ``--json``: ``<json>.partial.jsonl``)
keeps every game as it ends: the same command continues an interrupted run, or an undecided one
with a larger ``--max-pairs``; a journal of other agents (or of a changed file) is refused.
"""

from __future__ import annotations

import argparse
import sys

from patchwork_env.cli.common import UsageError
from patchwork_env.cli.evaluate import journal_path
from patchwork_env.core.files import check_output_path
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.compare import ComparisonInterrupted, compare
from patchwork_env.evaluation.sprt import check_parameters


def run(args: argparse.Namespace) -> None:
    check_parameters(args.elo0, args.elo1, args.alpha, args.beta)  # before any file or agent
    for option, path in (("--json", args.json), ("--journal", args.journal)):
        if path is not None:
            check_output_path(path, option)
    if args.json is not None and args.journal is not None and args.json.resolve() == args.journal.resolve():
        raise UsageError("--json and --journal name one file: give two")
    journal = journal_path(args.journal, args.json)
    if "torch" in sys.modules:  # network agents: batch-1 forward passes, where extra threads only contend
        sys.modules["torch"].set_num_threads(1)
    try:
        result = compare(
            args.a.strip(),
            args.b.strip(),
            elo0=args.elo0,
            elo1=args.elo1,
            alpha=args.alpha,
            beta=args.beta,
            max_pairs=args.max_pairs,
            seed=args.seed,
            workers=args.workers,
            journal=journal,
            progress=not args.no_progress,
            command=args.command_line,
        )
    except ComparisonInterrupted as stop:
        print(stop.result.summary())
        kept = f"{journal} keeps its games: the same command continues" if journal else "no --journal kept them"
        print(f"interrupted after {stop.result.pairs} pairs; {kept}", file=sys.stderr)
        raise
    print(result.summary())
    if args.json is not None:
        results_file.write(args.json, {**result.to_dict(), "specs": [args.a.strip(), args.b.strip()]}, indent=2)
        print(f"wrote {args.json}")
    if journal is not None and result.decision == "undecided":
        print(f"{journal} keeps the games: the same command with a larger --max-pairs continues")
    elif journal is not None and args.journal is None:
        journal.unlink(missing_ok=True)  # a default journal: the decision is in the JSON now
