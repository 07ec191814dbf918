"""The environments through outside RL libraries, used as their documentation says: TorchRL's
``PettingZooWrapper(use_mask=True)``, Tianshou's ``PettingZooEnv`` with a short masked DQN
training, SuperSuit's AEC wrappers that apply to Dict observations, and sb3-contrib's
``ActionMasker`` around ``gymnasium.make``. The libraries come with the ``interop`` extra
(``make setup``); a missing one skips its test with the reason. PettingZoo's own test utilities
(``api_test``, ``parallel_api_test``, ``seed_test``, ``render_test``) run in ``test_aec.py``."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test

import patchwork_env
from patchwork_env.core import rules


# --- TorchRL ------------------------------------------------------------------------------------
def test_torchrl_pettingzoo_wrapper_with_masks() -> None:
    pytest.importorskip("torchrl", reason="TorchRL is in the interop extra")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "tested with PettingZoo 1.24.3"
        env = PettingZooWrapper(env=patchwork_env.raw_env(), use_mask=True, categorical_actions=True, seed=0)
    assert set(env.group_map) == {"player_0", "player_1"}
    check_env_specs(env, seed=0)
    td = env.rollout(400)  # random actions drawn from the masked action spec
    game = env._env.game_state  # the raw env raises on an illegal action: every one was legal
    assert game.is_terminal and td.batch_size[0] == game.ply
    rewards = [float(td["next", p, "reward"][-1].sum()) for p in ("player_0", "player_1")]
    assert sorted(rewards) == [-1.0, 1.0]
    assert rewards[game.winner or 0] == 1.0


# --- Tianshou -----------------------------------------------------------------------------------
def test_tianshou_masked_dqn_trains_on_the_aec_env() -> None:
    pytest.importorskip("tianshou", reason="Tianshou is in the interop extra")
    import torch
    from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    def make() -> PettingZooEnv:
        return PettingZooEnv(patchwork_env.raw_env())  # raw: an illegal (unmasked) action would raise

    torch.manual_seed(0)
    env = make()
    net = Net(state_shape=env.observation_space["observation"].shape, action_shape=rules.NUM_ACTIONS, hidden_sizes=[16])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.2, eps_inference=0.0)
    learner = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=1.0, target_update_freq=10)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    marl = MultiAgentOffPolicyAlgorithm(algorithms=[learner, opponent], env=env)
    train_envs, test_envs = DummyVectorEnv([make, make]), DummyVectorEnv([make])
    train_envs.seed(0)
    test_envs.seed(1)
    collector = Collector[CollectStats](marl, train_envs, VectorReplayBuffer(1000, 2), exploration_noise=True)
    collector.reset()
    collector.collect(n_step=300)  # long enough for finished games in the buffer
    result = marl.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            test_collector=Collector[CollectStats](marl, test_envs),
            max_epochs=1,
            epoch_num_steps=60,
            collection_step_num_env_steps=20,
            test_step_num_episodes=1,
            batch_size=8,
            update_step_num_gradient_steps_per_sample=0.1,
            test_in_training=False,
            show_progress=False,
            multi_agent_return_reduction=lambda rews: rews[:, 0],
        )
    )
    assert result.update_step > 0 and result.train_step >= 60
    buf = collector.buffer
    ended = buf.terminated[: len(buf)]
    assert ended.any()
    winners = np.asarray(buf.info["winner"][: len(buf)])[ended]  # numeric: stored without NaNs
    assert winners.dtype.kind == "i" and set(winners.tolist()) <= {0, 1}


# --- SuperSuit ----------------------------------------------------------------------------------
def _supersuit_wrappers() -> dict[str, Callable[[Any], Any]]:
    ss = pytest.importorskip("supersuit", reason="SuperSuit is in the interop extra")
    return {
        "delay_observations_v0": lambda e: ss.delay_observations_v0(e, 2),  # zeros first: 0 is in the space
        "clip_reward_v0": lambda e: ss.clip_reward_v0(e, -1, 1),
        "sticky_actions_v0": lambda e: ss.sticky_actions_v0(e, 0.25),
        "frame_skip_v0": lambda e: ss.frame_skip_v0(e, 2),
        "pad_action_space_v0": ss.pad_action_space_v0,
        "nan_noop_v0": lambda e: ss.nan_noop_v0(e, rules.ADVANCE),
        "nan_zeros_v0": ss.nan_zeros_v0,
        "nan_random_v0": ss.nan_random_v0,
    }


@pytest.mark.parametrize(
    "name",
    ["delay_observations_v0", "clip_reward_v0", "sticky_actions_v0", "frame_skip_v0", "pad_action_space_v0",
     "nan_noop_v0", "nan_zeros_v0", "nan_random_v0"],
)  # fmt: skip
def test_supersuit_aec_wrappers_pass_api_test(name: str) -> None:
    """The SuperSuit wrappers for AEC envs that do not need a Box observation (dtype, flatten,
    normalize, frame_stack, max_observation, pad_observations and agent_indicator do)."""
    wrapped = _supersuit_wrappers()[name](patchwork_env.env())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sticky actions repeat masked-out actions: a warned illegal move
        api_test(wrapped, num_cycles=40)


# --- SB3: ActionMasker around gymnasium.make --------------------------------------------------------
def test_action_masker_around_gymnasium_make() -> None:
    pytest.importorskip("sb3_contrib", reason="sb3-contrib is in the train extra")
    import gymnasium
    from sb3_contrib.common.wrappers import ActionMasker

    env = ActionMasker(
        gymnasium.make("patchwork/PatchworkSingleAgent-v0"), lambda e: e.unwrapped.action_masks()
    )  # the documented form: gymnasium.make's wrappers do not forward action_masks()
    env.reset(seed=0)
    mask = env.action_masks()
    assert mask.shape == (rules.NUM_ACTIONS,) and mask.any()
    assert np.array_equal(mask, env.unwrapped.action_masks())
