"""The command line of every trainer, around its config dataclass (``train.config``):

    python -m train.selfplay --config configs/quick.yaml --seed 1 --net.channels 64

``--config FILE`` (YAML: the dataclass's fields as keys, ``net:`` nested) gives the starting values,
checked against the dataclass by dacite; the other options override them (tyro: ``--help`` lists
every field with its docstring and default); ``validate`` checks the values. Anything wrong is one
``error: ...`` line on stderr and exit code 2, before the run folder is written. A trainer module
parses its arguments before it imports torch, so ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import io
import json
import math
import re
import shlex
import signal
import sys
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Generic, NoReturn, ParamSpec, TypeVar

import dacite
import tyro
import yaml

from patchwork_env.core.bounds import MAX_ARENA_SEED, bounded, field_problem
from patchwork_env.core.files import check_output_path
from patchwork_env.core.usage import fail, report
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.workers import RunError
from patchwork_env.players.errors import AgentSpecError, CheckpointError
from train.config import CommonConfig, ConfigError

C = TypeVar("C", bound=CommonConfig)
A = TypeVar("A")
P = ParamSpec("P")
R = TypeVar("R")
MAX_CONFIG_BYTES = 1_000_000
# what a run raises because of what it was given: a config, an agent spec, a checkpoint, a file (missing, a
# name too long), a Ray cluster that cannot be joined, a missing optional extra (Ray, an agent's torch), an
# agent that stops the run (``RunError``: an illegal move of distillation's teacher, an opponent that raised)
INPUT_ERRORS = (ConfigError, AgentSpecError, CheckpointError, OSError, ImportError, RunError)
# the fields of a row of ``eval_history.json`` (``train.run.Run.evaluate``) that the results commands read
_EVAL_ROW = {"minutes": float, "opponent": str, "final": bool, "games": int, "win_rate": float, "ci_low": float,
            "ci_high": float}  # fmt: skip


SEARCH_FIELDS = ("sims", "root", "considered", "rescale_values", "c_puct", "expand", "dirichlet_alpha", "dirichlet_eps")
# fields renamed after 0.3.0 so that one concept has one name in every trainer: old name -> new name (an old
# name is an error that gives the new one; 0.5.0 drops this table, and an old name is then an unknown key)
RENAMED = {
    "lr": "learning_rate",
    "total_iterations": "iterations",
    **dict.fromkeys(("update_epochs", "n_epochs", "num_epochs"), "epochs"),
    **dict.fromkeys(("clip_range", "clip_param"), "clip_coef"),
    **dict.fromkeys(("label_backend", "selfplay_backend"), "backend"),
    **{name: f"search.{name}" for name in SEARCH_FIELDS},
    "reward_margin_weight": "search.margin_weight",  # AlphaZero's (a field of the PPO trainers)
}


def load_yaml(cls: type[C], path: str | Path) -> C:
    """The config in the YAML file ``path``: unknown keys and wrong types are a ``ConfigError``."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found (or not a regular file): {p}")
    if p.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{p} is larger than {MAX_CONFIG_BYTES} bytes: not a config")
    try:
        data = yaml.safe_load(p.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p} is not valid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ConfigError(f"{p} nests its values too deep to be a config") from None
    return from_dict(cls, data or {}, str(p))


