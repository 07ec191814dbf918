"""patchwork_env.players.az_network (``az:`` and ``pretrained``) and the trainer train.alphazero (smoke run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import torch

from agents import SEARCH_PATH
from patchwork_env.core import rules
from patchwork_env.envs.single_agent import SingleAgentEnv
from patchwork_env.evaluation.arena import deal, play_game
from patchwork_env.players.az_compiled import GREEDY_PRIOR_TEMP, TREE_SIMS, TreeAgent
from patchwork_env.players.az_network import (
    EXPAND,
    FIRST_PLAN,
    OVERPLAN,
    PRETRAINED_PATH,
    SIMS,
    AZAgent,
    NetEvaluator,
)
from patchwork_env.players.batched_search import BatchedSearch, SearchConfig
from patchwork_env.players.checkpoint import load_network
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, ROLLOUT_GREEDY, rng_state, rollout, rollout_results
from patchwork_env.players.policy import NetworkAgent
from patchwork_env.players.registry import describe_agents, make_agent
from patchwork_env.players.shipped import NEWEST_VALUE_MODEL, SHIPPED_VALUE_MODELS
from patchwork_env.players.value_model import load_value_model

ROOT = Path(__file__).resolve().parent.parent


def net_az(spec: str = "az") -> str:
    """``spec`` searching with the network (``prior=network``: the network search's settings where it
    gives none, ``registry.AZ_NETWORK``): these tests are of ``AZAgent``, the search with a network."""
    params = spec.partition(":")[2]
    return "az:" + ",".join(p for p in ("prior=network", *params.split(",")) if p)


def test_the_pretrained_model_ships_as_package_data() -> None:
    for path in (PRETRAINED_PATH, SEARCH_PATH):
        assert path.is_file()
        assert path.stat().st_size <= 5 * 2**20
    assert '"players/pretrained-v*.pt"' in (ROOT / "pyproject.toml").read_text()


@pytest.mark.parametrize(
    "spec", ["pretrained", "pretrained:net=v2", net_az("az:sims=4"), net_az("az:sims=3,root=puct"),
             net_az("az:time=0.02"), net_az("az:sims=4,kinds=0"), "az:sims=40", "az:time=0.02"]
)  # fmt: skip
def test_specs_load_and_play_legal_moves_to_the_end(spec: str) -> None:
    agent = make_agent(spec)
    assert agent.name == spec
    final, moves, _ = play_game([agent, make_agent("random")], deal(3, 0), [np.random.default_rng(s) for s in (0, 1)])
    assert final.is_terminal and moves[0] > 10  # play_game raises on an illegal action


def test_pretrained_is_the_network_alone_and_az_searches_with_it() -> None:
    assert isinstance(make_agent("pretrained:net=v2"), NetworkAgent)
    az = make_agent(net_az("az:sims=8,considered=4"))
    assert isinstance(az, AZAgent)
    assert az.config.sims == 8 and az.config.considered == 4


def test_az_searches_kinds_of_move_by_default_with_the_shipped_network() -> None:
    """Over all 2,026 actions the search with the shipped network advanced on almost every move
    and lost to random; by default it searches kinds of move and beats random even with 4
    simulations."""
    az = make_agent(net_az("az:sims=4"))
    assert isinstance(az, AZAgent) and az.kinds
    assert torch.equal(az.net.value[0].weight, load_network(PRETRAINED_PATH).value[0].weight)
    for seat in (0, 1):
        agents = [az, make_agent("random")] if seat == 0 else [make_agent("random"), az]
        final, _, _ = play_game(agents, deal(5, 0), [np.random.default_rng(s) for s in (0, 1)])
        scores = final.scores()
        assert scores[seat] > scores[1 - seat] + 10


def test_kinds_search_branches_over_kinds_of_move() -> None:
    """``kinds=1``: every node offers each legal kind of move once (at most 5 children), the
    search's choice is one of them, and the setting survives pickling for worker processes."""
    import pickle

    az = make_agent(net_az("az:sims=8"))
    assert isinstance(az, AZAgent) and az.kinds
    state = deal(7, 0)
    for _ in range(6):
        masks, logp, _ = az.search.evaluator(state.array()[None, :])
        legal = state.legal_action_mask()
        assert masks[0].sum() <= 5 and not (masks[0] & ~legal).any()
        assert np.exp(logp[0][masks[0]]).sum() == pytest.approx(1.0)
        action = az.act(state, np.random.default_rng(0))
        assert masks[0][action]
        state = state.step(action)
    assert pickle.loads(pickle.dumps(az)).kinds


