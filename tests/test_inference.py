"""patchwork_env.players.inference: the search's forward pass gives the reference path's priors
and values (``PatchworkNet.forward`` on ``network.net_inputs``) within float rounding."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
import torch

from agents.az_selfplay import greedy_value_samples
from patchwork_env.envs.observation import observe_movers
from patchwork_env.evaluation.arena import deal
from patchwork_env.players.az_network import PRETRAINED_PATH, NetEvaluator
from patchwork_env.players.checkpoint import load_network
from patchwork_env.players.inference import NetInference, kind_policy_np, log_softmax_np
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import MASK_VALUE, PatchworkNet, net_inputs
from patchwork_env.players.policy import kind_policy

CONFIGS = {
    "no prior": NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8),
    "no geometry, kind mlp": NetConfig(
        channels=8, blocks=2, hidden=16, head_features=4, head_hidden=8, geometry=False, prior_scale=3.0, kind_hidden=6
    ),
    "group scale": NetConfig(
        channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8, prior_scale=2.0, group_scale=True
    ),
}


def _random_positions(games: int, seed: int) -> npt.NDArray[np.int64]:
    """Every unfinished position of random games: ragged quilts, leather placements, both seats."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(games):
        state = deal(seed + g, g % 2)
        while not state.is_terminal:
            rows.append(state.array())
            state = state.step(int(rng.choice(state.legal_actions())))
    return np.stack(rows)


@pytest.fixture(scope="module")
def positions() -> npt.NDArray[np.int64]:
    greedy, _ = greedy_value_samples(3, seed=4, temp=0.5, margin_weight=0.0)
    return np.concatenate([greedy, _random_positions(3, 7)])


def _nets() -> dict[str, PatchworkNet]:
    torch.manual_seed(0)
    nets = {name: PatchworkNet(cfg) for name, cfg in CONFIGS.items()}
    for net in nets.values():  # away from the initialisation's zeros, so every head counts
        with torch.no_grad():
            for p in net.parameters():
                p.add_(0.05 * torch.randn_like(p))
    return {"pretrained": load_network(PRETRAINED_PATH), **nets}


def _reference(net: PatchworkNet, states: npt.NDArray[np.int64]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obs, masks, prior = net_inputs(net, states)
    with torch.no_grad():
        logits, values = net.eval()(obs, masks, prior)
    return masks.numpy(), logits.numpy(), values.numpy()


@pytest.mark.parametrize("name", ["pretrained", *CONFIGS])
def test_logits_and_values_equal_the_reference_path(name: str, positions: npt.NDArray[np.int64]) -> None:
    net = _nets()[name]
    fast = NetInference(net)
    assert len(positions) > 200
    for batch in (positions[:1], positions[1:2], positions[2:40], positions):
        ref_masks, ref_logits, ref_values = _reference(net, batch)
        masks, logits, values = fast(batch)
        assert np.array_equal(masks, ref_masks)
        assert np.all(logits[~masks] == MASK_VALUE)
        np.testing.assert_allclose(logits[masks], ref_logits[masks], rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(values, ref_values, rtol=1e-5, atol=1e-5)
    one = [fast(positions[i : i + 1])[1][0] for i in range(0, len(positions), 7)]  # batch 1, every 7th
    np.testing.assert_allclose(np.stack(one), fast(positions[::7])[1], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", ["pretrained", "no prior"])
def test_values_alone_equal_the_reference_path(name: str, positions: npt.NDArray[np.int64]) -> None:
    net = _nets()[name]
    obs = torch.from_numpy(observe_movers(positions))
    with torch.no_grad():
        expected = net.values(obs).numpy()
    fast = NetInference(net)
    np.testing.assert_allclose(fast.values(positions), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fast.values(positions[5:6]), expected[5:6], rtol=1e-5, atol=1e-5)
    evaluator = NetEvaluator(net, rollouts=2, mix=0.5)
    reference = NetEvaluator(net, rollouts=2, mix=0.5, fast=False)
    evaluator.seed(3)
    reference.seed(3)
    np.testing.assert_allclose(evaluator.values(positions[:30]), reference.values(positions[:30]), atol=1e-5)


def test_kind_policy_and_log_softmax_equal_the_torch_ones(positions: npt.NDArray[np.int64]) -> None:
    net = load_network(PRETRAINED_PATH)
    masks, logits, _ = NetInference(net)(positions)
    chosen_ref, logp_ref = kind_policy(torch.from_numpy(logits), torch.from_numpy(masks))
    chosen, logp = kind_policy_np(logits, masks)
    assert np.array_equal(chosen, chosen_ref.numpy())
    np.testing.assert_allclose(logp[chosen], logp_ref.numpy()[chosen], rtol=1e-5, atol=1e-5)
    assert np.all(logp[~chosen] == MASK_VALUE)
    full_ref = torch.log_softmax(torch.from_numpy(logits), -1).numpy()
    np.testing.assert_allclose(log_softmax_np(logits)[masks], full_ref[masks], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kinds", [True, False])
def test_the_evaluator_gives_the_same_priors_and_values_fast_or_not(
    kinds: bool, positions: npt.NDArray[np.int64]
) -> None:
    net = load_network(PRETRAINED_PATH)
    batch = positions[::3]
    masks_f, logp_f, values_f = NetEvaluator(net, kinds=kinds)(batch)
    masks_r, logp_r, values_r = NetEvaluator(net, kinds=kinds, fast=False)(batch)
    assert np.array_equal(masks_f, masks_r)
    np.testing.assert_allclose(logp_f[masks_f], logp_r[masks_r], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(values_f, values_r, rtol=1e-5, atol=1e-5)


def test_weights_changed_in_place_are_picked_up(positions: npt.NDArray[np.int64]) -> None:
    """A network trained between calls (an optimizer step, ``load_state_dict``) is evaluated with
    its current weights."""
    torch.manual_seed(2)
    net = PatchworkNet(CONFIGS["group scale"])
    fast = NetInference(net)
    batch = positions[:20]
    before = fast(batch)[1]
    optimizer = torch.optim.SGD(net.parameters(), lr=1e-2)
    obs, masks, prior = net_inputs(net, batch)
    logits, values = net(obs, masks, prior)
    (torch.log_softmax(logits, -1)[masks].mean() + values.mean()).backward()  # type: ignore[no-untyped-call]
    optimizer.step()
    legal = masks.numpy()
    after = fast(batch)[1]
    assert not np.allclose(after[legal], before[legal])
    np.testing.assert_allclose(after[legal], _reference(net, batch)[1][legal], rtol=1e-5, atol=1e-4)
    other = PatchworkNet(CONFIGS["group scale"])
    net.load_state_dict(other.state_dict())
    np.testing.assert_allclose(fast(batch)[1][legal], _reference(other, batch)[1][legal], rtol=1e-5, atol=1e-4)
