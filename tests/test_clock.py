"""Fair budgets on a shared machine (``patchwork_env.players.clock``): a search's ``time`` counts
CPU seconds of its process by default (``clock=cpu``) or wall seconds (``clock=wall``), in ``mcts``
and both ``az`` searches; and an agent built by ``make_agent`` has compiled (or loaded) every
kernel before its first timed move, whatever harness drives it. No timing is asserted: the clocks
are replaced by counters, and compiling is seen in numba's dispatchers."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from patchwork_env import new_game
from patchwork_env.players import clock
from patchwork_env.players.registry import make_agent

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fake_cpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The CPU clock as a counter that advances 1 ms at every reading (``now[0]``)."""
    now = [0.0]

    def tick() -> float:
        now[0] += 0.001
        return now[0]

    monkeypatch.setitem(clock.CLOCKS, "cpu", tick)
    yield now


def test_a_cpu_deadline_does_not_pass_while_the_process_waits() -> None:
    """Under load a process waits for a core: the wall clock runs on, its CPU time does not. A
    sleeping process is the extreme case: a wall deadline passes, a CPU deadline does not."""
    cpu, wall = clock.Deadline(0.05, "cpu"), clock.Deadline(0.05, "wall")
    time.sleep(0.2)
    assert wall.reached() and not cpu.reached() and 0 < cpu.left() <= 0.05
    # a search written for a wall deadline (``time.perf_counter() >= deadline``) honours the clock
    assert time.perf_counter() >= wall and not time.perf_counter() >= cpu
    assert time.perf_counter() < cpu and not time.perf_counter() < wall
    assert clock.reached(cpu) is False and clock.reached(None) is False and clock.reached(0.0) is True
    with pytest.raises(ValueError, match="clock must be one of cpu, wall"):
        clock.Deadline(1.0, "gpu")


@pytest.mark.parametrize("spec", ["mcts:time=0.05", "az:time=0.05"])
def test_time_is_cpu_time_by_default_and_wall_time_when_asked(spec: str, fake_cpu: list[float]) -> None:
    """With the CPU clock advancing 1 ms a reading, a 0.05 s budget ends after about 50 readings
    whatever the wall clock does; with ``clock=wall`` the counter is never read."""
    agent = make_agent(spec)
    state = new_game(seed=2)
    before = fake_cpu[0]
    agent.act(state, np.random.default_rng(0))
    readings = round((fake_cpu[0] - before) / 0.001)
    assert 40 <= readings <= 80, readings  # the deadline's checks, and the budget's own readings
    assert agent.last_sims >= 1  # type: ignore[attr-defined]
    wall = make_agent(spec + ",clock=wall")
    before = fake_cpu[0]
    wall.act(state, np.random.default_rng(0))
    assert fake_cpu[0] == before


def test_the_budget_plans_on_its_clock(fake_cpu: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    """The searches report their simulations' wall seconds; a CPU budget takes the share of the CPU
    the move had (here half: the wall clock runs at twice the counter's pace) for its speed."""
    from patchwork_env.players.batched_search import OVERPLAN, TimeBudget

    wall = [100.0]
    monkeypatch.setattr("time.perf_counter", lambda: wall[0])
    budget = TimeBudget(100, 0.5)
    assert budget.clock == "cpu"
    budget.plan()
    wall[0] += 1.0
    fake_cpu[0] += 0.5 - 0.002  # with the plan's and the measure's readings: half a second of CPU in a wall second
    budget.measure(100, 1.0)  # 100 simulations in 1 s of wall time: 5 ms of CPU each
    assert budget.seconds_per_sim == pytest.approx(0.005)
    assert budget.plan()[0] == int(OVERPLAN * 0.5 / 0.005)
    on_the_wall = TimeBudget(100, 0.5, clock="wall")
    on_the_wall.plan()
    wall[0] += 1.0
    on_the_wall.measure(100, 1.0)
    assert on_the_wall.seconds_per_sim == pytest.approx(0.01)


def test_the_clock_is_a_spec_parameter_of_the_searches() -> None:
    assert make_agent("mcts:time=1").clock == "cpu"  # type: ignore[attr-defined]
    assert make_agent("mcts:time=1,clock=wall").clock == "wall"  # type: ignore[attr-defined]
    assert make_agent("az:time=1,clock=wall").budget.clock == "wall"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="'clock' must be one of cpu, wall"):
        make_agent("mcts:time=1,clock=gpu")


COMPILED_DURING_MOVES = """
import gc, sys
import numpy as np
from numba.core.registry import CPUDispatcher
from patchwork_env import new_game
from patchwork_env.players.registry import make_agent

def overloads():
    return {id(d): (d.py_func.__qualname__, len(d.overloads)) for d in gc.get_objects() if isinstance(d, CPUDispatcher)}

line = [new_game(seed=3)]
while not line[-1].is_terminal:
    line.append(line[-1].step(int(line[-1].legal_actions()[0])))
positions = [line[0], line[len(line) // 2], line[-4], line[-2]]
agent = make_agent(sys.argv[1])
before = overloads()
for state in positions:
    agent.act(state, np.random.default_rng(0))
after = overloads()
print(sorted(name for key, (name, n) in after.items() if n != before.get(key, (name, 0))[1]))
"""


@pytest.mark.parametrize("spec", ["mcts:time=0.02", "az:time=0.02", "az:net=v1,time=0.02"])
def test_a_timed_agent_compiles_nothing_in_its_moves(spec: str) -> None:
    """In a fresh process (nothing compiled or loaded yet), ``make_agent`` and then moves from the
    start, the middle and the end of a game: no kernel is compiled or loaded during a move, so no
    timed move spends its budget compiling (a fresh install's first ``mcts:time`` move did)."""
    if "net=" in spec:
        pytest.importorskip("torch")
    proc = subprocess.run([sys.executable, "-c", COMPILED_DURING_MOVES, spec], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout
