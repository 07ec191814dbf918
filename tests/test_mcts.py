"""MCTS: a short game with a tiny budget, per-player values, candidates, subtree reuse."""

from __future__ import annotations

import numpy as np
import pytest

from patchwork_env import new_game
from patchwork_env.core import rules
from patchwork_env.core.state import GameState
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, candidate_actions
from patchwork_env.players.mcts import MARGIN_WEIGHT, MCTSAgent, Node, result_for_player0
from patchwork_env.players.random import RandomAgent


def play(agent: MCTSAgent, seed: int) -> tuple[GameState, list[int]]:
    rng = np.random.default_rng(seed)
    other = RandomAgent()
    s = new_game(seed)
    actions = []
    while not s.is_terminal:
        a = agent.act(s, rng) if s.current_player == 0 else other.act(s, rng)
        actions.append(a)
        s = s.step(a)
    return s, actions


def test_a_short_game_with_a_tiny_budget_is_legal_and_reproducible() -> None:
    final, actions = play(MCTSAgent(sims=8), seed=4)
    assert final.is_terminal and final.winner in (0, 1)
    again, actions_again = play(MCTSAgent(sims=8), seed=4)
    assert actions == actions_again and again == final


def test_time_budget_runs_at_least_one_simulation() -> None:
    agent = MCTSAgent(time=0.02)
    s = new_game(1)
    a = agent.act(s, np.random.default_rng(0))
    assert s.is_legal(a) and agent.last_sims >= 1


def test_result_is_mostly_the_win_and_a_little_the_margin() -> None:
    assert result_for_player0(0, 0) == pytest.approx(1 - MARGIN_WEIGHT / 2)
    assert result_for_player0(1, 0) == pytest.approx(MARGIN_WEIGHT / 2)
    assert result_for_player0(0, 40) > result_for_player0(0, 1) > result_for_player0(1, -1) > result_for_player0(1, -40)
    assert 0 <= result_for_player0(1, -1000) < result_for_player0(0, 1000) <= 1


def test_selection_reads_values_from_the_player_to_move() -> None:
    s = new_game(0)
    agent = MCTSAgent(sims=1, c=0.0)
    parent = Node(s.array().copy())
    good_for_0, good_for_1 = Node(s.array().copy()), Node(s.array().copy())
    good_for_0.n, good_for_0.w0 = 10, 9.0
    good_for_1.n, good_for_1.w0 = 10, 1.0
    parent.children = [good_for_0, good_for_1]
    parent.n = 20
    parent.player = 0
    assert agent._select(parent) is good_for_0
    parent.player = 1  # turns do not alternate: only the node's own player decides the sign
    assert agent._select(parent) is good_for_1


def test_exploration_prefers_the_less_visited_child() -> None:
    s = new_game(0)
    parent = Node(s.array().copy())
    a, b = Node(s.array().copy()), Node(s.array().copy())
    a.n, a.w0 = 100, 55.0
    b.n, b.w0 = 2, 1.0
    parent.children, parent.n, parent.player = [a, b], 102, 0
    assert MCTSAgent(c=0.0)._select(parent) is a
    assert MCTSAgent(c=2.0)._select(parent) is b


def test_candidates_are_legal_best_first_and_few() -> None:
    s = new_game(2)
    out = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
    vals = np.empty(rules.NUM_ACTIONS)
    k = candidate_actions(s.array(), DEFAULT_WEIGHTS, 3, out, vals)
    legal = set(s.legal_actions().tolist())
    assert rules.ADVANCE in out[:k]
    assert set(out[:k].tolist()) <= legal
    assert list(vals[:k]) == sorted(vals[:k], reverse=True)
    buyable = {a // rules.SLOT_ACTIONS for a in legal if a < rules.LEATHER_BASE}
    assert k == 1 + 3 * len(buyable)  # advance + 3 placements per buyable slot
    assert len(legal) > 100  # so the search is much narrower than the game


def test_the_subtree_of_the_move_played_is_reused() -> None:
    agent = MCTSAgent(sims=60)
    rng = np.random.default_rng(0)
    s = new_game(5)
    a = agent.act(s, rng)
    root = agent._root
    assert root is not None and root.n > 0
    after = s.step(a)
    assert np.array_equal(root.arr, after.array())
    # the opponent's likely replies are in the tree: find one two plies down
    assert root.children
    reply = root.children[0]
    found = agent._find(GameState(reply.arr))
    assert found is reply and found.n > 0
    assert agent._find(new_game(6)) is None  # an unrelated position starts a new tree
    agent.reset()
    assert agent._root is None


def test_single_candidate_positions_return_at_once() -> None:
    # a leather patch with width 1 leaves one candidate: no search is needed
    s = new_game(0)
    while not s.pending_leather:
        s = s.step(rules.ADVANCE)
    agent = MCTSAgent(sims=50, width=1)
    a = agent.act(s, np.random.default_rng(0))
    assert s.is_legal(a) and agent.last_sims == 0


def test_last_value_is_the_move_played_from_the_movers_side() -> None:
    """The searched value of the move played (its child's mean result) from the side of the player
    to move, for either seat; None where no simulation ran (a single candidate)."""
    agent = MCTSAgent(sims=60)
    rng = np.random.default_rng(1)
    s, seats = new_game(7), set[int]()
    while len(seats) < 2:
        a = agent.act(s, rng)
        child = agent._root
        assert child is not None and agent.last_value is not None and agent.last_sims == 60
        mean0 = child.w0 / child.n
        assert agent.last_value == pytest.approx(mean0 if s.current_player == 0 else 1.0 - mean0)
        seats.add(s.current_player)
        s = s.step(a)
    while not s.pending_leather:
        s = s.step(rules.ADVANCE)
    one = MCTSAgent(sims=50, width=1)
    one.act(s, rng)
    assert one.last_sims == 0 and one.last_value is None