def from_dict(cls: type[C], data: Any, source: str) -> C:
    """``cls`` from a mapping of its fields (nested for ``net`` and ``search``); every value's type is checked, and
    a field's name of 0.3.0 (``RENAMED``) is an error that gives its new name (where ``cls`` has it)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must hold a mapping of config keys to values, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    old = sorted(key for key in data if key not in names and RENAMED.get(key, ".").split(".")[0] in names)
    if old:
        raise ConfigError(f"{source}: {old[0]} is now called {RENAMED[old[0]]} (one name in every trainer)")
    # a nested group given in part (``search: {sims: 8}``) keeps the trainer's defaults for the rest,
    # as ``--search.sims 8`` does on the command line (not the group's class defaults)
    for name, group in vars(cls()).items():
        if dataclasses.is_dataclass(group) and isinstance(data.get(name), dict):
            data = {**data, name: {**dataclasses.asdict(group), **data[name]}}  # type: ignore[arg-type]
    _no_bools_for_numbers(cls, data, source)
    try:
        return dacite.from_dict(cls, data, config=dacite.Config(strict=True, cast=[float]))
    except dacite.DaciteError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except (TypeError, ValueError, RecursionError) as exc:  # dacite's cast of a list or a mapping to a number
        raise ConfigError(f"{source}: a value of the wrong type or shape ({type(exc).__name__}: {exc})") from None


def parse_config(
    cls: type[C], argv: Sequence[str], description: str | None = None, prog: str | None = None
) -> tuple[C, str]:
    """The config of a command line and its name (the ``--config`` file's stem, or the trainer's
    name for the defaults); with a ``--resume`` field, a checkpoint's config is the starting point."""
    configs = [a for a in argv if a == "--config" or a.startswith("--config=")]
    if len(configs) > 1:
        raise ConfigError("--config is given twice: give one config file (options after it override its values)")
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config")
    known, rest = pre.parse_known_args(list(argv))
    start = load_yaml(cls, known.config) if known.config else cls()
    name = Path(known.config).stem if known.config else cls.__name__.removesuffix("Config").lower()
    given = [a[2:].split("=")[0].replace("_", "-").removeprefix("no-") for a in rest if a.startswith("--")]
    twice = sorted({name for name in given if given.count(name) > 1})
    if twice:
        raise ConfigError(f"--{twice[0]} is given twice: give each option once")
    resume = _resume_path(rest)
    if resume and hasattr(cls, "resume"):
        start = from_dict(cls, resumed_config(resume), "the resumed checkpoint")
    cfg: C = _tyro(cls, rest, default=start, description=description, prog=prog)
    cfg.validate()
    return cfg, name


def _tyro(cls: type, args: Sequence[str], **options: Any) -> Any:
    """``tyro.cli(cls)`` of ``args``; its boxed error is a ``ConfigError`` of one line (``one_line``),
    and ``--help`` exits as tyro does."""
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            return tyro.cli(cls, args=args, **options)
    except SystemExit as exc:
        if exc.code:
            raise ConfigError(one_line(errors.getvalue())) from None
        raise


def parse_args(cls: type[A], argv: Sequence[str] | None = None, description: str | None = None) -> A:
    """The options of a command in ``train/`` that is not a trainer (a dataclass of them, with
    docstrings as ``--help``), on tyro as the trainers' are, and checked as a trainer's config is:
    each within the bounds its field declares (``bounded``, ``above``, ``one_of``: ``field_problem``,
    the message naming the option), then the dataclass's ``validate`` if it has one (what spans
    options, and the files they name). A bad option is one ``error:`` line and exit code 2, before
    any work."""
    args, rest = parse_known_args(cls, argv, description)
    if rest:
        raise SystemExit(report(ConfigError(f"Unrecognized options: {' '.join(rest)} (see --help)")))
    return args


def parse_known_args(
    cls: type[A], argv: Sequence[str] | None = None, description: str | None = None
) -> tuple[A, list[str]]:
    """``parse_args`` for a command that passes the options it does not know on (``train.demo``
    to its trainer): those options, in their order, beside the command's own."""
    prog = f"python -m train.{Path(sys.argv[0]).stem}"
    given = sys.argv[1:] if argv is None else list(argv)
    try:
        args, rest = _tyro(cls, given, description=description, prog=prog, return_unknown_args=True)
        problem = field_problem(args, options=True)
        if problem:
            raise ConfigError(problem)
        validate = getattr(args, "validate", None)
        if validate is not None:
            validate()
    except (ValueError, OSError) as exc:  # ConfigError, OutputPathError
        raise SystemExit(report(exc)) from None
    if argv is None:  # the process's own command line: its command goes on to import its modules
        quiet_ctrl_c_while_loading()
    return args, rest


def reports_input_errors(main: Callable[P, R]) -> Callable[P, R]:
    """A command's ``main`` whose input errors (``INPUT_ERRORS``: a run folder or config that cannot be
    used, an agent spec, a checkpoint, a missing file or extra), raised where they are found, end it
    with one ``error:`` line and exit code 2, as a trainer's do (``train_or_report``). Errors of the
    work itself keep their traceback."""

    @functools.wraps(main)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return main(*args, **kwargs)
        except INPUT_ERRORS as exc:
            raise SystemExit(report(exc)) from None

    return run


