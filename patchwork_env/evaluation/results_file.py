"""The schema of a results file (``results/*.json``): every writer's and the results page's.

A results file says how it was measured (``PROVENANCE``: the header that
``patchwork_env.evaluation.provenance.provenance`` makes) and what it is: its ``kind``, one of
``KINDS``, each with the fields a file of that kind holds. Every writer checks its file here before
writing it (``write``: whole, atomically, or not at all), and the results page renders a file by
its kind (``tools/render_results.py``), never by guessing from its keys.

``SHAPES`` declares, per kind, what a reader may read: the fields, the fields of the entries of its
lists (an evaluation's ``pairs``, a speed table's ``rows``...) and its optional fields. What a
``training`` file's ``raw`` holds depends on the command that writes it: ``CURVES`` declares, per
writer, where its learning curves are (``curves`` reads them); any other writer's ``raw`` holds
counts that no page reads. ``check`` refuses a file that lacks a declared field, naming where;
``declared`` is a file cut down to what is declared, from which the results page renders the same.

    >>> from patchwork_env.evaluation import results_file
    >>> try:
    ...     results_file.write("speed.json", {"command": "python -m benchmarks", "kind": "speed"})
    ... except results_file.ResultsFileError as exc:
    ...     print(exc)  # and no speed.json is written
    lacks ['commit', 'date', 'machine', 'seeds']: every results file says how it was measured
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from patchwork_env.core.files import write_atomic


@dataclass(frozen=True)
class Fields:
    """A JSON object that holds the ``required`` fields and perhaps the ``optional`` ones: what a reader
    may read of it. A field is a name (its value is read whole) or a name and what its value holds.
    Other keys may be there; nothing reads them."""

    required: tuple[Field, ...] = ()
    optional: tuple[Field, ...] = ()


@dataclass(frozen=True)
class Each:
    """Entries that each hold ``entry``: a JSON array's items or, when ``keys`` says what its keys are,
    a JSON object's values (keys that are ``MINUTE_MARK`` must be numbers)."""

    entry: Fields | Each
    keys: str = ""


Shape = Fields | Each
Field = str | tuple[str, Shape]
Point = tuple[float, float, float, float]  # minutes of training, win rate, its 95% interval
#: opponent -> seed -> the points of that seed's curve, in order of minutes
Curves = dict[str, dict[str, list[Point]]]

MINUTE_MARK = "minute mark"
MARK = re.compile(r"\d+(\.\d*)?(e-?\d+)?")  # a minute mark as the trainers write it: 10, 0.5, 1e-09

#: the header every results file carries: how it was measured (``provenance.provenance`` writes it)
PROVENANCE: tuple[str, ...] = ("command", "commit", "date", "machine", "seeds")
#: what the page reads of the header (``version``: from an installed package whose commit is unknown)
HEADER = Fields(("command", "commit", "date", ("machine", Fields(("cpu", "cores"))), "seeds"), ("version",))

EVALUATION = "evaluation"  # patchwork evaluate --json: a round robin of agents and its own Elo fit
LADDER_RATING = "ladder-rating"  # patchwork ladder SPEC --json, rate(...).to_dict(): an agent on a ladder
LADDER_REFERENCE = "ladder-reference"  # patchwork ladder --rebuild: a version's rungs and their games
SPEED = "speed"  # python -m benchmarks --json (and benchmarks.bench_network): the speed table's rows
TRAINING = "training"  # train.baselines, train.demo, train.exit_results...: a trainer's outcome over seeds
COMPARISON = "comparison"  # patchwork compare A B --json, compare(...).to_dict(): is A better than B (SPRT)

PAIR = ("a", "b", "games", "wins_a", "win_rate_a", "ci95_a", "mean_margin_a", "mean_time_per_move_a",
        "mean_time_per_move_b")  # fmt: skip
COUNTS = Fields(("win_rate", "ci95"))  # a match from one side: its win rate and 95% interval (and its counts)
RUNG = Fields(("spec", "elo", "ci95"))
NEIGHBOURS = Fields(("low", "high", "difference", "ci95"))  # two neighbouring rungs, refitted from their games
SPEED_ROW = Fields(("name", "value", "unit"), ("N", "per_cpu_s", "ratio", "flop_share"))
ARENA = ("agents", "num_pairs", "games_per_pair", "seed", "seconds", ("pairs", Each(Fields(PAIR))), "anchor", "elo",
         "elo_ci95")  # fmt: skip
SPRT = Fields(("elo0", "elo1", "alpha", "beta", "max_pairs", "llr_bounds"))

