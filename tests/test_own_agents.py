"""A researcher's own agent wherever a spec goes (patchwork_env.players.user, players.sb3): a
function, an agent class or a factory by ``FILE.py:NAME`` / ``MODULE:NAME``, a model saved by
Stable-Baselines3 or sb3-contrib by ``sb3:PATH``; ``observation_and_mask``; actions checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchwork_env import SingleAgentEnv, new_game, observation_and_mask
from patchwork_env.core.actions import IllegalActionError
from patchwork_env.envs.agent import resolve_opponent
from patchwork_env.evaluation.arena import play_pairs
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.registry import canonical_spec, make_agent
from tests.cli import error_lines, patchwork

ROOT = Path(__file__).resolve().parent.parent

AGENTS_FILE = """
import numpy as np
from patchwork_env import observation_and_mask

def first_legal(state):
    obs, mask = observation_and_mask(state)
    return int(np.flatnonzero(mask)[0])

class Last:
    name = "last"
    def act(self, state, rng):
        return int(state.legal_actions()[-1])

def make():
    return first_legal

NOT_AN_AGENT = 3
"""


@pytest.fixture
def agents_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_agents.py"
    path.write_text(AGENTS_FILE)
    return path


def test_observation_and_mask_is_what_the_single_agent_env_shows() -> None:
    env = SingleAgentEnv(opponent="random", seat=None)
    obs, info = env.reset(seed=3)
    state = env.game_state
    mine, mask = observation_and_mask(state)
    assert np.array_equal(mine, obs) and np.array_equal(mask, info["action_mask"].astype(bool))
    assert mine.flags.writeable and mask.flags.writeable  # torch.from_numpy takes them without a warning
    other, none = observation_and_mask(state, 1 - state.current_player)
    assert not none.any() and not np.array_equal(other, mine)
    with pytest.raises(ValueError, match="seat must be 0, 1 or None"):
        observation_and_mask(state, 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "expected"), [("first_legal", "first"), ("Last", "last"), ("make", "first")])
def test_a_file_names_a_function_an_agent_class_or_a_factory(agents_file: Path, name: str, expected: str) -> None:
    spec = f"{agents_file}:{name}"
    agent = make_agent(spec)
    assert agent.name == spec
    state = new_game(seed=1)
    legal = state.legal_actions()
    assert agent.act(state, np.random.default_rng(0)) == int(legal[0] if expected == "first" else legal[-1])


def test_a_module_names_an_agent_by_its_import_path(agents_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(agents_file.parent)  # MODULE:NAME imports from the current folder, as python -m does
    agent = make_agent("my_agents:Last")
    state = new_game(seed=2)
    assert agent.act(state, np.random.default_rng(0)) == int(state.legal_actions()[-1])


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("nosuchfile.py:act", "no such file"),
        ("{file}:missing", "has no 'missing'"),
        ("{file}:NOT_AN_AGENT", "it must be an agent"),
        ("no_such_module_here:act", "no module 'no_such_module_here'"),
    ],
)
def test_a_wrong_path_or_name_is_one_clear_error(agents_file: Path, spec: str, match: str) -> None:
    with pytest.raises(AgentSpecError, match=match):
        make_agent(spec.format(file=agents_file))


def test_the_command_line_rates_a_function_of_a_script_with_two_workers_and_no_main_guard(
    agents_file: Path, tmp_path: Path
) -> None:
    """The issue's case: a script with no ``if __name__ == "__main__":`` whose function is rated on
    two workers (each worker loads it by its path); it must neither hang nor fail."""
    out = tmp_path / "rating.json"
    proc = subprocess.run(
        [sys.executable, "-m", "patchwork_env.cli", "ladder", "my_agents.py:first_legal", "--workers", "2",
         "--ladder", "v1", "--json", str(out), "--no-progress"],
        cwd=agents_file.parent, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["agent"] == "my_agents.py:first_legal" and data["games"] == 60 and data["illegal_actions"] == 0


def test_a_users_agent_plays_the_same_games_on_two_workers_as_on_one(agents_file: Path) -> None:
    spec = f"{agents_file}:first_legal"
    one = play_pairs(spec, "greedy", 3, seed=4, workers=1)
    two = play_pairs(spec, "greedy", 3, seed=4, workers=2)
    assert [r.actions for r in one.records] == [r.actions for r in two.records]


def test_the_same_agent_under_two_spellings_is_one_agent(agents_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert canonical_spec("greedy") == canonical_spec("GREEDY") == canonical_spec("greedy:temp=0")
    assert canonical_spec("greedy") != canonical_spec("greedy:temp=1")
    monkeypatch.chdir(agents_file.parent)
    assert canonical_spec("my_agents.py:Last") == canonical_spec(f"{agents_file}:Last")


@pytest.mark.parametrize("returned", [2025.0, "2025", b"2025", np.float64(3.0), None, float("nan"), True])
def test_a_callable_returning_a_non_integer_plays_an_illegal_action(returned: Any) -> None:
    agent = resolve_opponent(lambda state: returned)
    with pytest.raises(IllegalActionError, match="out of range"):
        agent.act(new_game(seed=0), np.random.default_rng(0))


def test_a_callable_returning_a_numpy_integer_plays_it() -> None:
    state = new_game(seed=0)
    agent = resolve_opponent(lambda s: np.int64(s.legal_actions()[0]))
    assert agent.act(state, np.random.default_rng(0)) == int(state.legal_actions()[0])


def test_rate_takes_a_name_and_returns_its_provenance() -> None:
    import patchwork_env

    def mine(state: Any) -> int:
        return int(state.legal_actions()[0])

    result = patchwork_env.rate(mine, name="mine", ladder="v1")
    data = result.to_dict()
    assert data["agent"] == "mine" and data["ladder"] == "v1" and data["budget"] == "quick"
    for key in ("command", "commit", "version", "date", "machine", "seeds"):
        assert data[key], key
    assert data["command"] == "patchwork_env.rate(mine, name='mine', budget='quick', workers=1, ladder='v1')"
    with pytest.raises(ValueError, match="name must be"):
        patchwork_env.rate(mine, name="  ", ladder="v1")


# --- Stable-Baselines3 models ---------------------------------------------------------------------
sb3_contrib = pytest.importorskip("sb3_contrib")


@pytest.fixture(scope="module")
def sb3_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny models of each algorithm on the single-agent env (a few steps: only loading and
    playing are tested here), and one of another observation space."""
    from stable_baselines3 import A2C, DQN, PPO

    folder = tmp_path_factory.mktemp("sb3")
    env = SingleAgentEnv(opponent="random")
    models = {
        "maskable": sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=32, seed=0),
        "ppo": PPO("MlpPolicy", env, n_steps=32, batch_size=32, seed=0),
        "a2c": A2C("MlpPolicy", env, seed=0),
        "dqn": DQN("MlpPolicy", env, buffer_size=64, learning_starts=0, seed=0),
        "cartpole": PPO("MlpPolicy", "CartPole-v1", seed=0),
    }
    models["maskable"].learn(32)
    paths = {}
    for name, model in models.items():
        paths[name] = folder / f"{name}.zip"
        model.save(paths[name])
    return paths


