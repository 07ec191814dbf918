"""A journal's games are checked as it is read (``patchwork_env.evaluation.journal.deal_records``,
issue 63's fuzzer, ``tests/fuzz_faults.py``): a deal line whose games hold a field of another type
or out of its range (``score_a: "x"``, ``a_won: []``, a field missing, a negative deal, three games,
a forfeit that contradicts its flags) is refused with the journal's one line naming the file and the
line, not read as it is to end in a ``TypeError`` as the results are summed; on a command line it is
one ``error:`` line and exit code 2. The games a run wrote, forfeits and all, read back as they were."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from patchwork_env.core.state import GameState
from patchwork_env.evaluation.arena import Journal, play_pairs
from tests.cli import error_lines, patchwork

Edit = Callable[[dict[str, Any]], None]  # changes a deal line (parsed) in place


def _game(entry: dict[str, Any], k: int = 0) -> dict[str, Any]:
    game: dict[str, Any] = entry["games"][k]
    return game


def _set(field: str, value: Any, k: int = 0) -> Edit:
    return lambda entry: _game(entry, k).__setitem__(field, value)


def _forfeit_by_a(entry: dict[str, Any]) -> None:
    """Game 0 forfeited by A, but its record says that B played the illegal answer."""
    game = _game(entry)
    game.update(a_won=False, a_illegal=True)
    game["forfeit"] = {"agent": "x", "seat": 1, "deal": entry["deal"], "game": 2 * entry["deal"], "move": 3,
                       "action": 5, "played": "5", "reason": "illegal"}  # fmt: skip


# (what is wrong, the edit, what the refusal says after "game 0 of deal 1: " or in its place)
BAD: list[tuple[str, Edit, str]] = [
    ("a score that is a string", _set("score_a", "x"), "score_a is an integer in -162..407, got 'x'"),
    ("a_won a list", _set("a_won", []), "a_won is true or false, got []"),
    ("a_won a number", _set("a_won", 1), "a_won is true or false, got 1"),
    ("a field missing", lambda e: _game(e).pop("moves_b"), "a game without moves_b"),
    ("a field of no game record", _set("colour", "red"), "a game with colour, not a field of it"),
    ("a negative deal", lambda e: e.update(deal=-1), "a deal is an integer >= 0, got -1"),
    ("a game of another deal", _set("deal", 0), "deal is an integer in 1..1, got 0"),
    ("a deal of three games", lambda e: e["games"].append(_game(e)), "a deal is a list of its two games"),
    ("games not a list", lambda e: e.update(games=5), "a deal is a list of its two games (A in seat 0"),
    ("a game not an object", lambda e: e["games"].__setitem__(1, [5]), "game 1 of deal 1: a game is an object"),
    ("seats swapped", _set("seat_a", 1), "seat_a is an integer in 0..0, got 1"),
    ("a score no game has", _set("score_b", 10**400), "score_b is an integer in -162..407, got 1000"),
    ("empty cells beyond the board", _set("empty_a", 82), "empty_a is an integer in 0..81, got 82"),
    ("negative moves", _set("moves_a", -1), "moves_a is an integer in 0..1000, got -1"),
    ("seconds NaN", _set("seconds_b", math.nan), "seconds_b is a number of seconds in 0..1e+09, got nan"),
    ("seconds a string", _set("seconds_a", "1"), "seconds_a is a number of seconds in 0..1e+09, got '1'"),
    ("an action out of range", _set("actions", [2026]), "actions is a list of actions (integers 0..2025)"),
    ("actions not a list", _set("actions", "2025"), "actions is a list of actions (integers 0..2025), got '2025'"),
    ("more actions than moves", _set("actions", [2025] * 1000), "1000 actions in a game of "),
    (
        "a forfeit without its record",
        lambda e: _game(e).update(a_won=True, b_illegal=True),
        "b_illegal is true, and forfeit says nothing of it",
    ),
    (
        "a forfeit's loser that won",
        lambda e: _game(e).update(a_won=True, a_illegal=True),
        "a_won is false when A forfeited the game and true",
    ),
    ("a forfeit of the other seat", _forfeit_by_a, "seat is an integer in 0..0, got 1"),
    ("a forfeit that is a string", _set("forfeit", "B"), "forfeit is null or the record of a forfeit (an object)"),
    ("a seed that is a string", lambda e: e.update(seed="0"), "a deal line's seed is an integer >= 0, got '0'"),
    ("an agent that is no name", lambda e: e.update(a=None), "a deal line's agents are names (strings), got None"),
    ("a deal line without its games", lambda e: e.pop("games"), "a deal line without games (it holds a, b, deal,"),
]


@pytest.fixture(scope="module")
def journal_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A journal of two deals of greedy against random: header, two identities, deals 0 and 1."""
    path = tmp_path_factory.mktemp("journal") / "j.jsonl"
    play_pairs("greedy", "random", 2, seed=0, workers=1, journal=Journal(path))
    lines = path.read_text().splitlines(keepends=True)
    assert [json.loads(line).get("deal") for line in lines] == [None, None, None, 0, 1]
    return lines