def test_both_are_listed_and_bad_options_are_spec_errors() -> None:
    text = describe_agents()
    assert "az[:sims=" in text and "pretrained" in text
    with pytest.raises(AgentSpecError, match="root"):
        make_agent(net_az("az:root=best"))
    with pytest.raises(AgentSpecError, match="not found"):
        make_agent(net_az("az:path=/nonexistent/net.pt"))
    with pytest.raises(AgentSpecError, match="time"):
        make_agent(net_az("az:time=-1"))


def test_a_time_budget_plans_past_the_measured_speed_and_lets_the_deadline_end_the_search() -> None:
    """``az:time=S``: the first move searches until its deadline (10,000 simulations planned),
    later moves plan ``OVERPLAN`` x the simulations the measured speed affords, so the deadline,
    not a cautious plan, ends the search (at the plan alone moves used 60-95% of their time)."""
    az = make_agent(net_az("az:time=0.2"))
    assert isinstance(az, AZAgent)
    asked: list[tuple[int, float]] = []
    real = az.search.run

    def run(*args: object, sims: int, deadline: float, **kwargs: object) -> object:
        asked.append((sims, deadline))
        return real(*args, sims=4, deadline=None, **kwargs)  # type: ignore[arg-type]

    az.search.run = run  # type: ignore[method-assign]
    state, rng = deal(2, 0), np.random.default_rng(0)
    az.act(state, rng)
    assert asked[-1][0] == FIRST_PLAN == 10_000
    az.budget.seconds_per_sim = 0.001
    az.act(state, rng)
    assert asked[-1][0] == int(OVERPLAN * 0.2 / 0.001)


def test_a_move_with_a_single_candidate_runs_no_simulation_and_leaves_the_speed_alone() -> None:
    """With greedy's candidates a leather patch has one cell to go to: the search has nothing to
    choose, runs no simulation (it spun through its whole plan) and its near-zero time is not taken
    for the speed of the simulations, which would plan the next moves far past their time."""
    az = make_agent("az:time=0.05,prior=greedy,rollouts=0,value=none")
    assert isinstance(az, AZAgent)
    greedy, rng, state = make_agent("greedy"), np.random.default_rng(0), deal(1, 0)
    while not state.pending_leather:
        state = state.step(greedy.act(state, rng))
    az.budget.seconds_per_sim = 0.001
    action = az.act(state, rng)
    assert state.is_legal(action) and az.search.last_sims == 0 and az.budget.seconds_per_sim == 0.001


def test_a_move_searches_on_one_torch_thread_and_leaves_the_count_as_it_was() -> None:
    """Two threads at the search's batch sizes cost az about 4x per move on a shared machine, and
    a time budget should buy one core's work, as ``mcts``'s does; the user's count comes back."""
    az = make_agent(net_az("az:sims=8,rollouts=0"))
    assert isinstance(az, AZAgent)
    seen: list[int] = []
    real = az.evaluator

    class Recording:
        deterministic_values = real.deterministic_values

        def __call__(self, states: npt.NDArray[np.int64]) -> Any:
            seen.append(torch.get_num_threads())
            return real(states)

        def values(self, states: npt.NDArray[np.int64]) -> Any:
            seen.append(torch.get_num_threads())
            return real.values(states)

    az.search.evaluator = Recording()
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        az.act(deal(2, 0), np.random.default_rng(0))
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_pretrained_is_a_single_agent_env_opponent() -> None:
    env = SingleAgentEnv(opponent="pretrained:net=v2", seat=0)
    _, info = env.reset(seed=0)
    done = False
    while not done:
        action = int(np.flatnonzero(info["action_mask"])[0])
        _, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert reward in (-1.0, 1.0)


