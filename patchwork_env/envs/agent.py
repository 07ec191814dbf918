"""The protocol every player follows, so that the arena, the single-agent env's opponent and the
trainers' opponent pool all take any agent.

An agent decides an action for a ``GameState`` with an explicit random generator. An agent that
can decide for many games at once also implements ``act_batch`` over raw state arrays (rows of the
vector engine, layout in ``patchwork_env.core.rules``) and their legal masks.

``resolve_opponent`` turns what the envs accept as an opponent into an ``Agent``. The players live
above the envs (``patchwork_env.players``), so a spec string reaches them by name when it is first
used, as Gymnasium's ``entry_point`` strings do: ``"random"`` is ``RANDOM_AGENT``, any other spec
goes to the players' registry (``DEFAULT_FACTORY``; ``register_agent_factory`` puts another factory
in its place). ``RandomAgent`` lives in ``patchwork_env.players.random``; the name here is kept for
old imports until 0.5.0, which removes it (a ``DeprecationWarning``).
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from patchwork_env.core.actions import IllegalActionError, as_action_id
from patchwork_env.core.state import GameState


@runtime_checkable
class Agent(Protocol):
    """Anything with ``act(state, rng) -> action id``. ``name`` is used in tables."""

    name: str

    def act(self, state: GameState, rng: np.random.Generator) -> int: ...


@runtime_checkable
class BatchAgent(Agent, Protocol):
    """An agent that also decides for a batch: ``states`` (N, STATE_LEN) int64 rows, ``masks``
    (N, 2026) bool legal masks of the player to move in each row; returns (N,) int64 actions."""

    def act_batch(
        self, states: npt.NDArray[np.int64], masks: npt.NDArray[np.bool_], rng: np.random.Generator
    ) -> npt.NDArray[np.int64]: ...


# --- opponents given as specs, callables or agents ---------------------------------------------
AgentFactory = Callable[[str], Agent]
Opponent = str | Agent | Callable[[GameState], Any] | type  # a type: an agent's class, built with no arguments
#: the factory of spec strings, by name: the players layer's registry unless another is registered
DEFAULT_FACTORY = "patchwork_env.players.registry:make_agent"
#: the ``"random"`` opponent, by name (never the registered factory's)
RANDOM_AGENT = "patchwork_env.players.random:RandomAgent"
_factory: AgentFactory | None = None


def _by_name(target: str) -> Any:
    """The object ``"module:name"`` names (the module imported on first use)."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def __getattr__(name: str) -> Any:
    """``RandomAgent``, the old home of ``patchwork_env.players.random.RandomAgent``."""
    if name == "RandomAgent":
        warnings.warn(
            "RandomAgent moved from patchwork_env.envs.agent to patchwork_env.players.random "
            "(0.5.0 removes the old name)",
            DeprecationWarning,
            stacklevel=2,
        )
        return _by_name(RANDOM_AGENT)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_agent_factory(factory: AgentFactory) -> None:
    """Let spec strings (``"greedy"``, ``"mcts:sims=200"``) be built by ``factory(spec)`` instead of
    the players registry (``DEFAULT_FACTORY``)."""
    global _factory
    if not callable(factory):
        raise TypeError(f"an agent factory is a callable (spec: str) -> Agent, got {type(factory).__name__}")
    _factory = factory


def agent_factory() -> AgentFactory:
    """The factory of spec strings: the registered one, else ``DEFAULT_FACTORY``, looked up by name
    (the envs sit below the players; a registry by name keeps the dependency pointing up only at
    run time, as Gymnasium's ``entry_point`` strings do)."""
    if _factory is not None:
        return _factory
    factory: AgentFactory = _by_name(DEFAULT_FACTORY)
    return factory


class NotAnAction(IllegalActionError):
    """What an agent returned is not an action id; ``returned`` is the value (the arena records it)."""

    def __init__(self, message: str, returned: object = None) -> None:
        super().__init__(message)
        self.returned = returned


class _CallableAgent:
    """An agent around a function ``(GameState) -> action``. What it returns is checked as
    ``GameState.step`` checks an action (``as_action_id``: a Python or numpy integer in 0..2025):
    anything else (a float, a string, None) is a ``NotAnAction`` (an ``IllegalActionError``), an
    illegal move."""

    def __init__(self, fn: Callable[[GameState], Any]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", type(fn).__name__)

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        returned = self.fn(state)
        try:
            return as_action_id(returned)
        except IllegalActionError as exc:
            raise NotAnAction(str(exc), returned) from None


def is_random_spec(opponent: object) -> bool:
    return isinstance(opponent, str) and opponent.strip().lower() == "random"


def resolve_opponent(opponent: Opponent) -> Agent:
    """An ``Agent`` from a spec string, an agent object, an agent class (built with no arguments,
    as ``FILE.py:NAME`` builds one) or a callable ``(GameState) -> action``."""
    if isinstance(opponent, str):
        if is_random_spec(opponent):
            random_agent: Agent = _by_name(RANDOM_AGENT)()
            return random_agent
        return agent_factory()(opponent)
    if inspect.isclass(opponent):  # the class of an agent: its instance, as FILE.py:NAME makes one
        try:
            built: Any = opponent()
        except TypeError as exc:
            raise TypeError(
                f"{opponent.__name__}() could not be built with no arguments ({exc}): give an instance instead"
            ) from None
        return resolve_opponent(built)
    act = getattr(opponent, "act", None)
    if callable(act):
        return opponent  # type: ignore[return-value]
    if callable(opponent):
        return _CallableAgent(opponent)
    raise TypeError(
        "opponent must be an agent spec string (e.g. 'random'), an object with act(state, rng) -> action, "
        f"or a callable (GameState) -> action; got {type(opponent).__name__}"
    )
