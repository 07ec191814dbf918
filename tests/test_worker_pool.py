"""One set of worker processes per command (``evaluation.workers.WorkerPool``, ``arena.open_pool``):
a rating's probe and its rungs, a ladder build's rounds, play on the same processes, each of which
imports what the agents need and builds each agent once (a rating used to start a pool, and
import torch and SB3 in it, for every stage)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchwork_env.evaluation import ladder
from patchwork_env.evaluation.workers import WorkerError, WorkerPool

AGENT = """
import os
LOG = {log!r}
with open(LOG, "a") as f:                      # once per process that imports this file: the process of its own
    f.write(f"import {{os.getppid()}}\\n")     # that the agent plays in, forked by this one or a worker

class Logged:
    name = "logged"
    def __init__(self):
        with open(LOG, "a") as f:              # once per agent built
            f.write(f"build {{os.getppid()}}\\n")
    def act(self, state, rng):
        return int(state.legal_actions()[0])
"""


def _pid(x: int) -> int:
    return os.getpid()


def _fail_on(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


def test_a_pool_keeps_its_processes_for_every_call_until_closed() -> None:
    with WorkerPool(2) as pool:
        assert not pool.started  # a pool never used starts no process
        first = {pid for _, pid in pool.run_unordered(_pid, range(8))}
        second = {pid for _, pid in pool.run_unordered(_pid, range(8))}
        assert pool.started and second <= first and os.getpid() not in first and len(first) <= 2
    assert not pool.started


def test_a_pool_that_failed_starts_afresh() -> None:
    with WorkerPool(2) as pool:
        with pytest.raises(ValueError, match="three"):
            list(pool.run_unordered(_fail_on, range(6)))
        assert not pool.started  # ended at once, not reused half-broken
        assert sorted(x for _, x in pool.run_unordered(_fail_on, [0, 1, 2])) == [0, 1, 2]
    with pytest.raises(ValueError, match="positive integer"):
        WorkerPool(0)
    assert issubclass(WorkerError, RuntimeError)


def test_a_rating_plays_all_its_stages_on_one_set_of_processes(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    (tmp_path / "logged.py").write_text(AGENT.format(log=str(log)))
    result = ladder.rate(f"{tmp_path / 'logged.py'}:Logged", workers=2, ladder="v1")
    assert result.games >= 60 and result.illegal_actions == 0
    lines = log.read_text().split()
    imports = [int(pid) for kind, pid in zip(lines[::2], lines[1::2], strict=True) if kind == "import"]
    builds = [int(pid) for kind, pid in zip(lines[::2], lines[1::2], strict=True) if kind == "build"]
    assert os.getpid() in imports  # this process built it once, to check it before any game ...
    assert builds.count(os.getpid()) == 1
    workers = set(imports) - {os.getpid()}
    assert 1 <= len(workers) <= 2  # ... and two processes played every stage (four stages: was up to 8)
    assert len(imports) == len(set(imports)) and sorted(builds) == sorted(imports)  # each built it once


@pytest.mark.parametrize("threshold", [0.0, float("inf")])
def test_by_default_processes_start_only_for_the_games_left_that_are_worth_it(
    threshold: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``workers=None`` (the commands' default) plays in this process while the games left would take
    less than ``START_WORKERS_AFTER`` here, then on every core: a quick rating on two workers was
    slower than on one (processes to start, torch and SB3 to import in each), a long one faster."""
    from patchwork_env.evaluation import arena

    started: list[int] = []
    real = WorkerPool.run_unordered

    def spy(self: WorkerPool, *args: object, **kwargs: object) -> object:
        started.append(self.workers)
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(WorkerPool, "run_unordered", spy)
    monkeypatch.setattr(arena, "START_WORKERS_AFTER", threshold)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    auto = arena.play_pairs("greedy:temp=3", "mcts:sims=4", 4, seed=5, workers=None)
    assert started == ([2] if threshold == 0.0 else [])
    one = arena.play_pairs("greedy:temp=3", "mcts:sims=4", 4, seed=5, workers=1)
    assert [r.actions for r in auto.records] == [r.actions for r in one.records]
