"""How the engine compiles: ``jit`` is numba's ``njit`` as every compiled function uses it (cached
on disk, GIL released), and ``compile_notice`` says so, once per process, when a first call is
about to compile kernels that have no on-disk cache yet (a fresh install: seconds, once)."""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])
_announced: set[str] = set()


def jit(fn: F) -> F:
    """numba's ``njit`` as every compiled function of the engine uses it (cached, GIL released)."""
    return cast(F, numba.njit(cache=True, nogil=True)(fn))


def is_cached(kernel: Any) -> bool:
    """Whether ``kernel`` (a ``jit`` function) has a compiled version on disk or in this process."""
    if getattr(kernel, "signatures", None):
        return True
    try:
        return Path(kernel._cache._cache_file._index_path).is_file()
    except AttributeError:  # another numba's internals: assume cached, say nothing
        return True


def compile_notice(what: str, kernel: Any, seconds: str) -> None:
    """Say on stderr, once per process, that ``what`` is about to compile (``kernel`` has no
    on-disk cache yet: a fresh install), how long that takes on a 2-core machine, and show that it
    is working: on a terminal the seconds tick on the line, and a last line says when ``kernel``
    is compiled (numba's compiler is Python code, so a watcher thread gets its turns)."""
    if what in _announced or is_cached(kernel):
        return
    _announced.add(what)
    print(f"compiling {what}, first run only (about {seconds} on 2 cores; later runs load them from disk)",
          file=sys.stderr, flush=True)  # fmt: skip
    with _lock:
        _pending[what] = (kernel, time.monotonic())
    threading.Thread(target=_watch, args=(what, kernel), daemon=True, name=f"compile-notice {what}").start()


_pending: dict[str, tuple[Any, float]] = {}  # what -> (kernel, start): compiles not yet reported
_lock = threading.Lock()


def _report(what: str) -> None:
    """The line that says ``what`` compiled, once (from the watcher, or at exit if it was faster)."""
    with _lock:
        entry = _pending.pop(what, None)
    if entry is not None and getattr(entry[0], "signatures", None):
        end = "\r" if _is_terminal(sys.stderr) else ""
        print(f"{end}compiled {what} in {time.monotonic() - entry[1]:.0f} s", file=sys.stderr, flush=True)


def _watch(what: str, kernel: Any, limit: float = 600.0) -> None:
    """Tick while ``kernel`` compiles; then ``_report``."""
    start = _pending[what][1]
    ticking = _is_terminal(sys.stderr)
    last = 0
    while not getattr(kernel, "signatures", None):
        elapsed = time.monotonic() - start
        if elapsed > limit:
            return
        if ticking and int(elapsed) > last:
            last = int(elapsed)
            print(f"\r  ... {last} s", end="", file=sys.stderr, flush=True)
        time.sleep(0.1)
    _report(what)


@atexit.register
def _report_all() -> None:
    for what in list(_pending):
        _report(what)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
