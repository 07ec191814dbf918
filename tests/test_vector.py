"""The vector engine: move-for-move identical to ``GameState``, seeded, atomic on illegal input."""

from __future__ import annotations

import numpy as np
import pytest

from patchwork_env import IllegalActionError, new_game
from patchwork_env.core import rules
from patchwork_env.core.patches import NUM_PATCHES, STARTING_PATCH
from patchwork_env.core.state import GameState
from patchwork_env.envs import vector_kernels
from patchwork_env.envs.observation import observe
from patchwork_env.envs.vector import VectorGames


def _mirror_of_deal(games: VectorGames, i: int) -> GameState:
    """The deal in game ``i`` rebuilt through the public single-game API."""
    dealt = games.game(i)
    assert dealt.ply == 0 and dealt.positions == (0, 0) and dealt.buttons == (5, 5)
    mirror = new_game(circle=dealt.circle, first_player=dealt.current_player, leather_layout=games.leather_layout)
    assert np.array_equal(mirror.array(), games.states[i])
    return mirror


@pytest.mark.parametrize("parallel", [False, True])
def test_batched_games_match_gamestate_move_for_move(parallel: bool) -> None:
    """>= 200 complete seeded games: same masks, observations, actors, states, results."""
    games = VectorGames(64, seed=7, parallel=parallel)
    mirrors = [_mirror_of_deal(games, i) for i in range(games.num_games)]
    observations = games.observe().copy()
    finished = 0
    while finished < 200:
        for i, m in enumerate(mirrors):
            assert np.array_equal(games.masks[i], m.legal_action_mask())
            assert games.counts[i] == m.legal_action_mask().sum()
            assert games.current_player[i] == m.current_player
            assert np.array_equal(observations[i], observe(m, m.current_player))
        actions = games.sample_random().copy()
        result = games.step(actions, observe=True)
        observations = games.observations.copy()
        for i in range(games.num_games):
            assert result.actor[i] == mirrors[i].current_player
            after = mirrors[i].step(int(actions[i]))
            if result.done[i]:
                assert after.is_terminal
                assert result.winner[i] == after.winner
                assert tuple(result.scores[i]) == after.scores()
                assert result.plies[i] == after.ply
                mirrors[i] = _mirror_of_deal(games, i)
                finished += 1
            else:
                assert not after.is_terminal
                assert result.winner[i] == -1
                assert np.array_equal(games.states[i], after.array())
                mirrors[i] = after


def test_serial_and_parallel_kernels_play_identical_games() -> None:
    serial = VectorGames(100, seed=3, parallel=False)
    parallel = VectorGames(100, seed=3, parallel=True)
    assert not serial.parallel and parallel.parallel
    for _ in range(120):
        a = serial.sample_random()
        b = parallel.sample_random()
        assert np.array_equal(a, b)
        ra = serial.step(a, observe=True)
        rb = parallel.step(b, observe=True)
        assert np.array_equal(ra.done, rb.done) and np.array_equal(ra.scores, rb.scores)
        assert np.array_equal(serial.states, parallel.states)
        assert np.array_equal(serial.observations, parallel.observations)
        assert np.array_equal(serial.masks, parallel.masks)


def test_seeded_streams_are_per_game() -> None:
    small = VectorGames(3, seed=11)
    big = VectorGames(10, seed=11)
    again = VectorGames(3, seed=11)
    other = VectorGames(3, seed=12)
    assert np.array_equal(small.states, again.states)
    assert not np.array_equal(small.states, other.states)
    # game i's deal depends on (seed, i) only, not on the batch size
    assert np.array_equal(small.states, big.states[:3] if small.num_games == 3 else None)
    circles = {small.game(i).circle for i in range(3)}
    assert len(circles) == 3
    # reset() continues the streams; reset(seed) restarts them
    first = small.states.copy()
    small.reset()
    assert not np.array_equal(first, small.states)
    small.reset(11)
    assert np.array_equal(first, small.states)


def test_deals_are_uniform() -> None:
    """First players and the position of a patch in the circle, over 4,000 deals."""
    games = VectorGames(4000, seed=0)
    circles = games.states[:, rules.CIRCLE : rules.CIRCLE + NUM_PATCHES]
    assert (circles[:, -1] == STARTING_PATCH).all()
    assert (np.sort(circles, axis=1) == np.arange(NUM_PATCHES)).all()
    first = games.states[:, rules.TOP]
    assert abs(first.mean() - 0.5) < 0.04  # 5 standard deviations
    where = np.argmax(circles == 1, axis=1)
    counts = np.bincount(where, minlength=NUM_PATCHES - 1)
    expected = len(games.states) / (NUM_PATCHES - 1)
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    df = NUM_PATCHES - 2
    assert chi2 < df + 6 * np.sqrt(2 * df)


