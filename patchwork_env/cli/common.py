"""What the library's command lines share: the error convention (one ``error: ...`` line on stderr
and exit code 2, never a usage dump or a traceback: ``patchwork_env.core.usage``, which ``train/``
uses too), argparse's parser and types, the seed bounds (``patchwork_env.core.bounds``) and the
``--pairs`` option. Light: importing it loads neither the engine nor torch."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn

# the error convention and the shared bounds live below the library's layers, where train/ takes them
# too (``patchwork_env.core.usage``, ``patchwork_env.core.bounds``); their names here are the same objects
from patchwork_env.core.bounds import MAX_ARENA_SEED as MAX_ARENA_SEED
from patchwork_env.core.bounds import MAX_PAIRS as MAX_PAIRS
from patchwork_env.core.bounds import MAX_SEED as MAX_SEED
from patchwork_env.core.usage import UsageError as UsageError
from patchwork_env.core.usage import fail as fail
from patchwork_env.core.usage import install_hint as install_hint
from patchwork_env.core.usage import report as report


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors follow ``fail`` (``--help`` still prints usage)."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see {self.prog} --help)")


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
