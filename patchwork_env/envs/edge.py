"""The edge policy of every front-end, decided once.

``GameState``, the AEC env (``aec``), ``SingleAgentEnv`` (``single_agent``) and the vector env
(``vector_env``, over ``vector``) are thin shells over the rules; what happens at their edges is
decided here and nowhere else:

==========================  ===================================================================
Edge                        Policy
==========================  ===================================================================
stepping a finished game    ``GameOverError`` (an ``IllegalActionError``, so a ``ValueError``, and
                            also a ``RuntimeError`` as ``SingleAgentEnv`` raised before), the
                            state unchanged. The AEC env's dead step ``step(None)`` of PettingZoo
                            stays legal; a batch (``VectorGames(auto_reset=False)``) skips its
                            finished games, since the others must step in the same call.
illegal action              ``illegal_action="lose"`` (``DEFAULT_ILLEGAL_ACTION``, in ``env()``,
                            ``SingleAgentEnv`` and ``PatchworkVectorEnv``): the offender's episode
                            ends with ``ILLEGAL_ACTION_REWARD`` (-1); ``"raise"``: an
                            ``IllegalActionError`` and nothing changes. ``GameState.step`` and
                            ``raw_env`` are the rules layer: they always raise. Anything that is
                            not an integer in 0..2025 is "out of range" (``actions.as_action_id``)
                            in every mode.
reset options               ``read_reset_options``: a front-end's known keys are checked (a bad
                            value is a ``ValueError``); an unknown key warns and is ignored, in
                            every front-end (PettingZoo's ``api_test`` resets with
                            ``options={"options": 1}``).
leather layout              ``rules.check_leather_layout``: ``"revised"`` or ``"original"``.
final reward                ``final_rewards`` / the compiled ``final_reward``: ``"win"`` gives +1 /
                            -1, ``"score"`` ``clip(margin / SCORE_REWARD_SCALE, -1, 1)``.
==========================  ===================================================================

An opponent given as a spec string (``"greedy"``, ``"mcts:sims=200"``) is built by
``patchwork_env.envs.agent.resolve_opponent`` through the players' registry
(``patchwork_env.players.registry.make_agent``), which the package face injects below the envs
(``patchwork_env.core.factory``; ``agent.register_agent_factory`` puts another factory in its
place): the envs sit below the players and never import them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Literal

import gymnasium
import numpy as np
import numpy.typing as npt

from patchwork_env.core.actions import IllegalActionError, is_integer
from patchwork_env.core.jit import jit
from patchwork_env.core.render import render_rgb, render_text
from patchwork_env.core.state import GameState

__all__ = [
    "DEFAULT_ILLEGAL_ACTION",
    "ILLEGAL_ACTION_MODES",
    "ILLEGAL_ACTION_REWARD",
    "RENDER_MODES",
    "REWARD_KINDS",
    "REWARD_SCORE",
    "REWARD_WIN",
    "SCORE_REWARD_SCALE",
    "IllegalActionMode",
    "RewardKind",
    "check_illegal_action",
    "check_render_mode",
    "check_reward_kind",
    "check_seat",
    "check_seed",
    "final_reward",
    "final_rewards",
    "on_illegal_action",
    "read_reset_options",
    "render_mode_output",
]

RewardKind = Literal["win", "score"]
IllegalActionMode = Literal["lose", "raise"]

REWARD_KINDS: tuple[str, ...] = ("win", "score")
REWARD_WIN = 0  # index into REWARD_KINDS: the reward mode the compiled kernels take
REWARD_SCORE = 1
SCORE_REWARD_SCALE = 100.0
ILLEGAL_ACTION_MODES: tuple[str, ...] = ("lose", "raise")
DEFAULT_ILLEGAL_ACTION: IllegalActionMode = "lose"
ILLEGAL_ACTION_REWARD = -1.0
RENDER_MODES: tuple[str, ...] = ("ansi", "human", "rgb_array")


# --- options of the constructors -------------------------------------------------------------
def check_reward_kind(reward: object) -> str:
    if not isinstance(reward, str) or reward not in REWARD_KINDS:
        raise ValueError(f"reward must be one of {REWARD_KINDS}, got {reward!r}")
    return str(reward)


def check_illegal_action(mode: object) -> str:
    if not isinstance(mode, str) or mode not in ILLEGAL_ACTION_MODES:
        raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {mode!r}")
    return str(mode)


def check_render_mode(mode: object, allowed: tuple[str, ...] = RENDER_MODES) -> str | None:
    if mode is not None and (not isinstance(mode, str) or mode not in allowed):
        raise ValueError(f"render_mode must be None or one of {allowed}, got {mode!r}")
    return None if mode is None else str(mode)


def check_seat(seat: object, name: str = "seat", *, allow_none: bool = True) -> int | None:
    if seat is None and allow_none:
        return None
    if not is_integer(seat) or seat not in (0, 1):
        allowed = "the integer 0 or 1, or None (drawn every episode)" if allow_none else "the integer 0 or 1"
        raise ValueError(f"{name} must be {allowed}, got {seat!r}")
    return int(seat)  # type: ignore[call-overload]


# --- illegal actions -------------------------------------------------------------------------
def on_illegal_action(mode: str, error: IllegalActionError) -> str:
    """The one illegal-action policy of every front-end: ``"raise"`` raises ``error`` (the caller
    has changed nothing yet); ``"lose"`` returns the reason, and the caller ends the offender's
    episode with ``ILLEGAL_ACTION_REWARD`` (the other player gets 0)."""
    if check_illegal_action(mode) == "raise":
        raise error
    return str(error)


# --- seeds -----------------------------------------------------------------------------------
#: what an env's ``reset(seed=...)`` accepts (it only seeds ``numpy.random.SeedSequence``); a run's
#: or a command line's seed is bounded lower (``patchwork_env.core.bounds.MAX_SEED``)
MAX_ENV_SEED = 2**64 - 1


def check_seed(seed: object) -> int | None:
    """The one seed policy of every front-end: ``None`` or an integer in 0..2**64 - 1 (a Python or
    numpy integer; not a bool). Anything else is a ``TypeError`` (wrong kind) or ``ValueError``
    (out of range) saying what is allowed."""
    if seed is None:
        return None
    if isinstance(seed, bool | np.bool_) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be None or an integer in 0..2**64 - 1, got {type(seed).__name__} {seed!r}")
    if not 0 <= int(seed) <= MAX_ENV_SEED:
        raise ValueError(f"seed must be None or an integer in 0..2**64 - 1, got {seed!r}")
    return int(seed)


# --- reset options ---------------------------------------------------------------------------
def read_reset_options(options: Mapping[str, Any] | None, allowed: tuple[str, ...]) -> dict[str, Any]:
    """``options`` restricted to the keys ``allowed``: an unknown key warns and is ignored (the one
    behaviour of every front-end); anything but a dict (or None) is a ValueError."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"options must be a dict with keys from {allowed}, got {type(options).__name__}")
    unknown = sorted(str(k) for k in options if k not in allowed)
    if unknown:
        warnings.warn(
            f"unknown reset option(s) {unknown}: allowed keys are {allowed} (ignored)", UserWarning, stacklevel=3
        )
    return {k: v for k, v in options.items() if k in allowed}


