"""patchwork_env.players.batched_search with several leaves per evaluator call (``SearchConfig.leaves``,
virtual loss): with one leaf the search is the one-path-per-call search recorded in
``tests/golden/az_search_one_leaf.json``; with several, the evaluator sees batches, the virtual
losses are gone after the search and the search still finds a forced win."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from patchwork_env.core import rules
from patchwork_env.evaluation.arena import deal
from patchwork_env.players.batched_search import BatchedSearch, Node, SearchConfig
from patchwork_env.players.registry import make_agent

GOLDEN = Path(__file__).parent / "golden" / "az_search_one_leaf.json"
# (root, expand, noise, sims): the golden searches, each from every position of ``golden_positions``
CASES = [("gumbel", 1, False, 24), ("gumbel", 3, True, 40), ("puct", 1, True, 24), ("puct", 2, False, 30)]


class HashEvaluator:
    """Priors and values drawn from a generator seeded by the state's bytes: a fixed, arbitrary
    evaluator, the same on every machine; counts the positions of each call."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    @staticmethod
    def _draws(state: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        seed = int(hashlib.blake2b(np.ascontiguousarray(state).tobytes(), digest_size=8).hexdigest(), 16)
        draws: npt.NDArray[np.float64] = np.random.default_rng(seed).random(rules.NUM_ACTIONS + 1)
        return draws

    def __call__(
        self, states: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        self.calls.append(len(states))
        masks = np.zeros((len(states), rules.NUM_ACTIONS), dtype=np.bool_)
        rules.legal_mask_batch(states, masks, np.zeros(len(states), dtype=np.int64))
        draws = np.stack([self._draws(s) for s in states])
        return masks, 3.0 * draws[:, :-1], 2.0 * draws[:, -1] - 1.0

    def values(self, states: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        self.calls.append(len(states))
        return np.array([0.5 * (2.0 * self._draws(s)[-1] - 1.0) for s in states])


def golden_positions() -> npt.NDArray[np.int64]:
    """Positions of one greedy game: the start, the middle game, a leather placement."""
    greedy, rng = make_agent("greedy"), np.random.default_rng(0)
    state, rows = deal(5, 0), []
    while not state.is_terminal:
        rows.append(state.array())
        state = state.step(greedy.act(state, rng))
    picked = [0, 9, 21, *[i for i, r in enumerate(rows) if r[rules.PENDING]][:1]]
    return np.stack([rows[i] for i in picked])


def golden_searches() -> dict[str, Any]:
    """The recorded results: per case, per position, the action, the root's visit counts and
    policy target, and the root value (written by the search before ``SearchConfig.leaves``)."""
    out: dict[str, Any] = {}
    positions = golden_positions()
    for root, expand, noise, sims in CASES:
        search = BatchedSearch(HashEvaluator(), SearchConfig(sims=sims, root=root, considered=8, expand=expand))
        rngs = [np.random.default_rng(k) for k in range(len(positions))]
        result = search.run(positions, rngs, noise=noise)
        out[f"{root} expand={expand} noise={noise} sims={sims}"] = [
            {
                "action": int(result.actions[k]),
                "visits": result.roots[k].n.tolist(),
                "policy": [round(float(p), 12) for p in result.policies[k][result.roots[k].actions]],
                "root_value": round(float(result.root_values[k]), 12),
            }
            for k in range(len(positions))
        ]
    return out


def test_one_leaf_per_call_is_the_recorded_search() -> None:
    assert SearchConfig().leaves == 1
    expected = json.loads(GOLDEN.read_text())
    got = golden_searches()
    assert got.keys() == expected.keys()
    for case, results in expected.items():
        for k, (want, have) in enumerate(zip(results, got[case], strict=True)):
            assert have["action"] == want["action"], (case, k)
            assert have["visits"] == want["visits"], (case, k)
            np.testing.assert_allclose(have["policy"], want["policy"], atol=1e-9, err_msg=f"{case} {k}")
            assert have["root_value"] == pytest.approx(want["root_value"], abs=1e-9)


def _tree_visits(node: Node) -> None:
    """Every edge's visits are at least those its child passed on (a virtual visit left behind
    would break it), and every value mean is in [-1, 1] (a virtual loss left behind would too)."""
    visited = node.n > 0
    assert np.all(np.abs(node.w[visited] / node.n[visited]) <= 1.0 + 1e-9)
    for i, child in enumerate(node.children):
        if child is None:
            assert node.n[i] == 0
        elif child.actions is not None and not child.terminal:
            assert child.n.sum() <= node.n[i] - 1
            _tree_visits(child)


@pytest.mark.parametrize(("root", "leaves"), [("gumbel", 4), ("puct", 8), ("gumbel", 16)])
def test_several_leaves_per_call_batch_the_evaluator(root: str, leaves: int) -> None:
    positions = golden_positions()
    evaluator = HashEvaluator()
    sims = 40
    search = BatchedSearch(evaluator, SearchConfig(sims=sims, root=root, considered=8, leaves=leaves))
    result = search.run(positions, [np.random.default_rng(k) for k in range(len(positions))], noise=False)
    assert search.last_sims == sims
    calls = evaluator.calls[1:]  # after the roots' evaluation
    assert max(calls) > len(positions)  # several leaves per game in one call
    assert len(calls) <= -(-sims // leaves)  # one call per step of ``leaves`` simulations
    for k, node in enumerate(result.roots):
        assert node.n.sum() == sims  # every simulation counted once, virtual visits removed
        assert np.isclose(result.policies[k].sum(), 1.0)
        assert node.actions is not None and result.actions[k] in node.actions
        _tree_visits(node)


def test_the_config_bounds_leaves() -> None:
    for bad in (0, 10_000):
        with pytest.raises(ValueError, match="leaves"):
            SearchConfig(leaves=bad).validate()
    for bad in (-0.5, 3.0):
        with pytest.raises(ValueError, match="virtual_loss"):
            SearchConfig(virtual_loss=bad).validate()


def test_the_virtual_loss_spreads_the_paths_and_leaves_nothing_behind() -> None:
    """With a virtual visit alone (``virtual_loss=0``) a step's paths pile onto fewer leaves than
    with the default loss, so the evaluator sees fewer positions; either way the visits and values
    are the search's own when it ends."""
    positions = golden_positions()
    seen = {}
    for loss in (0.0, 1.0):
        evaluator = HashEvaluator()
        config = SearchConfig(sims=64, considered=8, leaves=16, virtual_loss=loss)
        result = BatchedSearch(evaluator, config).run(positions, [np.random.default_rng(k) for k in range(4)], False)
        seen[loss] = sum(evaluator.calls[1:])
        for node in result.roots:
            assert node.n.sum() == 64
            _tree_visits(node)
    assert seen[0.0] < seen[1.0]


if __name__ == "__main__":  # python -m tests.test_az_leaves: rewrite the golden file
    GOLDEN.write_text(json.dumps(golden_searches(), indent=0) + "\n")
