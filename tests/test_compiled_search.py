"""patchwork_env.players.compiled_search: the compiled search is the Python tree's search (same visits, targets,
values and moves, subtree reuse included), grows, keeps time, and refuses what it cannot run."""

from __future__ import annotations

import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.value_distill import perceptron, to_value_model
from patchwork_env.core import rules
from patchwork_env.evaluation.arena import deal, play_game
from patchwork_env.players.az_compiled import TreeAgent
from patchwork_env.players.az_network import AZAgent, NetEvaluator, make_az_agent
from patchwork_env.players.batched_search import FIRST_PLAN, BatchedSearch, SearchConfig
from patchwork_env.players.compiled_search import CompiledSearch
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet
from patchwork_env.players.registry import make_agent
from patchwork_env.players.value_model import ValueModel

TINY = NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8, prior_scale=2.0)
TEMP = 20.0


@pytest.fixture(scope="module")
def model() -> ValueModel:
    layers = perceptron((32, 16), seed=3)
    with torch.no_grad():
        for p in layers.parameters():  # values spread over (-1, 1): the search's choices depend on them
            p.add_(0.2 * torch.randn_like(p))
    return to_value_model(layers)


@pytest.fixture(scope="module")
def positions() -> list[np.ndarray]:
    """Openings, middle games, late games and a pending leather patch, from greedy-against-random games."""
    agents, rows = [make_agent("greedy"), make_agent("random")], []
    for g in range(2):
        state, rng = deal(g, 3), np.random.default_rng(g)
        while not state.is_terminal:
            rows.append(state.array())
            state = state.step(agents[(state.ply + g) % 2].act(state, rng))
    picked = rows[::9]
    leather = [r for r in rows if r[rules.PENDING]]
    return picked + leather[:1]


def python_search(model: ValueModel, config: SearchConfig) -> BatchedSearch:
    return BatchedSearch(NetEvaluator(PatchworkNet(TINY), value_model=model, prior="greedy", prior_temp=TEMP), config)


@pytest.mark.parametrize("root", ["gumbel", "puct"])
def test_the_compiled_search_is_the_python_search(model: ValueModel, positions: list[np.ndarray], root: str) -> None:
    config = SearchConfig(sims=300, expand=1, root=root, considered=4)
    python, compiled = python_search(model, config), CompiledSearch(config, model, TEMP, reuse=False)
    deep = 0
    for row in positions:
        want = python.run(row[None, :], [np.random.default_rng(0)], noise=False)
        got = compiled.run(row)
        node = want.roots[0]
        assert node.actions is not None
        assert got.actions.tolist() == node.actions.tolist()
        assert got.visits.tolist() == node.n.tolist()
        assert got.action == int(want.actions[0])
        assert np.array_equal(got.policy, want.policies[0])
        assert got.root_value == pytest.approx(float(want.root_values[0]), abs=1e-12)
        deep += int(compiled.counts[0]) > 100  # most simulations reached new nodes: a real tree
    assert deep >= 3


