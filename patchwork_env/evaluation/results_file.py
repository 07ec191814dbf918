"""The schema of a results file (``results/*.json``): every writer's and the results page's.

A results file says how it was measured (``PROVENANCE``: the header that
``patchwork_env.evaluation.provenance.provenance`` makes) and what it is: its ``kind``, one of
``KINDS``, each with the fields a file of that kind holds. Every writer checks its file here before
writing it (``write``: whole, atomically, or not at all), and the results page renders a file by
its kind (``tools/render_results.py``), never by guessing from its keys.

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
from collections.abc import Mapping
from typing import Any

from patchwork_env.core.files import write_atomic

#: the header every results file carries: how it was measured (``provenance.provenance`` writes it)
PROVENANCE: tuple[str, ...] = ("command", "commit", "date", "machine", "seeds")

EVALUATION = "evaluation"  # patchwork evaluate --json: a round robin of agents and its own Elo fit
LADDER_RATING = "ladder-rating"  # patchwork ladder SPEC --json, rate(...).to_dict(): an agent on a ladder
LADDER_REFERENCE = "ladder-reference"  # patchwork ladder --rebuild: a version's rungs and their games
SPEED = "speed"  # python -m benchmarks --json (and benchmarks.bench_network): the speed table's rows
TRAINING = "training"  # train.baselines, train.demo, train.exit_results: a trainer's outcome over seeds

#: each kind's fields (besides ``kind`` and ``PROVENANCE``); a file may hold more
KINDS: dict[str, tuple[str, ...]] = {
    EVALUATION: ("agents", "num_pairs", "games_per_pair", "seed", "seconds", "pairs", "anchor", "elo", "elo_ci95"),
    LADDER_RATING: ("agent", "ladder", "budget", "elo", "ci95", "scale", "games", "per_opponent"),
    LADDER_REFERENCE: ("ladder", "seed", "ratings", "pairs"),
    SPEED: ("quick", "load", "rows"),
    TRAINING: ("title", "description", "columns", "runs", "raw"),
}


class ResultsFileError(ValueError):
    """A results file that is not one of ``KINDS`` with its fields (the message names what lacks)."""


def check(data: object) -> dict[str, Any]:
    """``data`` if it is a results file: a JSON object with the ``PROVENANCE`` fields, a ``kind`` of
    ``KINDS`` and that kind's fields; else ``ResultsFileError`` naming the first thing amiss."""
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
    return dict(data)


def write(path: str | os.PathLike[str], data: Mapping[str, Any], indent: int = 1) -> None:
    """Check ``data`` (``check``) and write it to ``path`` as JSON, atomically: a file that fails
    the check is refused before anything is written."""
    check(data)
    write_atomic(path, json.dumps(data, indent=indent) + "\n")
