"""``PatchworkVectorEnv``: the learner's own transitions, batched opponents, SAME_STEP autoreset."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from gymnasium.vector import AutoresetMode

from patchwork_env import IllegalActionError
from patchwork_env.core import rules
from patchwork_env.core.state import GameState
from patchwork_env.envs import observation
from patchwork_env.envs.aec import SCORE_REWARD_SCALE, final_rewards
from patchwork_env.envs.observation import observe
from patchwork_env.envs.vector_env import PatchworkVectorEnv
from patchwork_env.players.random import RandomAgent


def random_legal(masks: npt.NDArray[np.bool_], rng: np.random.Generator) -> npt.NDArray[np.int64]:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks], dtype=np.int64)


class RecordingOpponent:
    """A batch opponent playing uniformly at random that remembers its move in every position."""

    name = "recorder"

    def __init__(self) -> None:
        self.moves: dict[bytes, int] = {}
        self.calls = 0

    def act(self, state: GameState, rng: np.random.Generator) -> int:  # pragma: no cover - act_batch is used
        raise AssertionError("act_batch should be preferred")

    def act_batch(
        self, states: npt.NDArray[np.int64], masks: npt.NDArray[np.bool_], rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        self.calls += 1
        actions = random_legal(masks, rng)
        for s, a in zip(states, actions, strict=True):
            self.moves[s.tobytes()] = int(a)
        return actions


class PerGameOpponent:
    """Only ``act``: the per-game fallback."""

    name = "per-game"

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        return RandomAgent().act(state, rng)


def check_learner_view(envs: PatchworkVectorEnv, obs: npt.NDArray[np.float32], infos: dict[str, Any]) -> None:
    """Every game waits for its learner; obs and masks are the learner's."""
    masks = envs.action_masks()
    for i in range(envs.num_envs):
        game = envs.game(i)
        seat = int(infos["seat"][i])
        assert not game.is_terminal and game.current_player == seat
        assert np.array_equal(obs[i], observe(game, seat))
        assert np.array_equal(masks[i], game.legal_action_mask())
    assert np.array_equal(infos["action_mask"], masks.astype(np.int8))
    assert envs.observation_space.contains(obs)


def test_spaces_and_metadata() -> None:
    envs = PatchworkVectorEnv(3, seed=0)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert envs.single_observation_space.shape == (observation.OBS_DIM,)
    assert envs.observation_space.shape == (3, observation.OBS_DIM)
    assert envs.action_space.shape == (3,)
    assert int(envs.single_action_space.n) == rules.NUM_ACTIONS  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(np.zeros(3, dtype=np.int64))


def test_episodes_against_a_recorded_batch_opponent_replay_exactly() -> None:
    """Replay every game through GameState: the learner's action, then the opponent's recorded
    replies; rewards, final observations and results must match the replayed game."""
    opponent = RecordingOpponent()
    envs = PatchworkVectorEnv(6, opponent=opponent, seed=3, reward="win")
    obs, infos = envs.reset(seed=3)
    check_learner_view(envs, obs, infos)
    rng = np.random.default_rng(0)
    ended = 0
    while ended < 12:
        before = [envs.game(i) for i in range(envs.num_envs)]
        seats = infos["seat"].copy()
        actions = random_legal(envs.action_masks(), rng)
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        assert not truncated.any()
        for i in range(envs.num_envs):
            game = before[i].step(int(actions[i]))
            while not game.is_terminal and game.current_player != seats[i]:
                game = game.step(opponent.moves[game.array().tobytes()])
            if terminated[i]:
                ended += 1
                assert game.is_terminal
                assert rewards[i] == final_rewards(game, "win")[seats[i]]
                assert np.array_equal(infos["final_obs"][i], observe(game, int(seats[i])))
                final = infos["final_info"]
                assert final["_won"][i] and final["won"][i] == (game.winner == seats[i])
                assert (final["score"][i], final["opponent_score"][i]) == (
                    game.scores()[seats[i]],
                    game.scores()[1 - seats[i]],
                )
            else:
                assert rewards[i] == 0.0
                assert envs.game(i) == game
                assert infos.get("final_obs") is None or infos["final_obs"][i] is None
        check_learner_view(envs, obs, infos)
    assert opponent.calls > 0


def test_random_opponent_kernel_gives_the_learner_its_own_view_and_results() -> None:
    envs = PatchworkVectorEnv(16, opponent="random", reward="score", seed=1)
    obs, infos = envs.reset(seed=1)
    rng = np.random.default_rng(1)
    seen_seats = set()
    ended = 0
    for _ in range(120):
        check_learner_view(envs, obs, infos)
        seen_seats.update(infos["seat"].tolist())
        obs, rewards, terminated, _, infos = envs.step(random_legal(envs.action_masks(), rng))
        if terminated.any():
            final = infos["final_info"]
            margin = (final["score"] - final["opponent_score"]) / SCORE_REWARD_SCALE
            expected = np.clip(margin, -1, 1)
            assert np.allclose(rewards[terminated], expected[terminated])
            assert (rewards[~terminated] == 0).all()
            assert not final["_won"][~terminated].any()
            ended += int(terminated.sum())
    assert ended > 20
    assert seen_seats == {0, 1}


@pytest.mark.parametrize("opponent", ["random", RandomAgent(), PerGameOpponent()])
def test_seeded_runs_repeat_and_fixed_seats_hold(opponent: object) -> None:
    def run() -> list[npt.NDArray[Any]]:
        envs = PatchworkVectorEnv(4, opponent=opponent, seat=1, seed=5)  # type: ignore[arg-type]
        obs, infos = envs.reset(seed=5)
        out = [obs]
        rng = np.random.default_rng(2)
        for _ in range(60):
            assert (infos["seat"] == 1).all()
            obs, rewards, _, _, infos = envs.step(random_legal(envs.action_masks(), rng))
            out += [obs, rewards]
        return out

    first, second = run(), run()
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))


