"""A journal belongs to its agents (``patchwork_env.evaluation.journal``, issue 63): it records who
played its deals and refuses to continue for another agent under the same name (a file edited
between an interrupted run and its rerun), or when it predates those records; and ``rate()``
refuses, before any game, the arguments it used to misread (an object's own ``load_path``, a scale
of another version than ``ladder``, odd ``records``, ``journal``, ``backend``, ``scale``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchwork_env.core.state import GameState
from patchwork_env.evaluation.arena import Journal, play_pairs, resolve_agent, round_robin
from patchwork_env.evaluation.journal import JOURNAL_KIND, JournalRefused, agent_identity
from patchwork_env.evaluation.ladder import VERSION, build_scale, rate
from patchwork_env.players.registry import make_agent
from tests.cli import error_lines, patchwork


@pytest.fixture(scope="module")
def tiny_scale() -> dict[str, Any]:
    """Two rungs: a rating on it plays about 40 quick games."""
    return build_scale(pairs=2, workers=1, panel=("random", "greedy:temp=3"), seed=7)


def _agent_file(folder: Path, pick: int = -1) -> str:
    """``mine.py:act``, playing the last legal action (or the ``pick``-th): edit it with another pick."""
    path = folder / "mine.py"
    path.write_text(f"def act(state):\n    return int(state.legal_actions()[{pick}])\n")
    return f"{path}:act"


def _deal_lines(path: Path) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if "deal" in e]


# --- the finding: a journal of an edited agent file was continued without a word ---------------------
def test_a_rating_does_not_continue_a_journal_of_the_agent_file_before_an_edit(
    tiny_scale: dict[str, Any], tmp_path: Path
) -> None:
    mine = _agent_file(tmp_path)
    path = tmp_path / "j.jsonl"
    first = rate(mine, scale=tiny_scale, journal=Journal(path))
    held = path.read_text()
    _agent_file(tmp_path, pick=0)  # another agent under the same spec
    with pytest.raises(JournalRefused) as info:
        rate(mine, scale=tiny_scale, journal=Journal(path))
    message = str(info.value)
    assert message.startswith(f"{path} holds games of another {mine} (changed since they were played: the file ")
    assert str(tmp_path / "mine.py") in message and "delete it, or give another journal file" in message
    assert path.read_text() == held  # refused before anything was written
    _agent_file(tmp_path)  # as it was: the journal is its own again, and no game is played twice
    started = time.perf_counter()
    assert rate(mine, scale=tiny_scale, journal=Journal(path)) == first
    assert time.perf_counter() - started < 5 and path.read_text() == held


def test_the_ladder_command_refuses_its_own_journal_after_the_agent_file_changed(
    tiny_scale: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's run: ``patchwork ladder mine.py:act --json r.json``, Ctrl-C (its games in
    ``r.json.partial.jsonl``), the file edited, the same command again: one error line, exit 2."""
    monkeypatch.setattr("patchwork_env.cli.ladder.load_scale", lambda **kw: tiny_scale)
    monkeypatch.chdir(tmp_path)
    mine = _agent_file(tmp_path)
    rate(mine, scale=tiny_scale, journal=Journal("r.json.partial.jsonl"))  # what the interrupted run kept
    _agent_file(tmp_path, pick=0)
    assert patchwork("ladder", mine, "--json", "r.json", "--no-progress", "--workers", "1") == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith(f"error: r.json.partial.jsonl holds games of another {mine} ")
    assert "to start afresh, give another --json path, or delete r.json.partial.jsonl" in lines[0]
    assert not Path("r.json").exists()


def test_the_evaluate_command_refuses_a_journal_of_another_agent_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    mine = _agent_file(tmp_path)
    round_robin([mine, "random"], 1, seed=0, workers=1, journal=Journal("games.jsonl"))
    _agent_file(tmp_path, pick=0)
    argv = ["evaluate", "--agents", mine, "random", "--pairs", "2", "--no-progress", "--workers", "1"]
    assert patchwork(*argv, "--journal", "games.jsonl") == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith(f"error: games.jsonl holds games of another {mine} ")
    assert lines[0].endswith("to start afresh, delete games.jsonl, or give another --journal FILE")


