"""Invariants over many seeded random games, and serialisation round trips on the way."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from patchwork_env import GameState, IllegalActionError, new_game
from patchwork_env.core.bitboard import orient
from patchwork_env.core.patches import PATCHES

GAMES = 150


def check_invariants(s: GameState) -> None:
    assert min(s.buttons) >= 0
    for p in (0, 1):
        placed = s.placements(p)
        area = sum(1 if patch < 0 else PATCHES[patch].area for patch, *_ in placed)
        assert 81 - s.empty_cells(p) == area == int(s.board(p).sum())
        assert s.income[p] == sum(PATCHES[patch].buttons for patch, *_ in placed if patch >= 0)
        covered = np.zeros((9, 9), dtype=bool)
        for patch, o, r, c in placed:
            for dr, dc in [(0, 0)] if patch < 0 else orient(PATCHES[patch].cells, o):
                assert not covered[r + dr, c + dc]
                covered[r + dr, c + dc] = True
        assert np.array_equal(covered, s.board(p))
    bought = [patch for p in (0, 1) for patch, *_ in s.placements(p) if patch >= 0]
    assert sorted(bought + list(s.circle)) == list(range(33))
    if not s.is_terminal:
        me = s.current_player
        assert s.legal_action_mask().any()
        if not s.pending_leather:
            assert s.positions[me] <= s.positions[1 - me]
            assert s.positions[me] < 53
            if s.positions[0] == s.positions[1]:
                assert me == s.top


def random_game(seed: int) -> list[tuple[GameState, int]]:
    rng = np.random.default_rng(seed)
    s = new_game(seed, leather_layout="original" if seed % 3 == 0 else "revised")
    history = []
    while not s.is_terminal:
        legal = s.legal_actions()
        a = int(legal[rng.integers(len(legal))])
        history.append((s, a))
        s = s.step(a)
        assert len(history) < 300, "game did not end"
    history.append((s, -1))
    return history


@pytest.fixture(scope="module")
def games() -> list[list[tuple[GameState, int]]]:
    return [random_game(seed) for seed in range(GAMES)]


def test_invariants_hold_in_every_position(games: list[list[tuple[GameState, int]]]) -> None:
    plies = []
    for history in games:
        for s, _ in history:
            check_invariants(s)
        final = history[-1][0]
        assert final.is_terminal and final.positions == (53, 53) and final.winner in (0, 1)
        a, b = final.scores()
        assert final.winner == (0 if a > b else 1 if b > a else final.first_to_finish)
        plies.append(len(history) - 1)
    # docs/rules.md: about 42.8 plies per random game
    assert 38 < float(np.mean(plies)) < 48


def test_step_accepts_masked_in_and_rejects_masked_out(games: list[list[tuple[GameState, int]]]) -> None:
    rng = np.random.default_rng(1)
    checked = 0
    for history in games[:40]:
        for s, _ in history[:: max(1, len(history) // 4)]:
            mask = s.legal_action_mask()
            for a in np.flatnonzero(mask):
                s.step(int(a))
            illegal = np.flatnonzero(~mask)
            for a in rng.choice(illegal, size=min(40, len(illegal)), replace=False):
                with pytest.raises(IllegalActionError):
                    s.step(int(a))
            checked += 1
    assert checked > 100


def test_old_states_never_change_during_a_game(games: list[list[tuple[GameState, int]]]) -> None:
    for history in games[:20]:
        snapshots = [s.to_notation() for s, _ in history]
        for s, a in history[:-1]:
            s.step(a)
        assert [s.to_notation() for s, _ in history] == snapshots


def test_round_trips_dict_json_notation_pickle(games: list[list[tuple[GameState, int]]]) -> None:
    for history in games[:30]:
        for s, _ in history[::3]:
            assert GameState.from_dict(json.loads(json.dumps(s.to_dict()))) == s
            assert GameState.from_notation(s.to_notation()) == s
            t = pickle.loads(pickle.dumps(s))
            assert t == s and hash(t) == hash(s)
            assert np.array_equal(t.legal_action_mask(), s.legal_action_mask())