def _greedy_game_positions(seed: int) -> npt.NDArray[np.int64]:
    """Every unfinished position of one greedy self-play game (both players to move among them)."""
    state = deal(seed, 0)
    greedy, rng = make_agent("greedy"), np.random.default_rng(seed)
    rows = []
    while not state.is_terminal:
        rows.append(state.array())
        state = state.step(greedy.act(state, rng))
    return np.stack(rows)


def test_rollout_results_are_greedy_rollouts_seen_from_the_movers_side() -> None:
    states = _greedy_game_positions(11)[::5]
    movers = np.array([rules.current_player(s) for s in states])
    assert set(movers.tolist()) == {0, 1}
    wins, margins = rollout_results(states, 3, DEFAULT_WEIGHTS, 2.0, 16, rng_state(5))
    assert wins.shape == margins.shape == (len(states), 3)
    st = rng_state(5)  # the same draws, one rollout at a time, seen from player 0
    for i, s in enumerate(states):
        for k in range(3):
            winner, margin0 = rollout(s, ROLLOUT_GREEDY, DEFAULT_WEIGHTS, 2.0, 16, st)
            assert wins[i, k] == int(winner == movers[i])
            assert margins[i, k] == (margin0 if movers[i] == 0 else -margin0)
    assert np.array_equal(states, _greedy_game_positions(11)[::5])  # the states are not played on


def test_rollouts_mix_into_the_networks_leaf_values() -> None:
    """``rollouts=K, mix=m``: value = (1 - m) * network + m * mean of K rollouts scored like a
    finished game (``final_value``); the masks and priors are the network's either way."""
    net = load_network(PRETRAINED_PATH)
    states = _greedy_game_positions(12)[::4]
    masks, logp, alone = NetEvaluator(net, kinds=True)(states)
    finals = {}
    for mix in (0.0, 0.25, 1.0):
        evaluator = NetEvaluator(net, kinds=True, rollouts=4, mix=mix, margin_weight=0.3)
        evaluator.seed(9)
        masks_m, logp_m, values = evaluator(states)
        assert np.array_equal(masks_m, masks) and np.array_equal(logp_m, logp)
        finals[mix] = values
    wins, margins = rollout_results(states, 4, DEFAULT_WEIGHTS, 2.0, 16, rng_state(9))
    expected = np.mean(
        [[final_of(w, m) for w, m in zip(wr, mr, strict=True)] for wr, mr in zip(wins, margins, strict=True)], axis=1
    )
    assert np.allclose(finals[1.0], expected) and np.allclose(finals[0.0], alone)
    assert np.allclose(finals[0.25], 0.75 * alone + 0.25 * expected)
    assert not np.allclose(expected, alone)


def final_of(won: int, margin: int) -> float:
    """``final_value`` with margin weight 0.3 of a result given from the mover's side."""
    return 0.7 * (1.0 if won else -1.0) + 0.3 * max(-1.0, min(1.0, margin / 30.0))


def test_rollouts_alone_make_an_uninformed_network_search_well() -> None:
    """A freshly initialised network (an arbitrary prior, a meaningless value): with ``mix=1`` the
    leaf values are the rollouts' and the search beats random in every game (3 deals, both seats);
    with ``mix=0`` (the value alone) it does not."""
    from patchwork_env.players.batched_search import SearchConfig
    from patchwork_env.players.net_config import NetConfig
    from patchwork_env.players.network import PatchworkNet

    def margins(mix: float) -> list[int]:
        torch.manual_seed(0)
        az = AZAgent(PatchworkNet(NetConfig(blocks=1)), SearchConfig(sims=8), rollouts=2, mix=mix)
        out = []
        for index in range(3):
            for seat in (0, 1):
                agents = [az, make_agent("random")] if seat == 0 else [make_agent("random"), az]
                final, _, _ = play_game(agents, deal(5, index), [np.random.default_rng(s) for s in (0, 1)])
                scores = final.scores()
                out.append(scores[seat] - scores[1 - seat])
        return out

    with_rollouts, value_alone = margins(1.0), margins(0.0)
    assert min(with_rollouts) > 0 and np.mean(with_rollouts) > 20
    assert np.mean(value_alone) < np.mean(with_rollouts) - 20


