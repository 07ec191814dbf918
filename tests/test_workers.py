"""patchwork_env.evaluation.workers, the local backend and the arena's journal: a dying worker or
agent never hangs a run, a script without a main guard is refused before any process starts, finished deals survive
an interruption and are not played again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from patchwork_env.core.state import GameState
from patchwork_env.evaluation.arena import Journal, play_pairs
from patchwork_env.evaluation.backend import LocalBackend
from patchwork_env.evaluation.workers import RunError, WorkerError, run_unordered

ROOT = Path(__file__).resolve().parent.parent


class ExitsOnDeal:
    """A picklable agent that ends its worker process in one of several ways on deal 1's game."""

    name = "exits"

    def __init__(self, how: str) -> None:
        self.how = how
        self.moves = 0

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        self.moves += 1
        if self.moves == 30:  # well into the first worker's deals
            if self.how == "os_exit":
                os._exit(3)
            if self.how == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "segfault":
                os.kill(os.getpid(), signal.SIGSEGV)
            if self.how == "system_exit":
                raise SystemExit(4)
            if self.how == "keyboard_interrupt":
                raise KeyboardInterrupt
        return int(state.legal_actions()[0])


@pytest.fixture
def watchdog() -> object:
    """A hang fails the test (TimeoutError after 120 s) instead of stopping the suite."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("the run hung for 120 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("how", ["os_exit", "sigkill", "segfault", "system_exit", "keyboard_interrupt"])
def test_a_dying_worker_is_an_error_naming_the_games_not_a_hang(how: str, watchdog: object) -> None:
    """The agent plays in a process of its own inside the worker (``players.contained``): its end is
    an error naming it, the game and the move, and the worker lives on (a worker's own death:
    ``test_the_local_backend_maps_in_item_order_and_a_dying_worker_is_an_error``)."""
    started = time.monotonic()
    with pytest.raises(RunError) as info:
        play_pairs(ExitsOnDeal(how), "random", 6, seed=0, workers=2)
    assert time.monotonic() - started < 120
    text = str(info.value)
    assert text.startswith("exits ") and " on game " in text and " at move " in text
    expected = {"os_exit": "exit code 3", "sigkill": "SIGKILL", "segfault": "SIGSEGV", "system_exit": "sys.exit(4)"}
    assert expected.get(how, "KeyboardInterrupt") in text


def _square(x: int) -> int:
    return x * x


def test_run_unordered_gives_every_item_once_with_a_bounded_queue() -> None:
    """Items are drawn as workers free up (at most two in flight per worker), never listed up front:
    ``--pairs 10**12`` must not build a list of 10**12 jobs."""
    seen: list[int] = []

    def items() -> Iterator[int]:
        for i in range(40):
            seen.append(i)
            yield i

    results = run_unordered(_square, items(), workers=2)
    first = next(results)
    assert len(seen) <= 2 * 2 + 2  # the queue's worth, not all 40
    out = dict([first, *results])
    assert out == {i: i * i for i in range(40)} and len(seen) == 40


def _power(shared: int, x: int) -> int:
    if x < 0:
        os._exit(3)  # a worker that dies
    time.sleep(0.01 * (x % 3))  # items finish out of order
    return int(x**shared)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_local_backend_maps_in_item_order_and_a_dying_worker_is_an_error(workers: int, watchdog: object) -> None:
    """``LocalBackend.map`` is the Ray backend's interface here: ``fn(shared, item)`` for every item,
    in item order, ``shared`` sent once to each process; a worker that dies is a ``WorkerError``."""
    backend = LocalBackend(workers)
    assert list(backend.map(_power, 3, list(range(12)))) == [x**3 for x in range(12)]
    assert list(backend.map(_power, 2, [])) == []
    if workers > 1:
        with pytest.raises(WorkerError, match="worker process died"):
            list(backend.map(_power, 2, [1, 2, -1, 3]))
    with pytest.raises(ValueError, match="workers must be >= 1"):
        LocalBackend(0)


def test_a_journal_keeps_finished_deals_and_a_rerun_plays_only_the_rest(tmp_path: Path) -> None:
    log = tmp_path / "calls.txt"  # the agent plays in a process of its own (players.contained): it counts in a file
    log.touch()

    def counting(state: GameState) -> int:
        with log.open("a") as f:
            f.write("x")
        return int(state.legal_actions()[0])

    path = tmp_path / "games.jsonl"
    first = play_pairs(counting, "random", 3, seed=5, workers=1, journal=Journal(path))
    assert len(path.read_text().splitlines()) == 1 + 2 + 3  # its header, who played (A and B), the deals
    with path.open("a") as f:  # a run killed while writing: its last line is a part of one
        f.write('{"a": "counting", "b": "random", "seed": 5, "forf')
    journal = Journal(path)
    assert len(journal) == 3
    again = play_pairs(counting, "random", 5, seed=5, workers=1, journal=journal)
    assert [r.actions for r in again.records[:6]] == [r.actions for r in first.records]
    assert len(Journal(path)) == 5
    before = len(log.read_text())
    done = play_pairs(counting, "random", 5, seed=5, workers=1, journal=Journal(path))
    assert len(log.read_text()) - before == 1  # the warm-up move only: no game is played again
    fresh = play_pairs(counting, "random", 5, seed=5, workers=1)
    assert [r.actions for r in done.records] == [r.actions for r in fresh.records]


def test_a_journal_that_is_not_one_says_which_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl, line 1: not a journal entry"):
        Journal(path)


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_rate_with_workers_from_a_script_without_a_main_guard_is_refused_at_once(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        import patchwork_env
        def act(state):
            return int(state.legal_actions()[0])
        patchwork_env.rate(act, workers=2, ladder="v1")
        """,
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert "SpawnError" in last and "line 5 runs this call at the top level" in last
    assert 'if __name__ == "__main__":' in last


def test_the_same_script_with_a_main_guard_rates_on_two_workers(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        import json, patchwork_env
        def act(state):
            return int(state.legal_actions()[0])
        if __name__ == "__main__":
            result = patchwork_env.rate(act, name="mine", workers=2, ladder="v1")
            print(json.dumps(result.to_dict()))
        """,
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["agent"] == "mine" and out["ladder"] == "v1" and out["games"] == 60
    for key in ("command", "commit", "version", "date", "machine", "seeds"):
        assert key in out
    assert out["command"].startswith("patchwork_env.rate(act, name='mine'")
