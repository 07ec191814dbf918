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


RETIRED = ROOT / "tests" / "data" / "retired-results"  # taken down, kept as examples of their writers' layouts


def _published(name: str) -> dict[str, Any]:
    """A published file, or a retired one (``RETIRED``), as a fresh copy to damage."""
    path = ROOT / "results" / name
    return json.loads((path if path.exists() else RETIRED / name).read_text())


@pytest.mark.parametrize(
    ("name", "path", "field", "message"),
    [
        ("baselines.json", ["pairs", 0], "ci95_a", "pairs[0] lacks ['ci95_a'], the fields of a 'evaluation' results"),
        ("speed.json", ["rows", 3], "unit", "rows[3] lacks ['unit'], the fields of a 'speed' results file"),
        ("ladder-v2-reference.json", ["ratings", 1], "elo", "ratings[1] lacks ['elo']"),
        ("ladder-v2-reference.json", ["design"], "precision", "design lacks ['precision']"),
        ("ladder-v2-reference.json", ["neighbours", 0], "difference", "neighbours[0] lacks ['difference']"),
        ("compare-mcts100-greedy.json", ["sprt"], "llr_bounds", "sprt lacks ['llr_bounds'], the fields of a 'comp"),
        ("demo.json", ["runs", 2], "cells", "runs[2] lacks ['cells'], the fields of a 'training' results file"),
        ("demo.json", ["machine"], "cores", "machine lacks ['cores'], the header of every results file"),
    ],
)
def test_a_file_without_a_field_its_entries_hold_is_refused_naming_where(
    name: str, path: list[str | int], field: str, message: str
) -> None:
    """``SHAPES``: the fields of a list's entries and of an optional field, present or not, are declared."""
    data = _published(name)
    place: Any = data
    for step in path:
        place = place[step]
    del place[field]
    with pytest.raises(ResultsFileError, match=re.escape(message)):
        check(data)


@pytest.mark.parametrize(
    ("name", "damage", "message"),
    [
        # train.baselines: seed -> minute mark -> opponent -> counts
        ("ppo-scratch.json", lambda raw: raw["1"]["20"]["greedy"].pop("ci95"),
         "raw['1']['20']['greedy'] lacks ['ci95'], what `raw` holds in a 'training' results file of train.baselines"),
        ("ppo-scratch.json", lambda raw: raw["0"].update(ten={}), "raw['0'] has the key 'ten', not a minute mark"),
        ("sb3-maskable-scratch.json", lambda raw: raw.update({"2": []}), "raw['2'] is not a JSON object (of minute"),
        # train.exit_results: seed -> a run, its curve against greedy with its start and end
        ("exit.json", lambda raw: raw["2"].pop("start_vs_greedy"), "raw['2'] lacks ['start_vs_greedy']"),
        ("distill-az.json", lambda raw: raw["0"]["curve_vs_greedy"].update({"7": {"games": 2}}),
         "raw['0'].curve_vs_greedy['7'] lacks ['win_rate', 'ci95']"),
        ("tree-loop.json", lambda raw: raw["1"].pop("minutes"), "raw['1'] lacks ['minutes'], what `raw` holds in a "
         "'training' results file of train.tree_loop_results"),
    ],
)  # fmt: skip
def test_a_training_file_whose_raw_lacks_what_its_writer_declares_is_refused(
    name: str, damage: Any, message: str
) -> None:
    """``CURVES``: what a writer's ``raw`` holds is declared by the writer, and checked."""
    data = _published(name)
    check(data)
    damage(data["raw"])
    with pytest.raises(ResultsFileError, match=re.escape(message)):
        check(data)


def test_a_training_file_of_another_writer_keeps_no_curves_and_its_raw_is_not_read() -> None:
    """A writer that declares no curves: its ``raw`` holds whatever it holds, no reader reads it, and
    keys that look like another writer's layout are not taken for curves."""
    data = _published("exit.json")
    assert results_file.writer(data) == "train.exit_results" and set(results_file.curves(data)) == {"greedy"}
    data["command"] = data["command"].replace("train.exit_results", "train.some_other_writer")
    assert results_file.curves(data) == {} and check(data)["raw"] == data["raw"]
    assert results_file.declared(data)["raw"] is None
    demo = _published("demo.json")
    demo["raw"] = "anything"
    check(demo)


def test_the_curves_are_read_as_their_writer_declares_them() -> None:
    """Per mark and opponent (train.baselines), or per run with its start at minute 0 and its end at the
    run's minutes (train.exit_results); each seed's points in order of minutes."""
    marks = _published("ppo-scratch.json")
    curves = results_file.curves(marks)
    assert set(curves) == {"random", "greedy"} and set(curves["greedy"]) == {"0", "1", "2"}
    r = marks["raw"]["1"]["60"]["greedy"]
    assert curves["greedy"]["1"][-1] == (60.0, r["win_rate"], *r["ci95"])
    assert [x for x, *_ in curves["random"]["0"]] == [10.0, 20.0, 30.0, 60.0]
    run = _published("exit.json")
    seed = run["raw"]["0"]
    points = results_file.curves(run)["greedy"]["0"]
    assert points[0] == (0.0, seed["start_vs_greedy"]["win_rate"], *seed["start_vs_greedy"]["ci95"])
    assert points[-1] == (seed["minutes"], seed["final_vs_greedy"]["win_rate"], *seed["final_vs_greedy"]["ci95"])
    assert len(points) == len(seed["curve_vs_greedy"]) + 2


def test_declared_keeps_what_the_schema_declares_and_nothing_else() -> None:
    files = published()
    for name, data in files.items():
        kept = results_file.declared(data)
        check(kept)  # still a results file
        assert results_file.curves(kept) == results_file.curves(data), name
    pair = results_file.declared(files["baselines.json"])["pairs"][0]
    assert set(pair) == set(results_file.PAIR)  # deals_split, mean_score_a...: no page reads them
    rating, machine = results_file.declared(files["ladder-v3-az.json"]), files["ladder-v3-az.json"]["machine"]
    assert "ci95_games" not in rating and "spec" in rating
    assert rating["machine"] == {"cpu": machine["cpu"], "cores": machine["cores"]}  # not its python


def test_results_holds_only_what_the_results_page_shows() -> None:
    """Every file under ``results/`` is a results file directly in it, and the page shows it (each
    section or row names the command that measured it): probes and superseded runs have left."""
    page = (ROOT / "docs" / "results.md").read_text()
    for path in sorted((ROOT / "results").rglob("*")):
        where = path.relative_to(ROOT)
        assert path.is_file() and path.parent == ROOT / "results" and path.suffix == ".json", where
        data = check(json.loads(path.read_text()))
        assert data["command"] in page, f"{where} is not on the results page"
