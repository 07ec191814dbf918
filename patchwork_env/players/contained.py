"""Your own agent in a process of its own: whatever it does, the process that plays the games and
keeps their results goes on, and says what happened in one line.

The arena (``patchwork_env.evaluation``: ``patchwork evaluate``, ``patchwork ladder``,
``patchwork compare``, ``play_pairs``, ``round_robin``, ``rate``, ``compare``) plays your agent
(``FILE.py:NAME``, ``MODULE:NAME``, or a function, class or object of yours) as a
``ContainedAgent``: a child process forked for it builds it (imports the file, calls the class or
the factory) and answers each ``act`` and ``reset`` over a pipe, with one worker as with many (a
worker process forks its own). What the agent does there comes back as what the arena judges:

- an answer, whatever it is (the arena checks it: an illegal or wrong-type one forfeits the game);
- an ``IllegalActionError`` raised in ``act`` (``NotAnAction`` too), as itself: a forfeit as well;
- any other exception, ``sys.exit`` (``SystemExit``), ``KeyboardInterrupt`` and ``GeneratorExit``
  included: an ``AgentFailure`` (``raised ...``, ``exited: sys.exit(0)``);
- the end of its process (``os._exit``, ``os.abort``, a segfault, a kill): an ``AgentFailure``
  (``exited: its process ended with exit code 0``, ``crashed: ... killed by SIGSEGV``).

A fork inherits everything its parent holds, so a function of a notebook or of a script's
``if __name__ == "__main__":`` block plays without being pickled. The random generator of each
move travels with it and comes back advanced: a game is the same, move for move, as in-process.
The child ignores Ctrl-C (the parent stops it), dies with its parent
(``patchwork_env.core.processes``), and ends when the agent is closed, collected, or at exit.

What plays in the calling process: the built-in agents (random, greedy, mcts, az, pretrained,
network, sb3, the research code's agents of this repository), for speed; and every agent where
there is no ``os.fork`` (Windows), inside Ray (forking a Ray process is unsupported; Ray retries a
task whose process died, then fails it), or when ``PATCHWORK_CONTAIN=0`` asks for it (to step
through your agent in a debugger, or for an agent that uses CUDA in a process that has used it
already: CUDA cannot start again in a fork). There an exception or ``sys.exit`` of an agent is
still one line, but ``os._exit``, an abort or a crash ends the process that plays the games.
What your agent changes in itself in its own process (a counter, a cache) stays there.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import os
import pickle
import signal
import sys
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import numpy as np

from patchwork_env.core.actions import IllegalActionError
from patchwork_env.core.processes import die_with_parent
from patchwork_env.core.state import GameState
from patchwork_env.envs.agent import Agent, NotAnAction, resolve_opponent
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.registry import USER_AGENT, make_agent, parse_spec

CAN_FORK = hasattr(os, "fork")
CONTAIN_ENV = "PATCHWORK_CONTAIN"  # "0": your agents play in the calling process (a debugger; CUDA used here already)
POLL_SECONDS = 1.0  # while an agent thinks: how often the parent checks that its process lives
REAP_SECONDS = 5.0  # a process that closed its pipe: how long to wait for its exit status
CLOSE_SECONDS = 0.5  # an agent closed: how long its process may take to end by itself before it is killed
_ROOT = Path(__file__).resolve().parents[2]  # the repository, when the package runs from it
_RESEARCH = ("agents", "train")  # the repository's research packages: their agents are built-in
A = TypeVar("A")


class AgentFailure(RuntimeError):
    """An agent raised, exited or crashed in its process: ``verb`` (raised, exited, crashed) and
    ``detail`` (``ZeroDivisionError: boom``, ``sys.exit(0)``, ``its process was killed by ...``)."""

    def __init__(self, agent: str, verb: str, detail: str) -> None:
        super().__init__(f"{agent} {verb}: {detail}")
        self.agent, self.verb, self.detail = agent, verb, detail


class Unpicklable:
    """An answer (or a ``NotAnAction``'s value) that cannot travel back from the agent's process."""

    def __init__(self, value: object) -> None:
        self.text = f"{value!r:.60} (a {type(value).__name__}, which cannot be pickled)"

    def __repr__(self) -> str:
        return self.text


def first_line(exc: BaseException) -> str:
    """``ZeroDivisionError: boom``: the type and the first non-blank line of the message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def failure(exc: BaseException) -> tuple[str, str]:
    """What an agent's exception says in an error line: ``(verb, detail)``."""
    if isinstance(exc, AgentFailure):
        return exc.verb, exc.detail
    if isinstance(exc, SystemExit):
        return "exited", f"sys.exit({exc.code!r})"
    return "raised", first_line(exc)


def _ended(status: int | None) -> tuple[str, str]:
    """``(verb, detail)`` of a process that ended without answering, from its wait status."""
    if status is None:
        return "exited", "its process ended (its exit status is unknown)"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return "crashed", f"its process was killed by {name} ({signal.strsignal(number) or 'unknown signal'})"
    code = os.waitstatus_to_exitcode(status)
    return "exited", f"its process ended with exit code {code} (os._exit, or a library that exits)"


def is_builtin(obj: object) -> bool:
    """True for an agent of the project (``patchwork_env``, or this repository's ``agents`` and
    ``train``), which plays in the calling process; False for anything of yours."""
    inner = getattr(obj, "fn", None)
    if inner is not None and type(obj).__module__ == "patchwork_env.envs.agent":  # a function's wrapper
        return is_builtin(inner)
    target = obj if inspect.isclass(obj) or inspect.isroutine(obj) else type(obj)
    module = str(getattr(target, "__module__", None) or "")
    if module == "patchwork_env" or module.startswith("patchwork_env."):
        return True
    path = getattr(sys.modules.get(module), "__file__", None)
    if module.split(".")[0] not in _RESEARCH or path is None:
        return False
    return Path(path).resolve().is_relative_to(_ROOT / module.split(".")[0])


def containable() -> bool:
    """True where an agent can play in a process of its own, and is not asked to play here
    (``PATCHWORK_CONTAIN=0``; module docstring)."""
    ray = sys.modules.get("ray")
    in_ray = ray is not None and bool(getattr(ray, "is_initialized", lambda: False)())
    return CAN_FORK and os.environ.get(CONTAIN_ENV, "1") != "0" and not in_ray


# --- the agent's process --------------------------------------------------------------------------
def _send(conn: Connection, reply: tuple[Any, ...]) -> None:
    """``reply``, with a value that cannot be pickled replaced by what it shows."""
    try:
        conn.send(reply)
    except Exception:  # pickle's errors are of many kinds (PicklingError, TypeError, AttributeError...)
        conn.send(tuple(Unpicklable(x) if i == 1 else x for i, x in enumerate(reply)))


class _Generators:
    """The agent's side of the parent's generators: one kept per parent generator (an agent may
    hold on to the one it was given), set to the parent's state before each move."""

    def __init__(self) -> None:
        self.key: int | None = None
        self.rng = np.random.default_rng()

    def get(self, key: int, state: dict[str, Any]) -> np.random.Generator:
        if key != self.key or type(self.rng.bit_generator).__name__ != state["bit_generator"]:
            self.key, self.rng = key, np.random.Generator(getattr(np.random, state["bit_generator"])())
        self.rng.bit_generator.state = state
        return self.rng


def _state(raw: bytes) -> GameState:
    """The parent's state from its array's bytes, adopted as it is: it is the parent's own
    ``GameState``, so the check of an array from outside (0.14 ms, most of a move's cost) is skipped."""
    return GameState._wrap(np.frombuffer(raw, dtype=np.int64).copy())


def _act(agent: Agent, state: GameState, rng: np.random.Generator) -> tuple[Any, ...]:
    try:
        answer = agent.act(state, rng)
    except NotAnAction as exc:
        return ("not-an-action", exc.returned, str(exc), rng.bit_generator.state)
    except IllegalActionError as exc:
        return ("illegal", str(exc), rng.bit_generator.state)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt...: the agent's, told to the parent
        return ("failed", *failure(exc))
    return ("answer", answer, rng.bit_generator.state)


def _reset(agent: Agent) -> tuple[Any, ...]:
    try:
        reset = getattr(agent, "reset", None)
        if callable(reset):
            reset()
    except BaseException as exc:
        return ("failed", *failure(exc))
    return ("done",)


def _ready(agent: Agent) -> tuple[Any, ...]:
    """What the parent keeps of a built agent: its name, what it says of itself, whether it resets."""
    method = getattr(agent, "agent_info", None)
    info = method() if callable(method) else None
    info = dict(info) if isinstance(info, dict) else {}
    try:
        pickle.dumps(info)
    except Exception:  # what cannot travel is not said
        info = {}
    name = str(getattr(agent, "name", None) or type(agent).__name__)
    return ("ready", name, info, callable(getattr(agent, "reset", None)))


def _serve(conn: Connection, build: Callable[[], Any]) -> int:
    """The agent's process: build it, then answer the parent until it closes the pipe."""
    try:
        agent = resolve_opponent(build())
        ready = _ready(agent)
    except AgentSpecError as exc:
        conn.send(("spec", str(exc)))
        return 1
    except BaseException as exc:
        conn.send(("failed", *failure(exc)))
        return 1
    _send(conn, ready)
    generators = _Generators()
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return 0
        if request[0] == "act":
            _send(conn, _act(agent, _state(request[1]), generators.get(request[2], request[3])))
        elif request[0] == "reset":
            _send(conn, _reset(agent))
        else:  # "close"
            return 0


def _child(conn: Connection, build: Callable[[], Any], parent: int) -> NoReturn:
    """Run in the forked child; never returns into the parent's code (``os._exit``)."""
    code = 1
    try:
        die_with_parent(parent)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent ends this
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the command line's handler
        code = _serve(conn, build)
    except BaseException:
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):  # what the agent printed; not the parent's (flushed before)
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


