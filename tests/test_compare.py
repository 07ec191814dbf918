"""``patchwork compare`` and ``patchwork_env.compare`` (``patchwork_env.evaluation.compare``): the
pentanomial counts of real paired games (A's points: A is the candidate, ``compare A B`` asks whether
A is better than B), decisions, the journal (resume, a changed agent refused, a cut last line),
Ctrl-C, the results file and the command line's errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import patchwork_env
from patchwork_env.core.state import GameState
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.arena import play_pairs
from patchwork_env.evaluation.compare import CompareJournal, CompareResult, agent_identity, compare
from tests.cli import error_lines, patchwork

ROOT = Path(__file__).resolve().parent.parent


def first_legal(state: GameState) -> int:
    return int(state.legal_actions()[0])


def _agent_file(folder: Path, pick: int = -1) -> str:
    path = folder / "mine.py"
    path.write_text(f"def act(state):\n    return int(state.legal_actions()[{pick}])\n")
    return f"{path}:act"


def test_the_counts_are_the_pairs_of_the_arena_s_games() -> None:
    """Deal by deal, A's points in a pair are the arena's games on the same deals, A's view."""
    result = compare("greedy", "greedy:temp=2", max_pairs=8, seed=11)
    pairs = play_pairs("greedy", "greedy:temp=2", 8, seed=11, workers=1)
    assert pairs.deals_a_won_both != pairs.deals_b_won_both  # deals where A's view and B's differ
    assert result.pentanomial == (pairs.deals_b_won_both, 0, pairs.deals_split, 0, pairs.deals_a_won_both)
    assert result.pairs == 8 and result.games == 16 and result.wins_a == pairs.wins_a
    assert result.decision == "undecided" and result.stopped == "cap"  # 8 pairs cannot decide +-20 Elo
    assert result.score_a == pytest.approx(pairs.wins_a / 16)
    assert (result.elo > 0) == (pairs.wins_a > 8) and (result.los > 0.5) == (pairs.wins_a > 8)


def test_workers_play_the_same_pairs_and_stop_at_the_same_pair() -> None:
    alone = compare("mcts:sims=10", "greedy", max_pairs=200, seed=2)
    together = compare("mcts:sims=10", "greedy", max_pairs=200, seed=2, workers=2)
    assert alone.decision == together.decision == "better"  # A, the candidate, is the stronger
    assert (alone.pairs, alone.pentanomial, alone.llr) == (together.pairs, together.pentanomial, together.llr)
    assert alone.pairs < 120 and alone.llr >= alone.llr_bounds[1] and alone.los > 0.99 and alone.ci95[0] > 0
    assert alone.pentanomial[4] > alone.pentanomial[0] and alone.score_a > 0.5


@pytest.mark.parametrize("seed", [0, 1])
def test_greedy_is_not_better_than_itself_in_either_order(seed: int) -> None:
    """Played to a decision, greedy against itself ends "not better", whichever spec is A (one
    agent: the same games, the same counts). At a true 0 Elo a run may say "better" in up to alpha
    of runs (``test_sprt``; seed 4 does, after 535 pairs): these seeds pin two runs that do not."""
    first = None
    for a, b in (("greedy", "greedy:temp=0"), ("greedy:temp=0", "greedy")):
        result = compare(a, b, seed=seed)
        assert result.decision == "not better" and result.stopped == "lower bound", result
        assert result.ci95[0] < 0 < result.ci95[1] and 0.05 < result.los < 0.95, result
        first = first or (result.pairs, result.pentanomial, result.llr)
        assert (result.pairs, result.pentanomial, result.llr) == first


def test_a_much_weaker_a_is_not_better_in_few_pairs() -> None:
    result = compare("greedy:temp=8", "greedy", seed=4)
    assert result.decision == "not better" and result.stopped == "lower bound"
    assert result.pairs < 100 and result.elo < -200 and result.los < 0.01
    assert result.pentanomial[0] > result.pentanomial[4] and result.score_a < 0.5


