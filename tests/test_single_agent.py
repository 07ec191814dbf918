"""SingleAgentEnv: the learner sees only its own turns and rewards, against every opponent kind."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import patchwork_env
from patchwork_env import GameState, IllegalActionError, SingleAgentEnv
from patchwork_env.core import rules
from patchwork_env.envs import observation
from patchwork_env.envs.aec import final_rewards
from patchwork_env.envs.observation import SCALAR_INDEX
from patchwork_env.players.random import RandomAgent

TO_MOVE = observation.OBS_PLANES_END + SCALAR_INDEX["to_move"]


class RecordingAgent:
    """Plays the first legal action and records every position it was asked about."""

    name = "first-legal"

    def __init__(self) -> None:
        self.seen: list[GameState] = []

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        self.seen.append(state)
        return int(state.legal_actions()[0])


def last_legal(state: GameState) -> int:
    return int(state.legal_actions()[-1])


def run_episode(env: SingleAgentEnv, seed: int, rng: np.random.Generator) -> dict[str, Any]:
    obs, info = env.reset(seed=seed)
    rewards = []
    steps = 0
    while True:
        assert obs[TO_MOVE] == 1.0, "the learner is given a position where it is not to move"
        assert env.game_state.current_player == env.seat
        np.testing.assert_array_equal(info["action_mask"].astype(bool), env.action_masks())
        legal = np.flatnonzero(info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(int(legal[int(rng.random() * len(legal))]))
        steps += 1
        rewards.append(reward)
        assert not truncated
        if terminated:
            break
    assert all(r == 0.0 for r in rewards[:-1])
    assert not info["action_mask"].any() and not env.action_masks().any()
    return {"reward": rewards[-1], "steps": steps, "info": info, "game": env.game_state}


@pytest.mark.parametrize(
    "opponent",
    ["random", RandomAgent(), last_legal, "greedy"],
    ids=["name", "agent", "callable", "spec"],
)
def test_learner_sees_only_its_own_turns(opponent: Any) -> None:
    if opponent == "greedy":
        pytest.importorskip("patchwork_env.players.registry", reason="the agents package builds spec strings")
    env = SingleAgentEnv(opponent=opponent, reward="win")
    rng = np.random.default_rng(0)
    seats = set()
    for seed in range(6):
        out = run_episode(env, seed, rng)
        game = out["game"]
        assert game.is_terminal
        assert out["reward"] == final_rewards(game, "win")[env.seat]
        assert out["info"]["won"] == (game.winner == env.seat)
        assert out["info"]["score"] == game.scores()[env.seat]
        assert out["steps"] < game.ply  # the opponent's decisions happened inside step / reset
        seats.add(env.seat)
    assert seats == {0, 1}  # seat=None draws the seat per episode


def test_opponent_moves_happen_inside_step_and_only_on_its_turns() -> None:
    opponent = RecordingAgent()
    env = SingleAgentEnv(opponent=opponent, seat=1)
    rng = np.random.default_rng(1)
    out = run_episode(env, 3, rng)
    assert opponent.seen, "the opponent never moved"
    assert all(s.current_player == 0 and not s.is_terminal for s in opponent.seen)
    assert out["steps"] + len(opponent.seen) == out["game"].ply


def test_the_learner_gets_its_loss_when_the_opponent_ends_the_game() -> None:
    env = SingleAgentEnv(opponent="random", seat=0)
    rng = np.random.default_rng(2)
    losses = 0
    for seed in range(40):
        out = run_episode(env, seed, rng)
        game = out["game"]
        if game.first_to_finish == 0:  # the learner sat on 53 while the opponent made the last moves
            assert out["reward"] == (1.0 if game.winner == 0 else -1.0)
            losses += out["reward"] == -1.0
    assert losses > 0


@pytest.mark.parametrize("seat", [0, 1])
def test_score_reward(seat: int) -> None:
    env = SingleAgentEnv(reward="score", seat=seat)
    out = run_episode(env, 8, np.random.default_rng(8))
    mine, theirs = out["info"]["score"], out["info"]["opponent_score"]
    assert out["reward"] == pytest.approx(np.clip((mine - theirs) / 100, -1, 1))


def test_seeded_episodes_repeat_exactly() -> None:
    def trace(env: SingleAgentEnv) -> list[Any]:
        rng = np.random.default_rng(0)
        obs, info = env.reset(seed=42)
        out: list[Any] = [env.seat, obs.tobytes()]
        while True:
            legal = np.flatnonzero(info["action_mask"])
            obs, reward, terminated, _, info = env.step(int(legal[int(rng.random() * len(legal))]))
            out += [obs.tobytes(), reward]
            if terminated:
                return out

    assert trace(SingleAgentEnv()) == trace(SingleAgentEnv())


def test_deepcopy_continues_the_episode() -> None:
    env = SingleAgentEnv(seat=0)
    _, info = env.reset(seed=9)
    for _ in range(5):
        _, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
        assert not terminated
    clone = copy.deepcopy(env)

    def rest(e: SingleAgentEnv, info: dict[str, Any]) -> list[Any]:
        out = []
        while True:
            obs, reward, terminated, _, info = e.step(int(np.flatnonzero(info["action_mask"])[0]))
            out.append((obs.tobytes(), reward))
            if terminated:
                return out

    assert rest(clone, info) == rest(env, info)


def test_seat_and_reset_options() -> None:
    env = SingleAgentEnv(seat=1)
    circle = [*range(1, 33), 0]
    _obs, info = env.reset(seed=0, options={"circle": circle, "first_player": 1})
    assert env.seat == 1 and info["seat"] == 1
    assert env.game_state.ply == 0  # the learner starts: the opponent has not moved
    assert env.game_state.circle == tuple(circle)
    env.reset(seed=0, options={"seat": 0, "first_player": 1})
    assert env.seat == 0 and env.game_state.ply >= 1  # the opponent moved first, inside reset
    with pytest.warns(UserWarning, match=r"unknown reset option\(s\) \['sea'\].*allowed keys"):
        env.reset(options={"sea": 0})
    with pytest.raises(ValueError, match="option 'seat' must be the integer 0 or 1"):
        env.reset(options={"seat": 3})


def test_illegal_action_lose_ends_the_episode() -> None:
    env = SingleAgentEnv()
    _, info = env.reset(seed=5)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    before = env.game_state
    _obs, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["illegal_action"] is True and f"action {illegal}" in info["reason"]
    assert env.game_state == before
    assert not env.action_masks().any() and not info["action_mask"].any()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(rules.ADVANCE)


def test_illegal_action_raise_keeps_the_position() -> None:
    env = SingleAgentEnv(illegal_action="raise")
    _, info = env.reset(seed=5)
    before = env.game_state
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError, match=f"action {illegal}"):
        env.step(illegal)
    assert env.game_state == before
    env.step(rules.ADVANCE)


def test_an_illegal_opponent_is_reported() -> None:
    env = SingleAgentEnv(opponent=lambda state: 1943, seat=0)
    env.reset(seed=0, options={"first_player": 0})
    with pytest.raises(IllegalActionError, match="the opponent '<lambda>' chose an illegal action"):
        env.step(rules.ADVANCE)


def test_set_opponent() -> None:
    env = SingleAgentEnv(seat=0)
    recorder = RecordingAgent()
    env.set_opponent(recorder)
    env.reset(seed=1, options={"first_player": 0})
    env.step(rules.ADVANCE)
    assert recorder.seen


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"opponent": 3}, TypeError, "opponent must be an agent spec string"),
        ({"opponent": "no-such-agent"}, ValueError, "no-such-agent"),
        ({"seat": 2}, ValueError, "seat must be the integer 0 or 1, or None"),
        ({"illegal_action": "ignore"}, ValueError, "illegal_action must be one of"),
        ({"reward": "margin"}, ValueError, "reward must be one of"),
        ({"leather_layout": "x"}, ValueError, "leather_layout must be one of"),
        ({"render_mode": "svg"}, ValueError, "render_mode must be None or one of"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        SingleAgentEnv(**kwargs)


def test_step_before_reset() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        SingleAgentEnv().step(rules.ADVANCE)


# --- checkers and a learner ------------------------------------------------------------------
def test_gymnasium_check_env() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(SingleAgentEnv())
        check_env(SingleAgentEnv(opponent=last_legal, seat=1, reward="score"))
        # through the registry, so that check_env also renders with every declared mode
        check_env(gymnasium.make(patchwork_env.SINGLE_AGENT_ENV_ID).unwrapped)


def test_sb3_check_env() -> None:
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb3_checker.check_env(SingleAgentEnv(), warn=True)


def test_maskable_ppo_smoke() -> None:
    torch = pytest.importorskip("torch")
    sb3_contrib = pytest.importorskip("sb3_contrib")
    torch.set_num_threads(1)
    env = SingleAgentEnv(opponent="random")
    model = sb3_contrib.MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=512,
        batch_size=128,
        n_epochs=1,
        policy_kwargs={"net_arch": [32]},
        seed=0,
        device="cpu",
    )
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
    obs, info = env.reset(seed=123)
    for _ in range(10):
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        assert info["action_mask"][int(action)] == 1
        obs, _, terminated, _, info = env.step(int(action))
        if terminated:
            obs, info = env.reset()
