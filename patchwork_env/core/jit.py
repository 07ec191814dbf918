"""How the engine compiles: ``jit`` is numba's ``njit`` as every compiled function uses it (cached
on disk, GIL released), and ``compile_notice`` says so, once per process, while kernels that have no
on-disk cache yet (a fresh install: seconds, once) compile.

The notice follows numba's own compile events (``numba.core.event``), so its lines come from the
call that compiles, in its thread, while it compiles: in Jupyter they land in the cell that
compiles, and a program that waits for input (``patchwork play``) never has a line printed over
what it shows while it waits."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import numba
import numba.core.event

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
    """Announce ``what`` on stderr, once per process, if ``kernel`` (a ``jit`` function) has no
    on-disk cache yet (a fresh install): when the next compile starts, a line saying that ``what``
    compiles and how long that takes on a 2-core machine (``seconds``, e.g. ``"5-30 s"``); on a
    terminal the seconds tick on the next line while numba compiles (only then); when ``kernel``
    is compiled, a last line with the compile time."""
    if what in _announced or is_cached(kernel):
        return
    _announced.add(what)
    _listen()
    with _lock:
        _pending.append(_Notice(what, kernel, seconds))


@dataclass
class _Notice:
    what: str
    kernel: Any
    seconds: str
    compiling: float = 0.0  # seconds of compiles since it was announced
    announced: bool = False


@dataclass
class _Compile:
    """The outermost compile running in one thread (numba compiles a kernel's callees inside it)."""

    depth: int = 0
    start: float = 0.0
    notices: list[_Notice] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    ticker: threading.Thread | None = None


_pending: list[_Notice] = []  # registered, their kernel not compiled yet
_lock = threading.Lock()
_local = threading.local()
_listening = False


def _listen() -> None:
    global _listening
    with _lock:
        if not _listening:
            numba.core.event.register("numba:compile", _Listener())  # type: ignore[no-untyped-call]
            _listening = True


class _Listener(numba.core.event.Listener):  # type: ignore[misc]
    """numba's compile events, in the thread that compiles."""

    def on_start(self, event: Any) -> None:
        state = getattr(_local, "compile", None)
        if state is None:
            state = _local.compile = _Compile()
        state.depth += 1
        if state.depth == 1:
            _outermost_started(state)

    def on_end(self, event: Any) -> None:
        state = getattr(_local, "compile", None)
        if state is None or state.depth == 0:
            return
        state.depth -= 1
        if state.depth == 0:
            _outermost_ended(state)


def _outermost_started(state: _Compile) -> None:
    """Announce what is pending; tick on a terminal while this compile runs."""
    with _lock:
        state.notices = list(_pending)
    if not state.notices:
        return
    state.start = time.monotonic()
    for notice in state.notices:
        if not notice.announced:
            notice.announced = True
            print(f"compiling {notice.what}, first run only ({notice.seconds} on 2 cores; later runs load them "
                  "from disk)", file=sys.stderr, flush=True)  # fmt: skip
    if _is_terminal(sys.stderr):
        state.stop = threading.Event()
        state.ticker = threading.Thread(target=_tick, args=(state,), daemon=True, name="compile-notice")
        state.ticker.start()


def _outermost_ended(state: _Compile) -> None:
    """Stop ticking (and clear its line); report every notice whose kernel is now compiled."""
    if not state.notices:
        return
    if state.ticker is not None:
        state.stop.set()
        state.ticker.join()
        state.ticker = None
    elapsed = time.monotonic() - state.start
    for notice in state.notices:
        notice.compiling += elapsed
        if getattr(notice.kernel, "signatures", None):
            with _lock:
                if notice in _pending:
                    _pending.remove(notice)
            print(f"compiled {notice.what} in {notice.compiling:.0f} s", file=sys.stderr, flush=True)
    state.notices = []


def _tick(state: _Compile) -> None:
    """``  ... N s`` on one line every second until the compile ends, then that line cleared."""
    shown = False
    while not state.stop.wait(1.0):
        print(f"\r  ... {time.monotonic() - state.start:.0f} s", end="", file=sys.stderr, flush=True)
        shown = True
    if shown:
        print("\r" + " " * 20 + "\r", end="", file=sys.stderr, flush=True)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
