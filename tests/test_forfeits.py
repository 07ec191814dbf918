"""One rule for every harness (``patchwork_env.evaluation.games``): an illegal or wrong-type action
forfeits that game with its reason recorded (the agent, the game, the move, what it played, the
engine's reason), in ``play_pairs``, ``round_robin``, ``rate`` and on both command lines, on screen
and in the JSON; an exception of an agent stops the run with one line naming the agent, the game
and the move, and the games finished before it are kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchwork_env.core.rules import ADVANCE
from patchwork_env.core.state import GameState
from patchwork_env.evaluation import ladder
from patchwork_env.evaluation.arena import Journal, play_pairs, round_robin
from patchwork_env.evaluation.workers import RunError
from tests.cli import error_lines, patchwork

AGENTS = """
def word(state):
    return "advance"

def zero(state):
    return 0                                   # buy slot 0 at the corner: rarely legal

CALLS = [0]

def late_error(state):                         # a few games in (in each process that plays it)
    CALLS[0] += 1
    if CALLS[0] > 100:
        raise ZeroDivisionError("the agent's own bug")
    return int(state.legal_actions()[0])

def first(state):
    return int(state.legal_actions()[0])
"""


@pytest.fixture
def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The agents' file, in the current folder; not called agents.py: a module of that name would hide
    the project's ``agents`` package from every later import in this process and its workers."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "forfeiting_agents.py").write_text(AGENTS)
    return tmp_path / "forfeiting_agents.py"


def word(state: GameState) -> Any:
    return "advance"


def illegal_after_ten_moves(state: GameState) -> int:
    if state.ply >= 10 and not state.is_legal(0):
        return 0
    return int(state.legal_actions()[0])


def test_a_wrong_type_forfeits_with_the_value_returned_and_the_reason() -> None:
    result = play_pairs(word, "greedy", 2, seed=0, workers=1)
    assert result.illegal_a == result.games == 4 and result.wins_a == 0
    f = result.forfeits[0]
    assert (f.agent, f.game, f.deal, f.seat, f.action) == ("word", 0, 0, 0, None)
    assert f.move >= 1 and f.played == "'advance' (a str)"
    assert f.reason == "action 'advance' is out of range: actions are integers 0..2025"
    assert [g.game for g in result.forfeits] == [0, 1, 2, 3]
    assert result.to_dict()["forfeits"][0]["played"] == "'advance' (a str)"
    json.dumps(result.to_dict())


def test_an_illegal_action_forfeits_with_the_decoded_action_and_the_engines_reason() -> None:
    result = play_pairs(illegal_after_ten_moves, "random", 2, seed=1, workers=1)
    f = result.forfeits[0]
    assert f.action == 0 and f.played == "buy s0 o0 r0c0 (action 0)" and f.move > 10
    assert f.reason.startswith("action 0 (slot 0, orientation 0, row 0, col 0): ")
    assert result.records[0].a_illegal and not result.records[0].a_won


def test_b_forfeits_by_the_same_rule_and_a_wins_that_game() -> None:
    """The agent in B's place (an evaluate's second agent, a rung) forfeits as A does: the arena
    used to raise the engine's error for it."""
    result = play_pairs("random", word, 1, seed=0, workers=1)
    assert result.illegal_b == 2 and result.illegal_a == 0 and result.wins_a == 2
    assert {f.agent for f in result.forfeits} == {"word"}
    assert all(r.b_illegal and r.a_won for r in result.records)


def test_a_round_robin_keeps_playing_past_a_forfeit() -> None:
    table = round_robin([word, "random", "greedy:temp=4"], 1, seed=0, workers=1)
    assert [p.games for p in table.pairs] == [2, 2, 2]
    assert sum(p.illegal_a for p in table.pairs) == 4 and len(table.forfeits) == 4
    assert all(p["forfeits"] or p["a"] != "word" for p in table.to_dict()["pairs"])