def test_az_plays_the_same_game_with_either_tree_reuse_included(
    model: ValueModel, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("tree") / "model.npz"
    model.save(path)
    settings = {"value": str(path), "rollouts": 0, "prior": "greedy", "ptemp": TEMP, "expand": 1, "sims": 150}
    compiled = make_agent("az:" + ",".join(f"{k}={v}" for k, v in settings.items()))
    python = make_az_agent(**settings)  # the Python tree (with a network it never asks), the same settings
    assert isinstance(compiled, TreeAgent) and isinstance(python, AZAgent)
    opponent = make_agent("greedy")
    for game in range(2):
        finals = []
        for agent in (compiled, python):
            agent.reset()
            rngs = [np.random.default_rng(s) for s in (game, game + 10)]
            seats = [agent, opponent] if game == 0 else [opponent, agent]
            finals.append(play_game(seats, deal(game, 5), rngs)[0])
        assert finals[0].is_terminal and finals[0].array().tolist() == finals[1].array().tolist()
    assert compiled.search.reuse and compiled.search._kept >= 0  # the subtree was kept and found
    for agent in (compiled, python):  # the root's visits, as mcts reports them (a distillation's targets)
        agent.reset()
        agent.act(deal(7, 0), np.random.default_rng(0))
    assert compiled.last_visits == python.last_visits and sum(n for _, n in compiled.last_visits) == 150


def test_the_kept_subtree_moves_to_the_front_and_keeps_its_visits(
    model: ValueModel, positions: list[np.ndarray]
) -> None:
    search = CompiledSearch(SearchConfig(sims=400, expand=1), model, TEMP)

    def edges(node: int) -> slice:
        first, count = search.node_i[node, 1], search.node_i[node, 2]
        return slice(first, first + max(count, 0))

    for row in positions:  # a position whose move leads to another choice (not a leather cell)
        first = search.run(row)
        kept = search._kept
        if kept > 0 and search.node_i[kept, 2] > 1:
            break
    below = search.edge_i[edges(kept), 2].copy()
    assert below.sum() > 1
    nxt = row.copy()
    rules.step_into(nxt, first.action)
    search.run(nxt, sims=1)
    assert np.array_equal(search.states[0], nxt)  # found and compacted: its node is first
    assert int(search.edge_i[edges(0), 2].sum()) == 1  # its own edges restart: this search's one simulation
    grandchildren = [int(c) for c in search.edge_i[edges(0), 1] if c >= 0]
    assert int(search.counts[0]) >= below.sum() and len(grandchildren) >= 2  # its subtree came along
    elsewhere = positions[0]
    search.run(elsewhere, sims=5)
    assert np.array_equal(search.states[0], elsewhere) and int(search.counts[0]) <= 6  # not found: a new tree


def test_the_arrays_grow_and_time_stops_the_search(model: ValueModel, positions: list[np.ndarray]) -> None:
    search = CompiledSearch(SearchConfig(sims=3000, expand=1), model, TEMP, reuse=False)
    result = search.run(positions[2])
    assert int(result.visits.sum()) == 3000 and len(search.states) >= int(search.counts[0]) > 1024
    start = time.perf_counter()
    search.run(positions[2], sims=100_000, deadline=start + 0.1)
    assert 0 < search.last_sims < 100_000 and time.perf_counter() - start < 1.0


def test_a_single_action_is_not_searched(model: ValueModel, positions: list[np.ndarray]) -> None:
    search = CompiledSearch(SearchConfig(sims=50, expand=1), model, TEMP)
    leather = positions[-1]
    assert leather[rules.PENDING]
    result = search.run(leather)
    assert len(result.actions) == 1 and search.last_sims == 0 and result.action == int(result.actions[0])


def test_what_it_cannot_run_is_refused(model: ValueModel, positions: list[np.ndarray]) -> None:
    with pytest.raises(ValueError, match="expand=1, leaves=1"):
        CompiledSearch(SearchConfig(expand=4), model)
    with pytest.raises(ValueError, match="expand=1, leaves=1"):
        CompiledSearch(SearchConfig(expand=1, leaves=8), model)
    with pytest.raises(ValueError, match="prior_temp > 0"):
        CompiledSearch(SearchConfig(expand=1), model, prior_temp=0.0)
    search = CompiledSearch(SearchConfig(expand=1), model)
    bad = positions[1].copy()
    bad[rules.POS] = 99
    with pytest.raises(ValueError, match="row 0"):
        search.run(bad)
    state = deal(0, 0)
    rng = np.random.default_rng(0)
    greedy = make_agent("greedy")
    while not state.is_terminal:
        state = state.step(greedy.act(state, rng))
    with pytest.raises(ValueError, match="game is over"):
        search.run(state.array())


def test_only_the_network_free_settings_take_the_compiled_tree(
    model: ValueModel, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("tree") / "model.npz"
    model.save(path)
    settings = {"value": str(path), "rollouts": "0", "prior": "greedy", "expand": "1", "sims": "8"}

    def spec(**changed: str) -> str:
        return "az:" + ",".join(f"{k}={v}" for k, v in (settings | changed).items())

    base = spec()
    assert isinstance(make_agent(base), TreeAgent)
    for other in ({"prior": "network"}, {"rollouts": "2"}, {"expand": "2"}, {"leaves": "4"}, {"value": "none"}):
        assert isinstance(make_agent(spec(**other)), AZAgent), other
    with pytest.raises(AgentSpecError, match="names a network, but these settings search without one"):
        make_agent(base + ",net=v1")
    copy = pickle.loads(pickle.dumps(make_agent(base)))  # the arena's workers: the settings, not the tree
    assert isinstance(copy, TreeAgent) and copy.config.sims == 8 and copy.search.counts[0] == 0
    state, rng = deal(3, 0), np.random.default_rng(0)
    assert copy.act(state, rng) == make_agent(base).act(state, rng)


def test_a_time_budget_plans_from_the_measured_speed(
    model: ValueModel, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("tree") / "model.npz"
    model.save(path)
    agent = make_agent(f"az:value={path},rollouts=0,prior=greedy,expand=1,time=0.05,clock=wall")
    assert isinstance(agent, TreeAgent) and agent.config.sims == FIRST_PLAN
    state, rng = deal(2, 0), np.random.default_rng(0)
    start = time.perf_counter()
    agent.act(state, rng)
    assert time.perf_counter() - start < 0.5 and 0 < agent.search.last_sims < FIRST_PLAN
    assert agent.budget.seconds_per_sim == pytest.approx(agent.search.last_sim_seconds / agent.search.last_sims)


def test_the_kernels_compile_when_the_search_is_built(model: ValueModel, tmp_path: Path) -> None:
    """A first move must not spend its time budget compiling (and take that for the simulations'
    speed, shrinking the next plans): building the search runs every kernel once, reuse's too."""
    path = tmp_path / "model.npz"
    model.save(path)
    code = (
        "from patchwork_env.players import compiled_search\n"
        "from patchwork_env.players.batched_search import SearchConfig\n"
        "from patchwork_env.players.value_model import load_value_model\n"
        "cs = compiled_search\n"
        "kernels = (cs._new_node, cs._expand, cs._simulate, cs._compact)\n"
        "assert not any(k.signatures for k in kernels)\n"
        f"compiled_search.CompiledSearch(SearchConfig(expand=1), load_value_model({str(path)!r}))\n"
        "print([bool(k.signatures) for k in kernels])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[True, True, True, True]"


def test_the_shipped_value_models_never_change_and_ship_in_the_package() -> None:
    import hashlib

    from patchwork_env.players.shipped import NEWEST_VALUE_MODEL, SHIPPED_VALUE_MODELS, VALUE_MODEL_SHA256
    from patchwork_env.players.value_model import load_value_model

    assert set(SHIPPED_VALUE_MODELS) == set(VALUE_MODEL_SHA256)
    assert NEWEST_VALUE_MODEL == "v4"  # az's default: v4 beat v3 in the search at equal time (az-v4-equal-time.json)
    for version, path in SHIPPED_VALUE_MODELS.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == VALUE_MODEL_SHA256[version], version
        assert path.stat().st_size <= 5 * 2**20 and load_value_model(path).hidden == (128, 64)
    root = Path(__file__).resolve().parent.parent
    assert '"players/value-v*.npz"' in (root / "pyproject.toml").read_text()


def test_a_time_budget_plans_from_the_speed_within_bounds() -> None:
    from patchwork_env.players.batched_search import MAX_PLAN, OVERPLAN, TimeBudget

    assert TimeBudget(100).plan() == (None, None)  # no time budget: the search's own simulations
    budget = TimeBudget(100, 0.5)
    sims, deadline = budget.plan()
    assert sims == 100 and deadline is not None and deadline > time.perf_counter()
    budget.measure(10, 0.001)
    assert budget.plan()[0] == int(OVERPLAN * 0.5 / 1e-4)
    budget.measure(0, 5.0)  # a move without a simulation says nothing of the speed
    assert budget.seconds_per_sim == pytest.approx(1e-4)
    budget.measure(10, 0.002)
    assert budget.seconds_per_sim == pytest.approx(0.7e-4 + 0.3 * 2e-4)
    budget.seconds_per_sim = 1e-12  # a late move's near-free simulations: the plan stays bounded
    assert budget.plan()[0] == MAX_PLAN
    with pytest.raises(ValueError, match="time must be > 0"):
        TimeBudget(100, 0.0)


def test_noise_samples_the_gumbel_roots_move(model: ValueModel, positions: list[np.ndarray]) -> None:
    """With ``noise`` (self-play) the root's Gumbel variables come from that generator: the same
    seed, the same search; other seeds, other moves somewhere; without it, no noise at all."""
    search = CompiledSearch(SearchConfig(sims=24, expand=1, leaves=1), model, TEMP, reuse=False)
    quiet = [search.run(row).action for row in positions]
    assert quiet == [search.run(row, noise=None).action for row in positions]
    seeded = [search.run(row, noise=np.random.default_rng(5)) for row in positions]
    again = [search.run(row, noise=np.random.default_rng(5)) for row in positions]
    assert [r.visits.tolist() for r in seeded] == [r.visits.tolist() for r in again]
    moves = {tuple(search.run(row, noise=np.random.default_rng(s)).action for row in positions) for s in range(6)}
    assert len(moves) > 1 and any(m != tuple(quiet) for m in moves)
