"""The PettingZoo AEC environment: conformance tests, turn order, rewards, options, copying."""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, parallel_api_test, render_test, seed_test
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

import patchwork_env
from patchwork_env import IllegalActionError, new_game
from patchwork_env.core import rules
from patchwork_env.envs import observation
from patchwork_env.envs.aec import AGENTS, SCORE_REWARD_SCALE, env, final_rewards, raw_env
from patchwork_env.envs.observation import OBS_DIM, observation_bounds, observation_table

CIRCLE = [*range(32, 0, -1), 0]


def random_action(obs: dict[str, Any], rng: np.random.Generator) -> int:
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[int(rng.random() * len(legal))])


def play(e: Any, rng: np.random.Generator) -> Iterator[tuple[str, Any, float]]:
    """Random legal play through agent_iter/last/step; yields (agent, action, reward from last())."""
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, _ = e.last()
        action = None if terminated or truncated else random_action(obs, rng)
        yield agent, action, reward
        e.step(action)


# --- PettingZoo's own tests ------------------------------------------------------------------
@pytest.mark.parametrize("make", [env, raw_env], ids=["env", "raw_env"])
@pytest.mark.parametrize("reward", ["win", "score"])
def test_api_test(make: Any, reward: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # api_test's advice about non-Box observations, its junk reset option
        api_test(make(reward=reward), num_cycles=1000)


def test_seed_test() -> None:
    seed_test(env, num_cycles=500)
    seed_test(lambda: raw_env(leather_layout="original"), num_cycles=500)


def test_render_test() -> None:
    render_test(lambda render_mode=None: env(render_mode=render_mode))


def test_parallel_api_test() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel_api_test(turn_based_aec_to_parallel(env()), num_cycles=1000)


def test_registered_with_pettingzoo() -> None:
    e = pettingzoo.make("aec", patchwork_env.ENV_ID, reward="score", leather_layout="original")
    e.reset(seed=3)
    assert isinstance(e.unwrapped, raw_env)
    assert e.unwrapped.reward_kind == "score"
    assert e.unwrapped.game_state.leather_layout == "original"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # registering again (re-import) must not warn about overriding
        patchwork_env._register()


# --- turn order ------------------------------------------------------------------------------
def test_agent_selection_follows_the_game_and_repeats() -> None:
    e = raw_env()
    rng = np.random.default_rng(0)
    repeats = leather_stays = 0
    for seed in range(20):
        e.reset(seed=seed)
        while e.agents:
            agent = e.agent_selection
            obs, _, terminated, _, _ = e.last()
            if terminated:
                e.step(None)
                continue
            game = e.game_state
            assert agent == AGENTS[game.current_player]
            e.step(random_action(obs, rng))
            after = e.game_state
            if not after.is_terminal and e.agent_selection == agent:
                repeats += 1
                if after.pending_leather:
                    leather_stays += 1
                    mask = e.observe(agent)["action_mask"]
                    assert mask[rules.LEATHER_BASE : rules.ADVANCE].any() and not mask[: rules.LEATHER_BASE].any()
                    assert not mask[rules.ADVANCE]
    assert repeats > 20  # the player behind moves again: consecutive turns happen in every game or so
    assert leather_stays > 0


def test_same_agent_twice_in_a_row_scripted() -> None:
    # player 0 starts on top; it advances to space 1. Player 1 (space 0) buys the 1-time patch in
    # slot 0, lands on space 1 on top of player 0 and so moves again.
    e = raw_env()
    e.reset(options={"circle": [3, *[p for p in CIRCLE if p != 3]], "first_player": 0})
    assert patchwork_env.PATCHES[3].time == 1 and patchwork_env.PATCHES[3].cost <= 5
    assert e.agent_selection == "player_0"
    e.step(rules.ADVANCE)
    assert e.agent_selection == "player_1"
    action = int(np.flatnonzero(e.observe("player_1")["action_mask"][: rules.SLOT_ACTIONS])[0])
    e.step(action)
    assert e.game_state.positions == (1, 1)
    assert e.agent_selection == "player_1"
    assert e.observe("player_1")["action_mask"].any()
    assert not e.observe("player_0")["action_mask"].any()


def test_masks_only_for_the_acting_agent() -> None:
    e = raw_env()
    e.reset(seed=5)
    rng = np.random.default_rng(5)
    for _ in range(30):
        me = e.agent_selection
        other = AGENTS[1 - AGENTS.index(me)]
        obs = e.observe(me)
        assert obs["action_mask"].dtype == np.int8
        np.testing.assert_array_equal(obs["action_mask"].astype(bool), e.game_state.legal_action_mask())
        assert obs["action_mask"].sum() >= 1
        assert not e.observe(other)["action_mask"].any()
        assert obs["observation"][observation.OBS_PLANES_END + 21] == 1.0  # "to_move" from my seat
        assert e.observe(other)["observation"][observation.OBS_PLANES_END + 21] == 0.0
        e.step(random_action(obs, rng))


# --- rewards ---------------------------------------------------------------------------------
@pytest.mark.parametrize("reward", ["win", "score"])
def test_rewards_sum_over_multi_move_turns(reward: str) -> None:
    e = env(reward=reward)
    rng = np.random.default_rng(11)
    for seed in range(15):
        e.reset(seed=seed)
        seen = dict.fromkeys(AGENTS, 0.0)
        moves = dict.fromkeys(AGENTS, 0)
        finished = None
        for agent, action, r in play(e, rng):
            seen[agent] += r
            if action is not None:
                moves[agent] += 1
            else:
                finished = finished or e.unwrapped.game_state
        assert finished is not None and finished.is_terminal
        expected = final_rewards(finished, reward)
        assert seen == {AGENTS[0]: pytest.approx(expected[0]), AGENTS[1]: pytest.approx(expected[1])}
        assert sum(moves.values()) == finished.ply


def test_rewards_given_in_the_final_step_to_both() -> None:
    e = raw_env(reward="score")
    rng = np.random.default_rng(2)
    e.reset(seed=2)
    while True:
        obs, _, _, _, _ = e.last()
        e.step(random_action(obs, rng))
        if all(e.terminations.values()):
            break
        assert e.rewards == dict.fromkeys(AGENTS, 0.0)
    game = e.game_state
    a, b = game.scores()
    assert e.rewards["player_0"] == pytest.approx(np.clip((a - b) / SCORE_REWARD_SCALE, -1, 1))
    assert e.rewards["player_0"] == -e.rewards["player_1"]
    winner = game.winner
    assert winner in (0, 1)
    for seat, agent in enumerate(AGENTS):
        assert e.infos[agent] == {
            "score": game.scores()[seat],
            "opponent_score": game.scores()[1 - seat],
            "winner": winner,
        }
    assert not any(e.truncations.values())


def test_win_rewards_follow_the_tie_break() -> None:
    s = new_game(0)
    assert final_rewards(s, "win") in ((1.0, -1.0), (-1.0, 1.0))  # only defined at the end, but never a draw
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = new_game(rng)
        while not s.is_terminal:
            legal = s.legal_actions()
            s = s.step(int(legal[int(rng.random() * len(legal))]))
        r = final_rewards(s, "win")
        assert r[s.winner or 0] == 1.0 and r[1 - (s.winner or 0)] == -1.0


# --- illegal actions -------------------------------------------------------------------------
def test_raw_env_raises_on_illegal_actions_and_keeps_the_game() -> None:
    e = raw_env()
    e.reset(seed=1)
    before = e.game_state
    agent = e.agent_selection
    illegal = int(np.flatnonzero(e.observe(agent)["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError, match=f"action {illegal}"):
        e.step(illegal)
    with pytest.raises(IllegalActionError, match="out of range"):
        e.step(rules.NUM_ACTIONS)
    with pytest.raises(ValueError, match="integer"):
        e.step(None)
    assert e.game_state == before and e.agent_selection == agent
    assert e._cumulative_rewards == dict.fromkeys(AGENTS, 0.0)
    e.step(rules.ADVANCE)  # still playable


def test_env_ends_the_game_on_an_illegal_action() -> None:
    e = env()
    e.reset(seed=1)
    offender = e.agent_selection
    other = AGENTS[1 - AGENTS.index(offender)]
    obs, *_ = e.last()
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo logs the illegal move
        e.step(illegal)
    assert all(e.terminations.values())
    rewards = {}
    for agent in e.agent_iter():
        _, r, terminated, _, _ = e.last()
        assert terminated
        rewards[agent] = r
        e.step(None)
    assert rewards == {offender: -1, other: 0}
    assert e.agents == []


@pytest.mark.parametrize("action", [rules.NUM_ACTIONS, -1, 2**63, 10**30, -(10**30), True, np.True_, 1.0, np.float64(2),
                                    "1", None, np.uint64(2**64 - 1)])  # fmt: skip
@pytest.mark.parametrize("wrapped", [True, False])
def test_env_rejects_out_of_range_actions(action: Any, wrapped: bool) -> None:
    e = env() if wrapped else raw_env()
    e.reset(seed=0)
    before = e.unwrapped.game_state
    with pytest.raises(IllegalActionError, match="out of range"):
        e.step(action)
    assert e.unwrapped.game_state == before and not any(e.terminations.values())


# --- reset, options, state access ------------------------------------------------------------
def test_reset_with_seed_is_deterministic_and_without_seed_continues() -> None:
    a, b = raw_env(), raw_env()
    a.reset(seed=7)
    b.reset(seed=7)
    assert a.game_state == b.game_state
    a.reset()
    b.reset()
    assert a.game_state == b.game_state
    a.reset(seed=7)
    first = a.game_state
    a.reset()
    assert a.game_state.circle != first.circle


def test_reset_options_fix_the_deal() -> None:
    e = raw_env()
    e.reset(seed=1, options={"circle": CIRCLE, "first_player": 1})
    assert e.game_state.circle == tuple(CIRCLE)
    assert e.agent_selection == "player_1"
    e.reset(options={"first_player": 0})
    assert e.agent_selection == "player_0"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"circle": [1, 2, 3]}, "circle must hold each patch id"),
        ({"circle": [0, *range(1, 33)]}, "must end with the 1x2 patch"),
        ({"first_player": 2}, "first_player must be the integer 0 or 1"),
        ([("circle", CIRCLE)], "options must be a dict"),
    ],
)
def test_bad_reset_options_raise(options: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        raw_env().reset(options=options)


def test_unknown_reset_option_warns_naming_the_allowed_keys() -> None:
    with pytest.warns(UserWarning, match=r"unknown reset option\(s\) \['frist_player'\].*'circle', 'first_player'"):
        raw_env().reset(options={"frist_player": 0})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reward": "points"}, "reward must be one of"),
        ({"leather_layout": "new"}, "leather_layout must be one of"),
        ({"render_mode": "svg"}, "render_mode must be None or one of"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        raw_env(**kwargs)


def test_set_state_starts_from_a_position() -> None:
    rng = np.random.default_rng(4)
    s = new_game(4)
    for _ in range(12):
        legal = s.legal_actions()
        s = s.step(int(legal[int(rng.random() * len(legal))]))
    e = raw_env()
    e.reset(seed=0)
    e.set_state(s)
    assert e.game_state is s
    assert e.agent_selection == AGENTS[s.current_player]
    assert e.agents == list(AGENTS) and not any(e.terminations.values())
    np.testing.assert_array_equal(e.observe(e.agent_selection)["action_mask"].astype(bool), s.legal_action_mask())
    with pytest.raises(TypeError, match="GameState"):
        e.set_state(s.array())  # type: ignore[arg-type]
    while not s.is_terminal:
        legal = s.legal_actions()
        s = s.step(int(legal[int(rng.random() * len(legal))]))
    with pytest.raises(ValueError, match="already over"):
        e.set_state(s)


def test_state_is_player_0s_observation() -> None:
    e = raw_env()
    e.reset(seed=9)
    rng = np.random.default_rng(9)
    for _ in range(10):
        obs = e.observe(e.agent_selection)
        e.step(random_action(obs, rng))
    state = e.state()
    assert state.dtype == np.float32 and state.shape == (OBS_DIM,)
    assert e.state_space.contains(state)
    np.testing.assert_array_equal(state, e.observe("player_0")["observation"])


def test_spaces_are_the_same_objects() -> None:
    e = env()
    e.reset(seed=0)
    for agent in AGENTS:
        assert e.observation_space(agent) is e.observation_space(agent)
        assert e.action_space(agent) is e.action_space(agent)
        assert e.action_space(agent).n == rules.NUM_ACTIONS
    assert e.observation_space("player_0") is not e.observation_space("player_1")
    with pytest.raises(ValueError, match="unknown agent 'player_2'"):
        e.observe("player_2")


def test_observations_stay_inside_the_space() -> None:
    e = raw_env(leather_layout="original")
    rng = np.random.default_rng(3)
    space = e.observation_space("player_0")
    for seed in range(10):
        e.reset(seed=seed)
        for agent, _, _ in play(e, rng):
            for a in AGENTS:
                if a in e.agents:
                    obs = e.observe(a)
                    assert space.contains(obs), f"seed {seed}, agent {a}"
            del agent


# --- copying ---------------------------------------------------------------------------------
def _continue(e: Any, seed: int) -> list[tuple[Any, ...]]:
    rng = np.random.default_rng(seed)
    trace = []
    for agent, action, reward in play(e, rng):
        trace.append((agent, action, reward))
    trace.append(("end", e.unwrapped.game_state.to_notation(), None))
    return trace


@pytest.mark.parametrize("make", [env, raw_env], ids=["env", "raw_env"])
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copies_continue_the_same_game(make: Any, how: str) -> None:
    e = make()
    e.reset(seed=21)
    rng = np.random.default_rng(21)
    for _ in range(17):
        obs, *_ = e.last()
        e.step(random_action(obs, rng))
    game = e.unwrapped.game_state
    clone = copy.deepcopy(e) if how == "deepcopy" else pickle.loads(pickle.dumps(e))
    assert clone.unwrapped.game_state == game
    assert clone.agent_selection == e.agent_selection
    np.testing.assert_array_equal(clone.last()[0]["observation"], e.last()[0]["observation"])
    assert _continue(clone, 5) == _continue(e, 5)
    # the generator is copied too: the next deals agree
    e.reset()
    clone.reset()
    assert clone.unwrapped.game_state == e.unwrapped.game_state


def test_copy_is_independent() -> None:
    e = raw_env()
    e.reset(seed=2)
    clone = copy.deepcopy(e)
    e.step(rules.ADVANCE)
    assert clone.game_state != e.game_state
    assert clone.game_state.ply == 0


# --- documentation ---------------------------------------------------------------------------
def test_documented_observation_table_matches_the_layout() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "environments.md").read_text()
    assert observation_table() in page
    assert f"({OBS_DIM},)" in page
    assert f"Discrete({rules.NUM_ACTIONS})" in page
    low, high = observation_bounds()
    assert f"float32 in [{low.min():.2f}, {high.max():.2f}]" in page
    assert f"/ {SCORE_REWARD_SCALE:g}, clipped to [-1, 1]" in page