def test_az_with_rollouts_is_reproducible_and_survives_pickling() -> None:
    import pickle

    az = make_agent(net_az("az:sims=8,rollouts=2,mix=0.7"))
    assert isinstance(az, AZAgent) and (az.rollouts, az.mix) == (2, 0.7)
    state = deal(4, 0)
    first = [az.act(state, np.random.default_rng(s)) for s in range(3)]
    copy = pickle.loads(pickle.dumps(az))
    assert (copy.rollouts, copy.mix) == (2, 0.7)
    assert [copy.act(state, np.random.default_rng(s)) for s in range(3)] == first
    for bad, match in (
        ("rollouts=-1", "rollouts"),
        ("rollouts=100000", "'rollouts' must be in"),
        ("mix=1.5", "mix"),
        ("mix=nan", "mix"),
        ("rollouts=two", "rollouts"),
    ):
        with pytest.raises(AgentSpecError, match=match):
            make_agent(net_az(f"az:{bad}"))


def test_registry_defaults_match_the_az_agent() -> None:
    """``az:...`` and a directly built ``AZAgent`` / ``make_az_agent`` search the same way: with a
    network its settings are ``make_az_agent``'s defaults (``AZ_NETWORK``), without one the compiled
    search's (``AZ_COMPILED``, ``make_tree_agent``'s)."""
    import inspect

    from patchwork_env.players.az_compiled import make_tree_agent
    from patchwork_env.players.az_network import make_az_agent
    from patchwork_env.players.registry import AZ_COMPILED, AZ_NETWORK, AZ_PARAMS

    for fn in (AZAgent.__init__, make_az_agent):
        sig = inspect.signature(fn).parameters
        for p in AZ_PARAMS:
            want = AZ_NETWORK.get(p.name, p.default)
            if p.name in ("kinds", "rollouts", "mix", "reuse") or (fn is make_az_agent and p.name in sig):
                assert sig[p.name].default == want, (fn, p.name)
    assert inspect.signature(make_tree_agent).parameters["ptemp"].default == AZ_COMPILED["ptemp"] == GREEDY_PRIOR_TEMP
    az = make_agent(net_az("az:sims=4"))
    assert isinstance(az, AZAgent) and az.rollouts == 4 and az.evaluator.rollouts == 4
    assert (az.config.expand, az.prior, az.prior_temp, az.value_model) == (EXPAND, "network", 2.0, None)
    for spec in ("az:net=v1", "az:value=none", "az:path=" + str(PRETRAINED_PATH)):  # a network: its search
        agent = make_agent(spec)
        assert isinstance(agent, AZAgent) and agent.rollouts == 4 and agent.config.sims == SIMS, spec
    default = make_agent("az")  # the strongest setting measured (README)
    assert isinstance(default, TreeAgent) and default.reuse and default.config.expand == 1
    assert default.config.sims == TREE_SIMS and default.prior_temp == GREEDY_PRIOR_TEMP
    shipped = load_value_model(SHIPPED_VALUE_MODELS[NEWEST_VALUE_MODEL])
    assert np.array_equal(default.value_model.w1, shipped.w1) and np.array_equal(default.value_model.b3, shipped.b3)
    assert isinstance(make_agent("az:time=0.5"), TreeAgent) and make_agent("az:time=0.5").config.sims == FIRST_PLAN
    timed = make_agent(net_az("az:time=0.5"))
    assert isinstance(timed, AZAgent) and timed.config.sims == FIRST_PLAN


