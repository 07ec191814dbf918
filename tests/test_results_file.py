"""The schema of a results file (``patchwork_env.evaluation.results_file``): a file without a field
of its kind, without its provenance or without a known ``kind`` is refused naming what it lacks,
and refused before anything is written; every published file in ``results/`` validates; the
library's writers (``patchwork evaluate --json``, ``patchwork ladder --json``/``--rebuild``,
``rate(...).to_dict()``, ``python -m benchmarks --json``) write their kind. The trainers' writers (``train.baselines``,
``train.demo``, ``train.exit_results``) are checked by their own tests, which read their files."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks import write_json
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.ladder import build_scale, rate
from patchwork_env.evaluation.results_file import KINDS, PROVENANCE, ResultsFileError, check, write
from tests.cli import patchwork

ROOT = Path(__file__).resolve().parent.parent


def published() -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text()) for path in sorted((ROOT / "results").glob("*.json"))}


def example(kind: str) -> dict[str, Any]:
    """A published file of ``kind`` (a fresh copy, to damage)."""
    return copy.deepcopy(next(data for data in published().values() if data.get("kind") == kind))


def test_every_published_results_file_validates_and_every_kind_is_published() -> None:
    files = published()
    assert len(files) >= 20
    for name, data in files.items():
        try:
            check(data)
        except ResultsFileError as exc:
            pytest.fail(f"results/{name}: {exc}")
    assert {data["kind"] for data in files.values()} == set(KINDS)


@pytest.mark.parametrize(("kind", "field"), [(kind, field) for kind, fields in KINDS.items() for field in fields])
def test_a_file_without_a_field_of_its_kind_is_refused_naming_it(kind: str, field: str) -> None:
    data = example(kind)
    check(data)
    del data[field]
    with pytest.raises(ResultsFileError, match=re.escape(f"lacks ['{field}'], the fields of a {kind!r} results file")):
        check(data)


@pytest.mark.parametrize("field", PROVENANCE)
def test_a_file_without_its_provenance_is_refused_naming_the_field(field: str) -> None:
    data = example(results_file.EVALUATION)
    del data[field]
    with pytest.raises(ResultsFileError, match=re.escape(f"lacks ['{field}']: every results file says how")):
        check(data)


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (None, "has no 'kind': every results file says what it is (evaluation, ladder-rating, "),
        ("arena", "has the unknown kind 'arena' (the kinds: evaluation, ladder-rating, "),
        ("Speed", "has the unknown kind 'Speed'"),
        (["speed"], "has the unknown kind ['speed']"),
    ],
)
def test_a_file_without_a_known_kind_is_refused(kind: object, message: str) -> None:
    data = example(results_file.SPEED)
    if kind is None:
        del data["kind"]
    else:
        data["kind"] = kind
    with pytest.raises(ResultsFileError, match=re.escape(message)):
        check(data)
    with pytest.raises(ResultsFileError, match="a JSON object is expected, got list"):
        check([data])


def test_a_refused_file_is_never_written(tmp_path: Path) -> None:
    data = example(results_file.TRAINING)
    whole = tmp_path / "whole.json"
    write(whole, data)
    assert json.loads(whole.read_text()) == data and whole.read_text().endswith("}\n")
    del data["runs"]
    old = tmp_path / "old.json"
    old.write_text("the file before\n")
    for path in (old, tmp_path / "new.json"):
        with pytest.raises(ResultsFileError, match=re.escape("lacks ['runs']")):
            write(path, data)
    assert old.read_text() == "the file before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json", "whole.json"]  # no new file, no temporary one


def _kind_follows_the_provenance(data: dict[str, Any]) -> bool:
    keys = list(data)
    return keys.index("kind") == keys.index("seeds") + 1


def test_evaluate_writes_an_evaluation(tmp_path: Path) -> None:
    out = tmp_path / "evaluation.json"
    argv = ["evaluate", "--agents", "random", "greedy", "--pairs", "1", "--no-progress", "--json", str(out)]
    assert patchwork(*argv) == 0
    data = check(json.loads(out.read_text()))
    assert data["kind"] == results_file.EVALUATION and _kind_follows_the_provenance(data)


def test_ladder_writes_a_rating_and_a_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scale = build_scale(pairs=2, workers=1, panel=("random", "greedy:temp=3", "greedy"), seed=7)
    monkeypatch.setattr("patchwork_env.cli.ladder.load_scale", lambda **kw: scale)
    monkeypatch.setattr("patchwork_env.cli.ladder.build_scale", lambda *args, **kw: scale)
    rating, reference = tmp_path / "rating.json", tmp_path / "reference.json"
    assert patchwork("ladder", "greedy", "--no-progress", "--json", str(rating)) == 0
    assert patchwork("ladder", "--rebuild", str(reference), "--pairs", "2", "--no-progress") == 0
    for path, kind in ((rating, results_file.LADDER_RATING), (reference, results_file.LADDER_REFERENCE)):
        data = check(json.loads(path.read_text()))
        assert data["kind"] == kind and _kind_follows_the_provenance(data), path.name
    from_python = check(rate("greedy", scale=scale).to_dict())  # what rate() returns is a results file too
    assert from_python["kind"] == results_file.LADDER_RATING and _kind_follows_the_provenance(from_python)


def test_the_speed_table_is_a_speed_file(tmp_path: Path) -> None:
    out = tmp_path / "speed.json"
    write_json(str(out), [], "python -m benchmarks", ["--quick"], quick=True)
    data = check(json.loads(out.read_text()))
    assert data["kind"] == results_file.SPEED and data["command"] == "python -m benchmarks --quick"
