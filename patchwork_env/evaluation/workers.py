"""The local worker pool: work items on spawned processes, and never a hang.

``run_unordered(fn, items, workers, initializer, initargs)`` yields ``(item, fn(item))`` as items
finish, on ``workers`` processes started with the ``spawn`` method (``concurrent.futures``), with
at most two items in flight per worker so that a huge run never builds its list of work up front.

What can go wrong, and what the caller sees instead of a hang:

- a worker process dies (SIGKILL from the out-of-memory killer, a segfault, ``os._exit``): one
  ``WorkerError`` naming the items that were in flight;
- the work raises ``SystemExit``, ``KeyboardInterrupt`` or another ``BaseException``: a
  ``WorkerError`` naming it (an ``Exception`` propagates as itself);
- the parent is interrupted (Ctrl-C, or SIGTERM turned into an exception by the command line): the
  workers are terminated before the exception goes on;
- the caller's script has no ``if __name__ == "__main__":`` guard around the call: spawned workers
  would run the script again and start workers of their own; ``check_spawn_safe`` refuses first,
  with one line that says what to do.

Inside a worker, ``in_worker()`` is true: code that would start a pool of its own plays in-process.
"""

from __future__ import annotations

import ast
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKER_ENV = "PATCHWORK_WORKER"
IN_FLIGHT_PER_WORKER = 2


class RunError(RuntimeError):
    """A run stopped by what it runs (an agent, a worker process), not by a bug of the project: the
    command line prints it as one ``error:`` line."""


class WorkerError(RunError):
    """A worker process died, or the work raised a ``BaseException`` that is not an ``Exception``."""


class SpawnError(RunError):
    """Worker processes cannot be started safely from the calling script."""


def in_worker() -> bool:
    """True inside a process of this pool (or of a multiprocessing parent)."""
    return os.environ.get(WORKER_ENV) == "1" or multiprocessing.parent_process() is not None


def _init(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    os.environ[WORKER_ENV] = "1"
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent ends the workers
    if initializer is not None:
        initializer(*initargs)


def _guarded(fn: Callable[[T], R], item: T) -> R:
    try:
        return fn(item)
    except Exception:
        raise
    except BaseException as exc:  # SystemExit, KeyboardInterrupt...: an error, never the worker's exit
        raise WorkerError(f"{type(exc).__name__}({exc!s}) raised in a worker") from None


def _main_guard_lines(source: str) -> list[tuple[int, int]]:
    """The line ranges of ``if __name__ == "__main__":`` blocks at a module's top level."""
    spans = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test):
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def check_spawn_safe(what: str = "workers") -> None:
    """Raise ``SpawnError`` if the call comes from the top level of a ``__main__`` script outside an
    ``if __name__ == "__main__":`` block: each spawned worker would import the script again and run
    the call again (multiprocessing's bootstrapping error, then a broken pool)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or getattr(main, "__spec__", None) is not None:
        return  # python -m, an installed command, Jupyter or the REPL: spawn imports nothing that runs
    frame = sys._getframe(1)
    line = None
    while frame is not None:  # the outermost frame running the script's own top level
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
            line = frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    if line is None:
        return
    try:
        spans = _main_guard_lines(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return
    if not any(lo <= line <= hi for lo, hi in spans):
        raise SpawnError(
            f"{what} > 1 starts processes that import {path} again, and its line {line} runs this call at the "
            'top level: put the call under `if __name__ == "__main__":`, or use workers=1'
        )


def _terminate(executor: ProcessPoolExecutor) -> None:
    for process in list(getattr(executor, "_processes", {}).values()):
        if process.is_alive():
            process.terminate()
    executor.shutdown(wait=False, cancel_futures=True)


def run_unordered(
    fn: Callable[[T], R],
    items: Iterable[T],
    workers: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
    describe: Callable[[T], str] = repr,
) -> Iterator[tuple[T, R]]:
    """``(item, fn(item))`` for every item, in the order they finish, on ``workers`` spawned
    processes (see the module docstring for what goes wrong and how it is reported)."""
    ctx = multiprocessing.get_context("spawn")
    executor = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(initializer, initargs))
    source = iter(items)
    pending: dict[Future[R], T] = {}

    def fill() -> None:
        while len(pending) < IN_FLIGHT_PER_WORKER * workers:
            item = next(source, _END)
            if item is _END:
                return
            pending[executor.submit(_guarded, fn, item)] = item  # type: ignore[arg-type]

    try:
        fill()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                item = pending.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    lost = [describe(x) for x in [item, *pending.values()]]
                    raise WorkerError(
                        "a worker process died (killed, out of memory, or crashed) while one of these was "
                        f"running: {'; '.join(lost[: 2 * workers])}"
                    ) from None
                yield item, result
            fill()
    except BaseException:
        _terminate(executor)
        raise
    executor.shutdown(wait=True)


_END: Any = object()
