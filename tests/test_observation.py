"""The documented observation layout against the engine: every named part means what it says."""

from __future__ import annotations

import numpy as np
import pytest

from patchwork_env import PATCHES, GameState, new_game
from patchwork_env.core import rules
from patchwork_env.core.bitboard import orient
from patchwork_env.envs import observation
from patchwork_env.envs.observation import (
    CIRCLE_FEATURE_NAMES,
    OBS_DIM,
    PLANE_NAMES,
    SCALAR_INDEX,
    SCALARS,
    circle,
    decode_scalars,
    observation_bounds,
    observe,
    planes,
    scalars,
    split,
    vector,
)


def random_states(n_games: int, seed: int) -> list[GameState]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_games):
        s = new_game(rng)
        while not s.is_terminal:
            out.append(s)
            legal = s.legal_actions()
            s = s.step(int(legal[int(rng.random() * len(legal))]))
        out.append(s)
    return out


STATES = random_states(6, seed=0)


def test_layout_sizes() -> None:
    assert len(PLANE_NAMES) * 81 + len(SCALARS) + 33 * len(CIRCLE_FEATURE_NAMES) == OBS_DIM
    assert len(set(SCALAR_INDEX)) == len(SCALARS)


@pytest.mark.parametrize("seat", [0, 1])
def test_named_parts_match_the_game(seat: int) -> None:
    opp = 1 - seat
    for s in STATES[::3]:
        obs = observe(s, seat)
        p = planes(obs)
        np.testing.assert_array_equal(p[0], s.board(seat))
        np.testing.assert_array_equal(p[1], s.board(opp))
        v = decode_scalars(obs)
        assert v["position_me"] == s.positions[seat] and v["position_opp"] == s.positions[opp]
        assert v["buttons_me"] == s.buttons[seat] and v["buttons_opp"] == s.buttons[opp]
        assert v["income_me"] == s.income[seat] and v["income_opp"] == s.income[opp]
        assert v["empty_cells_me"] == s.empty_cells(seat)
        assert v["score_me"] == s.scores()[seat] and v["score_opp"] == s.scores()[opp]
        assert v["bonus_me"] == (s.bonus_owner == seat) and v["bonus_unclaimed"] == (s.bonus_owner is None)
        to_move = not s.is_terminal and s.current_player == seat
        assert v["to_move"] == to_move
        assert v["must_place_leather"] == (to_move and s.pending_leather)
        assert v["circle_size"] == len(s.circle)
        assert v["first_to_53_me"] == (s.first_to_finish == seat)
        ahead = [x for x in s.leather_remaining if x > s.positions[seat]]
        assert v["to_leather_me"] == (ahead[0] - s.positions[seat] if ahead else 54)
        c = circle(obs)
        for k, patch in enumerate(s.circle):
            row = c[k]
            info = PATCHES[patch]
            assert row[0] == 1
            assert row[1:5] * np.array([10, 6, 3, 8]) == pytest.approx([info.cost, info.time, info.buttons, info.area])
            assert row[5] == (info.cost <= s.buttons[seat])
            assert row[6:].sum() == info.area
        assert not c[len(s.circle) :].any()


def test_cover_planes_are_the_union_of_fitting_placements() -> None:
    checked = 0
    for s in STATES[::4]:
        if s.is_terminal or s.pending_leather:
            continue
        seat = s.current_player
        cover = planes(observe(s, seat))[2:]
        legal = s.legal_action_mask()
        for slot, patch in enumerate(s.market):
            if PATCHES[patch].cost > s.buttons[seat]:
                continue  # the plane ignores the price, the legal actions do not
            union = np.zeros((9, 9), dtype=bool)
            for a in np.flatnonzero(legal[slot * rules.SLOT_ACTIONS : (slot + 1) * rules.SLOT_ACTIONS]):
                o, cell = divmod(int(a), 81)
                row, col = divmod(cell, 9)
                for r, c in orient(PATCHES[patch].cells, o):
                    union[row + r, col + c] = True
            np.testing.assert_array_equal(cover[slot].astype(bool), union)
            checked += 1
    assert checked > 10


