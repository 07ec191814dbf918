"""Agents contained, no process left behind (issue 63, items 1 and 4).

Your own agent plays in a process of its own (``patchwork_env.players.contained``), with one worker
as with many: whatever it does (``sys.exit``, ``os._exit``, an abort, a segfault,
``KeyboardInterrupt``, ``GeneratorExit``, an exception; in its constructor, its factory, ``reset``
or ``act``) is one ``error:`` line naming it (and the game and the move once games are played),
exit code 2, never a silent exit 0, a death by signal or a traceback. And a command's processes
end with it, however it ends (``patchwork_env.core.processes``): SIGKILL too.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from patchwork_env.core.state import GameState
from patchwork_env.evaluation.arena import AgentError, play_pairs
from patchwork_env.evaluation.games import play_deal
from patchwork_env.players.contained import AgentFailure
from patchwork_env.players.registry import make_agent
from tests.cli import error_lines

TIMEOUT = 180  # seconds for one command: a few tiny games on a loaded machine

AGENTS = """
import ctypes, os, sys, time

# the failures happen in a pool's worker only when FAIL_IN=worker (the command's own process then
# builds and warms the agent up without a fault, as a --workers 2 run does before its games)
FAILS_HERE = os.environ.get("FAIL_IN") != "worker" or os.environ.get("PATCHWORK_WORKER") == "1"
CALLS = [0]

def _legal(state):
    return int(state.legal_actions()[0])

def _now():                    # the warm-up is call 1 of each process that builds the agent: 3 is in a game
    CALLS[0] += 1
    return FAILS_HERE and CALLS[0] >= 3

def sys_exit(state):
    if _now(): sys.exit(0)
    return _legal(state)

def os_exit(state):
    if _now(): os._exit(0)
    return _legal(state)

def segfault(state):
    if _now(): ctypes.string_at(0)
    return _legal(state)

def abort(state):
    if _now(): os.abort()
    return _legal(state)

def keyboard_interrupt(state):
    if _now(): raise KeyboardInterrupt
    return _legal(state)

def generator_exit(state):
    if _now(): raise GeneratorExit
    return _legal(state)

def error(state):
    if _now(): raise ZeroDivisionError("boom")
    return _legal(state)

def late_exit(state):          # after a few games
    CALLS[0] += 1
    if CALLS[0] > 150: os._exit(0)
    return _legal(state)

def slow(state):
    time.sleep(0.05)
    return _legal(state)

class ExitsInConstructor:
    def __init__(self):
        if FAILS_HERE: sys.exit(0)
    def act(self, state, rng):
        return _legal(state)

def exiting_factory():
    if FAILS_HERE: os._exit(0)
    return _legal

class ResetRaises:
    def reset(self):
        if FAILS_HERE: raise RuntimeError("no reset")  # was a traceback from a worker (not a ValueError)
    def act(self, state, rng):
        return _legal(state)
"""

IN_GAME = {  # agent -> what its error line says, after "<spec> ... on game N (deal D, seat S) at move M: "
    "sys_exit": ("exited", "sys.exit(0)"),
    "os_exit": ("exited", "its process ended with exit code 0"),
    "segfault": ("crashed", "its process was killed by SIGSEGV"),
    "abort": ("crashed", "its process was killed by SIGABRT"),
    "keyboard_interrupt": ("raised", "KeyboardInterrupt"),
    "generator_exit": ("raised", "GeneratorExit"),
    "error": ("raised", "ZeroDivisionError: boom"),
}
BEFORE_GAMES = {  # spec -> what its error line says
    "contained_agents.py:ExitsInConstructor": "calling ExitsInConstructor() to make the agent raised SystemExit: 0",
    "contained_agents.py:exiting_factory": "exited while it was being built: its process ended with exit code 0",
    "contained_agents.py:ResetRaises": "raised in reset() after a test move, before any game: RuntimeError: no reset",
    "sys:exit": "calling exit() to make the agent raised SystemExit",
    "os:abort": "crashed while it was being built: its process was killed by SIGABRT",
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with the agents' file (not agents.py, which would hide the project's package)."""
    (tmp_path / "contained_agents.py").write_text(AGENTS)
    return tmp_path