# --- the parent's side ----------------------------------------------------------------------------
@dataclass
class _Process:
    """The agent's process as its parent knows it; ``stop`` kills and reaps it once, and only from
    the process that forked it (a fork of the parent inherits this object too)."""

    pid: int
    conn: Connection
    owner: int
    status: int | None = None

    def poll(self) -> bool:
        """True once the process has ended (its wait status kept)."""
        if self.status is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else
                pid, status = self.pid, -1
            if pid:
                self.status = status
        return self.status is not None

    def reap(self) -> int | None:
        """The wait status of a process that closed its pipe (killed if it lingers)."""
        deadline = time.monotonic() + REAP_SECONDS
        while not self.poll() and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.status is None:
            self.stop()
        return None if self.status in (None, -1) else self.status

    def stop(self) -> None:
        """Ask the process to end (it flushes what the agent printed), kill it if it is busy or does
        not within ``CLOSE_SECONDS``, and reap it."""
        if os.getpid() != self.owner:
            return
        if not self.poll():
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(("close",))
            deadline = time.monotonic() + CLOSE_SECONDS
            while not self.poll() and time.monotonic() < deadline:
                time.sleep(0.002)
        if not self.poll():
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.status = -1
        self.conn.close()


def _fork(build: Callable[[], Any]) -> _Process:
    for stream in (sys.stdout, sys.stderr):  # else the child would print the parent's buffered text again
        with contextlib.suppress(OSError, ValueError, AttributeError):  # closed, or None (pythonw)
            stream.flush()
    # cyclic garbage is collected here, not in the child: an executor of an earlier match left for the
    # collector would run its weakref callback in the child, on a lock its manager thread (not
    # forked) may hold, and the child would hang while building the agent (seen once in make test)
    gc.collect()
    parent_end, child_end = Pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        parent_end.close()
        _child(child_end, build, parent)
    child_end.close()
    return _Process(pid, parent_end, parent)


