"""patchwork_env: a rules-exact Patchwork engine, its reinforcement-learning environments, players
and the tools to measure them.

The package is layered, each layer importing only those below it (``.importlinter`` holds the
contract):

=====================  =========================================================================
``core``               the rules: patch tables, bitboards, the compiled kernels on the flat state
                       array, ``GameState``, validation, serialization, drawing, game records
``envs``               the observation, the front-ends' shared decisions (``edge``), the
                       PettingZoo AEC env, the Gymnasium single-agent env, the vector engine and
                       vector env
``players``            random, greedy, mcts, ``az`` and ``pretrained``; with the ``torch`` extra the
                       network policy of a checkpoint (``network:PATH``) and the torch networks
                       (``pretrained:net=v2``, ``az:net=v1``); spec strings
``evaluation``         the arena (paired deals, Wilson intervals, Elo) and the ladder
``replay``             the self-contained replay page of a game record
``cli``                the ``patchwork`` command
=====================  =========================================================================

The names below load on first use, so that ``import patchwork_env`` stays cheap (the compiled
kernels load with the engine). Importing the package registers ``ENV_ID`` with PettingZoo and
``SINGLE_AGENT_ENV_ID`` with Gymnasium; ``import patchwork_env.openspiel`` (the ``openspiel`` extra,
never imported by the package) registers the game with OpenSpiel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium
import pettingzoo

from patchwork_env.core import factory
from patchwork_env.core.lazy import lazy_exports

if TYPE_CHECKING:
    from patchwork_env.core.actions import (
        ADVANCE,
        NUM_ACTIONS,
        Action,
        GameOverError,
        IllegalActionError,
        action_to_str,
        decode_action,
        encode_buy,
        encode_leather,
        parse_action,
    )
    from patchwork_env.core.patches import PATCHES, Patch
    from patchwork_env.core.state import GameState, new_game
    from patchwork_env.envs.aec import env, raw_env
    from patchwork_env.envs.game_info import GAME_INFO, GameInfo
    from patchwork_env.envs.observation import observation_and_mask
    from patchwork_env.envs.single_agent import SingleAgentEnv
    from patchwork_env.envs.vector import VectorGames
    from patchwork_env.envs.vector_env import PatchworkVectorEnv
    from patchwork_env.evaluation.compare import compare
    from patchwork_env.evaluation.ladder import rate
    from patchwork_env.players.registry import make_agent
    from patchwork_env.players.search_stats import SearchStats, search_stats

from patchwork_env.core.version import __version__  # written once, below every layer

ENV_ID = "patchwork/Patchwork-v0"
SINGLE_AGENT_ENV_ID = "patchwork/PatchworkSingleAgent-v0"

_EXPORTS = {
    "patchwork_env.core.actions": (
        "ADVANCE", "NUM_ACTIONS", "Action", "GameOverError", "IllegalActionError", "action_to_str",
        "decode_action", "encode_buy", "encode_leather", "parse_action",
    ),
    "patchwork_env.core.patches": ("PATCHES", "Patch"),
    "patchwork_env.core.state": ("GameState", "new_game"),
    "patchwork_env.envs.aec": ("env", "raw_env"),
    "patchwork_env.envs.observation": ("observation_and_mask",),
    "patchwork_env.evaluation.compare": ("compare",),
    "patchwork_env.evaluation.ladder": ("rate",),
    "patchwork_env.envs.single_agent": ("SingleAgentEnv",),
    "patchwork_env.envs.vector": ("VectorGames",),
    "patchwork_env.envs.vector_env": ("PatchworkVectorEnv",),
    "patchwork_env.envs.game_info": ("GAME_INFO", "GameInfo"),
    "patchwork_env.players.registry": ("make_agent",),
    "patchwork_env.players.search_stats": ("SearchStats", "search_stats"),
}  # fmt: skip

__all__ = [
    "ADVANCE",
    "ENV_ID",
    "GAME_INFO",
    "NUM_ACTIONS",
    "PATCHES",
    "SINGLE_AGENT_ENV_ID",
    "Action",
    "GameInfo",
    "GameOverError",
    "GameState",
    "IllegalActionError",
    "Patch",
    "PatchworkVectorEnv",
    "SearchStats",
    "SingleAgentEnv",
    "VectorGames",
    "__version__",
    "action_to_str",
    "compare",
    "decode_action",
    "encode_buy",
    "encode_leather",
    "env",
    "make_agent",
    "new_game",
    "observation_and_mask",
    "parse_action",
    "rate",
    "raw_env",
    "search_stats",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())  # the names above, on first use


def _players_registry(spec: str) -> Any:
    """The players' ``make_agent``, imported when a spec first needs it (``core.factory``'s default:
    how the envs build an opponent from a spec without importing the layer above them)."""
    from patchwork_env.players.registry import make_agent

    return make_agent(spec)


factory.set_default(_players_registry)


def _register() -> None:
    """``pettingzoo.make("aec", ENV_ID, **kwargs)`` builds ``env(**kwargs)``;
    ``gymnasium.make(SINGLE_AGENT_ENV_ID, **kwargs)`` builds ``SingleAgentEnv(**kwargs)``."""
    if ENV_ID not in pettingzoo.aec_registry:
        pettingzoo.register("aec", ENV_ID, entry_point="patchwork_env.envs.aec:env")
    if SINGLE_AGENT_ENV_ID not in gymnasium.registry:
        gymnasium.register(
            SINGLE_AGENT_ENV_ID,
            entry_point="patchwork_env.envs.single_agent:SingleAgentEnv",
            vector_entry_point="patchwork_env.envs.vector_env:PatchworkVectorEnv",
        )


_register()
