"""The protocol every player follows, so that the arena, the single-agent env's opponent and the
trainers' opponent pool all take any agent.

An agent decides an action for a ``GameState`` with an explicit random generator. An agent that
can decide for many games at once also implements ``act_batch`` over raw state arrays (rows of the
vector engine, layout in ``patchwork_env.core.rules``) and their legal masks.

``resolve_opponent`` turns what the envs accept as an opponent into an ``Agent``. The players live
above the envs (``patchwork_env.players``), so a spec string reaches them through the factory the
package face injects below both (``patchwork_env.core.factory``): ``"random"`` is always the
players' random player, any other spec goes to the players' registry unless
``register_agent_factory`` puts another factory in its place. ``RandomAgent`` lives in
``patchwork_env.players.random``; the name here is kept for old imports until 0.5.0, which removes
it (a ``DeprecationWarning``).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from patchwork_env.core import factory as _factories
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


def __getattr__(name: str) -> Any:
    """``RandomAgent``, the old home of ``patchwork_env.players.random.RandomAgent``."""
    if name == "RandomAgent":
        warnings.warn(
            "RandomAgent moved from patchwork_env.envs.agent to patchwork_env.players.random "
            "(0.5.0 removes the old name)",
            DeprecationWarning,
            stacklevel=2,
        )
        return type(_factories.default_factory()("random"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_agent_factory(factory: AgentFactory) -> None:
    """Let spec strings (``"greedy"``, ``"mcts:sims=200"``) be built by ``factory(spec)`` instead of
    the players' registry (``patchwork_env.core.factory.register``)."""
    if not callable(factory):
        raise TypeError(f"an agent factory is a callable (spec: str) -> Agent, got {type(factory).__name__}")
    _factories.register(factory)


def agent_factory() -> AgentFactory:
    """The factory of spec strings: the registered one, else the players' registry."""
    return _factories.agent_factory()


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
            random_agent: Agent = _factories.default_factory()("random")
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