@pytest.mark.parametrize(
    ("model", "algorithm"), [("maskable", "MaskablePPO"), ("ppo", "PPO"), ("a2c", "A2C"), ("dqn", "DQN")]
)
def test_an_sb3_model_plays_by_its_spec(sb3_models: dict[str, Path], model: str, algorithm: str) -> None:
    agent = make_agent(f"sb3:{sb3_models[model]}")
    assert agent.algorithm == algorithm  # type: ignore[attr-defined]
    result = play_pairs(agent, "random", 2, seed=1, workers=1)
    assert result.illegal_a == 0  # the mask reaches every model, trained with masks or not
    info = agent.agent_info()  # type: ignore[attr-defined]
    assert info["algorithm"] == algorithm and info["trained_with_masks"] == (algorithm == "MaskablePPO")


@pytest.mark.parametrize("model", ["ppo", "a2c", "dqn"])
def test_a_model_trained_without_masks_plays_its_best_legal_action(sb3_models: dict[str, Path], model: str) -> None:
    """The mask applied to what the model computes: the most probable legal action of PPO's and
    A2C's distribution, DQN's legal action of the highest value (the issue: a plain PPO forfeited
    all 64 games of a rating)."""
    import torch
    from stable_baselines3 import A2C, DQN, PPO

    loaded = {"ppo": PPO, "a2c": A2C, "dqn": DQN}[model].load(sb3_models[model], device="cpu")
    agent = make_agent(f"sb3:{sb3_models[model]}")
    state = new_game(seed=3)
    for _ in range(6):
        obs, mask = observation_and_mask(state)
        with torch.no_grad():
            tensor, _ = loaded.policy.obs_to_tensor(obs)
            if model == "dqn":
                scores = loaded.policy.q_net(tensor)[0].numpy()
            else:
                scores = loaded.policy.get_distribution(tensor).distribution.probs[0].numpy()
        scores = np.where(mask, scores, -np.inf)
        action = agent.act(state, np.random.default_rng(0))
        assert mask[action] and scores[action] == scores.max()
        state = state.step(action)


