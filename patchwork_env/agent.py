"""The protocol every player follows, so that the arena, the single-agent env's opponent and the
trainers' opponent pool all take any agent.

An agent decides an action for a ``GameState`` with an explicit random generator. An agent that
can decide for many games at once also implements ``act_batch`` over raw state arrays (rows of the
vector engine, layout in ``patchwork_env.rules``) and their legal masks.

``resolve_opponent`` turns what the envs accept as an opponent into an ``Agent``. Spec strings
other than ``"random"`` are built by an agent factory that another package registers with
``register_agent_factory`` (the project's ``agents`` package registers ``agents.make_agent`` when
it is imported, and as the ``patchwork_env.agent_factory`` entry point of the installed project,
so ``SingleAgentEnv(opponent="greedy")`` works without importing it first). This package never
imports ``agents`` by name.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from patchwork_env.state import GameState


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


class RandomAgent:
    """Uniform over the legal actions."""

    name = "random"

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        legal = state.legal_actions()
        return int(legal[int(rng.random() * len(legal))])

    def act_batch(
        self, states: npt.NDArray[np.int64], masks: npt.NDArray[np.bool_], rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        from patchwork_env.vector_kernels import sample_rows

        out = np.empty(len(masks), dtype=np.int64)
        sample_rows(masks, rng.random(len(masks)), out)
        return out


# --- opponents given as specs, callables or agents ---------------------------------------------
AgentFactory = Callable[[str], Agent]
Opponent = str | Agent | Callable[[GameState], Any]
ENTRY_POINT_GROUP = "patchwork_env.agent_factory"
_factories: dict[str, AgentFactory] = {}


def register_agent_factory(factory: AgentFactory, name: str = "default") -> None:
    """Let spec strings (``"greedy"``, ``"mcts:sims=200"``) be built by ``factory(spec)``."""
    if not callable(factory):
        raise TypeError(f"an agent factory is a callable (spec: str) -> Agent, got {type(factory).__name__}")
    _factories[name] = factory


def _agent_factory(spec: str) -> AgentFactory:
    if "default" not in _factories:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                register_agent_factory(ep.load(), ep.name)
            except Exception as exc:  # any failure of a plug-in is reported, never half-used
                raise ValueError(f"opponent {spec!r}: the agent factory {ep.value!r} cannot be loaded ({exc})") from exc
    factory = _factories.get("default") or next(iter(_factories.values()), None)
    if factory is None:
        raise ValueError(
            f"opponent {spec!r}: specs other than 'random' are built by a registered agent factory and none is "
            "(install the project's 'agents' package or call patchwork_env.agent.register_agent_factory); "
            "or pass an agent object or a callable (GameState) -> action"
        )
    return factory


class _CallableAgent:
    """An agent around a function ``(GameState) -> action``."""

    def __init__(self, fn: Callable[[GameState], Any]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", type(fn).__name__)

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        return int(self.fn(state))


def is_random_spec(opponent: object) -> bool:
    return isinstance(opponent, str) and opponent.strip().lower() == "random"


def resolve_opponent(opponent: Opponent) -> Agent:
    """An ``Agent`` from a spec string, an agent object or a callable ``(GameState) -> action``."""
    if isinstance(opponent, str):
        if is_random_spec(opponent):
            return RandomAgent()
        return _agent_factory(opponent)(opponent)
    act = getattr(opponent, "act", None)
    if callable(act):
        return opponent  # type: ignore[return-value]
    if callable(opponent):
        return _CallableAgent(opponent)
    raise TypeError(
        "opponent must be an agent spec string (e.g. 'random'), an object with act(state, rng) -> action, "
        f"or a callable (GameState) -> action; got {type(opponent).__name__}"
    )
