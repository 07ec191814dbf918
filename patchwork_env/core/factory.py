"""Where the envs find the players without importing them: the factory of agent spec strings.

The envs (``patchwork_env.envs``) build an opponent from a spec string (``"greedy"``,
``"mcts:sims=200"``), and the players that spec names live two layers above them. The package face
(``patchwork_env/__init__.py``, which runs before any of its modules) gives this module the
players' registry as the **default** factory, imported when a spec first needs it; a user may
``register`` another in its place. ``"random"`` is always the default factory's (never a user's):
the env's default opponent stays the random player whatever is registered. Nothing here imports
anything of the project: a lower layer injects, no layer reaches up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

AgentFactory = Callable[[str], Any]
_default: AgentFactory | None = None
_registered: AgentFactory | None = None


def set_default(factory: AgentFactory) -> None:
    """The players' registry (the package face calls this once, at import)."""
    global _default
    _default = factory


def register(factory: AgentFactory | None) -> None:
    """Let spec strings be built by ``factory(spec)`` instead of the default (None: the default again)."""
    global _registered
    if factory is not None and not callable(factory):
        raise TypeError(f"an agent factory is a callable (spec: str) -> Agent, got {type(factory).__name__}")
    _registered = factory


def default_factory() -> AgentFactory:
    """The players' registry (``RuntimeError`` if the package face has not set it: it always has
    once any module of the package is imported)."""
    if _default is None:
        raise RuntimeError("no agent factory: import patchwork_env (its face sets the players' registry)")
    return _default


def agent_factory() -> AgentFactory:
    """The factory of spec strings: the registered one, else the default."""
    return _registered if _registered is not None else default_factory()