def _resume_path(args: Sequence[str]) -> str | None:
    """The checkpoint of ``--resume PATH`` or ``--resume=PATH`` (the same thing, either spelling)."""
    for i, arg in enumerate(args):
        if arg.startswith("--resume="):
            return arg.split("=", 1)[1]
        if arg == "--resume" and i + 1 < len(args):
            return args[i + 1]
    return None


def _no_bools_for_numbers(cls: type, data: dict[str, Any], source: str) -> None:
    """YAML reads ``yes``/``no``/``on`` as booleans: a number field given one is an error (dacite's
    cast to float would make ``learning_rate: yes`` 1.0)."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        value, hint = data.get(f.name), hints.get(f.name)
        if isinstance(value, bool) and hint in (int, float, int | None, float | None):
            raise ConfigError(
                f"{source}: {f.name} must be a number, got {value!r} (YAML reads yes/no/on/off as booleans)"
            )
        if isinstance(value, dict) and dataclasses.is_dataclass(hint):
            _no_bools_for_numbers(hint, value, source)  # type: ignore[arg-type]


def resumed_config(path: str) -> dict[str, Any]:
    """The config stored in a checkpoint's trainer state (torch loads only when a run resumes)."""
    from train.artefact import read_artefact
    from train.loop import run_folder_of

    folder = Path(run_folder_of(path))
    if Path(path).name == "latest.pt" and not Path(path).exists() and (folder / "config.yaml").is_file():
        raise ConfigError(
            f"{path} does not exist: the run in {folder} was stopped before its first checkpoint (nothing to "
            "resume); start it again with --overwrite"
        )
    trainer = read_artefact(path)[1].get("trainer", {})
    if "config" not in trainer:
        raise ConfigError(f"{path} holds a network but no trainer state: it cannot be resumed")
    return {**trainer["config"], "resume": path}


def one_line(text: str) -> str:
    """tyro's boxed error as one line: its message, and its first suggestion if it has one."""
    lines = [line.strip().strip("│|").strip() for line in text.splitlines()]
    lines = [line for line in lines if not re.fullmatch(r"[-─│|+╭╮╰╯═ ]*", line)]
    lines = [line for line in lines if not line.startswith("For full helptext")]
    if not lines:
        return "invalid arguments (see --help)"
    titles = {"Unrecognized options", "Missing argument", "Value error", "Parsing error", "Required options",
              "Invalid choice"}  # fmt: skip
    body = [line for line in lines if re.sub(r"[╭╮─+\-]", "", line).strip() not in titles]
    message = body[0] if body else lines[0]
    if message.startswith("invalid choice"):  # wrapped over lines: all of it
        message = " ".join(body)
    if message.startswith("Missing from"):  # required options: name them
        missing = [line.split()[0] for line in body[1:] if line.startswith("--")]
        message = f"missing required option{'s' if len(missing) > 1 else ''}: {', '.join(missing)}"
    if "Perhaps you meant:" in body:
        message += f" (did you mean {body[body.index('Perhaps you meant:') + 1].split()[0]}?)"
    return f"{message} (see --help)"


def parse_or_exit(cls: type[C], doc: str | None = None) -> tuple[C, str]:
    """``parse_config`` of the process's arguments (``--help`` shows the first two paragraphs of the
    trainer's docstring ``doc``); a bad one ends the process (one ``error:`` line, exit code 2)."""
    module = Path(sys.argv[0]).stem
    description = "\n\n".join((doc or "").split("\n\n")[:2]) or None
    try:
        parsed = parse_config(cls, sys.argv[1:], description, prog=f"python -m train.{module}")
    except (ValueError, OSError, ImportError) as exc:  # ConfigError, a checkpoint that does not resume
        raise SystemExit(report(exc)) from None
    quiet_ctrl_c_while_loading()  # the trainer's module goes on to import torch
    return parsed


def check_results_path(path: str | Path | None, option: str = "--results") -> Path | None:
    """A results file's path (``check_output_path``: a folder, a FIFO, a missing folder is an
    ``OutputPathError`` naming ``option``), or None: what a command's ``validate`` calls."""
    return None if path is None or path == "" else check_output_path(path, option)


@dataclasses.dataclass
class ResultsArgs:
    """The options of a command that plays games into a results file (``train.exit_results``,
    ``train.alphazero_results``, ``train.placements``): its dataclass of options derives from this one."""

    workers: int = bounded(1, 1, 64)
    """processes playing the games"""
    results: Path | None = None
    """write the results file here"""

    def validate(self) -> None:
        check_results_path(self.results)