#: each kind's fields (besides ``kind`` and the header), with what the entries of its lists hold
SHAPES: dict[str, Fields] = {
    EVALUATION: Fields(ARENA),
    LADDER_RATING: Fields(("agent", "ladder", "budget", "elo", "ci95", "scale", "games", "per_opponent"), ("spec",)),
    LADDER_REFERENCE: Fields(
        ("ladder", "seed", ("ratings", Each(RUNG)), ("pairs", Each(Fields(("a", "b", "games"))))),
        (
            "pairs_per_matchup",  # v1: a round robin of so many pairs per matchup
            ("design", Fields(("initial_pairs", "precision", "rounds"))),  # v2: then more where neighbours meet
            ("compute", Fields(("cpu_seconds",))),
            ("neighbours", Each(NEIGHBOURS)),
        ),
    ),
    SPEED: Fields(("quick", "load", ("rows", Each(SPEED_ROW)))),
    TRAINING: Fields(
        ("title", "description", "columns", ("runs", Each(Fields(("seed", "cells")))), "raw"), ("summary", "headline")
    ),
    COMPARISON: Fields(
        ("a", "b", "identities", "decision", "elo", "ci95", "los", "pairs", "pentanomial", "llr", ("sprt", SPRT))
    ),
}


def _name(field: Field) -> str:
    return field if isinstance(field, str) else field[0]


#: each kind's fields by name (besides ``kind`` and ``PROVENANCE``); a file may hold more
KINDS: dict[str, tuple[str, ...]] = {kind: tuple(map(_name, shape.required)) for kind, shape in SHAPES.items()}


@dataclass(frozen=True)
class CurveLayout:
    """Where a writer of ``training`` files keeps learning curves in ``raw`` (win rates at minutes of
    training; the keys of ``raw`` are seeds). Without ``opponents``, a seed holds minute mark ->
    opponent -> counts (a checkpoint measured at each mark). With them, a seed is one run that
    holds, per opponent, ``curve_vs_<opponent>`` (minute mark -> counts), its start
    ``start_vs_<opponent>`` (minute 0) and its end ``final_vs_<opponent>`` (at the run's ``minutes``).
    ``listed``: a seed is one run that holds ``curves``, opponent -> ``curve`` (minute mark -> counts),
    ``start`` and ``final``, whatever its opponents (the writer names them)."""

    opponents: tuple[str, ...] = ()
    listed: bool = False

    def raw(self) -> Each:
        """What ``raw`` holds."""
        if self.listed:
            curve = Fields((("curve", Each(COUNTS, MINUTE_MARK)), ("start", COUNTS), ("final", COUNTS)))
            return Each(Fields(("minutes", ("curves", Each(curve, "opponent")))), "seed")
        if not self.opponents:
            return Each(Each(Each(COUNTS, "opponent"), MINUTE_MARK), "seed")
        fields: list[Field] = ["minutes"]
        for spec in self.opponents:
            fields += [(f"curve_vs_{spec}", Each(COUNTS, MINUTE_MARK)), (f"start_vs_{spec}", COUNTS)]
            fields.append((f"final_vs_{spec}", COUNTS))
        return Each(Fields(tuple(fields)), "seed")

    def curves(self, raw: Mapping[str, Any]) -> Curves:
        """The curves of a checked ``raw``."""
        out: Curves = {}
        for seed, entry in raw.items():
            found: list[tuple[float, str, Any]]
            if self.listed:
                found = []
                for spec, c in entry["curves"].items():
                    found += [(float(m), spec, r) for m, r in c["curve"].items()]
                    found += [(0.0, spec, c["start"]), (float(entry["minutes"]), spec, c["final"])]
            elif not self.opponents:
                found = [(float(m), spec, r) for m, opponents in entry.items() for spec, r in opponents.items()]
            else:
                found = []
                for spec in self.opponents:
                    found += [(float(m), spec, r) for m, r in entry[f"curve_vs_{spec}"].items()]
                    found += [(0.0, spec, entry[f"start_vs_{spec}"])]
                    found += [(float(entry["minutes"]), spec, entry[f"final_vs_{spec}"])]
            for minutes, spec, r in sorted(found, key=lambda item: item[0]):
                low, high = r["ci95"]
                out.setdefault(spec, {}).setdefault(seed, []).append((minutes, r["win_rate"], low, high))
        return out


#: the writers of ``training`` files whose ``raw`` holds learning curves, by module (``python -m MODULE``)
CURVES: dict[str, CurveLayout] = {
    "train.baselines": CurveLayout(),
    "train.exit_results": CurveLayout(("greedy",)),
    "train.tree_loop_results": CurveLayout(("az:sims=128",)),  # retired; it wrote results/tree-loop.json
    "train.alphazero_results": CurveLayout(listed=True),
}


class ResultsFileError(ValueError):
    """A results file that is not one of ``KINDS`` with its fields (the message names what lacks)."""


def writer(data: Mapping[str, Any]) -> str:
    """The module of the command that wrote ``data`` (``python -m MODULE ...``), else ''."""
    words = str(data.get("command", "")).split()
    python = len(words) > 2 and os.path.basename(words[0]).startswith("python") and words[1] == "-m"
    return words[2] if python else ""