# --- the final reward ------------------------------------------------------------------------
@jit
def final_reward(won: bool, margin: float, reward_mode: int) -> float:
    """One player's reward at the end of a game: ``won`` (the rules' winner, tie-break included),
    ``margin`` = own score - other score, ``reward_mode`` an index into ``REWARD_KINDS``. Compiled,
    so that the vector kernels call this same function."""
    if reward_mode == REWARD_WIN:
        return 1.0 if won else -1.0
    return min(1.0, max(-1.0, margin / SCORE_REWARD_SCALE))


def final_rewards(state: GameState, reward: str) -> tuple[float, float]:
    """The rewards of player 0 and player 1 for a finished game (see ``final_reward``)."""
    mode = REWARD_KINDS.index(check_reward_kind(reward))
    a, b = state.scores()
    won0 = state.winner == 0
    return float(final_reward(won0, float(a - b), mode)), float(final_reward(not won0, float(b - a), mode))


# --- rendering -------------------------------------------------------------------------------
def render_mode_output(state: GameState, mode: str | None) -> str | npt.NDArray[np.uint8] | None:
    """What an env's ``render()`` returns in ``mode``: "ansi" a string, "rgb_array" an image,
    "human" prints the text and returns None; no mode warns and returns None."""
    if mode is None:
        gymnasium.logger.warn(
            "render() was called without a render mode: create the env with render_mode='ansi', 'human' or 'rgb_array'"
        )
        return None
    if mode == "rgb_array":
        return render_rgb(state)
    text = render_text(state)
    if mode == "human":
        print(text)
        return None
    return text
