"""The ``patchwork`` command: the tools that need no training.

    patchwork play --opponent greedy            play in the terminal
    patchwork evaluate --agents greedy random   the arena: paired games, win rates, Elo
    patchwork replay games.jsonl --game 0       a recorded game as a self-contained HTML page
    patchwork ladder greedy --budget quick      a rating on the fixed Patchwork ladder (Elo, 95% CI)
    patchwork compare A B                       is A better than B? paired games until an SPRT decides

``patchwork COMMAND --help`` lists a command's options. The parser is built from this module and
``cli.common`` alone, so ``--help`` loads neither the engine nor torch; a command's own module
(``cli.play``, ``cli.evaluate``, ``cli.replay``, ``cli.ladder``, ``cli.compare``) loads once its
arguments parse. Every error is one ``error: ...`` line on stderr and exit code 2; a closed pipe
(``patchwork evaluate --list | head``) ends quietly. What belongs here (layer 5, the top): parsing,
checking and printing; the work itself is the layers' below.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from patchwork_env.cli.common import (
    MAX_ARENA_SEED,
    MAX_SEED,
    Parser,
    UsageError,
    add_pairs_option,
    pairs_count,
    positive_int,
    report,
    seed_in,
)
from patchwork_env.core.version import __version__
from patchwork_env.evaluation.backend import BACKENDS  # light: the evaluation package loads its modules lazily
from patchwork_env.evaluation.sprt import ALPHA, BETA, DEFAULT_MAX_PAIRS, ELO0, ELO1  # numpy alone

DEFAULT_PAIRS = 50
WORKERS_HELP = (
    "processes (default: this one, and every core once the games left would take over a minute here: "
    "starting processes costs more than a short run gains); with ray: local CPUs"
)
LADDER_VERSIONS = ("v1", "v2", "v3")  # evaluation.ladder.VERSIONS (a test keeps them equal), oldest first


def _play(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser(
        "play",
        help="play a game in the terminal against an agent",
        description="Play Patchwork in the terminal against an agent (`patchwork evaluate --list` lists the specs).",
    )
    p.add_argument("--opponent", default="greedy", metavar="SPEC", help="agent spec (default greedy)")
    p.add_argument("--seat", type=int, choices=(0, 1), default=0, help="your seat (default 0)")
    p.add_argument("--seed", type=seed_in(MAX_SEED), default=0, help="seed of the deal and the opponent (default 0)")
    p.add_argument("--layout", default="revised", help="leather layout: revised (default) or original")


def _evaluate(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser(
        "evaluate",
        help="the arena: paired games between agents, win rates and an Elo ladder",
        description="A round robin of paired Patchwork games between agents: every pair plays the same deals, "
        "each twice with the seats swapped; win rates with 95% Wilson intervals and a maximum-likelihood Elo "
        "ladder (random = 0 when it plays, else the first agent).",
    )
    p.add_argument("--agents", nargs="+", metavar="SPEC", help="two or more agent specs (--list shows them)")
    add_pairs_option(p, DEFAULT_PAIRS, "per pair of agents")
    p.add_argument("--seed", type=seed_in(MAX_ARENA_SEED), default=0, help="seed of the deals and agents (default 0)")
    p.add_argument("--workers", type=int, default=None, help=WORKERS_HELP)
    p.add_argument("--backend", choices=BACKENDS, default="local", help="where games run (default local processes)")
    p.add_argument("--address", default=None, help="with --backend ray: a Ray cluster (auto or HOST:PORT)")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--plot", type=Path, default=None, help="draw the Elo ladder into this image (png, svg, pdf)")
    p.add_argument("--records", type=Path, default=None, metavar="DIR",
                   help="write every game to DIR/<A>-vs-<B>.jsonl (patchwork replay shows one)")  # fmt: skip
    p.add_argument("--journal", type=Path, default=None, metavar="FILE",
                   help="keep every game in FILE as it ends; the same command with the same FILE continues an "
                   "interrupted evaluation (default with --json: <json>.partial.jsonl, removed once the JSON is "
                   "written)")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--list", action="store_true", help="print the agent specs and exit")


def _replay(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser(
        "replay",
        help="write a recorded game as a self-contained HTML page",
        description="Write the replay of one recorded game (a line of a JSON Lines records file, as "
        "`patchwork evaluate --records` and the trainers write them) as one HTML file that opens from disk.",
    )
    p.add_argument("records", type=Path, help="a records file (JSON Lines, one game per line)")
    p.add_argument("--game", type=int, default=0, metavar="K", help="which game of the file, from 0 (default 0)")
    p.add_argument("-o", "--output", type=Path, default=None, help="the HTML file (default <records>-game<K>.html)")
    p.add_argument("--title", default=None, help="the page's title (default: the players)")


def _ladder(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser(
        "ladder",
        help="rate an agent on the fixed, versioned Patchwork ladder",
        description="Rate an agent on the Patchwork ladder: it plays reference agents of fixed ratings (random = 0) "
        "on the ladder's fixed deals, each twice with the seats swapped, and gets an Elo rating with a 95% "
        "interval (or a bound when it is beyond the scale).",
    )
    p.add_argument("spec", nargs="?", metavar="SPEC", help="the agent to rate (patchwork evaluate --list)")
    p.add_argument("--budget", choices=("quick", "standard"), default=None,
                   help="quick: about 60 games against the 3 references nearest a probe; standard: about 160 against "
                   "4 (default quick)")  # fmt: skip
    p.add_argument("--json", type=Path, default=None, help="write the rating here")
    p.add_argument("--name", default=None,
                   help="the agent's name in the output and the JSON (default: the spec; the JSON keeps the spec "
                   "too)")  # fmt: skip
    p.add_argument("--records", type=Path, default=None, metavar="DIR", help="write every game to DIR/<A>-vs-<B>.jsonl")
    p.add_argument("--workers", type=int, default=None, help=WORKERS_HELP)
    p.add_argument("--backend", choices=BACKENDS, default="local", help="where games run (default local processes)")
    p.add_argument("--address", default=None, help="with --backend ray: a Ray cluster (auto or HOST:PORT)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--ladder", choices=LADDER_VERSIONS, default=None,
                   help=f"the ladder version (default {LADDER_VERSIONS[-1]}; an old one never changes)")  # fmt: skip
    p.add_argument("--journal", type=Path, default=None, metavar="FILE",
                   help="keep every game in FILE as it ends; run again with the same FILE to continue an "
                   "interrupted rating or build (default with --json or --rebuild OUT: <OUT>.partial.jsonl, "
                   "removed once OUT is written)")  # fmt: skip
    p.add_argument("--table", action="store_true", help="print the ladder's reference ratings and exit")
    p.add_argument("--rebuild", type=Path, default=None, metavar="OUT",
                   help=f"maintainers: play the round robin of the newest version's rungs ({LADDER_VERSIONS[-1]}) "
                   "and write its version file to OUT")  # fmt: skip
    p.add_argument("--pairs", type=int, default=None,
                   help="with --rebuild: paired deals of every pair of rungs before the neighbours' top-ups "
                   "(default 10)")  # fmt: skip
    p.add_argument(
        "--precision",
        type=float,
        default=None,
        help="with --rebuild: neighbouring rungs' differences to +- this many Elo, 95%% (default 50)",
    )


def _compare(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser(
        "compare",
        help="is A better than B? paired games until a sequential test (SPRT) decides",
        description="Is agent A (the candidate) better than agent B (the baseline), in the order chess engine "
        "testers write 'new base'? Paired games on fresh deals (each deal twice, the seats swapped), the pair as "
        "the unit, until a sequential probability ratio test on logistic Elo decides: A better (Elo of A over B at "
        "least ELO1, rather than ELO0), not better, or undecided at --max-pairs.",
    )
    p.add_argument("a", metavar="A", help="the candidate, the agent that may be better: a spec, FILE.py:NAME, "
                   "sb3:PATH (--list in evaluate)")  # fmt: skip
    p.add_argument("b", metavar="B", help="the baseline, the agent to beat")
    p.add_argument("--elo0", type=float, default=ELO0, help=f"H0: A is this much stronger than B (default {ELO0:g})")
    p.add_argument("--elo1", type=float, default=ELO1, help=f"H1: A is this much stronger than B (default {ELO1:g})")
    p.add_argument("--alpha", type=float, default=ALPHA,
                   help=f"the error rate of 'better' when H0 holds (default {ALPHA:g})")  # fmt: skip
    p.add_argument("--beta", type=float, default=BETA,
                   help=f"the error rate of 'not better' when H1 holds (default {BETA:g})")  # fmt: skip
    p.add_argument("--max-pairs", type=pairs_count, default=DEFAULT_MAX_PAIRS, metavar="PAIRS",
                   help=f"the cap: paired deals at most, then undecided (default {DEFAULT_MAX_PAIRS})")  # fmt: skip
    p.add_argument("--seed", type=seed_in(MAX_ARENA_SEED), default=None,
                   help="seed of the deals and agents (default: a fresh one, printed; a journal's own)")  # fmt: skip
    p.add_argument("--workers", type=positive_int, default=None, help="processes (default: every core)")
    p.add_argument("--json", type=Path, default=None, help="write the comparison here (a results file)")
    p.add_argument("--journal", type=Path, default=None, metavar="FILE",
                   help="keep every game in FILE as it ends; the same command with the same FILE continues an "
                   "interrupted or undecided run (default with --json: <json>.partial.jsonl)")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no live line")


def build_parser() -> Parser:
    parser = Parser(
        prog="patchwork",
        description="Patchwork tools: play, evaluate agents, watch recorded games.",
        epilog="`patchwork COMMAND --help` lists a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"patchwork-env {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    for add in (_play, _evaluate, _replay, _ladder, _compare):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``patchwork`` with ``argv`` (default: the process's arguments); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.command_line = shlex.join(["patchwork", *argv])  # quoted, so that it runs as written
    command = importlib.import_module(f"patchwork_env.cli.{args.command}")
    from patchwork_env.evaluation.workers import RunError  # after parsing: --help loads no engine

    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        command.run(args)
    except (UsageError, ValueError, OSError, ImportError, RunError) as exc:  # a spec, a file, an extra, an agent
        if isinstance(exc, BrokenPipeError):
            return _closed_pipe()
        return report(exc)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("terminated", file=sys.stderr)
        return 143
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


class Terminated(BaseException):
    """SIGTERM, as an exception: the work stops through its ``finally`` blocks (the arena's worker
    processes are ended, files are closed) instead of the process vanishing with workers alive."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


def _closed_pipe() -> int:
    """The reader of our output went away (``| head``): stop quietly, as Python's docs advise."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0