def test_views_share_memory_and_work_on_batches() -> None:
    batch = np.stack([observe(s, s.current_player if not s.is_terminal else 0) for s in STATES[:8]])
    parts = split(batch)
    assert parts.planes.shape == (8, 5, 9, 9)
    assert parts.scalars.shape == (8, len(SCALARS))
    assert parts.circle.shape == (8, 33, len(CIRCLE_FEATURE_NAMES))
    assert vector(batch).shape == (8, OBS_DIM - 5 * 81)
    for view in (*parts, vector(batch)):
        assert np.shares_memory(view, batch)
    np.testing.assert_array_equal(scalars(batch)[3], scalars(batch[3]))
    with pytest.raises(ValueError, match="shape"):
        planes(np.zeros(10, dtype=np.float32))
    with pytest.raises(ValueError, match="one observation"):
        decode_scalars(batch)
    with pytest.raises(ValueError, match="seat must be the integer 0 or 1"):
        observe(STATES[0], 2)


def test_bounds_hold_every_observation() -> None:
    low, high = observation_bounds()
    assert low.dtype == np.float32 and (low <= high).all()
    for s in STATES:
        for seat in (0, 1):
            obs = observe(s, seat)
            assert (obs >= low).all() and (obs <= high).all()


def test_bounds_follow_from_the_rules() -> None:
    low, high = observation_bounds()
    b = observation.OBS_PLANES_END
    assert high[b + SCALAR_INDEX["buttons_me"]] * 50 == pytest.approx(5 + 53 + 9 * 38)
    assert low[b + SCALAR_INDEX["score_me"]] * 50 == pytest.approx(-162)


def test_an_all_zero_observation_is_in_the_space() -> None:
    """Wrappers pad with zeros (SuperSuit's delay_observations, frame stacking): 0 must be allowed
    everywhere (issue 12: to_leather's lower bound was 1/54)."""
    from patchwork_env.envs.aec import observation_space

    space = observation_space()
    zero = {
        "observation": np.zeros(observation.OBS_DIM, dtype=np.float32),
        "action_mask": np.zeros(rules.NUM_ACTIONS, np.int8),
    }
    assert space.contains(zero)
    low, _ = observation_bounds()
    assert (low <= 0).all()


def test_observe_movers_is_each_state_seen_from_its_player_to_move() -> None:
    from patchwork_env.envs.observation import observe_movers

    state, rng = new_game(seed=21), np.random.default_rng(21)
    rows, movers, expected = [], [], []
    while not state.is_terminal and len(rows) < 40:
        rows.append(state.array())
        movers.append(state.current_player)
        expected.append(observe(state, state.current_player))
        legal = state.legal_actions()
        state = state.step(int(legal[rng.integers(len(legal))]))
    assert set(movers) == {0, 1}
    assert np.array_equal(observe_movers(np.stack(rows)), np.stack(expected))


def test_observe_movers_rejects_bad_rows_before_the_kernels() -> None:
    """Arrays the compiled kernels would read out of bounds (wrong shape, values out of range)
    fail with a ValueError naming the problem, not a crash of the interpreter."""
    from patchwork_env.envs.observation import observe_movers

    good = new_game(seed=0).array()
    garbage = np.stack([good, np.full_like(good, 10**9)])
    with pytest.raises(ValueError, match="invalid state array: row 1"):
        observe_movers(garbage)
    with pytest.raises(ValueError, match="shape"):
        observe_movers(good)  # one state, not a batch
    with pytest.raises(ValueError, match="shape"):
        observe_movers(np.zeros((2, 5), dtype=np.int64))
    with pytest.raises(ValueError, match="integers"):
        observe_movers(good[None].astype(np.float64))
