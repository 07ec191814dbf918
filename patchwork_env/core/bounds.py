"""One rule for a bounded setting, shared by the agent specs (``patchwork_env.players.registry``),
the search's settings (``patchwork_env.players.search_config.SearchConfig``), the network's sizes
(``patchwork_env.players.net_config.NetConfig``), the trainers' configs (``train.config``) and the
options of the other commands in ``train/`` (``train.cli.parse_args``): ``(low, high)`` inclusive,
``low_open`` for a value that must be strictly above ``low`` (a learning rate). A dataclass field
declares its bounds beside it (``bounded``, ``above``, ``one_of``) and ``field_problem`` reads them
all, with each field's type. The bounds every command line shares are here too (``MAX_SEED``,
``MAX_ARENA_SEED``, ``MAX_PAIRS``).

    >>> out_of_bounds(0.5, (0, 1)) is None
    True
    >>> out_of_bounds(0, (0, float("inf")), low_open=True)
    'must be > 0'
    >>> out_of_bounds(2, (1, 1000))
    >>> out_of_bounds(5000, (1, 1000))
    'must be in [1, 1000]'
    >>> out_of_bounds(1.5, (0.0, 1.0))
    'must be in [0, 1]'
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

#: the seed of a game or a run, on every command line (``patchwork``, ``python -m train.X``) and in
#: every trainer's config: every library seeded from it accepts it. The envs take more
#: (``patchwork_env.envs.edge.MAX_ENV_SEED``).
MAX_SEED = 2**31 - 1
#: the seed of arena deals (it only seeds SeedSequence): up to 2**32 - 1, so that every evaluation
#: stream of a trainer (< 2**32) can be replayed
MAX_ARENA_SEED = 2**32 - 1
#: paired deals of one evaluation, on every command line and in every trainer's config
#: (= ``patchwork_env.evaluation.arena.MAX_PAIRS``, which a test keeps equal: the engine is not loaded here)
MAX_PAIRS = 1_000_000


def out_of_bounds(value: float, bounds: tuple[float, float], *, low_open: bool = False) -> str | None:
    """None if ``value`` lies in ``bounds``; else what it must be (``must be in [1, 1000]``,
    ``must be > 0``), for the caller's message naming the setting and the value given."""
    low, high = bounds
    if (value > low if low_open else value >= low) and value <= high:
        return None
    if low_open:
        return f"must be > {number(low)}" + ("" if math.isinf(high) else f" and <= {number(high)}")
    if math.isinf(high):
        return f"must be >= {number(low)}"
    return f"must be in [{number(low)}, {number(high)}]"


def number(x: float) -> str:
    """``x`` as written in a bound: whole numbers without a point or exponent (10000000), others short (0.5)."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def bounded(default: Any, low: float, high: float) -> Any:
    """A dataclass field whose values lie in ``[low, high]`` (a tuple's: each of them)."""
    return dataclasses.field(default=default, metadata={"bounds": (low, high)})


def above(default: Any, low: float, high: float = math.inf) -> Any:
    """A dataclass field whose values lie in ``(low, high]`` (a tuple's: each of them)."""
    return dataclasses.field(default=default, metadata={"bounds": (low, high), "low_open": True})


def one_of(default: str, *choices: str) -> Any:
    """A dataclass field whose value is one of ``choices``."""
    return dataclasses.field(default=default, metadata={"choices": choices})


# a field's declared type -> the values it takes and how a message names them (bool is an int to
# Python, not to a config: ``num_games: true`` is a mistake)
_TYPES = {"int": ((int,), "an integer"), "float": ((int, float), "a number"), "bool": ((bool,), "true or false")}


def field_problem(obj: Any, prefix: str = "", *, options: bool = False) -> str | None:
    """None if every ``int``, ``float`` or ``bool`` field of the dataclass ``obj`` holds a value of its
    type (a float finite) and every field declared with ``bounded``, ``above`` or ``one_of`` an allowed
    value (each value of a tuple or a list; a field left None is unset); else the first that does not, as
    ``<prefix><field> must be ..., got X``, or with ``options`` as the command-line option
    ``--<field-name> must be ..., got X``. Values from a YAML file, a command line or a checkpoint
    reach a dataclass unchecked, so this is their one check."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        name = f"--{f.name.replace('_', '-')}" if options else f"{prefix}{f.name}"
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        if kind in _TYPES:
            types, noun = _TYPES[kind]
            if not isinstance(value, types) or (kind != "bool" and isinstance(value, bool)):
                return f"{name} must be {noun}, got {value!r}"
            if kind == "float" and not math.isfinite(value):
                return f"{name} must be a finite number, got {value!r}"
        if "bounds" in f.metadata and value is not None:
            for item in value if isinstance(value, list | tuple) else (value,):
                problem = out_of_bounds(item, f.metadata["bounds"], low_open=f.metadata.get("low_open", False))
                if problem:
                    return f"{name} {problem}, got {item!r}"
        if "choices" in f.metadata and value not in f.metadata["choices"]:
            return f"{name} must be one of {', '.join(f.metadata['choices'])}, got {value!r}"
    return None


def field_bounds(cls: Any, name: str) -> tuple[float, float]:
    """The bounds a dataclass declares for its field ``name`` (``bounded``, ``above``)."""
    bounds: tuple[float, float] = next(f for f in dataclasses.fields(cls) if f.name == name).metadata["bounds"]
    return bounds
