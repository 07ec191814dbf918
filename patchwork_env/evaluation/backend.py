"""Backends for the embarrassingly parallel work: arena games, MCTS labelling, self-play.

A backend runs a picklable function over a list of work items and gives the results back in the
order of the items, here or on Ray, through one interface (``Backend.map``)::

    backend = LocalBackend(workers=2)                   # 1: in this process
    with RayBackend(address=None) as backend:          # None: a local Ray runtime, started here
        results = list(backend.map(fn, shared, items))  # [fn(shared, item) for item in items]

``LocalBackend`` runs the items in this process or on the project's worker pool
(``patchwork_env.evaluation.workers``: a worker that dies is an error naming the items in flight,
never a hang, and a worker ends when its parent does, even killed by SIGKILL: no trainer leaves
processes behind); ``RayBackend`` as Ray tasks, described below.

``fn`` must be importable by the workers (a module-level function of this project), ``shared``
(agents, a teacher spec...) is put in Ray's object store once and handed to every call, and each
item becomes one Ray task of one CPU. A task whose worker process dies (killed, out of memory, a
node lost) is run again, up to ``max_retries`` times (Ray's task retries): a work item's result
depends only on the item and ``shared``, so a retry gives the same result and the run's results
are complete and identical to an undisturbed run.

Where Ray runs: ``address=None`` joins the cluster named by ``RAY_ADDRESS`` if that is set, else
starts a local Ray runtime for the lifetime of the backend (nothing to install or start by hand;
never the cluster the last ``ray start`` on this machine recorded, which may be long dead);
``address="auto"`` joins the cluster started on this machine by ``ray start``; ``"HOST:PORT"``
joins that head node. Ray's token authentication stays as Ray sets it (on for ``ray start --head``
and for a local runtime): a joining driver needs the cluster's token (``~/.ray/auth_token``,
``RAY_AUTH_TOKEN`` or ``RAY_AUTH_TOKEN_PATH``, with ``RAY_AUTH_MODE=token``; README, "Scaling out").

Ray is an optional dependency (``pip install -e ".[scale]"``); this module imports it only when a
backend is made, with a clear error if it is missing.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Protocol, TypeVar

from patchwork_env.evaluation.workers import check_spawn_safe, run_unordered

T = TypeVar("T")
R = TypeVar("R")

BACKENDS = ("local", "ray")
DEFAULT_MAX_RETRIES = 3


class Backend(Protocol):
    """Runs ``fn(shared, item)`` for every item somewhere; yields the results in item order."""

    def map(self, fn: Callable[[Any, T], R], shared: Any, items: Sequence[T]) -> Iterator[R]: ...


def import_ray() -> ModuleType:
    """The ``ray`` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ImportError(
            'the Ray backend needs Ray, which is not installed: pip install "patchwork-env[ray]"'
        ) from None
    return ray


def init_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Connect to Ray (see the module docstring for ``address``); True if this call started it
    (the caller then shuts it down). ``num_cpus`` limits a local runtime started here. A cluster
    that cannot be joined raises ``ConnectionError`` saying what to check."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    if address is None and not os.environ.get("RAY_ADDRESS"):
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
        return True
    target = address or os.environ["RAY_ADDRESS"]
    _check_reachable(target)
    try:  # an existing cluster: its resources are the cluster's own
        ray.init(address=address, log_to_driver=False)
    except (ConnectionError, RuntimeError) as exc:
        raise ConnectionError(
            f"cannot join the Ray cluster at {target} ({str(exc).splitlines()[0]}); is it running (ray status), "
            "and does this shell have its token (RAY_AUTH_MODE=token with ~/.ray/auth_token or RAY_AUTH_TOKEN)?"
        ) from None
    return True


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast on a HOST:PORT nobody listens on (Ray itself retries for minutes)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" and other forms: Ray resolves them
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address} ({exc}); is the head up (ray start --head)?") from None


_SHARED: dict[str, Any] = {}  # in a LocalBackend's worker: the map's function and shared object


def _set_shared(fn: Callable[[Any, Any], Any], shared: Any) -> None:
    _SHARED["call"] = (fn, shared)


def _call_shared(item: tuple[int, Any]) -> Any:
    fn, shared = _SHARED["call"]
    return fn(shared, item[1])


class LocalBackend:
    """Work items in this process (``workers=1``, one after the other, lazily) or on ``workers``
    spawned processes (``patchwork_env.evaluation.workers.run_unordered``; ``shared`` is sent once
    to each process), the results in item order either way."""

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers

    def map(self, fn: Callable[[Any, T], R], shared: Any, items: Sequence[T]) -> Iterator[R]:
        if self.workers == 1 or len(items) <= 1:
            yield from (fn(shared, item) for item in items)
            return
        check_spawn_safe("workers")
        done: dict[int, R] = {}
        ready = 0
        tasks = run_unordered(
            _call_shared, enumerate(items), self.workers, _set_shared, (fn, shared), lambda it: f"work item {it[0]}"
        )
        for (index, _), result in tasks:
            done[index] = result
            while ready in done:
                yield done.pop(ready)
                ready += 1


def _call(fn: Callable[[Any, T], R], shared: Any, item: T) -> R:
    """One work item (the body of every Ray task)."""
    return fn(shared, item)


class RayBackend:
    """Work items as Ray tasks of one CPU each, on a local runtime or a cluster."""

    def __init__(
        self, address: str | None = None, num_cpus: int | None = None, max_retries: int = DEFAULT_MAX_RETRIES
    ) -> None:
        if num_cpus is not None and num_cpus < 1:
            raise ValueError(f"num_cpus must be >= 1 or None (every core), got {num_cpus}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.address = address
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self._owns_runtime = False
        self._ray: ModuleType | None = None

    def start(self) -> RayBackend:
        if self._ray is None:
            self._owns_runtime = init_ray(self.address, self.num_cpus)
            self._ray = import_ray()
        return self

    def close(self) -> None:
        if self._ray is not None and self._owns_runtime:
            self._ray.shutdown()
        self._ray = None
        self._owns_runtime = False

    def __enter__(self) -> RayBackend:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map(self, fn: Callable[[Any, T], R], shared: Any, items: Sequence[T]) -> Iterator[R]:
        ray = self.start()._ray
        assert ray is not None
        task = ray.remote(_call).options(num_cpus=1, max_retries=self.max_retries, retry_exceptions=False)
        shared_ref = ray.put(shared)
        pending = [task.remote(fn, shared_ref, item) for item in items]
        for ref in pending:
            yield ray.get(ref)


@contextmanager
def open_backend(name: str, address: str | None = None, num_cpus: int | None = None) -> Iterator[Backend]:
    """The backend a trainer's ``*_backend`` key names, for a ``with`` block: for ``local`` a
    ``LocalBackend`` of ``num_cpus`` processes (None: this one); for ``ray`` a ``RayBackend`` that
    has joined Ray on entry (a cluster that cannot be joined fails here, before the caller writes
    anything) and leaves it on exit (``num_cpus``: those of a local Ray runtime started here)."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {name!r}")
    if name == "local":
        yield LocalBackend(num_cpus or 1)
        return
    with RayBackend(address, num_cpus) as backend:
        yield backend
