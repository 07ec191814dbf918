"""patchwork_env.players.batched_search: PUCT / Gumbel search with batched leaf evaluation."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import torch

from agents.az_selfplay import deal_states
from patchwork_env.core import rules
from patchwork_env.core.state import GameState
from patchwork_env.players.az_network import NetEvaluator
from patchwork_env.players.batched_search import (
    BatchedSearch,
    Node,
    SearchConfig,
    SearchResult,
    considered_visits,
    final_value,
    puct_choice,
)
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet
from tests.scenario import CIRCLE, cells_except, position, start, with_cells

# P0 (at 51, behind) moves; P1 is at 53 with a full quilt and 8 points. Every line ends the game:
# only buying the 1x5 patch (slot 2: 51 -> 52, P0 still behind) and THEN the 1x2 patch into the
# two cells left (52 -> 53) gives P0 9 points; every other line gives at most 8, a tie that P1
# wins (first to reach 53). So the win needs two consecutive moves by the same player.
WIN_FIRST = 1296  # slot 2 (patch 17, 1x5), orientation 0, at row 0 col 0
WIN_SECOND = 9  # then slot 0 (patch 0, 1x2) at row 1 col 0
DECOY = 648  # slot 1 (patch 1): a tie, lost


def two_move_endgame() -> GameState:
    circle = [9, 1, 17, 0] + [p for p in CIRCLE if p not in (9, 1, 17, 0)]
    arr = start().array().copy()
    arr[rules.CIRCLE : rules.CIRCLE + len(circle)] = circle  # unreachable order (patch 0 fourth): adopted unchecked
    base = GameState._wrap(arr)
    s = position(base, positions=[51, 53], buttons=[10, 8], first_to_finish=1, top=1, leather_remaining=[])
    s = with_cells(s, 0, cells_except(0, 1, 2, 3, 4, 9, 10))
    return with_cells(s, 1, range(81))


class MisleadingEvaluator:
    """Prior 74% on the decoy move (logit +3, uniform otherwise), value 0 everywhere: the search must find
    the win from the finished games alone."""

    def __call__(
        self, states: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        masks = np.zeros((len(states), rules.NUM_ACTIONS), dtype=np.bool_)
        rules.legal_mask_batch(states, masks, np.zeros(len(states), dtype=np.int64))
        logp = np.where(masks, 0.0, -1e9)
        logp[masks[:, DECOY], DECOY] = 3.0
        return masks, logp, np.zeros(len(states))

    def values(self, states: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        return np.zeros(len(states))


def test_the_endgame_is_what_the_comment_says() -> None:
    s = two_move_endgame()
    assert s.current_player == 0
    after = s.step(WIN_FIRST)
    assert not after.is_terminal and after.current_player == 0  # P0 moves again
    assert after.step(WIN_SECOND).winner == 0
    assert after.step(rules.ADVANCE).winner == 1
    for a in s.legal_actions():
        if int(a) != WIN_FIRST:
            assert s.step(int(a)).winner == 1 or all(
                s.step(int(a)).step(int(b)).winner == 1 for b in s.step(int(a)).legal_actions()
            )


@pytest.mark.parametrize(("root", "expand"), [("puct", 1), ("gumbel", 1), ("puct", 3), ("gumbel", 3)])
def test_search_finds_the_forced_win_across_two_own_moves(root: str, expand: int) -> None:
    config = SearchConfig(sims=48, root=root, considered=8, c_puct=1.0, expand=expand)
    search = BatchedSearch(MisleadingEvaluator(), config)
    result = search.run(two_move_endgame().array()[None, :], [np.random.default_rng(0)], noise=False)
    assert result.actions[0] == WIN_FIRST
    assert result.policies[0, WIN_FIRST] == result.policies[0].max()
    if root == "puct":  # (the Gumbel root spreads its visits over the considered moves on purpose)
        assert result.root_values[0] > 0  # from the mover's (P0's) side: a win


def _tree(node: Node) -> list[tuple[Node, int]]:
    """Every node below ``node`` with its visit count (its parent's edge count)."""
    out = []
    for i, child in enumerate(node.children):
        if child is not None:
            out += [(child, int(node.n[i])), *_tree(child)]
    return out


@pytest.mark.parametrize("expand", [1, 2, 4])
def test_a_leaf_is_valued_alone_until_its_expand_th_visit(expand: int) -> None:
    """AlphaGo's expansion threshold: the first ``expand - 1`` visits of a leaf call
    ``Evaluator.values``, the ``expand``-th expands it (and every node expanded that way was
    valued exactly ``expand - 1`` times first); 1 is AlphaZero's, nothing valued alone."""
    calls = {"full": 0, "values": 0}

    class Counting(MisleadingEvaluator):
        def __call__(
            self, states: npt.NDArray[np.int64]
        ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
            calls["full"] += len(states)
            return super().__call__(states)

        def values(self, states: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
            calls["values"] += len(states)
            return np.full(len(states), 0.25)

    class Keeping(BatchedSearch):  # keeps the searched root to inspect its tree
        def _results(self, roots: list[Any]) -> SearchResult:
            kept.extend(r.node for r in roots)
            return super()._results(roots)

    kept: list[Node] = []
    Keeping(Counting(), SearchConfig(sims=300, root="puct", expand=expand)).run(
        deal_states(1, seed=3), [np.random.default_rng(0)], noise=False
    )
    result_tree = _tree(kept[0])
    expanded = [(n, v) for n, v in result_tree if not n.terminal and n.actions is not None]
    waiting = [(n, v) for n, v in result_tree if not n.terminal and n.actions is None]
    assert expanded and (waiting or expand == 1)
    assert all(n.valued == expand - 1 and v >= expand for n, v in expanded)
    assert all(n.valued == v < expand for n, v in waiting)
    assert calls["full"] == 1 + len(expanded)  # the root, then each expansion
    assert calls["values"] == sum(n.valued for n, _ in result_tree)


def test_backup_changes_sign_only_where_the_mover_changes() -> None:
    s = two_move_endgame()
    a, b, c = (Node(s.array().copy(), 0.0) for _ in range(3))
    a.player, b.player, c.player = 0, 0, 1
    for node in (a, b, c):
        node.n, node.w = np.zeros(1, dtype=np.int64), np.zeros(1)
    BatchedSearch._backup([(a, 0), (b, 0), (c, 0)], 0.75)
    assert (a.w[0], b.w[0], c.w[0]) == (0.75, 0.75, -0.75)
    assert (a.n[0], b.n[0], c.n[0]) == (1, 1, 1)


def test_final_value_is_from_the_given_players_side() -> None:
    end = two_move_endgame().step(WIN_FIRST).step(WIN_SECOND)
    assert final_value(end.array(), 0, 0.0) == 1.0
    assert final_value(end.array(), 1, 0.0) == -1.0
    assert final_value(end.array(), 0, 1.0) == pytest.approx(1 / 30)  # wins by one point


def test_compiled_puct_choice_is_the_formula() -> None:
    # Q + c * P * sqrt(N) / (1 + N_a), Q of an unvisited edge the node's value, first of equals
    rng = np.random.default_rng(5)
    for k in (1, 2, 7, 80):
        for _ in range(50):
            n = rng.integers(0, 4, k) * rng.integers(0, 2, k)
            w = rng.uniform(-1, 1, k) * n
            prior = rng.dirichlet(np.ones(k))
            value, c = float(rng.uniform(-1, 1)), float(rng.choice([0.0, 1.25, 5.0]))
            q = np.where(n > 0, w / np.maximum(n, 1), value)
            expected = int(np.argmax(q + c * prior * np.sqrt(max(1, n.sum())) / (1 + n)))
            assert puct_choice(n, w, prior, value, c) == expected
    tie = np.zeros(3, dtype=np.int64)
    assert puct_choice(tie, np.zeros(3), np.full(3, 1 / 3), 0.0, 1.0) == 0


def test_sequential_halving_schedule() -> None:
    schedule = considered_visits(4, 8)
    assert len(schedule) == 8
    assert schedule[:4] == (0, 0, 0, 0)  # every considered action once before any twice
    assert considered_visits(1, 3) == (0, 1, 2)


def _tiny_net() -> PatchworkNet:
    torch.manual_seed(0)
    return PatchworkNet(NetConfig(channels=8, blocks=1, hidden=32, head_features=4, head_hidden=8, prior_scale=2.0))


@pytest.mark.parametrize("root", ["puct", "gumbel"])
def test_batched_search_equals_one_game_at_a_time(root: str) -> None:
    net = _tiny_net()
    states = deal_states(3, seed=5)
    search = BatchedSearch(NetEvaluator(net), SearchConfig(sims=8, root=root, considered=4))

    def rngs() -> list[np.random.Generator]:
        return [np.random.default_rng(100 + g) for g in range(3)]

    together = search.run(states, rngs(), noise=True)
    alone = [search.run(states[g : g + 1], [rngs()[g]], noise=True) for g in range(3)]
    for g in range(3):
        assert together.actions[g] == alone[g].actions[0]
        np.testing.assert_allclose(together.policies[g], alone[g].policies[0], atol=1e-5)
        assert together.root_values[g] == pytest.approx(alone[g].root_values[0], abs=1e-5)


def test_a_deterministic_evaluator_values_each_leaf_once() -> None:
    """``deterministic_values``: a leaf's visits before its expansion reuse its first value (one
    ``values`` call per leaf, not one per visit), and the search is the same as without the reuse."""

    class StateValued(MisleadingEvaluator):
        def __init__(self, deterministic: bool) -> None:
            self.deterministic_values = deterministic
            self.asked = 0

        def values(self, states: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
            self.asked += len(states)
            return (states.sum(axis=1) % 7) / 7.0 - 0.4  # a function of the state alone

    def search(deterministic: bool) -> tuple[SearchResult, int, list[Node]]:
        evaluator = StateValued(deterministic)
        result = BatchedSearch(evaluator, SearchConfig(sims=300, root="puct", expand=4, leaves=4)).run(
            deal_states(2, seed=3), [np.random.default_rng(g) for g in range(2)], noise=False
        )
        return result, evaluator.asked, result.roots

    every_visit, asked_every_visit, _ = search(False)
    once, asked_once, roots = search(True)
    np.testing.assert_array_equal(once.actions, every_visit.actions)
    np.testing.assert_array_equal(once.policies, every_visit.policies)
    np.testing.assert_array_equal(once.root_values, every_visit.root_values)
    valued = [n for root in roots for n, _ in _tree(root) if n.valued]
    assert asked_once == len(valued) < asked_every_visit
    values = StateValued(True).values(np.stack([n.state for n in valued]))
    assert [n.early for n in valued] == values.tolist()
