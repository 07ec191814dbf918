"""Your own agent by its import path: ``FILE.py:NAME`` or ``MODULE:NAME``, wherever a spec goes.

    patchwork ladder my_agent.py:act --workers 2
    patchwork evaluate --agents my_agent.py:MyAgent greedy --pairs 50
    patchwork ladder mypackage.agents:make_agent

``NAME`` (dotted for an attribute of an attribute) is one of

- an agent object: anything with ``act(state, rng) -> action`` (and optionally ``name``, ``reset()``);
- a function ``(GameState) -> action``, an action id in 0..2025 (``patchwork_env.observation_and_mask``
  gives the environments' observation and legal mask of a ``GameState``);
- a zero-argument factory of either (a class with a no-argument constructor counts).

``FILE.py`` is imported as a module of its own (its folder first on ``sys.path``, as Python runs a
script); ``MODULE`` is imported from ``sys.path`` and the current folder. The loaded agent keeps
the spec as ``load_path``: the arena's workers load it the same way, each in its own process, so
a script needs no ``if __name__ == "__main__":`` guard and nothing needs to be picklable. Anything
that stops the import or the factory (an exception, ``sys.exit``) is an ``AgentSpecError`` naming
the spec. The arena builds and plays it in a process of its own (``players.contained``), where
``os._exit`` or a crash of the agent ends that process only.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from patchwork_env.core.state import GameState
from patchwork_env.envs.agent import Agent, resolve_opponent
from patchwork_env.players.contained import ContainedAgent, first_line
from patchwork_env.players.errors import AgentSpecError


def defined_names(path: Path) -> list[str]:
    """The public names a Python file defines at its top level, read without running it: its
    functions and classes, then what it assigns (imports left out)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    defs, assigned = [], []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defs.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned += [t.id for t in targets if isinstance(t, ast.Name)]
    return [n for n in dict.fromkeys(defs + assigned) if not n.startswith("_")]


def suggest_names(file: str) -> str:
    """The one line for a spec that names a Python file but no agent in it (``my_agent.py``)."""
    path = Path(file)
    if not path.is_file():
        return f"{file}: no such file (FILE.py:NAME names a Python file and the agent in it)"
    try:
        names = defined_names(path)
    except (OSError, SyntaxError, ValueError) as exc:
        return f"{file} names a file but not the agent in it: give FILE.py:NAME (and the file does not parse: {exc})"
    if not names:
        return f"{file} names a file but not the agent in it (FILE.py:NAME), and it defines no public function or class"
    return (
        f"{file} names a file but not the agent in it: give FILE.py:NAME, e.g. {file}:{names[0]} "
        f"(it defines {', '.join(names[:8])}{', ...' if len(names) > 8 else ''})"
    )


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise AgentSpecError(f"{path}: no such file (FILE.py:NAME names a Python file and a name in it)")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    module_name = f"patchwork_user_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise AgentSpecError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # classes and functions defined there pickle by this name
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[module_name]
        if isinstance(exc, KeyboardInterrupt):
            raise
        # the type and the first line of the message: no ": " after a type without one (GeneratorExit)
        raise AgentSpecError(f"{path}: importing it raised {first_line(exc)}") from exc
    return module


def _import_module(name: str) -> Any:
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise AgentSpecError(
            f"no module {name!r} ({exc}); MODULE:NAME imports MODULE from the current folder or the installed "
            "packages, FILE.py:NAME imports a file"
        ) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # sys.exit at import too: the spec's error, not the command's exit
        raise AgentSpecError(f"importing {name!r} raised {type(exc).__name__}: {exc}") from exc


def _takes_no_arguments(fn: Any) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in signature.parameters.values()
    )


class _NamedAgent:
    """An agent object under the name of its spec, kept apart from the user's object."""

    def __init__(self, inner: Agent, name: str, load_path: str) -> None:
        self.inner = inner
        self.name = name
        self.load_path = load_path

    def act(self, state: GameState, rng: np.random.Generator) -> Any:
        return self.inner.act(state, rng)

    def reset(self) -> None:
        reset = getattr(self.inner, "reset", None)
        if callable(reset):
            reset()


def loaded_spec(agent: object) -> str | None:
    """The spec an agent was loaded from by ``load_user_agent`` (its ``load_path``), or None for any
    other object: an attribute of that name on someone else's object says nothing of what it plays."""
    if isinstance(agent, ContainedAgent):  # built from its spec in a process of its own
        return agent.load_path
    return agent.load_path if isinstance(agent, _NamedAgent) else None


def load_user_agent(spec: str) -> Agent:
    """The agent that ``FILE.py:NAME`` or ``MODULE:NAME`` names (module docstring)."""
    head, _, name = spec.strip().rpartition(":")
    head, name = head.strip(), name.strip()
    module = _import_file(Path(head)) if head.endswith(".py") else _import_module(head)
    target: Any = module
    for part in name.split("."):
        if not hasattr(target, part):
            public = [n for n in dir(target) if not n.startswith("_")]
            close = difflib.get_close_matches(part, public, n=1)
            hint = f": did you mean {close[0]!r}?" if close else ""
            found = ", ".join(public)[:300]
            raise AgentSpecError(f"{head} has no {name!r}{hint} (it defines: {found or 'nothing public'})")
        target = getattr(target, part)
    obj = target
    if inspect.isclass(obj) or (not callable(getattr(obj, "act", None)) and _takes_no_arguments(obj)):
        try:
            obj = obj()  # a factory: a class or a function of no arguments
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # sys.exit in a constructor too: the spec's error, not the command's exit
            raise AgentSpecError(f"{spec}: calling {name}() to make the agent raised {first_line(exc)}") from exc
    if not callable(getattr(obj, "act", None)) and not callable(obj):
        raise AgentSpecError(
            f"{spec}: {name} is a {type(obj).__name__}; it must be an agent (with act(state, rng)), a function "
            "(GameState) -> action, or a zero-argument factory of either"
        )
    return _NamedAgent(resolve_opponent(obj), spec.strip(), spec.strip())
