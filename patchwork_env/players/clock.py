"""The clocks of a search's time budget (``mcts:time=0.5``, ``az:time=0.5``): CPU or wall.

On a shared machine the wall clock buys what the machine has to spare: with three other busy
processes on two cores, ``time=0.5`` bought 0.19-0.23 s of CPU a move, so the same agent at the
same setting was weaker there than on an idle machine, and a rating made under load was not the
rating of the agent. The CPU clock (``cpu``, the default: ``time.process_time``, the CPU time of
this process, all its threads) counts what the search itself computed: a move gets the same
computation however busy the machine is (and takes longer on the wall clock when it is busy).
``clock=wall`` (``time.perf_counter``) bounds the seconds a move takes instead, as a game played
against a clock does.

A move's budget ends at a ``Deadline``: ``reached()`` reads its clock. It is also a float, the
moment on the wall clock (``time.perf_counter()``) it would end at were the process never kept
waiting, and compared with any other float (a reading of ``time.perf_counter()``, by a search
written for a wall-clock deadline: ``time.perf_counter() >= deadline``) it answers ``reached()``,
so that every search honours the clock it is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
DEFAULT_CLOCK = "cpu"


def check_clock(clock: str) -> str:
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    return clock


class Deadline(float):
    """The end of ``seconds`` on ``clock`` from now (module docstring)."""

    clock: str
    end: float

    def __new__(cls, seconds: float, clock: str = DEFAULT_CLOCK) -> Deadline:
        check_clock(clock)
        deadline = super().__new__(cls, time.perf_counter() + seconds)
        deadline.clock = clock
        deadline.end = CLOCKS[clock]() + seconds
        return deadline

    def reached(self) -> bool:
        return CLOCKS[self.clock]() >= self.end

    def left(self) -> float:
        """Seconds left on its clock (negative once reached)."""
        return self.end - CLOCKS[self.clock]()

    # ``now >= deadline``, ``now < deadline`` ...: Python asks the float subclass on the right first
    def __le__(self, now: float) -> bool:  # now >= deadline
        return self.reached()

    def __lt__(self, now: float) -> bool:  # now > deadline
        return self.reached()

    def __ge__(self, now: float) -> bool:  # now <= deadline
        return not self.reached()

    def __gt__(self, now: float) -> bool:  # now < deadline
        return not self.reached()

    def __repr__(self) -> str:
        return f"Deadline({self.left():.3f} s left on the {self.clock} clock)"


def reached(deadline: float | None) -> bool:
    """Whether ``deadline`` (a ``Deadline``, or a plain ``time.perf_counter()`` moment) has passed."""
    if deadline is None:
        return False
    if isinstance(deadline, Deadline):
        return deadline.reached()
    return time.perf_counter() >= deadline
