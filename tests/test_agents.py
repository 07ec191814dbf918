"""Agents: the protocol for every spec, the greedy heuristic and the spec-string errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from patchwork_env import new_game
from patchwork_env.core import rules
from patchwork_env.core.bitboard import cells_to_words
from patchwork_env.core.state import GameState
from patchwork_env.envs.agent import Agent, BatchAgent
from patchwork_env.players import AGENT_SPECS, AgentSpecError, describe_agents, make_agent, parse_spec
from patchwork_env.players.greedy import GreedyAgent
from patchwork_env.players.heuristic import (
    DEFAULT_WEIGHTS,
    SCRATCH,
    W_DOMINO,
    W_EDGE,
    W_ISOLATED,
    W_SQUARE,
    legal_list,
    position_value,
    quilt_features,
    score_actions,
)
from patchwork_env.players.mcts import MCTSAgent
from patchwork_env.players.random import RandomAgent
from patchwork_env.players.registry import AGENT_ALIASES, MCTS_PARAMS, canonical_spec

SPECS = ["random", "greedy", "greedy:temp=1.5", "mcts:sims=6", "mcts:sims=6,rollout=random,width=1,reuse=false"]


def positions(n_games: int = 2, seed: int = 7) -> list[GameState]:
    """Every position of a few random games (leather placements included)."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(n_games):
        s = new_game(seed + g)
        while not s.is_terminal:
            out.append(s)
            s = s.step(RandomAgent().act(s, rng))
    return out


@pytest.fixture(scope="module")
def some_positions() -> list[GameState]:
    ps = positions()
    assert any(p.pending_leather for p in ps)
    return ps


@pytest.mark.parametrize("spec", SPECS)
def test_every_agent_follows_the_protocol(spec: str, some_positions: list[GameState]) -> None:
    agent = make_agent(spec)
    assert isinstance(agent, Agent)
    assert agent.name == spec
    rng = np.random.default_rng(0)
    for state in some_positions[::9] + [p for p in some_positions if p.pending_leather][:2]:
        action = agent.act(state, rng)
        assert isinstance(action, int)
        assert state.is_legal(action), (spec, action, state.to_notation())


@pytest.mark.parametrize("spec", ["random", "greedy:temp=2", "mcts:sims=5"])
def test_agents_are_reproducible_for_a_generator_seed(spec: str, some_positions: list[GameState]) -> None:
    states = some_positions[::15]
    runs = []
    for _ in range(2):
        agent = make_agent(spec)
        rng = np.random.default_rng(42)
        runs.append([agent.act(s, rng) for s in states])
    assert runs[0] == runs[1]


def test_greedy_batch_decides_legal_actions(some_positions: list[GameState]) -> None:
    agent = GreedyAgent()
    assert isinstance(agent, BatchAgent)
    states = np.stack([s.array() for s in some_positions[:40]])
    masks = np.stack([s.legal_action_mask() for s in some_positions[:40]])
    actions = agent.act_batch(states, masks, np.random.default_rng(0))
    assert actions.shape == (40,)
    assert masks[np.arange(40), actions].all()


def test_greedy_plays_a_best_valued_action(some_positions: list[GameState]) -> None:
    agent = GreedyAgent()
    rng = np.random.default_rng(1)
    for state in some_positions[::5]:
        acts = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
        n = legal_list(state.array(), np.empty(rules.NUM_ACTIONS, dtype=np.bool_), acts)
        values = np.empty(n)
        score_actions(state.array(), acts[:n], n, DEFAULT_WEIGHTS, values)
        chosen = agent.act(state, rng)
        assert values[list(acts[:n]).index(chosen)] == pytest.approx(values.max())