@dataclasses.dataclass
class RunsArgs(ResultsArgs):
    """The options of a command that measures finished runs of a trainer into a results file, one run
    folder per seed (``train.exit_results``, ``train.alphazero_results``)."""

    runs: tyro.conf.Positional[tuple[Path, ...]] = ()
    """run folders, one per seed"""
    pairs: int = bounded(100, 1, 10_000)
    """paired deals of each match (two games each)"""
    seed: int = bounded(777, 0, MAX_ARENA_SEED)
    """seed of the matches' deals (never a training or evaluation seed of a run)"""
    trainers: typing.ClassVar[str] = "a trainer"  # whose run folders they are (in the error that asks for them)

    def validate(self) -> None:
        if not self.runs:
            raise ConfigError(f"give the run folders of {self.trainers} to measure (one per seed)")
        super().validate()
        folders = [folder.resolve() for folder in self.runs]
        if len(set(folders)) != len(folders):
            raise ConfigError(f"a run folder is given twice (each folder is one seed): {[str(f) for f in self.runs]}")


RA = TypeVar("RA", bound=RunsArgs)


@dataclasses.dataclass
class RunFolder(Generic[C]):
    """A finished run that a results command measures: its folder, its config and its history (``read_run``)."""

    folder: Path
    config: C
    history: list[dict[str, Any]]

    @property
    def seed(self) -> int:
        return self.config.seed


RF = TypeVar("RF", bound=RunFolder[Any])


@reports_input_errors
def measure_runs(
    module: str,
    cls: type[RA],
    argv: Sequence[str] | None,
    load: Callable[[RA], Sequence[RF]],
    measure: Callable[[RF, RA], dict[str, Any]],
    summarize: Callable[[Sequence[RF], list[dict[str, Any]], RA, str], dict[str, Any]],
) -> int:
    """The ``main`` of a command that measures finished runs, one per seed, into a results file (``module``,
    its options ``cls``, whose docstring heads ``--help``): parse and check the options, ``load``
    every run (each checked before a game is played), refuse two runs of one seed, ``measure`` each run
    in turn, and with ``--results`` write the file ``summarize`` makes of them (its provenance the command
    line of ``argv``; None: this process's). An input error is one ``error:`` line and exit code 2."""
    args = parse_args(cls, argv)
    runs = load(args)
    one_run_per_seed([run.folder for run in runs], [run.seed for run in runs])
    measured = []
    for run in runs:
        print(f"{run.folder}:", flush=True)
        measured.append(measure(run, args))
    if args.results is not None:
        write_results(args.results, summarize(runs, measured, args, command_line(module, argv)))
    return 0


def read_run(folder: Path, cls: type[C], history: str, unit: str = "") -> tuple[C, list[dict[str, Any]]]:
    """A run folder's config (``config.yaml``, read and validated as a config file is) and its history
    (the file ``history``, ``read_history``), read before a results command plays a game: a
    ``ConfigError`` or an ``OSError`` says what is wrong (the caller names the folder)."""
    config = load_yaml(cls, folder / "config.yaml")
    config.validate()
    return config, read_history(folder / history, unit)


def write_results(path: Path, data: dict[str, Any]) -> None:
    """A results file, checked against its kind's fields (``patchwork_env.evaluation.results_file``)
    and written atomically (whole or not at all), and the line that says so."""
    results_file.write(path, data)
    print(f"wrote {path}")


def write_fit_run(
    args: Any, title: str, description: str, cells: dict[str, Any], history: Sequence[Any], seconds: float, command: str
) -> None:
    """A ``training`` results file of one fit at ``args.results`` (one run of ``args.seed``, its ``cells``;
    in ``raw`` every epoch's statistics of ``history``, the options and the seconds), with its provenance:
    what ``train.value_head`` and ``train.value_distill`` write with ``--results``."""
    from patchwork_env.evaluation.provenance import provenance

    raw = {"history": [dataclasses.asdict(h) for h in history], "args": dataclasses.asdict(args), "seconds": seconds}
    write_results(
        Path(args.results),
        {
            "kind": "training",
            "title": title,
            "description": description,
            "columns": list(cells),
            "runs": [{"seed": args.seed, "cells": cells}],
            "raw": raw,
            **provenance(command, [args.seed]),
        },
    )


