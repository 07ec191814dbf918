"""Game records: the round trip through a file reproduces every position, and every malformed
record is an error that names its line (and the ply of an illegal action)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchwork_env import GameState, action_to_str, new_game
from patchwork_env.core.records import (
    Deal,
    Player,
    Record,
    RecordError,
    parse_record,
    read_record,
    read_records,
    record_game,
    write_records,
)
from patchwork_env.evaluation.arena import play_pairs
from patchwork_env.players.greedy import GreedyAgent
from patchwork_env.players.random import RandomAgent


def played(seed: int) -> tuple[list[GameState], list[int]]:
    """A greedy-vs-random game (seat 0 greedy) and its actions."""
    agents = [GreedyAgent(), RandomAgent()]
    rng = np.random.default_rng(seed)
    states, actions = [new_game(seed)], []
    while not states[-1].is_terminal:
        s = states[-1]
        a = agents[s.current_player].act(s, rng)
        actions.append(a)
        states.append(s.step(a))
    return states, actions


GAMES = [played(seed) for seed in (1, 2, 3)]
PLAYERS = (Player("greedy", "greedy"), Player("random", "random"))


def a_record(k: int = 0) -> Record:
    states, actions = GAMES[k]
    return record_game(states[0], actions, PLAYERS, meta={"seed": k})


def test_round_trip_through_a_file_reproduces_every_position(tmp_path: Path) -> None:
    records = [a_record(k) for k in range(len(GAMES))]
    path = write_records(tmp_path / "games.jsonl", records)
    assert len(path.read_text().splitlines()) == len(GAMES)  # one game per line
    back = read_records(path)
    assert back == records
    for (states, actions), rec in zip(GAMES, back, strict=True):
        replayed = rec.states()
        assert replayed == states  # every position exactly (the state arrays)
        assert [s.to_notation() for s in replayed] == [s.to_notation() for s in states]
        assert rec.moves() == [(s.current_player, action_to_str(a)) for s, a in zip(states, actions, strict=False)]
        final = states[-1]
        assert rec.scores == final.scores() and rec.winner == final.winner
        assert rec.players == PLAYERS and rec.meta == {"seed": GAMES.index((states, actions))}


def test_append_and_pick_one_game(tmp_path: Path) -> None:
    path = tmp_path / "games.jsonl"
    write_records(path, [a_record(0)])
    with open(path, "a") as f:
        f.write("\n")  # blank lines are not games
    write_records(path, [a_record(1)], append=True)
    assert read_record(path, 1) == a_record(1)
    with pytest.raises(RecordError, match=r"there is no game 2: the file holds 2 games \(0..1\)"):
        read_record(path, 2)


def test_extras_are_kept_per_move() -> None:
    states, actions = GAMES[0]
    extras: list[dict[str, Any] | None] = [{"visits": [10, 3], "note": "<b>"} if k % 2 else None for k in actions]
    rec = record_game(states[0], actions, PLAYERS, extras=extras)
    assert parse_record(rec.to_json()).extras == tuple(extras)
    with pytest.raises(RecordError, match=f"extras has 2 entries for {len(actions)} actions"):
        record_game(states[0], actions, PLAYERS, extras=[None, None])


def test_an_unfinished_game_is_a_record_without_a_result() -> None:
    states, actions = GAMES[0]
    rec = record_game(states[0], actions[:10], PLAYERS)
    assert rec.scores is None and rec.states()[-1] == states[10]
    assert "result" not in json.loads(rec.to_json())


def test_arena_games_become_records_with_deals_kept_together() -> None:
    pair = play_pairs("greedy", "random", 2, seed=5, workers=1)
    records = pair.game_records(specs=("greedy", "random"))
    assert [r.meta["deal"] for r in records] == [0, 0, 1, 1]
    assert [r.meta["seat_a"] for r in records] == [0, 1, 0, 1]
    for summary, rec in zip(pair.records, records, strict=True):
        assert rec.players[summary.seat_a] == Player("greedy", "greedy")
        assert rec.players[1 - summary.seat_a] == Player("random", "random")
        assert rec.scores is not None
        assert (rec.scores[summary.seat_a], rec.scores[1 - summary.seat_a]) == (summary.score_a, summary.score_b)
        assert len(rec.actions) == summary.moves_a + summary.moves_b
    assert records[0].deal == records[1].deal != records[2].deal
    assert len(pair.game_records(limit=3)) == 3


def test_an_illegal_action_names_its_ply_and_line() -> None:
    states, actions = GAMES[0]
    rec = record_game(states[0], actions, PLAYERS)
    data = json.loads(rec.to_json())
    bad_ply = 7
    illegal = next(a for a in range(2026) if not states[bad_ply].is_legal(a))
    data["actions"][bad_ply] = illegal
    with pytest.raises(RecordError) as err:
        parse_record(json.dumps(data), line=3)
    assert err.value.line == 3 and err.value.ply == bad_ply
    assert str(err.value).startswith(f"line 3: ply {bad_ply}: action {illegal} (")
    # actions after the end of the game are illegal too
    data = json.loads(rec.to_json())
    data["actions"].append(2025)
    data.pop("result")
    with pytest.raises(RecordError, match=f"line 9: ply {len(actions)}: action 2025 \\(advance\\): the game is over"):
        parse_record(json.dumps(data), line=9)


def mutate(change: Any) -> str:
    data = json.loads(a_record(0).to_json())
    change(data)
    return json.dumps(data)


def set_key(*path_and_value: Any) -> Any:
    *path, key, value = path_and_value

    def change(data: dict[str, Any]) -> None:
        for p in path:
            data = data[p]
        data[key] = value

    return change


MALFORMED = [
    ("{not json", r"not valid JSON"),
    ("[1, 2]", r"a record is a JSON object, got list"),
    ('{"format": "patchwork-record", "format": "x"}', r"duplicate key 'format'"),
    (mutate(set_key("format", "chess")), r"format must be 'patchwork-record', got \"chess\""),
    (mutate(set_key("version", 2)), r"unknown version 2: this reader knows version 1"),
    (mutate(set_key("version", "1")), r"unknown version \"1\""),
    (mutate(set_key("colour", "red")), r"unknown fields \['colour'\]"),
    (mutate(lambda d: d.pop("actions")), r"missing fields \['actions'\]"),
    (mutate(set_key("actions", "2025")), r"actions must be a list"),
    (mutate(set_key("actions", 1, 2025.0)), r"ply 1: action must be an integer in 0..2025, got 2025.0"),
    (mutate(set_key("actions", 1, True)), r"ply 1: action must be an integer in 0..2025, got true"),
    (mutate(set_key("actions", 2, 10**30)), r"ply 2: action must be in 0..2025, got 1000000000000000000000000000000"),
    (mutate(set_key("actions", 0, -1)), r"ply 0: action must be in 0..2025, got -1"),
    (mutate(set_key("actions", [2025] * 5000)), r"5000 actions: a game has at most 1000"),
    ('{"version": ' + "9" * 5000 + "}", r"not valid JSON: .*digits"),  # CPython's integer digits limit
    (mutate(set_key("actions", 0, float("nan"))), r"not valid JSON: NaN is not a JSON number"),
    ("[" * 100_000 + "]" * 100_000, r"not valid JSON"),  # nesting deeper than the recursion limit
    (mutate(set_key("deal", "circle", list(range(33)))), r"deal.circle must end with the 1x2 patch"),
    (mutate(set_key("deal", "circle", [1, 2])), r"deal.circle must hold each patch id 0..32 exactly once"),
    (mutate(set_key("deal", "circle", "abc")), r"deal.circle must be a list of 33 patch ids"),
    (mutate(set_key("deal", "first_player", 2)), r"deal.first_player must be in 0..1, got 2"),
    (mutate(set_key("deal", "leather_layout", "new")), r"deal.leather_layout must be one of"),
    (mutate(set_key("deal", "seed", 1)), r"deal must be an object with exactly"),
    (mutate(set_key("players", [{"name": "a"}])), r"players must be a list of 2 objects"),
    (mutate(set_key("players", 0, "name", 7)), r"players\[0\].name must be a string, got 7"),
    (mutate(set_key("players", 1, "name", "x" * 5000)), r"players\[1\].name has 5000 characters, at most 1000"),
    (mutate(set_key("players", 1, "elo", 3)), r"players\[1\] must be"),
    (mutate(set_key("extras", [None])), r"extras has 1 entries for \d+ actions"),
    (mutate(lambda d: d.update(extras=[7] * len(d["actions"]))), r"ply 0: extras entry must be an object or null"),
    (mutate(set_key("meta", [1])), r"meta must be an object"),
    (mutate(set_key("result", "scores", [99, 0])), r"result says scores \[99, 0\].*replaying the actions gives"),
    (mutate(set_key("result", "scores", [10**40, 0])), r"result.scores\[0\] must be in -200..200"),
    (mutate(set_key("result", "winner", None)), r"result.winner must be an integer in 0..1, got null"),
    (mutate(lambda d: d.update(actions=d["actions"][:5])), r"a result is given but the game is not over"),
]


@pytest.mark.parametrize(("line", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_malformed_records_are_clear_errors_naming_the_line(line: str, message: str) -> None:
    with pytest.raises(RecordError, match=message) as err:
        parse_record(line, line=12)
    assert str(err.value).startswith("line 12: ")
    assert err.value.line == 12


def test_reading_a_file_names_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "games.jsonl"
    good = a_record(0).to_json()
    bad = good.replace('"version":1', '"version":7')
    path.write_text(f"{good}\n\n{bad}\n")
    with pytest.raises(RecordError, match=r"^line 3: unknown version 7"):
        read_records(path)
    assert read_record(path, 0) == a_record(0)  # one game is read without the others


def test_a_record_starts_from_a_fresh_deal() -> None:
    states, actions = GAMES[0]
    with pytest.raises(ValueError, match="a record starts from a fresh deal"):
        record_game(states[3], actions[3:], PLAYERS)
    deal = Deal.of(states[0])
    assert deal.start() == states[0] and deal.first_player == states[0].current_player