def test_scoring_a_patchs_placements_by_replacement_is_stepping_each() -> None:
    """score_actions steps the first placement of each market patch and only replaces the placement
    for the next ones (rules.replace_purchase): every value equals stepping each action on a copy,
    in any order of the actions, bonus-claiming placements included."""
    greedy, rng = GreedyAgent(), np.random.default_rng(3)
    rows, claims = [], 0
    for g in range(6):  # greedy's compact quilts reach the 7x7 bonus
        s = new_game(g)
        while not s.is_terminal:
            rows.append(s.array())
            s = s.step(greedy.act(s, rng))
    feat = np.empty(SCRATCH)
    for row in rows[::2]:
        acts = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
        n = legal_list(row, np.empty(rules.NUM_ACTIONS, dtype=np.bool_), acts)
        p = int(rules.current_player(row))
        for order in (acts[:n], rng.permutation(acts[:n])):
            got = np.empty(n)
            score_actions(row, order, n, DEFAULT_WEIGHTS, got)
            want = []
            for a in order:
                after = row.copy()
                rules.step_into(after, int(a))
                claims += int(row[rules.BONUS] < 0 <= after[rules.BONUS])
                want.append(position_value(after, p, DEFAULT_WEIGHTS, feat))
            assert got.tolist() == want
    assert claims > 0


def test_value_is_the_score_less_quilt_penalties_at_the_end() -> None:
    # at the end no time or income mark is left: the value is the final score, less the quilt terms
    rng = np.random.default_rng(3)
    s = new_game(3)
    agent = GreedyAgent()
    while not s.is_terminal:
        s = s.step(agent.act(s, rng))
    w = DEFAULT_WEIGHTS
    for p in (0, 1):
        f = np.zeros(SCRATCH)
        value = position_value(s.array(), p, w, f)
        empty, isolated, domino, edges, square = f[:5]
        assert empty == s.empty_cells(p)
        expected = s.scores()[p] - w[W_ISOLATED] * isolated - w[W_DOMINO] * domino - w[W_EDGE] * edges
        if s.bonus_owner is None:
            expected += w[W_SQUARE] * square
        assert value == pytest.approx(expected)


def features(cells: list[int]) -> list[float]:
    """Quilt features of a quilt covering ``cells``."""
    out = np.zeros(5)
    lo, hi = cells_to_words(cells)
    quilt_features(lo, hi, out)
    return out.tolist()


def test_quilt_features_on_known_quilts() -> None:
    everything = list(range(81))
    assert features([]) == [81, 0, 0, 36, 0]  # empty, isolated, domino cells, perimeter, best 7x7
    assert features(everything) == [0, 0, 0, 0, 49]
    one_hole = [c for c in everything if c != 40]
    assert features(one_hole) == [1, 1, 0, 4, 48]
    corner_domino = [c for c in everything if c not in (0, 1)]
    assert features(corner_domino) == [2, 0, 2, 6, 49]  # a 7x7 square avoids the corner
    vertical_domino = [c for c in everything if c not in (70, 79)]  # (7, 7) and (8, 7)
    assert features(vertical_domino) == [2, 0, 2, 6, 49]
    l_hole = [c for c in everything if c not in (0, 1, 9)]  # three cells: no domino, no isolated
    assert features(l_hole) == [3, 0, 0, 8, 49]
    square = [r * 9 + c for r in range(7) for c in range(7)]
    f = features(square)
    assert f[0] == 81 - 49 and f[4] == 49


def test_greedy_beats_random_on_paired_deals() -> None:
    from patchwork_env.evaluation.arena import play_pairs

    result = play_pairs("greedy", "random", 10, seed=0, workers=1)
    assert result.games == 20
    assert result.wins_a >= 17, result.to_dict()
    assert result.mean_margin_a > 15


# --- spec strings --------------------------------------------------------------------------------
def test_specs_build_the_named_agents() -> None:
    assert isinstance(make_agent("random"), RandomAgent)
    assert isinstance(make_agent(" greedy "), GreedyAgent)
    m = make_agent("mcts:sims=400,rollout=greedy")
    assert isinstance(m, MCTSAgent) and m.sims == 400 and m.rollout == "greedy" and m.time is None
    t = make_agent("mcts:time=1.0")
    assert isinstance(t, MCTSAgent) and t.time == 1.0 and t.sims is None
    both = make_agent("mcts:sims=50,time=2,c=0.7,reuse=no")
    assert isinstance(both, MCTSAgent) and (both.sims, both.time, both.c, both.reuse) == (50, 2.0, 0.7, False)
    assert MCTSAgent().sims == 400  # no budget given: 400 simulations


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("alphazero", ["unknown agent 'alphazero'", "random", "greedy", "mcts", "ppo"]),
        ("mcts:simulations=4", ["no parameter 'simulations'", "sims, time"]),
        ("mcts:sims=many", ["'sims' must be int", "sims=int"]),
        ("mcts:rollout=smart", ["greedy, random"]),
        ("mcts:sims", ["expected key=value"]),
        ("mcts:sims=4,sims=5", ["given twice"]),
        ("mcts:sims=0", ["'sims' must be in [1, 100000]"]),
        ("mcts:time=-1", ["'time' must be in [0.001, 3600]"]),
        ("greedy:temp=-1", ["'temp' must be in [0, 1000000]"]),
        ("random:x=1", ["random has no parameter 'x'", "no parameters"]),
        ("ppo", ["ppo needs ppo:PATH"]),
        ("", ["non-empty string"]),
    ],
)
def test_bad_specs_say_what_is_allowed(spec: str, words: list[str]) -> None:
    with pytest.raises(AgentSpecError) as info:
        make_agent(spec)
    assert isinstance(info.value, ValueError)
    for w in words:
        assert w in str(info.value), (spec, str(info.value))