def save_out(save: Callable[[str], object], path: str) -> None:
    """``save(path)``, a fit's ``--out``: a path that cannot be written ends the command with one ``error:`` line."""
    try:
        save(path)
    except OSError as exc:
        fail(f"cannot write --out {path}: {exc.strerror or exc}")


def command_line(module: str, argv: Sequence[str] | None = None) -> str:
    """The command as it was typed, for a results file's provenance: ``python -m <module>`` and its options
    (``argv``; None: this process's)."""
    return shlex.join(["python", "-m", module, *(sys.argv[1:] if argv is None else argv)])


def read_history(path: Path, unit: str = "") -> list[dict[str, Any]]:
    """A run's history file, checked before a results command plays a game: a JSON list of rows, each with
    its ``minutes``; with ``unit`` (``iteration``, ``round``: an ``eval_history.json``) also that count and
    an evaluation's fields (``_EVAL_ROW``), each of its type (numbers finite). Else a ``ConfigError``
    naming the row and the field."""
    row = {**_EVAL_ROW, unit: int} if unit else {"minutes": float}
    rows = json.loads(path.read_text())
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"{path.name} must hold a list of rows, got {type(rows).__name__} {str(rows)[:40]}")
    for i, values in enumerate(rows):
        for name, kind in row.items():
            value = values.get(name) if isinstance(values, dict) else None
            ok = isinstance(value, int | float) and math.isfinite(value) if kind is float else isinstance(value, kind)
            if isinstance(value, bool) is not (kind is bool) or not ok:
                what = {float: "a number", int: "an integer", str: "a string", bool: "true or false"}[kind]
                raise ConfigError(f"row {i} has {name} {value!r}, not {what}")
    return rows


def one_run_per_seed(folders: Sequence[Path], seeds: Sequence[int]) -> None:
    """A results file holds one run per seed (its row and raw counts keyed by the seed): two folders of one
    seed are a ``ConfigError`` naming both, so that neither run's counts are dropped."""
    seen: dict[int, Path] = {}
    for folder, seed in zip(folders, seeds, strict=True):
        if seed in seen:
            raise ConfigError(f"{seen[seed]} and {folder} are runs of the same seed ({seed}): give one run per seed")
        seen[seed] = folder


def _interrupted_while_loading(signum: int, frame: object) -> NoReturn:
    print("interrupted", file=sys.stderr)
    raise SystemExit(130)


def quiet_ctrl_c_while_loading() -> None:
    """Ctrl-C once a command has parsed its command line, while its modules load (torch takes seconds): the
    line ``interrupted`` and exit code 130, not an import's traceback, until ``exit_quietly_on_ctrl_c`` gives
    Python's handler back for the work (a trainer checkpoints on ``KeyboardInterrupt``). A process that
    ignores Ctrl-C (a background job) goes on ignoring it."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_loading)


def exit_quietly_on_ctrl_c(main: Callable[[], object]) -> int:
    """Run a command's ``main``; Ctrl-C ends it with one line (a trainer's says what it kept and how to
    resume it: ``train.loop.interrupted``; else ``interrupted``) and exit code 130, not a traceback."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_loading:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = main()
    except KeyboardInterrupt as exc:
        print(str(exc) or "interrupted", file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0


def train_or_report(train: Callable[[C, str], object], cfg: C, name: str) -> int:
    """``train(cfg, name)``; what stops a run because of its input (``INPUT_ERRORS``: a checkpoint that does
    not load, an agent spec that does not build, a missing extra, a Ray cluster that cannot be joined, a
    teacher's illegal move) is one ``error:`` line and the return value 2, Ctrl-C one line and 130
    (``exit_quietly_on_ctrl_c``). Errors of the training itself keep their traceback."""

    def run() -> int:
        try:
            train(cfg, name)
        except INPUT_ERRORS as exc:
            return report(exc)
        return 0

    return exit_quietly_on_ctrl_c(run)


def run_trainer(
    cls: type[C], train: Callable[[C, str], object], argv: Sequence[str] | None = None, description: str | None = None
) -> int:
    """The whole command line of a trainer (``python -m train.X`` does the same in two steps):
    parse ``argv`` into ``cls``, then ``train_or_report``; returns the exit code."""
    try:
        cfg, name = parse_config(cls, sys.argv[1:] if argv is None else argv, description)
    except (ValueError, OSError, ImportError) as exc:
        return report(exc)
    return train_or_report(train, cfg, name)
