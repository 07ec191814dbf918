"""The declared bounds (``GAME_INFO``) hold for every front-end and for many random games."""

from __future__ import annotations

import numpy as np
import pytest

from patchwork_env import SingleAgentEnv, new_game, raw_env
from patchwork_env.envs import edge
from patchwork_env.envs.game_info import GAME_INFO
from patchwork_env.envs.vector import VectorGames
from patchwork_env.envs.vector_env import PatchworkVectorEnv


def test_spaces_of_every_front_end_follow_the_bounds() -> None:
    aec = raw_env()
    single = SingleAgentEnv()
    vector = PatchworkVectorEnv(2)
    for obs_space, act_space in (
        (aec.observation_space("player_0")["observation"], aec.action_space("player_0")),
        (single.observation_space, single.action_space),
        (vector.single_observation_space, vector.single_action_space),
    ):
        assert obs_space.shape == GAME_INFO.observation_shape
        assert int(act_space.n) == GAME_INFO.num_distinct_actions  # type: ignore[attr-defined]
    assert len(aec.possible_agents) == GAME_INFO.num_players
    assert new_game(0).legal_action_mask().shape == (GAME_INFO.num_distinct_actions,)


def test_no_game_is_longer_than_max_game_length() -> None:
    games = VectorGames(256, seed=11)
    longest = 0
    ended = 0
    for _ in range(3 * GAME_INFO.max_game_length):
        result = games.step(games.sample_random())
        longest = max(longest, int(result.plies.max()))
        ended += int(result.done.sum())
    assert ended > 256 and 0 < longest <= GAME_INFO.max_game_length


@pytest.mark.parametrize("reward", edge.REWARD_KINDS)
def test_final_rewards_lie_in_the_utility_range_and_sum_to_zero(reward: str) -> None:
    rng = np.random.default_rng(0)
    for seed in range(20):
        s = new_game(seed)
        while not s.is_terminal:
            s = s.step(int(rng.choice(s.legal_actions())))
        r = edge.final_rewards(s, reward)
        assert all(GAME_INFO.min_utility <= x <= GAME_INFO.max_utility for x in r)
        assert sum(r) == pytest.approx(GAME_INFO.utility_sum)