def test_ppo_spec_goes_to_the_loader() -> None:
    entry, kwargs = parse_spec("ppo:runs/some dir/model.pt")
    assert entry.name == "network" and kwargs == {"path": "runs/some dir/model.pt"}  # ppo: is its old name
    with pytest.raises((ValueError, OSError)):  # no such checkpoint (or no ppo_agent module yet)
        make_agent("ppo:/nonexistent/checkpoint.pt")


def test_network_names_every_checkpoint_and_ppo_is_its_old_name() -> None:
    network, old = parse_spec("network:x.pt"), parse_spec("PPO:x.pt")
    assert network == old and network[0].name == "network" and AGENT_ALIASES == {"ppo": "network"}
    assert canonical_spec("ppo:x.pt") == canonical_spec("network:./x.pt")
    text = describe_agents()
    assert "network:PATH" in text and "ppo:PATH" in text
    with pytest.raises(AgentSpecError, match="network needs network:PATH"):
        parse_spec("network")


def test_help_lists_every_agent_and_parameter() -> None:
    text = describe_agents()
    for name, entry in AGENT_SPECS.items():
        assert name in text
        for p in entry.params:
            assert f"{p.name}=" in text


def test_registry_defaults_match_the_mcts_signature() -> None:
    sig = inspect.signature(MCTSAgent.__init__).parameters
    for p in MCTS_PARAMS:
        assert sig[p.name].default == p.default, p.name


def test_heuristic_square_and_groups_follow_the_named_constants() -> None:
    # the best bonus-sized square of quilt_features is the best of bitboard's bonus masks, and the
    # decision groups of candidate_actions are the network's groups of the action encoding
    from patchwork_env.core import bitboard as B
    from patchwork_env.players import heuristic as H
    from patchwork_env.players.network import GROUP_BOUNDS, GROUP_OF_ACTION

    assert len(B.BONUS_LO) == B.BONUS_SQUARES
    assert all(
        int(lo).bit_count() + int(hi).bit_count() == B.BONUS_SIDE**2
        for lo, hi in zip(B.BONUS_LO, B.BONUS_HI, strict=True)
    )
    rng = np.random.default_rng(3)
    out = np.zeros(H.QUILT_FEATURES)
    for _ in range(200):
        lo, hi = cells_to_words(np.flatnonzero(rng.random(B.CELLS) < rng.random()).tolist())
        H.quilt_features(lo, hi, out)
        best = max(
            int(lo & a).bit_count() + int(hi & b).bit_count() for a, b in zip(B.BONUS_LO, B.BONUS_HI, strict=True)
        )
        assert out[4] == best
    assert H.NUM_GROUPS == len(GROUP_BOUNDS) - 1 == GROUP_OF_ACTION.max() + 1
    assert (GROUP_OF_ACTION[rules.LEATHER_BASE], GROUP_OF_ACTION[rules.ADVANCE]) == (H.LEATHER_GROUP, H.ADVANCE_GROUP)
    from patchwork_env.core.actions import decode_action

    kind = {"leather": H.LEATHER_GROUP, "advance": H.ADVANCE_GROUP}
    for a in range(rules.NUM_ACTIONS):  # the groups are the engine's own reading of each action
        action = decode_action(a)
        want = kind.get(action.kind, action.slot)
        assert GROUP_OF_ACTION[a] == H.action_group(a) == want, a