def curve_layout(data: Mapping[str, Any]) -> CurveLayout | None:
    """Where ``data``'s ``raw`` keeps learning curves, by its writer (``CURVES``); None: it keeps none."""
    return CURVES.get(writer(data)) if data.get("kind") == TRAINING else None


def curves(data: Mapping[str, Any]) -> Curves:
    """The learning curves of the checked results file ``data``: per opponent, per seed, its points
    (minutes, win rate, 95% interval) in order of minutes; empty for a file that keeps none."""
    layout = curve_layout(data)
    return layout.curves(data["raw"]) if layout is not None else {}


def _walk(value: Any, shape: Shape, where: str, whose: str) -> None:
    """Raise ``ResultsFileError`` naming the first place where ``value`` does not hold ``shape``."""
    if isinstance(shape, Each):
        if not shape.keys:
            if not isinstance(value, list):
                raise ResultsFileError(f"{where} is not a JSON array: {whose}")
            entries = [(f"{where}[{i}]", entry) for i, entry in enumerate(value)]
        else:
            if not isinstance(value, Mapping):
                raise ResultsFileError(f"{where} is not a JSON object (of {shape.keys}s): {whose}")
            entries = [(f"{where}[{key!r}]", entry) for key, entry in value.items()]
            if shape.keys == MINUTE_MARK:
                odd = [key for key in value if not MARK.fullmatch(key)]
                if odd:
                    raise ResultsFileError(f"{where} has the key {odd[0]!r}, not a minute mark (a number): {whose}")
        for place, entry in entries:
            _walk(entry, shape.entry, place, whose)
        return
    if not isinstance(value, Mapping):
        raise ResultsFileError(f"{where} is not a JSON object: {whose}")
    missing = [_name(field) for field in shape.required if _name(field) not in value]
    if missing:
        raise ResultsFileError(f"{where} lacks {missing}, {whose}")
    for field in (*shape.required, *shape.optional):
        if not isinstance(field, str) and field[0] in value:
            _walk(value[field[0]], field[1], f"{where}{'.' if where else ''}{field[0]}", whose)


def check(data: object) -> dict[str, Any]:
    """``data`` if it is a results file: a JSON object with the ``PROVENANCE`` fields, a ``kind`` of
    ``KINDS``, that kind's fields and what they hold (``SHAPES``; a ``training`` file's ``raw`` as
    its writer keeps it: ``CURVES``); else ``ResultsFileError`` naming the first thing amiss."""
    if not isinstance(data, Mapping):
        raise ResultsFileError(f"not a results file (a JSON object is expected, got {type(data).__name__})")
    missing = [key for key in PROVENANCE if key not in data]
    if missing:
        raise ResultsFileError(f"lacks {missing}: every results file says how it was measured")
    kinds = ", ".join(KINDS)
    kind = data.get("kind")
    if kind is None:
        raise ResultsFileError(f"has no 'kind': every results file says what it is ({kinds})")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ResultsFileError(f"has the unknown kind {kind!r} (the kinds: {kinds})")
    missing = [key for key in KINDS[kind] if key not in data]
    if missing:
        raise ResultsFileError(f"lacks {missing}, the fields of a {kind!r} results file")
    _walk(data, HEADER, "", "the header of every results file")
    _walk(data, SHAPES[kind], "", f"the fields of a {kind!r} results file")
    layout = curve_layout(data)
    if layout is not None:
        _walk(data["raw"], layout.raw(), "raw", f"what `raw` holds in a {kind!r} results file of {writer(data)}")
    return dict(data)


def _keep(value: Any, shape: Shape) -> Any:
    if isinstance(shape, Each):
        if isinstance(value, list):
            return [_keep(entry, shape.entry) for entry in value]
        return {key: _keep(entry, shape.entry) for key, entry in value.items()}
    out: dict[str, Any] = {}
    for field in (*shape.required, *shape.optional):
        name = _name(field)
        if name in value:
            out[name] = value[name] if isinstance(field, str) else _keep(value[name], field[1])
    return out


def declared(data: Mapping[str, Any]) -> dict[str, Any]:
    """The checked results file ``data`` cut down to what is declared: its header, ``kind``, its
    kind's fields (``SHAPES``) and, of a ``training`` file's ``raw``, its curves (``CURVES``; None
    when its writer keeps none). A reader that needs more reads what no schema holds to."""
    kind = data["kind"]
    out = {**_keep(data, HEADER), "kind": kind, **_keep(data, SHAPES[kind])}
    if kind == TRAINING:
        layout = curve_layout(data)
        out["raw"] = _keep(data["raw"], layout.raw()) if layout is not None else None
    return out


def write(path: str | os.PathLike[str], data: Mapping[str, Any], indent: int = 1) -> None:
    """Check ``data`` (``check``) and write it to ``path`` as JSON, atomically: a file that fails
    the check is refused before anything is written."""
    check(data)
    write_atomic(path, json.dumps(data, indent=indent) + "\n")
