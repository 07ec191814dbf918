"""The error convention of every command line here: one ``error: ...`` line on stderr and exit
code 2, never a usage dump or a traceback (``Parser`` for argparse's own errors, ``fail`` or
``report`` for the checks after parsing); and what every trainer's command line shares
(``trainer_parser``, ``run_trainer``) and the evaluation-size option (``add_pairs_option``)."""

from __future__ import annotations

import argparse
import sys
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

if TYPE_CHECKING:
    from train.config import CommonConfig

C = TypeVar("C", bound="CommonConfig")

# the seed of a run (configs, train.play): every library seeded from it accepts it (the trainers
# derive their seeds through SeedSequence, train.seeds; configs cap every integer at 2**31 - 1)
MAX_SEED = 2**31 - 1
# the seed of arena deals (train.evaluate --seed; it only seeds SeedSequence): up to 2**32 - 1, so
# every evaluation stream of a trainer (train.seeds.stream_seed, < 2**32) can be replayed
MAX_ARENA_SEED = 2**32 - 1


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


def positive_int(text: str) -> int:
    """An argparse ``type``: a whole number >= 1 (``--threads``, ``--games``, ``--repeats``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer (>= 1), got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def run_dir(text: str) -> str:
    """``--run-dir``: a folder that may exist (a resumed run's) but is not a file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} exists and is not a folder")
    if path.parent.exists() and not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path.parent} is not a folder")
    return text


class _GamesAsPairs(argparse.Action):
    """The old spelling of a ``--pairs`` option that counted games (``--games 100`` is
    ``--pairs 50``): still accepted, hidden from ``--help``; the games must be even."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        games = typing.cast(int, values)
        if games < 2 or games % 2:
            parser.error(
                f"{self.option_strings[0]} must be an even number >= 2 (each deal is played twice, seats swapped), "
                f"got {games}; it counts games: use --{self.dest.replace('_', '-')} N for N paired deals"
            )
        setattr(namespace, self.dest, games // 2)


def add_pairs_option(
    parser: argparse.ArgumentParser, option: str, old_games_option: str, default: int | None, help: str
) -> None:
    """``option`` (e.g. ``--pairs``) counts paired deals, each played twice with the seats swapped,
    as every evaluation size here does (``final_eval_pairs``, ``eval_opponents: {spec: pairs}``,
    ``patchwork_env.evaluation.arena``'s ``num_pairs``); ``old_games_option`` (e.g. ``--games``), the old spelling that
    counted games, still works (halved) and is hidden."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(option, type=int, default=default, metavar="PAIRS", help=help)
    dest = option.lstrip("-").replace("-", "_")
    group.add_argument(
        old_games_option, type=int, dest=dest, action=_GamesAsPairs, default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )


def trainer_parser(prog: str, description: str, configs: str, example: str) -> Parser:
    """The options every trainer takes: ``--config``, ``--run-dir``, ``--help-config`` and
    ``key=value`` overrides (a trainer adds its own, e.g. ``--resume``, after these)."""
    parser = Parser(
        prog=prog, description=description, epilog=f"Overrides: key=value after the options, e.g. {example}."
    )
    parser.add_argument("--config", help=f"YAML config ({configs})")
    parser.add_argument("--run-dir", type=run_dir, help="run folder (default runs/<run_name>)")
    parser.add_argument("--help-config", action="store_true", help="list every config key and exit")
    parser.add_argument("overrides", nargs="*", help="key=value")
    return parser


def add_address_option(parser: argparse.ArgumentParser, key: str) -> None:
    """``--address`` of a trainer whose config key ``key`` (e.g. ``distill_backend``) may be
    ``ray``: the Ray cluster to join, spelled as ``patchwork evaluate`` and ``train.rllib_selfplay``
    take it; ``ray_address`` reads it back."""
    parser.add_argument(
        "--address", help=f"with {key}=ray: a Ray cluster to join (auto or HOST:PORT); default: a local Ray runtime"
    )


def ray_address(args: argparse.Namespace, cfg: CommonConfig, key: str) -> str | None:
    """``--address``, or a ``ConfigError`` if it is given while ``cfg``'s ``key`` is not ``ray``."""
    from train.config import ConfigError  # train.config imports this module

    if args.address is not None and getattr(cfg, key) != "ray":
        raise ConfigError(f"--address needs {key}=ray (it names the Ray cluster of that step)")
    return typing.cast(str | None, args.address)


def run_trainer(
    parser: argparse.ArgumentParser,
    argv: list[str] | None,
    config_class: type[C],
    default_name: str,
    train: Callable[[C, argparse.Namespace, str], object],
    load: Callable[[argparse.Namespace], C] | None = None,
    run_errors: tuple[type[Exception], ...] = (),
) -> int:
    """The command line of a trainer (``parser`` from ``trainer_parser``): ``--help-config`` prints
    ``config_class``'s keys; else the config is loaded (``load(args)``; default: the ``--config``
    file, or the defaults, with the overrides) and ``train(cfg, args, config_name)`` runs it, the
    config name being the file's stem or else ``default_name``. A config
    that cannot be loaded (bad file, key, value, checkpoint or a missing extra), and a
    ``ConfigError`` or one of ``run_errors`` from ``train`` (raised before anything is written), is
    one ``error:`` line and the return value 2 (``sys.exit(cli())``: exit code 2)."""
    from train.config import ConfigError, describe, load_config  # train.config imports this module

    args = parser.parse_args(argv)
    if args.help_config:
        print(describe(config_class))
        return 0
    try:
        cfg = load(args) if load is not None else load_config(args.config, config_class, args.overrides)
    except (ValueError, OSError, ImportError) as exc:  # ConfigError, CheckpointError: ValueErrors
        return report(exc)
    name = Path(args.config).stem if args.config else default_name
    errors: tuple[type[Exception], ...] = (ConfigError, *run_errors)
    try:
        train(cfg, args, name)
    except errors as exc:
        return report(exc)
    return 0
