"""The terminal game: a full game fed by a script, bad input answered with hints, the notation."""

from __future__ import annotations

import io

import pytest

from patchwork_env import new_game
from patchwork_env.cli.play import compact_positions, describe_moves, describe_slot, play, read_move
from patchwork_env.core.actions import action_to_str, decode_action, encode_buy
from tests.cli import patchwork


def script_for(seed: int) -> tuple[int, list[str]]:
    """The seat that moves first and a script: one real buy, bad input and commands, then enough
    advance / leather lines to finish any game (illegal ones are answered and skipped)."""
    start = new_game(seed)
    seat = start.current_player
    buy = next(a for a in start.legal_actions().tolist() if decode_action(a).kind == "buy")
    lines = [action_to_str(buy), "", "flip the table", "buy s2 o0 r0c0", "moves s9", "moves x", "hint", "help"]
    lines += ["board", "moves", "moves s0", "buy s0 o0 r9c9"]
    for k in range(81):
        lines += ["a", f"r{k // 9}c{k % 9}"]
    return seat, lines


def test_a_full_game_fed_by_a_script() -> None:
    seat, lines = script_for(3)
    out = io.StringIO()
    final = play("greedy", seat=seat, seed=3, stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out)
    text = out.getvalue()
    assert final.is_terminal
    assert final.placements(seat)[0][0] >= 0  # the scripted buy was played
    assert ("You win" in text) or ("You lose" in text)
    assert "cannot read action 'flip the table'" in text and "Type 'help'" in text
    assert "not legal" in text and "Type 'moves'" in text
    assert "no slot s9" in text and "greedy would play" in text and "leather r<row>c<col>" in text
    assert text.count("greedy (P") >= 5  # the opponent's moves are announced
    assert text.count("time ") >= final.ply  # the board is drawn after every move


def test_quit_and_end_of_input_leave_without_a_crash() -> None:
    seat, _ = script_for(1)
    out = io.StringIO()
    state = play("random", seat=seat, seed=1, stdin=io.StringIO("moves\nquit\n"), stdout=out)
    assert not state.is_terminal and out.getvalue().rstrip().endswith("bye")
    state = play("random", seat=seat, seed=1, stdin=io.StringIO(""), stdout=io.StringIO())
    assert not state.is_terminal


def test_short_forms_of_moves() -> None:
    assert read_move("a") == read_move("advance") == read_move(" PASS ")
    assert read_move("s1 o4 r5c3") == encode_buy(1, 4, 5, 3)
    assert read_move("buy s1 o4 r5 c3") == encode_buy(1, 4, 5, 3)
    assert action_to_str(read_move("r2c7")) == "leather r2c7"
    with pytest.raises(ValueError, match="cannot read"):
        read_move("s1 o4")


def test_positions_are_listed_compactly() -> None:
    assert compact_positions([(5, 0), (5, 1), (5, 2), (5, 6), (6, 0)]) == "r5 c0-2,6  r6 c0"
    assert compact_positions([(r, c) for r in range(8) for c in range(8)]) == "r0-7 c0-7"
    assert compact_positions([(0, 4), (1, 4), (2, 4), (4, 4)]) == "r0-2 c4  r4 c4"


def test_move_lists_name_every_option() -> None:
    s = new_game(0)
    summary = describe_moves(s)
    assert f"legal moves ({len(s.legal_actions())})" in summary and "advance" in summary
    for slot in range(3):
        assert f"s{slot}: patch {s.market[slot]}" in summary
    detail = describe_slot(s, 0)
    n = sum(1 for a in s.legal_actions().tolist() if a < 648)
    assert f"s0: patch {s.market[0]}" in detail
    assert sum(int(part.split("(")[1].split()[0]) for part in detail.splitlines() if "positions)" in part) == n


def test_play_cli_rejects_a_bad_opponent(capsys: pytest.CaptureFixture[str]) -> None:
    assert patchwork("play", "--opponent", "deep-blue") == 2
    assert "unknown agent" in capsys.readouterr().err
