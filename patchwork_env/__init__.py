"""patchwork_env: a rules-exact Patchwork engine and its reinforcement-learning environments.

The engine (``GameState``, ``new_game``) is the one implementation of the rules; see
``rules.md`` in the project documentation for the rules it follows.
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

__version__ = "0.1.0"

__all__ = [
    "ADVANCE",
    "NUM_ACTIONS",
    "PATCHES",
    "Action",
    "GameState",
    "IllegalActionError",
    "Patch",
    "action_to_str",
    "decode_action",
    "encode_buy",
    "encode_leather",
    "new_game",
    "parse_action",
]
