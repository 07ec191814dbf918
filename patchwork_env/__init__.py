"""patchwork_env: a rules-exact Patchwork engine and its reinforcement-learning environments.

The engine (``GameState``, ``new_game``) is the one implementation of the rules; see
``docs/rules.md`` in the repository for the rules it follows. On top of it:
``env()`` / ``raw_env`` (PettingZoo AEC, registered as ``"patchwork/Patchwork-v0"``; its
documentation page is ``patchwork_env.aec``) and ``SingleAgentEnv`` (Gymnasium, against an
opponent that moves inside ``step``; registered as ``"patchwork/PatchworkSingleAgent-v0"``).
"""

from patchwork_env.actions import (
    ADVANCE,
    NUM_ACTIONS,
    Action,
    action_to_str,
    decode_action,
    encode_buy,
    encode_leather,
    parse_action,
)
from patchwork_env.patches import PATCHES, Patch
from patchwork_env.state import GameState, IllegalActionError, new_game

from patchwork_env.aec import env, raw_env  # isort: skip  (the environments need the engine above)
from patchwork_env.single_agent import SingleAgentEnv  # isort: skip

__version__ = "0.1.0"

ENV_ID = "patchwork/Patchwork-v0"
SINGLE_AGENT_ENV_ID = "patchwork/PatchworkSingleAgent-v0"


def _register() -> None:
    """``pettingzoo.make("aec", ENV_ID, **kwargs)`` builds ``env(**kwargs)``;
    ``gymnasium.make(SINGLE_AGENT_ENV_ID, **kwargs)`` builds ``SingleAgentEnv(**kwargs)``."""
    import gymnasium
    import pettingzoo

    if ENV_ID not in pettingzoo.aec_registry:
        pettingzoo.register("aec", ENV_ID, entry_point="patchwork_env.aec:env")
    if SINGLE_AGENT_ENV_ID not in gymnasium.registry:
        gymnasium.register(
            SINGLE_AGENT_ENV_ID,
            entry_point="patchwork_env.single_agent:SingleAgentEnv",
            vector_entry_point="patchwork_env.vector_env:PatchworkVectorEnv",
        )


_register()

_LAZY = {"VectorGames": "patchwork_env.vector", "PatchworkVectorEnv": "patchwork_env.vector_env"}


def __getattr__(name: str) -> object:
    """The vector engine and vector env load on first use (their kernels compile on import)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'patchwork_env' has no attribute {name!r}")


__all__ = [
    "ADVANCE",
    "ENV_ID",
    "NUM_ACTIONS",
    "PATCHES",
    "SINGLE_AGENT_ENV_ID",
    "Action",
    "GameState",
    "IllegalActionError",
    "Patch",
    "PatchworkVectorEnv",
    "SingleAgentEnv",
    "VectorGames",
    "action_to_str",
    "decode_action",
    "encode_buy",
    "encode_leather",
    "env",
    "new_game",
    "parse_action",
    "raw_env",
]