def _write_edited(lines: list[str], edit: Edit, path: Path) -> Path:
    entry = json.loads(lines[4])  # deal 1
    edit(entry)
    path.write_text("".join(lines[:4]) + json.dumps(entry) + "\n")
    return path


@pytest.mark.parametrize(("edit", "said"), [pytest.param(e, s, id=w) for w, e, s in BAD])
def test_a_deal_line_with_a_bad_game_is_refused_naming_the_file_the_line_and_the_field(
    journal_lines: list[str], tmp_path: Path, edit: Edit, said: str
) -> None:
    path = _write_edited(journal_lines, edit, tmp_path / "j.jsonl")
    with pytest.raises(ValueError) as info:
        Journal(path)
    message = str(info.value)
    assert message.startswith(f"{path}, line 5: not a journal entry of the arena (")
    assert said in message and "\n" not in message and len(message) < 300


@pytest.mark.parametrize("command", ["evaluate", "ladder"])
@pytest.mark.parametrize(("edit", "said"), [pytest.param(e, s, id=w) for w, e, s in BAD[:3]])
def test_a_command_given_a_journal_with_a_bad_game_says_so_in_one_line(
    journal_lines: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    edit: Edit,
    said: str,
) -> None:
    """The finding: ``score_a: "x"`` ended in a TypeError traceback of ``PairResult.from_records``."""
    monkeypatch.chdir(tmp_path)
    _write_edited(journal_lines, edit, tmp_path / "j.jsonl")
    argv = ["ladder", "greedy"] if command == "ladder" else ["evaluate", "--agents", "greedy", "random", "--pairs", "2"]
    code = patchwork(*argv, "--journal", "j.jsonl", "--workers", "1", "--no-progress", "--json", "out.json")
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert error_lines(err) == [f"error: j.jsonl, line 5: not a journal entry of the arena (game 0 of deal 1: {said})"]
    assert not (tmp_path / "out.json").exists()


def test_the_games_a_run_wrote_read_back_as_they_were_forfeits_and_all(tmp_path: Path) -> None:
    """Every field of every game (a forfeit's record with it) passes the checks and comes back equal."""
    calls = [0]

    def now_and_then_a_word(state: GameState) -> int | str:
        calls[0] += 1
        return "advance" if calls[0] % 37 == 0 else int(state.legal_actions()[-1])

    path = tmp_path / "j.jsonl"
    played = play_pairs(now_and_then_a_word, "greedy", 4, seed=1, workers=1, journal=Journal(path))
    assert played.illegal_a > 0  # some games forfeited: their records are in the journal too
    journal = Journal(path)
    assert len(journal) == 4
    read = journal.played("now_and_then_a_word", "greedy", 1, range(4))
    assert [r for d in sorted(read) for r in read[d]] == played.records
