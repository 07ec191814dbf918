"""Patchwork in OpenSpiel (``pip install "patchwork-env[openspiel]"``): importing this module
registers ``python_patchwork`` with ``pyspiel``; the guide is ``docs/openspiel.md``.

    >>> import pyspiel
    >>> import patchwork_env.openspiel
    >>> game = pyspiel.load_game("python_patchwork")
    >>> game.num_distinct_actions(), game.max_game_length(), game.observation_tensor_shape()
    (2026, 111, [1452])

=======================  ===========================================================================
``GAME_NAME``            ``"python_patchwork"``, the name ``pyspiel.load_game`` takes
``PatchworkGame``,       the game and its states, a thin shell over the rules
``PatchworkState``       (``patchwork_env.envs.openspiel`` documents their shape)
``game_state_of``        the engine's ``GameState`` of an OpenSpiel state
``AgentBot``             any agent spec, agent or function as a ``pyspiel.Bot``
``OpenSpielMCTSAgent``   OpenSpiel's ``MCTSBot`` as the project's agent (the ``openspiel-mcts`` spec)
=======================  ===========================================================================

``import patchwork_env`` never loads OpenSpiel; without the extra, importing this module raises an
``ImportError`` naming it.
"""

from __future__ import annotations

from patchwork_env.envs.openspiel import GAME_NAME, PatchworkGame, PatchworkState, game_state_of
from patchwork_env.players.openspiel import AgentBot, OpenSpielMCTSAgent

__all__ = [
    "GAME_NAME",
    "AgentBot",
    "OpenSpielMCTSAgent",
    "PatchworkGame",
    "PatchworkState",
    "game_state_of",
]
