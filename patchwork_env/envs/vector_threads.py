"""The vector engine's threads: run one of ``vector_kernels``' per-game drivers over row chunks on
the calling thread and helper threads (no game logic; ``PARALLEL`` batches only).

The compiled drivers of ``vector_kernels`` release the GIL, so chunks of one batch can run on
several cores at once. Chunks are claimed dynamically: the calling thread works through them too,
and it only ever waits for a chunk that a helper has already started. A helper that the operating
system has not scheduled (a loaded machine) therefore costs nothing: the caller does its share.

One pool per process (re-created after a fork); a batch that finds the pool busy (another Python
thread is using it) runs serially on its own thread instead of waiting.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

#: batches are cut into at most this many chunks, each of at least MIN_CHUNK games
MAX_CHUNKS = 8
MIN_CHUNK = 32


def helper_count() -> int:
    """Helper threads besides the caller: one per extra core this process may use."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(0, cores - 1)


class _Pool:
    def __init__(self) -> None:
        self._busy = threading.Lock()
        self._claim = threading.Lock()
        self._finished = threading.Condition()
        self._pid = -1
        self._wake: list[threading.Semaphore] = []
        self._job: tuple[Callable[..., Any], tuple[Any, ...], list[tuple[int, int]]] | None = None
        self._next = 0
        self._done = 0
        self._error: BaseException | None = None

    def _start(self) -> None:
        self._pid = os.getpid()
        self._wake = []
        for k in range(helper_count()):
            wake = threading.Semaphore(0)
            threading.Thread(target=self._helper, args=(wake,), name=f"patchwork-vector-{k}", daemon=True).start()
            self._wake.append(wake)

    def run(self, fn: Callable[..., Any], args: tuple[Any, ...], chunks: list[tuple[int, int]]) -> bool:
        """Run ``fn`` on every chunk; False (nothing run) if the pool is in use or has no helper."""
        if not self._busy.acquire(blocking=False):
            return False
        try:
            if self._pid != os.getpid():
                self._start()
            if not self._wake:
                return False
            with self._claim:
                self._job = (fn, args, chunks)
                self._next = 0
            self._done = 0
            self._error = None
            for wake in self._wake:
                wake.release()
            self._work()
            with self._finished:
                self._finished.wait_for(lambda: self._done == len(chunks))
            with self._claim:
                self._job = None
            if self._error is not None:
                raise self._error
            return True
        finally:
            self._busy.release()

    def _work(self) -> None:
        while True:
            with self._claim:
                if self._job is None or self._next >= len(self._job[2]):
                    return
                fn, args, chunks = self._job
                lo, hi = chunks[self._next]
                self._next += 1
            try:
                fn(*[rows(a, lo, hi) for a in args])
            except BaseException as exc:  # re-raised on the calling thread
                self._error = exc
            with self._finished:
                self._done += 1
                self._finished.notify_all()

    def _helper(self, wake: threading.Semaphore) -> None:
        while True:
            wake.acquire()
            self._work()


_POOL = _Pool()


def plan(n: int) -> list[tuple[int, int]]:
    """Row chunks ``[lo, hi)`` for a batch of ``n`` games (a single chunk when too small)."""
    count = max(1, min(MAX_CHUNKS, n // MIN_CHUNK))
    bounds = np.linspace(0, n, count + 1).astype(int)
    return [(int(bounds[j]), int(bounds[j + 1])) for j in range(count)]


def rows(buffers: Any, lo: int, hi: int) -> Any:
    """Rows ``lo:hi`` of an array, or of every array in a tuple of buffers (other values as they are)."""
    if isinstance(buffers, np.ndarray):
        return buffers[lo:hi]
    if isinstance(buffers, tuple):
        sliced = [rows(x, lo, hi) for x in buffers]
        return type(buffers)(*sliced) if hasattr(buffers, "_fields") else tuple(sliced)
    return buffers


def num_rows(buffers: Any) -> int:
    """Games in an array or in a tuple of buffers (the length of its first array)."""
    first = buffers if isinstance(buffers, np.ndarray) else buffers[0]
    return int(first.shape[0])


def chunked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a driver whose array arguments, and the arrays of its buffers NamedTuples, all have
    one row per game) run over row chunks."""

    def call(*args: Any) -> None:
        chunks = plan(num_rows(args[0]))
        if len(chunks) < 2 or not _POOL.run(fn, args, chunks):
            fn(*args)

    call.__name__ = getattr(fn, "__name__", "driver")
    call.__doc__ = fn.__doc__
    return call