def test_sampling_a_plain_ppo_draws_legal_actions_only(sb3_models: dict[str, Path]) -> None:
    agent = make_agent(f"sb3:path={sb3_models['ppo']},sample=1")
    state = new_game(seed=6)
    picks = [agent.act(state, np.random.default_rng(seed)) for seed in range(30)]
    assert all(state.is_legal(a) for a in picks) and len(set(picks)) > 1
    assert agent.agent_info()["moves"] == "sampled from its policy over the legal actions"  # type: ignore[attr-defined]


def test_a_plain_ppo_forfeits_no_game_of_a_rating_and_the_json_says_it_had_no_masks(
    sb3_models: dict[str, Path],
) -> None:
    import patchwork_env

    result = patchwork_env.rate(f"sb3:{sb3_models['ppo']}", budget="quick")
    assert result.illegal_actions == 0 and result.forfeits == [] and result.games == 64
    data = result.to_dict()
    assert data["agent_info"] == {"algorithm": "PPO", "trained_with_masks": False,
                                  "moves": "the most probable legal action"}  # fmt: skip


def test_a_maskable_model_plays_what_sb3_predicts_with_the_mask(sb3_models: dict[str, Path]) -> None:
    model = sb3_contrib.MaskablePPO.load(sb3_models["maskable"], device="cpu")
    agent = make_agent(f"sb3:{sb3_models['maskable']}")
    env = SingleAgentEnv(opponent="greedy", seat=None)
    obs, _ = env.reset(seed=5)
    for _ in range(10):
        expected, _ = model.predict(obs, deterministic=True, action_masks=env.action_masks())
        assert agent.act(env.game_state, np.random.default_rng(0)) == int(expected)
        obs, _, done, _, _ = env.step(int(expected))
        if done:
            break


def test_sampling_is_reproducible_from_the_arenas_generator(sb3_models: dict[str, Path]) -> None:
    agent = make_agent(f"sb3:path={sb3_models['maskable']},sample=1")
    state = new_game(seed=6)
    picks = [agent.act(state, np.random.default_rng(seed)) for seed in range(12)]
    assert picks == [agent.act(state, np.random.default_rng(seed)) for seed in range(12)]
    assert len(set(picks)) > 1 and all(state.is_legal(a) for a in picks)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("sb3:{cartpole}", r"trained on observations Box\(float32, \(4,\)\) and actions Discrete\(2\)"),
        ("sb3:path={dqn},sample=1", "a DQN model has no policy to sample from"),
        ("sb3:{missing}", "no such file"),
        ("sb3:{notzip}", "not a model saved by Stable-Baselines3"),
    ],
)
def test_a_model_that_cannot_play_is_one_clear_error(
    sb3_models: dict[str, Path], tmp_path: Path, spec: str, match: str, capsys: pytest.CaptureFixture[str]
) -> None:
    notzip = tmp_path / "model.zip"
    notzip.write_text("not a zip")
    text = spec.format(
        cartpole=sb3_models["cartpole"], dqn=sb3_models["dqn"], missing=tmp_path / "x.zip", notzip=notzip
    )
    with pytest.raises(AgentSpecError, match=match):
        make_agent(text)
    assert patchwork("ladder", text, "--ladder", "v1") == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("error: ")


def test_the_ladder_rates_a_maskable_model(sb3_models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    spec = f"sb3:{sb3_models['maskable']}"
    assert patchwork("ladder", spec, "--workers", "2", "--json", str(out), "--no-progress") == 0
    data = json.loads(out.read_text())
    assert data["spec"] == spec and data["illegal_actions"] == 0 and data["ladder"] == "v3"


def test_one_checkpoint_under_two_paths_is_one_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert canonical_spec("ppo:x.pt") == canonical_spec("ppo:./x.pt") == canonical_spec(f"ppo:{tmp_path}/x.pt")
    assert canonical_spec("ppo:x.pt") != canonical_spec("ppo:y.pt")
