"""Patchwork as an OpenSpiel game (``patchwork_env.openspiel``, the ``openspiel`` extra): the
registration, OpenSpiel's own conformance checks, the deal as chance nodes, the engine's
non-alternating turns, the observer, structs and pickling through the checked constructor, and
bots both ways. Tests that need OpenSpiel skip without it; the missing extra is tested either way."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import patchwork_env
from patchwork_env import GAME_INFO, new_game, search_stats
from patchwork_env.core.state import GameState
from patchwork_env.envs.edge import final_rewards
from patchwork_env.envs.observation import observe
from patchwork_env.players import AgentSpecError, MissingExtraError, make_agent
from patchwork_env.players.registry import OPENSPIEL_MCTS_PARAMS

ROOT = Path(__file__).resolve().parent.parent
HAVE_OPENSPIEL = importlib.util.find_spec("pyspiel") is not None
MISSING = 'patchwork_env.openspiel needs OpenSpiel, which is not installed: pip install "patchwork-env[openspiel]"'


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


# --- without OpenSpiel ---------------------------------------------------------------------------
def test_importing_patchwork_env_never_loads_openspiel() -> None:
    code = "import sys, patchwork_env; patchwork_env.make_agent('greedy'); print('pyspiel' in sys.modules)"
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_without_the_extra_the_module_and_the_spec_name_it() -> None:
    """``None`` in ``sys.modules`` makes ``import pyspiel`` fail as an uninstalled package does."""
    code = "import sys; sys.modules['pyspiel'] = None\nimport patchwork_env.openspiel\n"
    proc = _python(code)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == f"ImportError: {MISSING}"
    code = (
        "import sys; sys.modules['pyspiel'] = None\n"
        "from patchwork_env.players import make_agent, MissingExtraError\n"
        "try:\n    make_agent('openspiel-mcts:sims=10')\nexcept MissingExtraError as exc:\n    print(exc)\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        'openspiel-mcts needs OpenSpiel, which is not installed: pip install "patchwork-env[openspiel]"'
    )
    assert issubclass(MissingExtraError, AgentSpecError)


def test_every_search_agent_counts_its_simulations_under_one_name() -> None:
    state = new_game(seed=5)
    for spec, sims in (("mcts:sims=12", 12), ("az:sims=24", 24)):
        agent = make_agent(spec)
        action = agent.act(state, np.random.default_rng(0))
        stats = search_stats(agent)
        assert stats is not None and stats.sims == agent.last_sims == sims, spec
        assert action in dict(stats.visits) and sum(n for _, n in stats.visits) == sims, spec
    assert search_stats(make_agent("greedy")) is None


def test_the_network_search_counts_its_simulations_too() -> None:
    pytest.importorskip("torch")
    agent = make_agent("az:net=v1,sims=8")
    agent.act(new_game(seed=5), np.random.default_rng(0))
    stats = search_stats(agent)
    assert stats is not None and stats.sims == agent.last_sims == agent.search.last_sims == 8


def test_the_docs_page_quotes_its_results_files() -> None:
    """The match and the rating on ``docs/openspiel.md`` are those of the files their commands wrote."""
    page = (ROOT / "docs" / "openspiel.md").read_text()
    match = json.loads((ROOT / "results" / "openspiel-mcts.json").read_text())
    rating = json.loads((ROOT / "results" / "ladder-v2-openspiel-mcts.json").read_text())
    assert match["command"] in page and rating["command"] in page
    rows = [p for p in match["pairs"] if p["a"] == rating["agent"]]
    assert {p["b"] for p in rows} == {"greedy", "mcts:sims=400", "az"}
    for p in rows:
        rate, (low, high) = 100 * p["win_rate_a"], (100 * x for x in p["ci95_a"])
        row = f"| `{p['b']}` | {p['wins_a']} | {rate:.1f}% [{low:.1f}, {high:.1f}] | {p['mean_margin_a']:+.1f} |"
        assert row in page, row
    low, high = rating["ci95"]
    assert f"it rates {rating['elo']:.0f} Elo [{low:.0f}, {high:.0f}]" in page


# --- with OpenSpiel ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pyspiel() -> Any:
    if not HAVE_OPENSPIEL:
        pytest.skip('needs OpenSpiel: pip install "patchwork-env[openspiel]"')
    import pyspiel

    import patchwork_env.openspiel  # noqa: F401  (registers the game)

    return pyspiel


@pytest.fixture(scope="module")
def game(pyspiel: Any) -> Any:
    return pyspiel.load_game("python_patchwork")


def _deal(game: Any, dealt: GameState) -> Any:
    """The OpenSpiel state after the chance nodes deal the circle and first player of ``dealt``."""
    state = game.new_initial_state()
    for patch in dealt.circle[:-1]:
        state.apply_action(patch)
    state.apply_action(dealt.current_player)
    return state


def _random_game(game: Any, seed: int) -> list[Any]:
    """Every state of one game with uniform chance and uniform legal moves (clones)."""
    rng = np.random.default_rng(seed)
    state, states = game.new_initial_state(), []
    while not state.is_terminal():
        states.append(state.clone())
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return [*states, state]


def test_the_game_is_registered_with_the_engines_bounds(pyspiel: Any, game: Any) -> None:
    assert "python_patchwork" in pyspiel.registered_names()
    kind = game.get_type()
    assert kind.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert kind.information == pyspiel.GameType.Information.PERFECT_INFORMATION
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert game.num_players() == GAME_INFO.num_players
    assert game.num_distinct_actions() == GAME_INFO.num_distinct_actions
    assert game.max_game_length() == GAME_INFO.max_game_length
    assert (game.min_utility(), game.max_utility(), game.utility_sum()) == (-1.0, 1.0, 0.0)
    assert game.observation_tensor_shape() == list(GAME_INFO.observation_shape)
    assert game.max_chance_outcomes() == 33 and game.max_chance_nodes_in_history() == 33
    assert str(game) == "python_patchwork(leather_layout=revised,reward=win)"


@pytest.mark.parametrize("name", ["python_patchwork", "python_patchwork(reward=score,leather_layout=original)"])
def test_openspiels_random_simulation_with_serialization(pyspiel: Any, name: str) -> None:
    pyspiel.random_sim_test(pyspiel.load_game(name), num_sims=3, serialize=True, verbose=False)


def test_openspiels_games_sim_test(pyspiel: Any, game: Any) -> None:
    """``open_spiel/python/tests/games_sim_test.py``'s simulation: clones, pyspiel serialization and
    pickling of the game, its type and its states, returns in range at the end."""
    from open_spiel.python.tests import games_sim_test

    np.random.seed(0)  # noqa: NPY002  (OpenSpiel's test draws from numpy's global generator)
    for _ in range(2):
        games_sim_test.GamesSimTest().sim_game(game)


def test_the_deal_is_chance_nodes_that_give_new_games_distribution(game: Any) -> None:
    state = game.new_initial_state()
    assert state.is_chance_node() and str(state) == "deal 0/32: -"
    outcomes = state.chance_outcomes()
    assert [a for a, _ in outcomes] == list(range(1, 33)) and sum(p for _, p in outcomes) == pytest.approx(1)
    state.apply_action(17)
    assert 17 not in dict(state.chance_outcomes()) and len(state.chance_outcomes()) == 31
    assert state.action_to_string(-1, 5) == "deal patch 5"
    dealt = new_game(seed=4)
    state = _deal(game, dealt)
    assert state.game_state == dealt and state.current_player() == dealt.current_player
    assert [state.history()[i] for i in (0, 31, 32)] == [dealt.circle[0], dealt.circle[31], dealt.current_player]
    with pytest.raises(ValueError, match=r"chance outcome 17 is not possible here: the patches not dealt yet"):
        almost = game.new_initial_state({"deal": [17]})
        almost.apply_action(17)


def test_current_player_is_the_engines_and_turns_repeat(game: Any) -> None:
    states = _random_game(game, seed=1)
    movers = [s.current_player() for s in states if not s.is_chance_node() and not s.is_terminal()]
    assert movers == [s.game_state.current_player for s in states if s.game_state is not None and not s.is_terminal()]
    assert any(a == b for a, b in itertools.pairwise(movers))  # the same player again
    end = states[-1]
    assert end.is_terminal() and end.returns() == list(final_rewards(end.game_state, "win"))
    assert len(movers) <= game.max_game_length()


def test_score_rewards_are_the_envs(pyspiel: Any) -> None:
    game = pyspiel.load_game("python_patchwork(reward=score)")
    end = _random_game(game, seed=2)[-1]
    assert end.returns() == list(final_rewards(end.game_state, "score"))
    assert sum(end.returns()) == 0.0 and -1 <= end.returns()[0] <= 1


def test_the_observation_is_the_projects_and_its_string_the_notation(game: Any) -> None:
    from open_spiel.python.observation import make_observation

    state = _deal(game, new_game(seed=0))
    for _ in range(5):
        state.apply_action(state.legal_actions()[-1])
    position = state.game_state
    observation = make_observation(game)
    for seat in (0, 1):
        expected = observe(position, seat)
        assert np.array_equal(np.asarray(state.observation_tensor(seat), dtype=np.float32), expected)
        observation.set_from(state, seat)
        assert np.array_equal(observation.tensor, expected)
        assert state.observation_string(seat) == position.to_notation()
    shapes = {name: view.shape for name, view in observation.dict.items()}
    assert shapes == {"planes": (5, 9, 9), "scalars": (24,), "circle": (33, 31)}
    assert state.information_state_string(0) == state.history_str()
    dealing = game.new_initial_state({"deal": [3, 9]})
    assert not any(dealing.observation_tensor(0)) and dealing.observation_string(1) == "deal 2/32: 3 9"


def test_structs_notation_and_pickles_round_trip_through_the_checked_constructor(game: Any) -> None:
    for state in _random_game(game, seed=3)[::7]:
        struct = json.loads(state.to_json())
        again = game.new_initial_state(struct)
        assert str(again) == str(state) and again.legal_actions() == state.legal_actions()
        assert again.current_player() == state.current_player() and again.returns() == state.returns()
        assert str(game.new_initial_state(state.to_struct())) == str(state)
        if state.game_state is not None:
            assert game.new_initial_state(state.game_state.to_notation()).game_state == state.game_state
        unpickled = pickle.loads(pickle.dumps(state))
        assert str(unpickled) == str(state) and unpickled.history() == state.history()


def test_action_structs_are_the_action_notation(game: Any) -> None:
    state = game.new_initial_state()
    assert state.apply_action_struct(state.action_to_struct(-1, 7)).ok() and state.history() == [7]
    state = game.new_initial_state(new_game(seed=0).to_notation())
    action = state.legal_actions()[3]
    struct = state.action_to_struct(state.current_player(), action)
    assert json.loads(struct.to_json()) == {"action": "buy s0 o0 r0c3"}
    assert state.apply_action_struct(struct).ok() and state.history() == [action]
    illegal = state.action_to_struct(state.current_player(), 1944)
    assert "'leather r0c0' is not legal" in state.validate_action_struct(illegal).to_string()


def test_bad_structs_and_parameters_say_what_is_wrong(pyspiel: Any, game: Any) -> None:
    from patchwork_env.openspiel import PatchworkGame

    notation = new_game(seed=0).to_notation()
    with pytest.raises(ValueError, match=r"is a notation line, .* got \['board'\]"):
        game.new_initial_state({"board": []})
    with pytest.raises(ValueError, match="notation has 11 space-separated fields"):
        game.new_initial_state({"notation": "R 0,0"})
    with pytest.raises(ValueError, match=r"'deal' must be a list of distinct patch ids 1\.\.32"):
        game.new_initial_state({"deal": [4, 4]})
    with pytest.raises(ValueError, match="leather layout is 'revised', this game's is 'original'"):
        pyspiel.load_game("python_patchwork(leather_layout=original)").new_initial_state(notation)
    with pytest.raises(ValueError, match="reward must be one of"):
        pyspiel.load_game("python_patchwork(reward=points)")
    with pytest.raises(ValueError, match="has no parameter 'speed'"):
        PatchworkGame({"speed": 3})
    fields = notation.split(" ")
    fields[2] = "9,5"  # buttons the rules cannot reach: the checked constructor refuses them
    with pytest.raises(ValueError, match="player 0 has 9 buttons, but on space 0"):
        game.new_initial_state({"notation": " ".join(fields)})
    state = game.new_initial_state(notation)
    with pytest.raises(patchwork_env.IllegalActionError, match="no leather patch is pending"):
        state.apply_action(1944)


def test_our_agents_play_openspiels_mcts_through_evaluate_bots(pyspiel: Any, game: Any) -> None:
    from patchwork_env.openspiel import AgentBot, OpenSpielMCTSAgent

    mcts = OpenSpielMCTSAgent(sims=10)
    for ours in ("mcts:sims=5", "az:sims=20"):
        for seat in (0, 1):
            bots = [AgentBot(ours, seed=seat), mcts.bot(game, seed=seat)]
            if seat:
                bots.reverse()
            returns = pyspiel.evaluate_bots(game.new_initial_state(), bots, seat)
            assert sorted(returns) == [-1.0, 1.0], ours


def test_any_agent_or_function_is_a_bot_on_its_position(game: Any) -> None:
    from patchwork_env.openspiel import AgentBot

    state = _deal(game, new_game(seed=2))
    first = AgentBot(lambda s: int(s.legal_actions()[0]))
    assert first.step(state) == state.legal_actions()[0]
    with pytest.raises(ValueError, match="the game is being dealt"):
        first.step(game.new_initial_state())
    with pytest.raises(ValueError, match="not a state of python_patchwork"):
        first.step(new_game(seed=0))


def test_the_spec_defaults_match_the_agent(pyspiel: Any) -> None:
    from patchwork_env.openspiel import OpenSpielMCTSAgent

    signature = inspect.signature(OpenSpielMCTSAgent.__init__).parameters
    for param in OPENSPIEL_MCTS_PARAMS:
        assert signature[param.name].default == param.default, param.name


def test_openspiels_mcts_is_an_agent_that_a_seed_replays(game: Any) -> None:
    agent = make_agent("openspiel-mcts:sims=30,c=1.5")
    assert agent.name == "openspiel-mcts:sims=30,c=1.5"
    state = new_game(seed=6)
    first = agent.act(state, np.random.default_rng(1))
    stats = search_stats(agent)
    assert stats is not None and stats.sims == 30 and state.is_legal(first)
    assert sum(n for _, n in stats.visits) == 29  # the first simulation expands the root
    assert agent.act(state, np.random.default_rng(1)) == first and search_stats(agent) == stats
    assert pickle.loads(pickle.dumps(agent)).act(state, np.random.default_rng(1)) == first
    with pytest.raises(AgentSpecError, match="'rollouts' must be int"):
        make_agent("openspiel-mcts:rollouts=many")
    with pytest.raises(ValueError, match="the game is over"):
        end = _random_game(game, seed=0)[-1].game_state
        agent.act(end, np.random.default_rng(0))


def test_openspiels_mcts_plays_in_the_arena(pyspiel: Any) -> None:
    from patchwork_env.evaluation import play_pairs

    pair = play_pairs("openspiel-mcts:sims=10", "random", num_pairs=1, seed=0, workers=1)
    assert pair.games == 2 and pair.wins_a + pair.wins_b == 2 and pair.illegal_a == 0