def test_sampler_picks_the_kth_legal_action() -> None:
    rng = np.random.default_rng(0)
    for density in (0.001, 0.02, 0.5, 1.0):
        mask = rng.random(rules.NUM_ACTIONS) < density
        mask[-1] = True  # the last (tail) entry is reachable too
        legal = np.flatnonzero(mask)
        for k in [0, 1, len(legal) // 2, len(legal) - 1]:
            if k < len(legal):
                assert vector_kernels.kth_legal(mask, k) == legal[k]
        assert vector_kernels.kth_legal(mask, len(legal)) == -1


def test_row_sampler_picks_the_legal_action_of_rank_u_times_count() -> None:
    games = VectorGames(64, seed=3)
    for _ in range(30):
        games.step(games.sample_random())
    uniforms = np.random.default_rng(0).random(64)
    got = np.empty(64, dtype=np.int64)
    vector_kernels.sample_rows(games.masks, uniforms, got)
    for i in range(64):
        legal = np.flatnonzero(games.masks[i])
        assert got[i] == legal[int(uniforms[i] * len(legal))]


def test_random_actions_are_legal_and_uniform() -> None:
    state = new_game(seed=5)
    for a in (rules.ADVANCE, rules.ADVANCE, rules.ADVANCE):
        state = state.step(a)
    legal = state.legal_actions()
    games = VectorGames(30 * len(legal), seed=1)
    for i in range(games.num_games):
        games.set_state(i, state)
    picks = games.sample_random()
    assert np.isin(picks, legal).all()
    counts = np.array([(picks == a).sum() for a in legal])
    expected = games.num_games / len(legal)
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    df = len(legal) - 1
    assert chi2 < df + 6 * np.sqrt(2 * df)


def test_illegal_actions_raise_and_change_nothing() -> None:
    games = VectorGames(6, seed=2)
    for _ in range(5):
        games.step(games.sample_random())
    before = (games.states.copy(), games.masks.copy(), games.current_player.copy(), games.counts.copy())
    legal = games.sample_random().copy()
    for bad_action, needle in ((-1, "out of range"), (rules.NUM_ACTIONS, "out of range"), (None, "")):
        actions = legal.copy()
        if bad_action is None:  # a masked-out action inside the range
            bad_action = int(np.flatnonzero(~games.masks[3])[0])
        actions[3] = bad_action
        with pytest.raises(IllegalActionError, match="game 3") as err:
            games.step(actions)
        assert needle in str(err.value)
        after = (games.states, games.masks, games.current_player, games.counts)
        assert all(np.array_equal(x, y) for x, y in zip(before, after, strict=True))
    with pytest.raises(ValueError, match="shape"):
        games.step(legal[:-1])
    with pytest.raises(ValueError, match="integer"):
        games.step(legal.astype(np.float64))
    games.step(legal.astype(np.int32))  # any integer dtype is accepted


def test_finished_games_stay_finished_without_auto_reset() -> None:
    games = VectorGames(4, seed=9, auto_reset=False)
    ended_once = np.zeros(4, dtype=np.int64)
    for _ in range(400):
        actions = games.sample_random()
        result = games.step(actions)
        ended_once += result.done
        assert (result.actor[games.counts == 0] == -1).all() or result.done.any()
    assert (ended_once == 1).all()
    assert (games.counts == 0).all() and not games.masks.any()
    assert all(games.game(i).is_terminal for i in range(4))
    games.reset()
    assert (games.counts > 0).all()


def test_set_state_and_game_round_trip() -> None:
    state = new_game(seed=4)
    for _ in range(6):
        state = state.step(int(state.legal_actions()[0]))
    games = VectorGames(3, seed=0)
    games.set_state(1, state)
    assert games.game(1) == state
    assert np.array_equal(games.masks[1], state.legal_action_mask())
    assert games.current_player[1] == state.current_player
    rows = games.states.copy()  # several at once: set_states
    rows[2] = state.array()
    games.set_states(rows)
    assert np.array_equal(games.masks[2], state.legal_action_mask())
    assert games.current_player[2] == state.current_player
    obs = games.observe(np.array([0, 1, 0]))
    assert np.array_equal(obs[1], observe(state, 1))
    with pytest.raises(ValueError, match="seats"):
        games.observe(np.array([0, 2, 0]))


def test_constructor_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="num_games"):
        VectorGames(0)
    with pytest.raises(ValueError, match="leather_layout"):
        VectorGames(2, leather_layout="nope")
    assert VectorGames(2, seed=0).nbytes_per_game() > rules.STATE_LEN * 8 + rules.NUM_ACTIONS


def test_original_leather_layout_is_dealt() -> None:
    games = VectorGames(2, seed=0, leather_layout="original")
    assert games.game(0).leather_layout == "original"
    assert games.game(0).leather_remaining == rules.LEATHER_LAYOUTS["original"]
