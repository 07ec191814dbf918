"""What every command line of the project shares: the error convention (one ``error: ...`` line on
stderr and exit code 2, never a usage dump or a traceback), argument types, the seed bounds and
the ``--pairs`` option. Light: importing it loads neither the engine nor torch."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

#: the seed of a game or a run, on every command line and in every trainer's config (``train.config``
#: imports it): every library seeded from it accepts it. The envs take more (``edge.MAX_ENV_SEED``).
MAX_SEED = 2**31 - 1
# the seed of arena deals (it only seeds SeedSequence): up to 2**32 - 1, so that every evaluation
# stream of a trainer (< 2**32) can be replayed
MAX_ARENA_SEED = 2**32 - 1


class UsageError(Exception):
    """A command-line error: printed as one ``error:`` line, exit code 2."""


def report(message: object) -> int:
    """Print the first line of ``message`` as ``error: ...`` on stderr; return the exit code, 2."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    print(f"error: {lines[0] if lines else 'invalid arguments'}", file=sys.stderr)
    return 2


def fail(message: object) -> NoReturn:
    """``report`` the error and exit with code 2."""
    raise SystemExit(report(message))


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors follow ``fail`` (``--help`` still prints usage)."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see {self.prog} --help)")


MAX_PAIRS = 1_000_000  # = evaluation.arena.MAX_PAIRS (a test keeps them equal; the engine is not loaded here)


def positive_int(text: str) -> int:
    """An argparse ``type``: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer (>= 1), got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def pairs_count(text: str) -> int:
    """An argparse ``type``: paired deals, 1..``MAX_PAIRS``."""
    value = positive_int(text)
    if value > MAX_PAIRS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_PAIRS:,}, got {value:,}")
    return value


def seed_in(high: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer seed in 0..``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer in 0..{high}, got {text!r}") from None
        if not 0 <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in 0..{high}, got {value}")
        return value

    return parse


def add_pairs_option(parser: argparse.ArgumentParser, default: int, what: str) -> None:
    """``--pairs``: paired deals, each played twice with the seats swapped, as every evaluation size
    of the project counts (trainers' ``final_eval_pairs``, the arena's ``num_pairs``)."""
    parser.add_argument(
        "--pairs",
        type=pairs_count,
        default=default,
        metavar="PAIRS",
        help=f"paired deals {what}: each deal is played twice with the seats swapped, "
        f"2 x PAIRS games (default {default})",
    )
