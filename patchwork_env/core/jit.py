"""How the engine compiles: ``jit`` is numba's ``njit`` as every compiled function uses it (cached
on disk, GIL released), and ``compile_notice`` says so, once per process, when a first call is
about to compile kernels that have no on-disk cache yet (a fresh install: seconds, once)."""

from __future__ import annotations

import sys
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
    """One line on stderr before ``kernel``'s first call compiles ``what`` (not cached on disk)."""
    if what not in _announced and not is_cached(kernel):
        _announced.add(what)
        print(f"compiling {what} (first run only, about {seconds})", file=sys.stderr, flush=True)
