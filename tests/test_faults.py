"""Faults, round 3 (issue 39): each reproducer of the issue as a regression test. Output paths are
checked before the work (a FIFO never blocks), sizes are bounded at parse time, a state's array
cannot be made writable, seats and players are integers only, SIGTERM ends the arena's workers,
and a huge records line is refused without being read whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from patchwork_env import PatchworkVectorEnv, SingleAgentEnv, VectorGames, encode_leather, new_game
from patchwork_env.cli import common
from patchwork_env.core.files import OutputPathError, check_output_path, write_atomic
from patchwork_env.core.records import RecordError, read_record
from patchwork_env.evaluation import arena
from tests.cli import error_lines, patchwork

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--agents", "greedy", "random", "--pairs", "1", "--json", "{fifo}"],
        ["evaluate", "--agents", "greedy", "random", "--pairs", "1", "--journal", "{fifo}"],
        ["ladder", "random", "--json", "{fifo}"],
        ["ladder", "random", "--json", "{dir}"],
        ["ladder", "random", "--json", "/dev/full"],
        ["evaluate", "--agents", "greedy", "random", "--pairs", "1", "--json", "{dir}"],
        ["evaluate", "--agents", "greedy", "random", "--pairs", "1", "--json", "{dir}/missing/out.json"],
        ["evaluate", "--agents", "greedy", "random", "--pairs", "1", "--records", "/proc/x"],
        ["ladder", "random", "--records", "{fifo}"],
    ],
)
def test_an_output_path_that_cannot_take_a_file_is_refused_before_any_game(
    argv: list[str], fifo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    args = [a.format(fifo=fifo, dir=tmp_path) for a in argv]
    assert patchwork(*args) == 2
    captured = capsys.readouterr()
    lines = error_lines(captured.err)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "games" not in captured.out and "Elo" not in captured.out  # no table: no game was played
    assert time.monotonic() - started < 30


def test_replay_to_a_fifo_is_refused(fifo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "games"
    assert patchwork("evaluate", "--agents", "greedy", "random", "--pairs", "1", "--records", str(records),
                     "--no-progress", "--workers", "1") == 0  # fmt: skip
    (game,) = records.glob("*.jsonl")
    capsys.readouterr()
    assert patchwork("replay", str(game), "-o", str(fifo)) == 2
    assert error_lines(capsys.readouterr().err) == [f"error: -o: {fifo} is a FIFO; give the path of a file"]


def test_check_output_path_names_what_is_wrong(fifo: Path, tmp_path: Path) -> None:
    with pytest.raises(OutputPathError, match="is a FIFO"):
        check_output_path(fifo, "--json")
    with pytest.raises(OutputPathError, match="is a folder"):
        check_output_path(tmp_path, "--json")
    with pytest.raises(OutputPathError, match="does not exist"):
        check_output_path(tmp_path / "no" / "x.json", "--json")
    regular = tmp_path / "file.txt"
    regular.write_text("x")
    with pytest.raises(OutputPathError, match=r"Not a directory|does not exist"):
        check_output_path(regular / "under-a-file.json", "--run-dir")
    assert check_output_path(tmp_path / "new.json") == tmp_path / "new.json"


def test_write_atomic_leaves_the_old_file_or_the_new_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "out.json"
    write_atomic(path, "old\n")

    def killed(fd: int) -> None:  # the process is interrupted while the new file reaches the disk
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", killed)
        with pytest.raises(KeyboardInterrupt):
            write_atomic(path, "new, but never whole\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left behind
    write_atomic(path, "new\n")
    assert path.read_text() == "new\n"


def test_pairs_are_bounded_when_the_command_line_is_parsed(capsys: pytest.CaptureFixture[str]) -> None:
    assert common.MAX_PAIRS == arena.MAX_PAIRS
    assert patchwork("evaluate", "--agents", "greedy", "random", "--pairs", "1000000000000") == 2
    assert "must be at most 1,000,000" in capsys.readouterr().err
    with pytest.raises(ValueError, match="num_pairs"):
        arena.play_pairs("greedy", "random", 10**12)


def test_vector_engines_are_bounded() -> None:
    with pytest.raises(ValueError, match=r"num_games must be an integer in 1\.\.131,072"):
        VectorGames(10**7)
    with pytest.raises(ValueError, match=r"num_games must be an integer in 1\.\.131,072"):
        PatchworkVectorEnv(10**7)


def test_a_states_array_cannot_be_made_writable() -> None:
    state = new_game(seed=0)
    a = state.array()
    with pytest.raises(ValueError, match="WRITEABLE"):
        a.setflags(write=True)
    assert state.legal_actions().size > 0  # (the issue: a[NCIRCLE] = 10**6 then legal_actions() segfaulted)


@pytest.mark.parametrize(
    "call",
    [
        lambda: new_game(first_player=True),
        lambda: new_game(first_player=1.0),
        lambda: SingleAgentEnv(seat=1.0),
        lambda: SingleAgentEnv().reset(options={"seat": 1.0}),
        lambda: PatchworkVectorEnv(2, seat=1.0),
        lambda: VectorGames(2).observe(np.array([0.0, 1.0])),
        lambda: encode_leather(0.5, 0),  # type: ignore[arg-type]
    ],
)
def test_seats_and_players_are_integers_only(call: object) -> None:
    with pytest.raises(ValueError, match="integer"):
        call()  # type: ignore[operator]


def test_a_negative_game_index_is_refused() -> None:
    games = VectorGames(2, seed=0)
    with pytest.raises(IndexError, match=r"0\.\.1"):
        games.game(-1)
    assert games.game(np.int64(1)) == games.game(1)


def test_a_records_line_too_long_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    from patchwork_env.core import records

    path = tmp_path / "huge.jsonl"
    with path.open("w") as f:
        f.write("x" * (records.MAX_LINE_CHARS + 10))  # no newline: the whole file is one line
    with pytest.raises(RecordError, match="more than 8000000 characters"):
        read_record(path, 0)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def test_sigterm_ends_an_evaluation_and_its_workers_quietly(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "patchwork_env.cli", "evaluate", "--agents", "greedy", "mcts:sims=300",
         "--pairs", "100", "--workers", "2", "--no-progress"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:  # the pool (and its tracker) is up
        time.sleep(0.5)
    workers = _children(proc.pid)
    assert len(workers) >= 2
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert error_lines(err) == ["terminated"]
    time.sleep(1)
    alive = [
        p for p in workers if Path(f"/proc/{p}").exists() and "zombie" not in Path(f"/proc/{p}/status").read_text()
    ]
    assert not alive, alive


def test_an_interrupted_evaluation_keeps_its_games_and_the_same_command_continues(tmp_path: Path) -> None:
    """Killed mid-run, ``patchwork evaluate --json OUT`` leaves ``OUT.partial.jsonl`` with every
    finished deal; the same command then plays only the rest, and the partial file goes once OUT
    is written."""
    out = tmp_path / "eval.json"
    argv = [sys.executable, "-m", "patchwork_env.cli", "evaluate", "--agents", "greedy", "mcts:sims=200",
            "--pairs", "40", "--workers", "1", "--no-progress", "--json", str(out)]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    partial = tmp_path / "eval.json.partial.jsonl"
    deadline = time.monotonic() + 180
    while (not partial.exists() or len(partial.read_text().splitlines()) < 3) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.kill()  # SIGKILL: nothing of the process runs after this
    proc.communicate(timeout=60)
    kept = len(partial.read_text().splitlines())
    assert kept >= 3 and not out.exists()
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.is_file() and not partial.exists()
    data = json.loads(out.read_text())
    assert data["pairs"][0]["games"] == 80
    fresh = subprocess.run([*argv[:-1], str(tmp_path / "fresh.json")], cwd=tmp_path, capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    assert fresh.returncode == 0
    again = json.loads((tmp_path / "fresh.json").read_text())
    assert data["pairs"][0]["wins_a"] == again["pairs"][0]["wins_a"]


@pytest.mark.parametrize(
    ("body", "workers", "message"),
    [
        ("def act(state):\n    raise ZeroDivisionError('boom')\n", "1", "raised on a test move, before any game"),
        (
            "calls = [0]\ndef act(state):\n    calls[0] += 1\n    if calls[0] > 5:\n"
            "        raise ZeroDivisionError('boom')\n    return int(state.legal_actions()[0])\n",
            "2",
            "raised on game",  # the agent, the game (deal, seat) and the move: evaluation.games.AgentError
        ),
        (
            "import os\ncalls = [0]\ndef act(state):\n    calls[0] += 1\n    if calls[0] > 5:\n        os._exit(3)\n"
            "    return int(state.legal_actions()[0])\n",
            "2",
            "exited on game",  # in its own process inside the worker (players.contained): the worker lives on
        ),
    ],
)
def test_an_agent_that_fails_is_one_error_line_from_the_command(
    body: str, workers: str, message: str, tmp_path: Path
) -> None:
    (tmp_path / "bad.py").write_text(body)
    proc = subprocess.run(
        [sys.executable, "-m", "patchwork_env.cli", "ladder", "bad.py:act", "--ladder", "v1", "--workers", workers,
         "--no-progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_a_callable_that_returns_a_float_loses_by_illegal_actions_instead_of_stopping_the_rating() -> None:
    from patchwork_env import rate

    result = rate(lambda state: 2025.0, ladder="v1")
    assert result.illegal_actions == result.games > 0 and result.scale == "below"