@pytest.mark.parametrize("command", ["evaluate", "ladder"])
def test_a_journal_from_before_the_agents_identities_is_refused(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A journal of the previous version (deal lines only) cannot say who played its deals."""
    monkeypatch.chdir(tmp_path)
    old = {"a": "greedy", "b": "random", "seed": 0, "deal": 0, "games": []}
    Path("old.jsonl").write_text(json.dumps(old) + "\n" + json.dumps({**old, "deal": 1}) + "\n")
    with pytest.raises(JournalRefused, match=r"old.jsonl was written before journals recorded who played"):
        Journal("old.jsonl")
    argv = ["ladder", "greedy"] if command == "ladder" else ["evaluate", "--agents", "greedy", "random"]
    assert patchwork(*argv, "--journal", "old.jsonl", "--no-progress") == 2
    lines = error_lines(capsys.readouterr().err)
    assert lines == [
        "error: old.jsonl was written before journals recorded who played their deals: nothing in it says that "
        "its 2 deals were played by the agents of this run; to start afresh, delete old.jsonl, or give another "
        "--journal FILE"
    ]


# --- what a journal knows and keeps ----------------------------------------------------------------
def test_a_journal_records_each_agent_once_and_continues_for_the_same_agents(tmp_path: Path) -> None:
    mine = _agent_file(tmp_path)
    path = tmp_path / "j.jsonl"
    first = play_pairs(mine, "random", 2, seed=3, workers=1, journal=Journal(path))
    header, *identities = (json.loads(line) for line in path.read_text().splitlines()[:3])
    assert header == {"journal": JOURNAL_KIND, "format": 2}
    assert [(e["agent"], e["as"]) for e in identities] == [(mine, "a"), ("random", "b")]
    assert identities[0]["identity"]["files"] == {str(tmp_path / "mine.py"): identities[0]["identity"]["files"][
        str(tmp_path / "mine.py")]}  # fmt: skip
    again = play_pairs(mine, "random", 3, seed=3, workers=1, journal=Journal(path))
    assert again.records[:4] == first.records and len(_deal_lines(path)) == 3
    assert sum("identity" in line for line in path.read_text().splitlines()) == 2  # no identity twice


def test_another_agent_under_a_name_the_journal_knows_is_refused(tmp_path: Path) -> None:
    """An object named like a spec that played in the journal is another agent."""
    path = tmp_path / "j.jsonl"
    Journal(path).admit([(resolve_agent("greedy"), resolve_agent("random", build=False))])

    class Renamed:
        name = "greedy"

        def act(self, state: GameState, rng: np.random.Generator) -> int:
            return int(state.legal_actions()[0])

    with pytest.raises(JournalRefused, match=r"another greedy \(changed since they were played: its spec, the object"):
        Journal(path).admit([(resolve_agent(Renamed()), resolve_agent("random", build=False))])


def test_an_objects_identity_is_taken_once_for_a_run_and_its_state_counts(tmp_path: Path) -> None:
    """An agent object's identity is taken before its first game and kept for the later stages of
    the run (the state of an object that plays here changes as it plays); a later run with the
    object in another state is refused, with a fresh object in the same state it continues."""
    agent, path = Counting(), tmp_path / "j.jsonl"
    journal, rated, rung = Journal(path), resolve_agent(agent), resolve_agent("random", build=False)
    journal.admit([(rated, rung)])
    agent.moves = 99  # it played
    journal.admit([(rated, rung)])  # the run's next stage
    with pytest.raises(JournalRefused, match=r"another counting \(changed since they were played: its state\)"):
        Journal(path).admit([(resolve_agent(agent), rung)])
    Journal(path).admit([(resolve_agent(Counting()), rung)])


def test_a_rating_of_an_object_continues_for_an_object_in_the_same_state(
    tiny_scale: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "j.jsonl"
    result = rate(Counting(), scale=tiny_scale, journal=str(path))  # a path is a journal too, as in compare()
    assert len(_deal_lines(path)) == result.games // 2
    assert rate(Counting(), scale=tiny_scale, journal=path) == result


def test_an_agent_without_source_or_state_cannot_keep_a_journal(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {}
    exec("def typed(state):\n    return int(state.legal_actions()[0])\n", namespace)  # no file to read it from
    with pytest.raises(ValueError, match="has neither source code nor a state that pickles"):
        play_pairs(namespace["typed"], "random", 1, workers=1, journal=Journal(tmp_path / "j.jsonl"))
    assert not (tmp_path / "j.jsonl").exists()


def test_a_journal_reads_or_adds_only_deals_of_agents_it_admitted(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    with pytest.raises(RuntimeError, match="has not admitted greedy against random"):
        journal.played("greedy", "random", 0, range(2))


# --- rate(): what it used to misread ---------------------------------------------------------------
class Counting:
    """An agent whose state changes as it plays (a module-level class: it pickles)."""

    name = "counting"

    def __init__(self) -> None:
        self.moves = 0

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        self.moves += 1
        return int(state.legal_actions()[0])


class CarriesAPath:
    """An object of the user's own with an attribute that happens to be called ``load_path``."""

    name = "carries"
    load_path = "greedy"  # say, where its weights are: not a spec for the arena's workers

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        return int(state.legal_actions()[0])


def test_an_objects_own_load_path_is_not_what_the_workers_play(tmp_path: Path) -> None:
    """Workers rebuilt any object with a ``load_path`` from it: ``rate(obj, workers=2)`` rated greedy
    where ``workers=1`` rated the object. Only an agent loaded from FILE.py:NAME travels by its spec."""
    entrant = resolve_agent(CarriesAPath())
    assert entrant.ref is not None and entrant.ref[0] == "pickle"  # what a worker plays: the object itself
    assert b"CarriesAPath" in entrant.ref[1]
    assert "object" in agent_identity(CarriesAPath())
    mine = _agent_file(tmp_path)
    assert resolve_agent(make_agent(mine)).ref == ("spec", mine)
    assert agent_identity(make_agent(mine))["spec"] == f"{tmp_path / 'mine.py'}:act"


def test_a_scale_of_another_version_than_ladder_is_refused(tiny_scale: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=rf"scale holds ladder {VERSION}, and ladder=.v1. asks for v1"):
        rate("greedy", scale=tiny_scale, ladder="v1")
    with pytest.raises(ValueError, match=r"ladder must be one of v1, v2, v3 \(or None: the scale's\), got 'v9'"):
        rate("greedy", scale=tiny_scale, ladder="v9")


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"records": ()}, TypeError, r"records must be a list .* or None, got tuple \(\)"),
        ({"records": "out"}, TypeError, r"records must be a list .* got str 'out'"),
        ({"journal": 42}, TypeError, r"journal must be a Journal, a file path or None, got int 42"),
        ({"backend": "ray"}, TypeError, r"backend must be .*RayBackend.* or None, got str 'ray'"),
        ({"scale": {"ladder": "v2"}}, ValueError, r"scale must be a ladder version file .* lacks pairs, ratings, seed"),
        ({"scale": ["v2"]}, TypeError, r"scale must be a ladder version file .* got list"),
    ],
)
def test_odd_arguments_of_rate_are_refused_before_any_game(
    tiny_scale: dict[str, Any], arguments: dict[str, Any], error: type[Exception], match: str
) -> None:
    started = time.perf_counter()
    with pytest.raises(error, match=match):
        rate("greedy", **{"scale": tiny_scale, **arguments})
    assert time.perf_counter() - started < 2  # no game was played
