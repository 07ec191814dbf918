"""The protocol every player follows, so that the arena, the single-agent env's opponent and the
trainers' opponent pool all take any agent.

An agent decides an action for a ``GameState`` with an explicit random generator. An agent that
can decide for many games at once also implements ``act_batch`` over raw state arrays (rows of the
vector engine, layout in ``patchwork_env.rules``) and their legal masks.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

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