def _command(
    folder: Path, command: str, spec: str, workers: str, *extra: str, pairs: int = 2
) -> subprocess.CompletedProcess[str]:
    """``patchwork evaluate`` (against random, ``pairs`` deals) or ``patchwork ladder`` (v1) of
    ``spec``; with ``workers`` 2 the agent fails in a worker only."""
    if command == "evaluate":
        argv = ["evaluate", "--agents", spec, "random", "--pairs", str(pairs)]
    else:
        argv = ["ladder", spec, "--ladder", "v1"]
    env = {**os.environ, "FAIL_IN": "worker" if workers == "2" else "any"}
    return subprocess.run(
        [sys.executable, "-m", "patchwork_env.cli", *argv, "--workers", workers, "--no-progress", *extra],
        cwd=folder, capture_output=True, text=True, timeout=TIMEOUT, env=env,
    )  # fmt: skip


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The command ended with code 2 (not 0, not a signal), one ``error:`` line and no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "Fatal Python error" not in proc.stderr, proc.stderr[-2000:]
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "Elo" not in proc.stdout  # no table: the run did not pass for a success
    return lines[0]


CASES = [
    *[("evaluate", agent, workers) for agent in IN_GAME for workers in ("1", "2")],
    *[("ladder", agent, "2") for agent in IN_GAME],
    ("ladder", "sys_exit", "1"),
    ("ladder", "os_exit", "1"),
]


@pytest.mark.parametrize(("command", "agent", "workers"), CASES)
def test_an_agent_that_ends_mid_game_is_one_error_line_naming_it_the_game_and_the_move(
    folder: Path, command: str, agent: str, workers: str
) -> None:
    spec = f"contained_agents.py:{agent}"
    line = _one_error_line(_command(folder, command, spec, workers))
    verb, detail = IN_GAME[agent]
    assert line.startswith(f"error: {spec} {verb} on game ") and " at move " in line and detail in line, line


@pytest.mark.parametrize(("command", "workers"), [("evaluate", "1"), ("ladder", "2")])
@pytest.mark.parametrize("spec", list(BEFORE_GAMES))
def test_an_agent_that_ends_while_built_or_reset_is_one_error_line_naming_it(
    folder: Path, spec: str, command: str, workers: str
) -> None:
    line = _one_error_line(_command(folder, command, spec, workers))
    assert line.startswith(f"error: {spec}") and BEFORE_GAMES[spec] in line, line


def test_the_games_finished_before_an_exit_stay_in_the_journal(folder: Path) -> None:
    proc = _command(folder, "evaluate", "contained_agents.py:late_exit", "1", "--json", "out.json", pairs=8)
    line = _one_error_line(proc)
    assert line.startswith("error: contained_agents.py:late_exit exited on game ") and "exit code 0" in line
    assert "games finished before it are kept in out.json.partial.jsonl" in line, line
    assert (folder / "out.json.partial.jsonl").is_file() and not (folder / "out.json").exists()


# --- from Python: functions and classes of yours, in a process of their own ---------------------------
def test_a_function_of_yours_plays_in_a_process_of_its_own_with_one_worker(tmp_path: Path) -> None:
    """A closure (no pickling possible) plays in a forked process; what it writes says where."""
    pids = tmp_path / "pids.txt"

    def where(state: GameState) -> int:
        with pids.open("a") as f:
            f.write(f"{os.getpid()}\n")
        return int(state.legal_actions()[0])

    result = play_pairs(where, "random", 1, seed=0, workers=1)
    assert result.games == 2 and result.illegal_a == 0
    seen = {int(p) for p in pids.read_text().split()}
    assert len(seen) == 1 and os.getpid() not in seen


class Sampler:
    """Draws from the arena's generator, so that a game shows whether the generator travels right."""

    name = "sampler"

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        legal = state.legal_actions()
        return int(legal[rng.integers(len(legal))])


def test_a_contained_agent_plays_the_same_games_as_in_this_process() -> None:
    contained = play_pairs(Sampler, "random", 2, seed=3, workers=1)
    here = [r for d in range(2) for r in play_deal(Sampler(), make_agent("random"), 3, d)]
    assert [r.actions for r in contained.records] == [r.actions for r in here]


