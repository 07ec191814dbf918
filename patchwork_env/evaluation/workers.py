"""The local worker pool: work items on spawned processes, and never a hang.

``run_unordered(fn, items, workers, initializer, initargs)`` yields ``(item, fn(item))`` as items
finish, on ``workers`` processes started with the ``spawn`` method (``concurrent.futures``), with
at most two items in flight per worker so that a huge run never builds its list of work up front.
``WorkerPool`` keeps its processes for several such calls: a command of several stages starts its
processes (and imports what its work needs in each) once.

What can go wrong, and what the caller sees instead of a hang:

- a worker process dies (SIGKILL from the out-of-memory killer, a segfault, ``os._exit``): one
  ``WorkerError`` naming the items that were in flight;
- the work raises ``SystemExit``, ``KeyboardInterrupt`` or another ``BaseException``: a
  ``WorkerError`` naming it (an ``Exception`` propagates as itself);
- the parent is interrupted (Ctrl-C, or SIGTERM turned into an exception by the command line): the
  workers are terminated before the exception goes on;
- the parent dies without a word (SIGKILL, the out-of-memory killer): each worker ends itself
  (``patchwork_env.core.processes.die_with_parent``, from the pool's initializer), and so do the
  processes your agents play in inside it;
- the caller's script has no ``if __name__ == "__main__":`` guard around the call: spawned workers
  would run the script again and start workers of their own; ``check_spawn_safe`` refuses first,
  with one line that says what to do.

Inside a worker, ``in_worker()`` is true: code that would start a pool of its own plays in-process.
"""

from __future__ import annotations

import ast
import inspect
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

from patchwork_env.core.processes import die_with_parent

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
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        die_with_parent(parent.pid)  # a parent killed by SIGKILL runs no cleanup: the workers end themselves
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


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)


def _main_guard_lines(source: str) -> list[tuple[int, int]]:
    """The line ranges of ``if __name__ == "__main__":`` blocks at a module's top level."""
    return [(node.lineno, node.end_lineno or node.lineno) for node in ast.parse(source).body if _is_main_guard(node)]


def _names_outside_main_guard(body: list[ast.stmt]) -> set[str]:
    """The names a module's import binds at its top level: what it defines, assigns and imports,
    in nested ``if``/``try``/``with`` blocks too, but not inside ``if __name__ == "__main__":``."""
    names: set[str] = set()
    for node in body:
        if _is_main_guard(node):
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        for block in ("body", "orelse", "finalbody"):
            inner = getattr(node, block, None)
            if isinstance(inner, list) and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names |= _names_outside_main_guard(inner)
        for handler in getattr(node, "handlers", []):
            names |= _names_outside_main_guard(handler.body)
    return names


def unreachable_in_workers(obj: object) -> str | None:
    """Why a spawned worker could not load ``obj`` from the script that runs this process: pickled
    by reference (a function, a class, an instance of a class), it must be defined at the script's
    top level, and it is defined inside its ``if __name__ == "__main__":`` block, which a worker's
    import of the script skips. None when it can be loaded (or does not come from a script)."""
    target = obj if inspect.isfunction(obj) or inspect.isclass(obj) else type(obj)
    qualname = str(getattr(target, "__qualname__", ""))
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if getattr(target, "__module__", None) != "__main__" or path is None or not qualname or "<locals>" in qualname:
        return None  # not from a script (or not picklable by reference at all: it plays in-process)
    try:
        defined = _names_outside_main_guard(ast.parse(Path(path).read_text()).body)
    except (OSError, SyntaxError, ValueError):
        return None
    if qualname.split(".")[0] in defined:
        return None
    return (
        f'{qualname} is defined inside the `if __name__ == "__main__":` block of {path}, which worker processes '
        "skip when they import the script: define it above that block (at the top level), or use workers=1"
    )


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


class WorkerPool:
    """``workers`` spawned processes kept for every step of one run (a command's stages: the
    ladder's probe then its rungs, a ladder build's rounds), so that each process starts, imports
    what the work needs (numba's kernels, torch) and builds what it caches once, not once a step.
    The processes start at the first ``run_unordered`` (a pool never used starts none) and end
    with ``close`` (or the ``with`` block). An error, an interruption or a step abandoned half-way
    ends them at once, and a pool that ended so starts afresh at its next use."""

    def __init__(
        self, workers: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        self.workers = workers
        self._initializer = initializer
        self._initargs = initargs
        self._executor: ProcessPoolExecutor | None = None

    @property
    def started(self) -> bool:
        return self._executor is not None

    def run_unordered(
        self, fn: Callable[[T], R], items: Iterable[T], describe: Callable[[T], str] = repr
    ) -> Iterator[tuple[T, R]]:
        """``(item, fn(item))`` for every item, in the order they finish, at most
        ``IN_FLIGHT_PER_WORKER`` items in flight per process (see the module docstring for what goes
        wrong and how it is reported)."""
        if self._executor is None:
            ctx = multiprocessing.get_context("spawn")
            self._executor = ProcessPoolExecutor(
                self.workers, mp_context=ctx, initializer=_init, initargs=(self._initializer, self._initargs)
            )
        executor = self._executor
        source = iter(items)
        pending: dict[Future[R], T] = {}

        def fill() -> None:
            while len(pending) < IN_FLIGHT_PER_WORKER * self.workers:
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
                            f"running: {'; '.join(lost[: 2 * self.workers])}"
                        ) from None
                    yield item, result
                fill()
        except BaseException:  # an error, Ctrl-C, or the caller stopped reading (GeneratorExit)
            self._executor = None
            _terminate(executor)
            raise

    def close(self) -> None:
        """End the processes (after the work in flight, which a finished step has none of)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_unordered(
    fn: Callable[[T], R],
    items: Iterable[T],
    workers: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
    describe: Callable[[T], str] = repr,
) -> Iterator[tuple[T, R]]:
    """``(item, fn(item))`` for every item, in the order they finish, on ``workers`` spawned
    processes started for this call alone (``WorkerPool`` keeps them for several)."""
    with WorkerPool(workers, initializer, initargs) as pool:
        yield from pool.run_unordered(fn, items, describe)


_END: Any = object()