def test_an_agents_exception_stops_the_run_naming_the_agent_the_game_and_the_move(tmp_path: Path) -> None:
    calls = [0]

    def breaks_in_deal_two(state: GameState) -> int:
        calls[0] += 1
        if calls[0] > 120:  # a few games in
            raise ValueError("my bug\nsecond line")
        return int(state.legal_actions()[0])

    journal = Journal(tmp_path / "j.jsonl")
    with pytest.raises(RunError) as info:
        play_pairs("greedy", breaks_in_deal_two, 3, seed=0, workers=1, journal=journal)
    text = str(info.value)
    assert text.startswith("breaks_in_deal_two raised on game ") and "at move " in text
    assert "ValueError: my bug" in text and "\n" not in text
    error: Any = info.value
    assert error.agent == "breaks_in_deal_two" and error.move >= 1 and error.game >= 3
    finished = error.finished
    assert [(p.a, p.b) for p in finished] == [("greedy", "breaks_in_deal_two")]
    assert finished[0].games == len(journal) * 2 >= 2  # the finished deals: in the error and in the journal


def test_the_ladder_records_every_forfeit_with_its_reason() -> None:
    scale = ladder.build_scale(pairs=2, workers=1, panel=("random", "greedy:temp=4"), seed=3)
    result = ladder.rate(word, scale=scale)
    assert result.illegal_actions == result.games == len(result.forfeits) > 0
    data = result.to_dict()
    assert data["forfeits"][0]["agent"] == "word" and data["forfeits"][0]["reason"].startswith("action 'advance'")
    assert {"agent", "game", "deal", "seat", "move", "action", "played", "reason"} <= set(data["forfeits"][0])


def test_evaluate_prints_the_first_forfeits_and_writes_them_all(
    agents: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: ``patchwork evaluate`` stopped on the first illegal action, naming neither
    the agent nor the game, and wrote nothing."""
    code = patchwork("evaluate", "--agents", "forfeiting_agents.py:word", "greedy", "--pairs", "3", "--workers", "1",
                     "--no-progress", "--json", "e.json", "--records", "recs")  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "6 games lost by an illegal or wrong-type action" in out
    shown = [line for line in out.splitlines() if line.startswith("  forfeiting_agents.py:word lost game ")]
    assert len(shown) == 3 and "by playing 'advance' (a str): action 'advance' is out of range" in shown[0]
    assert "and 3 more" in out
    data = json.loads(Path("e.json").read_text())
    assert len(data["pairs"][0]["forfeits"]) == 6 and data["pairs"][0]["illegal_a"] == 6
    assert list(Path("recs").glob("*.jsonl"))


def test_the_ladder_command_prints_and_writes_the_forfeits(agents: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert patchwork("ladder", "forfeiting_agents.py:zero", "--workers", "1", "--no-progress", "--json", "r.json") == 0
    out = capsys.readouterr().out
    assert "lost by an illegal or wrong-type action" in out and "by playing buy s0 o0 r0c0 (action 0)" in out
    data = json.loads(Path("r.json").read_text())
    assert data["illegal_actions"] == len(data["forfeits"]) > 0
    assert data["forfeits"][0]["reason"].startswith("action 0 (slot 0")


@pytest.mark.parametrize("command", ["evaluate", "ladder"])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_exception_is_one_error_line_and_the_finished_games_stay_in_the_journal(
    agents: Path, capsys: pytest.CaptureFixture[str], command: str, workers: str
) -> None:
    if command == "evaluate":
        argv = ["evaluate", "--agents", "greedy", "forfeiting_agents.py:late_error", "--pairs", "8"]
    else:
        argv = ["ladder", "forfeiting_agents.py:late_error", "--ladder", "v1"]
    code = patchwork(*argv, "--workers", workers, "--no-progress", "--json", "out.json")
    lines = error_lines(capsys.readouterr().err)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: forfeiting_agents.py:late_error raised on game ") and " at move " in lines[0]
    assert "ZeroDivisionError: the agent's own bug" in lines[0]
    assert not Path("out.json").exists()
    journal = Path("out.json.partial.jsonl")
    assert journal.is_file() and f"finished before it are kept in {journal}" in lines[0]


def test_a_function_whose_games_all_finish_is_unaffected() -> None:
    def advances(state: GameState) -> int:
        return ADVANCE if state.is_legal(ADVANCE) else int(state.legal_actions()[0])

    result = play_pairs(advances, "random", 2, seed=0, workers=1)
    assert result.illegal_a == result.illegal_b == 0 and result.forfeits == []
    assert all(r.forfeit is None for r in result.records)
    assert np.isfinite(result.mean_margin_a)