class ContainedAgent:
    """An agent that plays in a process of its own (module docstring). ``name`` is the spec (your
    own agent's ``FILE.py:NAME``) or the agent's own; ``load_path`` the spec it was built from
    (None for an object); ``fn`` the object of yours behind it (None for a spec), which is what
    travels to the arena's workers (pickled by reference) and is built again there, in a process
    of its own again."""

    def __init__(self, build: Callable[[], Any], name: str, load_path: str | None = None, fn: object = None) -> None:
        self.name = name
        self.load_path = load_path
        self.fn = fn
        self._process = _fork(build)
        self._finalizer = weakref.finalize(self, self._process.stop)
        try:
            reply = self._call(None)
        except AgentFailure as exc:
            raise AgentFailure(name, f"{exc.verb} while it was being built", exc.detail) from None
        if reply[0] == "spec":
            self.close()
            raise AgentSpecError(reply[1])
        if reply[0] == "failed":
            self.close()
            raise AgentFailure(name, f"{reply[1]} while it was being built", reply[2])
        _, built_name, self._info, self._resets = reply
        if fn is not None:
            self.name = built_name

    def _call(self, request: tuple[Any, ...] | None) -> tuple[Any, ...]:
        """Send ``request`` (None: only wait for the next message) and return the reply; the end
        of the process is an ``AgentFailure``, an interruption ends the process."""
        process = self._process
        try:
            if process.status is None and request is not None:
                process.conn.send(request)
            while process.status is None and not process.conn.poll(POLL_SECONDS):
                process.poll()  # the pipe may outlive the process (a grandchild of the agent holds it)
            if process.status is None or process.conn.poll(0):
                reply: tuple[Any, ...] = process.conn.recv()
                return reply
        except (EOFError, OSError):
            pass
        except BaseException:  # Ctrl-C, SIGTERM as an exception: the pipe is out of step, the process goes
            self.close()
            raise
        raise AgentFailure(self.name, *_ended(process.reap()))

    def act(self, state: GameState, rng: np.random.Generator) -> Any:
        """The agent's answer for ``state``, ``rng`` advanced as the agent advanced it there."""
        reply = self._call(("act", state.array().tobytes(), id(rng), rng.bit_generator.state))
        if reply[0] == "failed":
            raise AgentFailure(self.name, reply[1], reply[2])
        rng.bit_generator.state = reply[-1]
        if reply[0] == "not-an-action":
            raise NotAnAction(reply[2], reply[1])
        if reply[0] == "illegal":
            raise IllegalActionError(reply[1])
        return reply[1]

    def reset(self) -> None:
        if self._resets:
            reply = self._call(("reset",))
            if reply[0] == "failed":
                raise AgentFailure(self.name, reply[1], reply[2])

    def agent_info(self) -> dict[str, Any]:
        return dict(self._info)

    def close(self) -> None:
        """End the agent's process (also done when the agent is collected, and at exit)."""
        self._finalizer()

    def __reduce__(self) -> tuple[Any, ...]:
        """Built again where it is unpickled (an arena's worker), in a process of its own there."""
        if self.load_path is not None:
            return (build_agent, (self.load_path,))
        return (_rebuild, (self.fn,))