@pytest.mark.parametrize(
    ("how", "verb", "detail"),
    [
        ("os_exit", "exited", "exit code 7"),
        ("segfault", "crashed", "SIGSEGV"),
        ("sys_exit", "exited", "sys.exit(5)"),
        ("keyboard_interrupt", "raised", "KeyboardInterrupt"),
    ],
)
def test_a_function_that_ends_its_process_stops_the_run_not_this_process(how: str, verb: str, detail: str) -> None:
    calls = [0]

    def ends(state: GameState) -> int:
        calls[0] += 1
        if calls[0] == 4:
            if how == "os_exit":
                os._exit(7)
            if how == "segfault":
                faulthandler.disable()  # in the agent's process: pytest's dump of it would only be noise
                ctypes.string_at(0)
            if how == "sys_exit":
                sys.exit(5)
            raise KeyboardInterrupt
        return int(state.legal_actions()[0])

    with pytest.raises(AgentError) as info:
        play_pairs(ends, "random", 1, seed=0, workers=1)
    text = str(info.value)
    assert text.startswith(f"ends {verb} on game 0 (deal 0, seat 0) at move ") and detail in text, text
    assert info.value.agent == "ends" and info.value.game == 0 and info.value.move >= 1


class ExitsWhenBuilt:
    def __init__(self) -> None:
        sys.exit(0)

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        return 0


def test_a_class_whose_constructor_exits_is_an_error_naming_it() -> None:
    with pytest.raises(AgentFailure, match=r"^ExitsWhenBuilt exited while it was being built: sys.exit\(0\)$"):
        play_pairs(ExitsWhenBuilt, "random", 1, seed=0, workers=1)


# --- no process left behind -----------------------------------------------------------------------
def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _below(root: int, depth: int) -> list[int]:
    """The live processes ``depth`` levels below ``root`` in its group (1: its children)."""
    parents = {}
    for pid in _group(root):
        with contextlib.suppress(OSError, IndexError):
            parents[pid] = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    level = {root}
    for _ in range(depth):
        level = {pid for pid, parent in parents.items() if parent in level}
    return sorted(level)


def _killed_leaves_nothing(argv: list[str], cwd: Path, depth: int, count: int) -> None:
    """Start ``argv`` in a group of its own, wait until ``count`` processes run ``depth`` levels below
    it, SIGKILL it (nothing of it runs after that): every process of the group ends."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while len(_below(proc.pid, depth)) < count:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.2)
        time.sleep(1)
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20
        while _group(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _group(proc.pid)
        for pid in left:  # not left to run on after the test
            os.kill(pid, signal.SIGKILL)
        assert not left, f"left behind: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_ladder_killed_by_sigkill_leaves_no_worker_and_no_agents_process(folder: Path) -> None:
    argv = [sys.executable, "-m", "patchwork_env.cli", "ladder", "contained_agents.py:slow", "--ladder", "v1",
            "--workers", "2", "--no-progress"]  # fmt: skip
    _killed_leaves_nothing(argv, folder, depth=2, count=2)  # two workers, each with the agent's own process


def test_a_trainers_workers_die_with_it(tmp_path: Path) -> None:
    """The trainers' pools (``LocalBackend``, ``run_unordered``): a SIGKILL leaves none of them."""
    (tmp_path / "trainer.py").write_text(
        "import time\n"
        "from patchwork_env.evaluation.backend import LocalBackend\n"
        "def work(shared, item):\n"
        "    time.sleep(60)\n"
        "if __name__ == '__main__':\n"
        "    list(LocalBackend(2).map(work, None, list(range(4))))\n"
    )
    _killed_leaves_nothing([sys.executable, "trainer.py"], tmp_path, depth=1, count=2)


def test_patchwork_contain_0_plays_your_agent_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The way out for a debugger or CUDA (``PATCHWORK_CONTAIN=0``): the agent plays here, and what
    it changes in itself is seen here."""
    calls = [0]

    def counted(state: GameState) -> int:
        calls[0] += 1
        return int(state.legal_actions()[0])

    play_pairs(counted, "random", 1, seed=0, workers=1)
    assert calls == [0]  # contained: it counted in its own process
    monkeypatch.setenv("PATCHWORK_CONTAIN", "0")
    result = play_pairs(counted, "random", 1, seed=0, workers=1)
    assert calls[0] == 1 + result.records[0].moves_a + result.records[1].moves_a  # the warm-up and every move