def test_a_function_compares_in_either_seat_of_the_question() -> None:
    weaker = compare(first_legal, "greedy", max_pairs=120, seed=0)
    assert weaker.a == "first_legal" and weaker.decision == "not better" and weaker.pairs < 120
    assert weaker.identities["a"]["object"] == "tests.test_compare.first_legal" and weaker.identities["a"]["source"]
    assert weaker.identities["b"]["spec"] == "greedy:temp=0.0"
    stronger = compare("greedy", first_legal, max_pairs=120, seed=0)
    assert stronger.b == "first_legal" and stronger.decision == "better" and stronger.pairs < 120
    assert stronger.identities["b"]["object"] == "tests.test_compare.first_legal"


def test_resume_reads_the_journal_and_plays_only_the_rest(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    first = compare("greedy", "greedy:temp=2", max_pairs=5, seed=3, journal=journal)
    assert first.decision == "undecided" and len(journal.read_text().splitlines()) == 1 + 5
    # the journal's games are the ones counted: turn deal 0 into a pair A lost twice
    lines = journal.read_text().splitlines()
    entry = json.loads(lines[1])
    assert entry["deal"] == 0
    played = sum(game["a_won"] for game in entry["games"])  # A's points in deal 0 as played
    assert played > 0, "deal 0 of seed 3 must not be a pair A lost twice already"
    for game in entry["games"]:
        game["a_won"] = False
    journal.write_text("\n".join([lines[0], json.dumps(entry), *lines[2:]]) + "\n")
    more = compare("greedy", "greedy:temp=2", max_pairs=9, journal=journal)  # the seed comes from the journal
    fresh = compare("greedy", "greedy:temp=2", max_pairs=9, seed=3)
    assert more.seed == 3 and more.pairs == 9 and len(journal.read_text().splitlines()) == 1 + 9
    # deal 0 as the journal has it (A's 0 points), the rest as played
    assert fresh.pentanomial[0] + 1 == more.pentanomial[0]
    assert fresh.pentanomial[2 * played] - 1 == more.pentanomial[2 * played]
    assert sum(more.pentanomial) == sum(fresh.pentanomial) == 9


def test_a_journal_of_another_agent_or_a_changed_file_is_refused(tmp_path: Path) -> None:
    mine = _agent_file(tmp_path)
    journal = tmp_path / "j.jsonl"
    compare(mine, "greedy", max_pairs=2, seed=1, journal=journal)  # your agent, the candidate, as A
    header = journal.read_text().splitlines()[0]
    with pytest.raises(ValueError, match=r"holds the games of another A .*changed: its spec"):
        compare("greedy:temp=2", "greedy", max_pairs=2, journal=journal)
    with pytest.raises(ValueError, match=r"holds the games of another A"):
        compare("greedy", mine, max_pairs=2, journal=journal)  # A and B swapped
    with pytest.raises(ValueError, match="holds the deals of seed 1, not 2"):
        compare(mine, "greedy", max_pairs=2, seed=2, journal=journal)
    _agent_file(tmp_path, pick=0)  # the agent's file edited: another agent under the same spec
    with pytest.raises(ValueError, match=rf"another A .*changed: the file {tmp_path / 'mine.py'}\)"):
        compare(mine, "greedy", max_pairs=2, journal=journal)
    assert journal.read_text().splitlines()[0] == header and len(journal.read_text().splitlines()) == 3
    _agent_file(tmp_path)  # back as it was: the journal is its own again
    assert compare(mine, "greedy", max_pairs=3, journal=journal).pairs == 3


def test_a_function_without_source_cannot_keep_a_journal(tmp_path: Path) -> None:
    namespace: dict[str, object] = {}
    exec("def typed(state):\n    return int(state.legal_actions()[0])\n", namespace)  # no file to read it from
    with pytest.raises(ValueError, match="has neither source code nor a state that pickles"):
        compare(namespace["typed"], "greedy", max_pairs=2, journal=tmp_path / "j.jsonl")  # type: ignore[arg-type]
    assert not (tmp_path / "j.jsonl").exists()


def test_a_cut_last_line_is_played_again_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    compare("greedy", "random", max_pairs=3, seed=5, journal=journal)
    text = journal.read_text()
    journal.write_text(text[: len(text) - 40])  # killed while writing deal 2
    assert sorted(CompareJournal(journal).deals) == [0, 1]
    assert journal.read_text() == text[: text.rindex("\n", 0, len(text) - 1) + 1]  # the cut line is gone
    again = compare("greedy", "random", max_pairs=3, journal=journal)
    replayed = [json.loads(line) for line in journal.read_text().splitlines()]
    played = [json.loads(line) for line in text.splitlines()]
    assert again.pairs == 3 and len(replayed) == len(played) == 4  # deal 2 played again, the same games
    assert [(g["a_won"], g["actions"]) for g in replayed[3]["games"]] == [
        (g["a_won"], g["actions"]) for g in played[3]["games"]
    ]
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n')
    with pytest.raises(ValueError, match="line 1: not a journal of patchwork compare"):
        compare("greedy", "random", max_pairs=3, journal=other)


@pytest.mark.parametrize(("field", "value"), [("a_won", []), ("score_a", "x"), ("actions", None)])
def test_a_garbled_game_in_the_journal_is_refused_naming_its_line(tmp_path: Path, field: str, value: object) -> None:
    """A deal line's games are checked as the arena's journal checks them (``journal.deal_records``):
    a field of another type was read as it was and ended the run in a TypeError mid-comparison."""
    journal = tmp_path / "j.jsonl"
    compare("greedy", "random", max_pairs=2, seed=5, journal=journal)
    lines = journal.read_text().splitlines()
    entry = json.loads(lines[2])
    entry["games"][1][field] = value
    journal.write_text("\n".join([*lines[:2], json.dumps(entry), *lines[3:]]) + "\n")
    with pytest.raises(ValueError, match=rf"line 3: .*game 1 of deal 1: {field} "):
        compare("greedy", "random", max_pairs=3, journal=journal)


def test_the_identity_of_a_spec_holds_its_files_and_the_code(tmp_path: Path) -> None:
    mine = _agent_file(tmp_path)
    ident = agent_identity(mine)
    assert list(ident["files"]) == [str(tmp_path / "mine.py")] and ident["code"].startswith("patchwork-env ")
    assert agent_identity(mine) == ident and agent_identity("greedy") == agent_identity("GREEDY:temp=0")
    assert agent_identity("greedy")["fingerprint"] != agent_identity("greedy:temp=1")["fingerprint"]


def test_the_result_is_a_results_file_and_reads_in_a_notebook() -> None:
    result = compare("greedy:temp=8", "greedy", seed=4, command="patchwork compare greedy:temp=8 greedy --seed 4")
    data = results_file.check(result.to_dict())
    assert data["kind"] == results_file.COMPARISON and data["decision"] == "not better"
    assert data["pentanomial"] == list(result.pentanomial) and data["sprt"]["elo1"] == 20.0
    assert data["command"] == "patchwork compare greedy:temp=8 greedy --seed 4" and data["seeds"] == [4]
    assert data["a"] == "greedy:temp=8" and data["identities"]["a"]["spec"] == "greedy:temp=8.0"
    assert data["wins_a"] == result.wins_a < result.pairs and data["score_a"] < 0.5 and data["elo"] < 0
    assert "wins_b" not in data and "score_b" not in data
    assert repr(result).startswith("<CompareResult not better: A='greedy:temp=8' against B='greedy', Elo -")
    html = result._repr_html_()
    assert "<table>" in html and "A is not better" in html and "Elo of A over B" in html
    lines = result.summary().splitlines()
    assert lines[0] == "A is not better: greedy:temp=8 (A) against greedy (B)"
    assert lines[1].startswith("  Elo of A over B: -") and "pairs by A's points (0: " in lines[2]


def test_the_package_face_exports_compare() -> None:
    assert patchwork_env.compare is compare and "compare" in patchwork_env.__all__
    assert isinstance(compare("greedy", "random", max_pairs=1, seed=0), CompareResult)


# --- the command line ------------------------------------------------------------------------------
def test_the_command_decides_writes_its_results_file_and_removes_its_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.json"
    code = patchwork("compare", "mcts:sims=10", "greedy", "--seed", "2", "--workers", "1", "--json", str(out))
    printed = capsys.readouterr().out
    assert code == 0 and printed.startswith("A is better: mcts:sims=10 (A) against greedy (B)\n"), printed
    data = results_file.check(json.loads(out.read_text()))
    assert data["decision"] == "better" and data["specs"] == ["mcts:sims=10", "greedy"] and data["elo"] > 0
    assert data["command"] == f"patchwork compare mcts:sims=10 greedy --seed 2 --workers 1 --json {out}"
    assert not (tmp_path / "c.json.partial.jsonl").exists()  # decided: the games are in the JSON


def test_an_undecided_command_keeps_its_journal_and_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.json"
    argv = ["compare", "greedy:temp=2", "greedy", "--seed", "6", "--workers", "1", "--json", str(out)]
    assert patchwork(*argv, "--max-pairs", "4") == 0
    assert "c.json.partial.jsonl keeps the games" in capsys.readouterr().out
    assert patchwork(*argv, "--max-pairs", "200") == 0
    assert json.loads(out.read_text())["decision"] == "not better"
    assert not (tmp_path / "c.json.partial.jsonl").exists()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["greedy"], "the following arguments are required: B"),
        (["greedy", "nope"], "unknown agent 'nope'"),
        (["greedy", "mcts:sims=abc"], "parameter 'sims' must be int"),
        (["greedy", "greedy", "--elo0", "20", "--elo1", "10"], "elo0 < elo1"),
        (["greedy", "greedy", "--elo1", "nan"], "elo1 must be a finite number"),
        (["greedy", "greedy", "--alpha", "0.7"], "alpha (an error rate) must be in (0, 0.5]"),
        (["greedy", "greedy", "--beta", "x"], "argument --beta: invalid float value"),
        (["greedy", "greedy", "--max-pairs", "0"], "--max-pairs: must be >= 1"),
        (["greedy", "greedy", "--workers", "0"], "--workers: must be >= 1"),
        (["greedy", "greedy", "--seed", "-1"], "--seed: must be in 0..4294967295"),
        (["greedy", "greedy", "--json", "/no/such/folder/c.json"], "--json: the folder /no/such/folder does not exist"),
        (["greedy", "greedy", "--json", "SAME", "--journal", "SAME"], "--json and --journal name one file"),
        (["greedy", "/no/such.py:act"], "/no/such.py: no such file"),
    ],
)
def test_bad_input_is_one_error_line_before_any_game(
    argv: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(tmp_path / "same.json") if a == "SAME" else a for a in argv]
    code = patchwork("compare", *argv, "--no-progress")
    err = capsys.readouterr().err
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert needle in lines[0] and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_journal_of_other_agents_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "j.jsonl"
    assert patchwork("compare", "greedy", "random", "--max-pairs", "2", "--journal", str(journal)) == 0
    capsys.readouterr()
    code = patchwork("compare", "greedy", "greedy:temp=2", "--max-pairs", "2", "--journal", str(journal))
    lines = error_lines(capsys.readouterr().err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {journal} holds the games of another B")


def test_ctrl_c_keeps_what_was_played_and_the_same_command_continues(tmp_path: Path) -> None:
    """A real process: Ctrl-C once the journal holds a few deals prints the comparison so far and
    exits 130; the journal keeps the deals, and the same command goes on from them."""
    journal = tmp_path / "j.jsonl"
    argv = [sys.executable, "-m", "patchwork_env.cli", "compare", "mcts:sims=10", "greedy", "--elo0", "300",
            "--elo1", "310", "--seed", "4", "--workers", "1", "--no-progress", "--journal", str(journal)]  # fmt: skip
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    while proc.poll() is None and (not journal.exists() or len(journal.read_text().splitlines()) < 4):
        time.sleep(0.05)  # waiting for deals, not timing anything
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert out.startswith("undecided (interrupted): mcts:sims=10 (A) against greedy (B)"), out
    kept = len(journal.read_text().splitlines()) - 1
    counted = int(err.split("interrupted after ")[1].split()[0])
    assert kept >= 3 and kept - 1 <= counted <= kept, err  # Ctrl-C may land between a deal's line and its count
    again = subprocess.run([*argv, "--max-pairs", str(kept + 2)], cwd=tmp_path, env=environ, capture_output=True,
                           text=True, timeout=300)  # fmt: skip
    assert again.returncode == 0 and f"{kept + 2} pairs ({2 * kept + 4} games)" in again.stdout, again.stderr
    assert len(journal.read_text().splitlines()) == 1 + kept + 2


def _ctrl_c_as_in_a_terminal() -> None:
    """The child takes Ctrl-C as a terminal's process does, even when this test runs where SIGINT is
    ignored (a background job of a non-interactive shell passes SIG_IGN on to its children)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