def test_reset_without_seed_continues_the_streams() -> None:
    envs = PatchworkVectorEnv(4, seed=8)
    a, _ = envs.reset(seed=8)
    b, _ = envs.reset()
    c, _ = envs.reset(seed=8)
    assert np.array_equal(a, c)
    assert not np.array_equal(a, b)


def test_illegal_action_raises_and_changes_nothing() -> None:
    envs = PatchworkVectorEnv(3, seed=0, illegal_action="raise")
    envs.reset(seed=0)
    states = envs.games.states.copy()
    actions = random_legal(envs.action_masks(), np.random.default_rng(0))
    actions[2] = int(np.flatnonzero(~envs.action_masks()[2])[0])
    with pytest.raises(IllegalActionError, match="game 2"):
        envs.step(actions)
    assert np.array_equal(states, envs.games.states)
    with pytest.raises(ValueError, match="shape"):
        envs.step(actions[:2])


def test_illegal_action_loses_in_lose_mode() -> None:
    envs = PatchworkVectorEnv(3, seed=0, illegal_action="lose", opponent=RandomAgent())
    envs.reset(seed=0)
    actions = random_legal(envs.action_masks(), np.random.default_rng(0))
    actions[1] = -5
    obs, rewards, terminated, _, infos = envs.step(actions)
    assert terminated[1] and rewards[1] == -1.0
    final = infos["final_info"]
    assert final["illegal_action"][1] and not final["won"][1]
    assert not final["illegal_action"][[0, 2]].any()
    check_learner_view(envs, obs, infos)  # game 1 is already in its next episode


def test_opponent_that_plays_illegally_is_named() -> None:
    class Cheater:
        name = "cheater"

        def act(self, state: GameState, rng: np.random.Generator) -> int:
            return rules.NUM_ACTIONS - 2  # a leather placement: never legal without a pending patch

    envs = PatchworkVectorEnv(2, opponent=Cheater(), seat=1, seed=0)
    with pytest.raises(IllegalActionError, match="cheater"):  # at the opponent's first turn
        envs.reset(seed=0)
        for _ in range(10):
            envs.step(np.full(2, rules.ADVANCE))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="seat"):
        PatchworkVectorEnv(2, seat=2)
    with pytest.raises(ValueError, match="reward"):
        PatchworkVectorEnv(2, reward="points")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="illegal_action"):
        PatchworkVectorEnv(2, illegal_action="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"cannot take \['circle'\]"):
        PatchworkVectorEnv(2).reset(options={"circle": [*range(1, 33), 0]})
    with pytest.raises(ValueError, match="option 'seat' must be the integer 0 or 1"):
        PatchworkVectorEnv(2).reset(options={"seat": 2})


def test_reset_option_seat_is_this_episodes_seat() -> None:
    envs = PatchworkVectorEnv(4, seed=0, seat=0)
    _, infos = envs.reset(seed=0, options={"seat": 1})
    assert (infos["seat"] == 1).all()
    _, infos = envs.reset(seed=0)
    assert (infos["seat"] == 0).all()


def test_parallel_env_matches_serial_env() -> None:
    serial = PatchworkVectorEnv(96, seed=4, parallel=False)
    parallel = PatchworkVectorEnv(96, seed=4, parallel=True)
    a, _ = serial.reset(seed=4)
    b, _ = parallel.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(40):
        assert np.array_equal(a, b)
        actions = random_legal(serial.action_masks(), rng)
        a, ra, ta, _, _ = serial.step(actions)
        b, rb, tb, _, _ = parallel.step(actions)
        assert np.array_equal(ra, rb) and np.array_equal(ta, tb)


def test_record_episode_statistics_wrapper_counts_episodes() -> None:
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    envs = RecordEpisodeStatistics(PatchworkVectorEnv(8, seed=0))
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(80):
        _, _, terminated, _, infos = envs.step(random_legal(envs.unwrapped.action_masks(), rng))  # type: ignore[attr-defined]
        if terminated.any():
            assert (infos["_episode"] == terminated).all()
            assert (np.abs(infos["episode"]["r"][terminated]) == 1).all()
            episodes += int(terminated.sum())
    assert episodes > 0


def test_sb3_vec_env_trains_maskable_ppo() -> None:
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from agents.sb3 import SB3VecEnv

    venv = SB3VecEnv(num_envs=4, opponent="random", seed=0)
    venv.seed(3)
    obs = venv.reset()
    assert obs.shape == (4, observation.OBS_DIM)
    masks = np.stack(venv.env_method("action_masks"))
    assert masks.shape == (4, rules.NUM_ACTIONS) and venv.has_attr("action_masks")
    rng = np.random.default_rng(0)
    done_seen = False
    for _ in range(60):
        obs, rewards, dones, infos = venv.step(random_legal(venv.action_masks(), rng))
        assert len(infos) == 4
        for i in np.flatnonzero(dones):
            done_seen = True
            assert infos[i]["terminal_observation"].shape == (observation.OBS_DIM,)
            assert rewards[i] in (-1.0, 1.0)
    assert done_seen
    model = MaskablePPO("MlpPolicy", VecMonitor(venv), n_steps=16, batch_size=32, n_epochs=1, seed=0)
    model.learn(64)
    assert model.num_timesteps >= 64
