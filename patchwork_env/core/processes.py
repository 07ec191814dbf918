"""No process left behind: a child process of the project ends when its parent ends, however the
parent ends (a return, an exception, SIGKILL from the out-of-memory killer or ``kill -9``).

``die_with_parent(parent)`` is called first thing in every child the project starts (the worker
pool's processes, ``patchwork_env.evaluation.workers``; the process an agent of yours plays in,
``patchwork_env.players.contained``). On Linux it asks the kernel to send the child SIGKILL when
its parent dies (``prctl(PR_SET_PDEATHSIG)``, through ctypes); elsewhere a daemon thread checks
every ``WATCH_SECONDS`` that the parent is still the one it started under and ends the child when
it is not. Either way a child whose parent died before the call ends at once.

Linux's signal comes when the *thread* that started the child ends: the project starts its
children from the thread that runs the games (the main thread of a command), which lives as long
as they are needed. Light: standard library only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_SECONDS = 1.0  # how often the fallback watchdog checks the parent


def _ask_the_kernel() -> bool:
    """Linux: SIGKILL to this process when its parent dies. False where that cannot be asked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # this process's own symbols: the C library's prctl among them
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_SECONDS)
    os._exit(1)


def die_with_parent(parent: int) -> None:
    """End this process when process ``parent`` (its parent, by pid) ends: at once if it already
    has (this process was handed to another parent), else when it does (module docstring)."""
    if not _ask_the_kernel():
        threading.Thread(target=_watch, args=(parent,), name="patchwork-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the request: nobody would send the signal
        os._exit(1)
