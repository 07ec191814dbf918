"""The game's bounds, declared up front (as OpenSpiel's ``GameInfo``), for code and tests that
must not guess them.

>>> from patchwork_env.envs.game_info import GAME_INFO
>>> GAME_INFO.num_distinct_actions, GAME_INFO.max_game_length, GAME_INFO.observation_shape
(2026, 111, (1452,))
"""

from __future__ import annotations

from typing import NamedTuple

from patchwork_env.core import rules
from patchwork_env.envs.observation import OBS_DIM

__all__ = ["GAME_INFO", "GameInfo"]


class GameInfo(NamedTuple):
    num_players: int
    num_distinct_actions: int
    #: decisions of both players in one game, leather placements included (``GameState.ply``)
    max_game_length: int
    #: the range of the final reward of one player, for every ``reward=`` kind (``edge``)
    min_utility: float
    max_utility: float
    #: the final rewards of both players add up to this (zero-sum)
    utility_sum: float
    observation_shape: tuple[int, ...]


# Every decision but a leather placement moves the decider's token at least one space (patch times
# are 1..6, "advance" goes past the opponent) and tokens stop on FINAL_SPACE; each leather patch is
# placed once at most.
_MAX_LEATHER = max(len(spaces) for spaces in rules.LEATHER_LAYOUTS.values())
if int(rules.PATCH_TIME.min()) < 1:  # pragma: no cover - the bound below would not hold
    raise ValueError("a patch with time 0 breaks GAME_INFO.max_game_length")

GAME_INFO = GameInfo(
    num_players=2,
    num_distinct_actions=rules.NUM_ACTIONS,
    max_game_length=2 * rules.FINAL_SPACE + _MAX_LEATHER,
    min_utility=-1.0,
    max_utility=1.0,
    utility_sum=0.0,
    observation_shape=(OBS_DIM,),
)