def build_agent(spec: str) -> Agent:
    """The agent ``spec`` names as the arena plays it: your own (``FILE.py:NAME``, ``MODULE:NAME``)
    in a process of its own where one can be forked (``contain_spec``), any other as
    ``make_agent`` builds it."""
    if containable() and parse_spec(spec)[0] is USER_AGENT:
        return contain_spec(spec)
    return make_agent(spec)


def contain_spec(spec: str) -> ContainedAgent:
    """Your own agent by its spec (``FILE.py:NAME``, ``MODULE:NAME``), built in a process of its
    own; its name is the spec. What stops the build there is an ``AgentSpecError``, as in-process."""
    name = spec.strip()
    try:
        return ContainedAgent(lambda: make_agent(name), name, load_path=name)
    except AgentFailure as exc:  # its process ended (the exceptions of a build are AgentSpecErrors already)
        raise AgentSpecError(str(exc)) from None


def _rebuild(fn: Any) -> Agent:
    """A ``ContainedAgent`` unpickled: your object in a process of its own again (or, where none
    can be forked, as the agent it makes)."""
    return resolve_opponent(contain(fn))


def _needs_arguments(agent: object) -> bool:
    """True for a class that cannot be built with no arguments (``resolve_opponent`` says so, in
    the caller's process: calling it fails before any code of it runs)."""
    if not inspect.isclass(agent):
        return False
    try:
        inspect.signature(agent).bind()
    except TypeError:
        return True
    except ValueError:  # no signature to read: the build will tell
        return False
    return False


def contain(agent: A) -> A | ContainedAgent:
    """``agent`` (a function, class or object of yours) as a ``ContainedAgent``; as it is a built-in
    agent, something that is no agent or a class that needs arguments (left to the caller's
    checks), and anything where no process can be forked (``containable``)."""
    if isinstance(agent, ContainedAgent | str) or is_builtin(agent) or not containable():
        return agent
    no_agent = not callable(agent) and not callable(getattr(agent, "act", None))
    if no_agent or _needs_arguments(agent):  # the caller's checks say what is wrong, with no code of yours run
        return agent
    name = getattr(agent, "name", None) or getattr(agent, "__name__", None) or type(agent).__name__
    return ContainedAgent(lambda: agent, str(name), fn=agent)