@pytest.mark.parametrize(("rollouts", "mix"), [(0, 1.0), (4, 1.0), (4, 0.5)])
def test_evaluator_values_alone_are_the_values_of_a_full_evaluation(rollouts: int, mix: float) -> None:
    """``NetEvaluator.values`` (a leaf's visits before its expansion, ``expand`` > 1) gives the
    value ``__call__`` gives for the same states and rollout seed: the network's, the rollouts'
    mean, or their mix."""
    states = np.stack([deal(s, 0).array() for s in range(4)])
    evaluator = NetEvaluator(load_network(PRETRAINED_PATH), kinds=True, rollouts=rollouts, mix=mix)
    evaluator.seed(7)
    _, _, full = evaluator(states)
    evaluator.seed(7)
    alone = evaluator.values(states)
    np.testing.assert_allclose(alone, full, rtol=0, atol=1e-6)
    assert evaluator.evaluations == 4 and evaluator.value_evaluations == 4
    assert len(set(np.round(alone, 6))) > 1  # not a constant


@pytest.mark.parametrize("call", ["evaluate", "values", "search"])
def test_bad_state_rows_are_a_value_error_before_any_compiled_kernel(call: str) -> None:
    """The evaluator and the search take raw state arrays; the compiled rules trust their input
    (an out-of-range row ended the interpreter with a segmentation fault), so the rows are
    checked first (``patchwork_env.core.validate.check_state_rows``) and the error names the row."""
    bad = np.full((1, rules.STATE_LEN), 10**9, dtype=np.int64)
    evaluator = NetEvaluator(load_network(PRETRAINED_PATH), kinds=True, rollouts=4)
    with pytest.raises(ValueError, match="row 0"):
        if call == "evaluate":
            evaluator(bad)
        elif call == "values":
            evaluator.values(bad)
        else:
            BatchedSearch(evaluator, SearchConfig(sims=4)).run(bad, [np.random.default_rng(0)], noise=False)


def test_reuse_searches_on_from_the_subtree_of_the_move_played() -> None:
    """``reuse`` (default true): the child of the move played is kept; the next decision's position is
    found below it (``patchwork_env.players.tree.find_below``), its subtrees keep their nodes and visits, and
    the root's own statistics count the new search only. Without a kept node it plays the move
    a fresh search plays; ``reset()`` forgets the tree."""
    from patchwork_env.players.tree import find_below

    fresh, az = make_agent(net_az("az:sims=60,reuse=false")), make_agent(net_az("az:sims=60"))
    assert isinstance(az, AZAgent) and isinstance(fresh, AZAgent) and az.reuse and not fresh.reuse
    state = deal(2, 0)
    action = az.act(state, np.random.default_rng(0))
    assert action == fresh.act(state, np.random.default_rng(0)) and fresh._kept is None
    kept = az._kept
    state = state.step(action)
    assert kept is not None and np.array_equal(kept.state, state.array()) and kept.actions is not None
    assert find_below(kept, state.array(), lambda n: n.state, lambda n: n.children) is kept
    before = {id(c): (c, int(c.n.sum())) for c in kept.children if c is not None and c.actions is not None}
    assert before and kept.n.sum() > 0
    az.act(state, np.random.default_rng(1))
    assert int(kept.n.sum()) == 60  # the root restarted: this search's simulations only
    grown = [c for c in kept.children if c is not None and id(c) in before]
    assert len(grown) == len(before)  # the same node objects, searched on
    assert all(int(c.n.sum()) >= before[id(c)][1] for c in grown)
    assert sum(int(c.n.sum()) for c in grown) > sum(n for _, n in before.values())
    assert find_below(kept, deal(9, 0).array(), lambda n: n.state, lambda n: n.children) is None
    az.reset()
    assert az._kept is None


def test_a_kept_node_must_hold_the_state_it_is_given_for() -> None:
    az = make_agent(net_az("az:sims=8"))
    assert isinstance(az, AZAgent)
    state = deal(2, 0)
    az.act(state, np.random.default_rng(0))
    with pytest.raises(ValueError, match="kept node does not hold"):
        az.search.run(deal(3, 0).array()[None, :], [np.random.default_rng(0)], noise=False, nodes=[az._kept])
