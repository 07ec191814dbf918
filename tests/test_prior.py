"""The greedy prior: the one-ply values it feeds the network, the residual policy built on it, and
a self-play run and checkpoint with it."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from patchwork_env.core import rules
from patchwork_env.core.state import new_game
from patchwork_env.envs.vector import VectorGames
from patchwork_env.players.greedy import GreedyAgent
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, NUM_FEATURES, feature_weights, greedy_prior, score_actions
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet, prior_for
from patchwork_env.players.policy import NetworkAgent, load_network_agent
from train import selfplay
from train.cli import from_dict
from train.config import ConfigError, SB3Config, SelfPlayConfig

PRIOR_NET = NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8, prior_scale=2.0)


@pytest.fixture(scope="module")
def positions() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """States, masks and observations of 40 games after 0..39 random moves (leather included)."""
    games = VectorGames(40, seed=11)
    rng = np.random.default_rng(1)
    states, masks, obs = [], [], []
    for t in range(40):
        states.append(games.states[t].copy())
        masks.append(games.masks[t].copy())
        obs.append(games.observe()[t].copy())
        games.step(np.array([rng.choice(np.flatnonzero(m)) for m in games.masks]))
    return np.stack(states), np.stack(masks), np.stack(obs)


def test_prior_is_greedys_value_relative_to_the_best(positions: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    states, masks, _ = positions
    terms = greedy_prior(states, masks)
    assert terms.shape == (len(states), rules.NUM_ACTIONS, NUM_FEATURES) and terms.dtype == np.float32
    assert np.all(terms[~masks] == 0.0)
    prior = terms @ feature_weights(DEFAULT_WEIGHTS).astype(np.float32)
    for i in range(len(states)):
        legal = np.flatnonzero(masks[i])
        values = np.empty(len(legal))
        score_actions(states[i], legal, len(legal), DEFAULT_WEIGHTS, values)
        np.testing.assert_allclose(prior[i, legal], values - values.max(), atol=1e-4)
        assert np.all(prior[i, ~masks[i]] == 0.0)
        # greedy plays one of the actions whose prior is 0
        greedy_choice = GreedyAgent().act_batch(states[i : i + 1], masks[i : i + 1], np.random.default_rng(i))[0]
        assert prior[i, greedy_choice] == pytest.approx(0.0, abs=1e-4)
    with pytest.raises(ValueError, match="masks must have shape"):
        greedy_prior(states, masks[:, :100])
    with pytest.raises(ValueError, match="states must have shape"):
        greedy_prior(states[:, :50], masks)
    with pytest.raises(ValueError, match="weights must have 6 entries"):
        greedy_prior(states, masks, np.ones(3))


def test_zero_residual_policy_is_the_scaled_prior(positions: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    states, masks, obs = positions
    net = PatchworkNet(PRIOR_NET)
    with torch.no_grad():
        for layer in (net.place_out, net.slot_logit, net.leather, net.advance[-1]):
            layer.weight.zero_()
            layer.bias.zero_()
    prior = prior_for(net, states, masks)
    assert prior is not None
    logits, _ = net(torch.from_numpy(obs), torch.from_numpy(masks), prior)
    m = torch.from_numpy(masks)
    value = prior @ torch.tensor(feature_weights(DEFAULT_WEIGHTS), dtype=torch.float32)
    torch.testing.assert_close(logits[m], 2.0 * value[m], atol=1e-3, rtol=0)
    # with a trained residual the policy moves away from the prior
    with torch.no_grad():
        net.advance[-1].bias.fill_(5.0)
    moved, _ = net(torch.from_numpy(obs), torch.from_numpy(masks), prior)
    assert torch.allclose(moved[:, rules.ADVANCE], logits[:, rules.ADVANCE] + 5.0)


KIND_OPTIONS = {  # option: (its value, the new parameters, the layer whose output is zero at start)
    "group_scale": (True, {"group_scale.weight", "group_scale.bias"}, "group_scale"),
    "kind_weights": (True, {"kind_weights.weight", "kind_weights.bias"}, "kind_weights"),
    "kind_hidden": (8, {f"slot_mlp.{i}.{p}" for i in (0, 2) for p in ("weight", "bias")}, "slot_mlp.2"),
}


@pytest.mark.parametrize("option", sorted(KIND_OPTIONS))
def test_kind_options_start_at_the_prior_and_leave_placements_alone(
    positions: tuple[np.ndarray, np.ndarray, np.ndarray], option: str
) -> None:
    states, masks, obs = positions
    value, new_keys, layer_name = KIND_OPTIONS[option]
    torch.manual_seed(3)
    plain = PatchworkNet(PRIOR_NET)
    scaled = PatchworkNet(dataclasses.replace(PRIOR_NET, **{option: value}))
    scaled.load_state_dict(plain.state_dict(), strict=False)  # the same weights, plus the new layer
    layer = scaled.get_submodule(layer_name)
    assert isinstance(layer, torch.nn.Linear)
    assert set(scaled.state_dict()) - set(plain.state_dict()) == new_keys
    o, m, prior = torch.from_numpy(obs), torch.from_numpy(masks), prior_for(plain, states, masks)
    assert prior is not None
    with torch.no_grad():
        before, _ = plain(o, m, prior)
        torch.testing.assert_close(scaled(o, m, prior)[0], before)  # zero at start: the same policy
        layer.bias.copy_(torch.linspace(-2.0, 1.0, len(layer.bias)))  # a different say in the kind of move
        after, _ = scaled(o, m, prior)
    kinds = {"slot 0": slice(0, rules.SLOT_ACTIONS), "leather": slice(rules.LEATHER_BASE, rules.ADVANCE)}
    for name, part in kinds.items():  # where a patch goes, given its kind: unchanged
        rows = m[:, part].sum(1) > 1
        torch.testing.assert_close(
            torch.log_softmax(after[rows][:, part], 1)[m[rows][:, part]],
            torch.log_softmax(before[rows][:, part], 1)[m[rows][:, part]],
            atol=1e-4,
            rtol=0,
            msg=name,
        )
    # which kind: advance against the market patches moves
    adv = m[:, rules.ADVANCE] & m[:, : rules.LEATHER_BASE].any(1)
    assert adv.sum() > 5
    gap_before = before[adv, rules.ADVANCE] - torch.logsumexp(before[adv, : rules.LEATHER_BASE], 1)
    gap_after = after[adv, rules.ADVANCE] - torch.logsumexp(after[adv, : rules.LEATHER_BASE], 1)
    assert (gap_after - gap_before).abs().max() > 0.5


def test_prior_argument_is_required_exactly_when_the_net_has_one(
    positions: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    states, masks, obs = positions
    o, m = torch.from_numpy(obs[:2]), torch.from_numpy(masks[:2])
    with pytest.raises(ValueError, match="pass prior="):
        PatchworkNet(PRIOR_NET)(o, m)
    plain = PatchworkNet(NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8))
    assert prior_for(plain, states[:2], masks[:2]) is None
    with pytest.raises(ValueError, match="no greedy prior"):
        plain(o, m, torch.zeros(2, rules.NUM_ACTIONS, NUM_FEATURES))
    with pytest.raises(ValueError, match="prior must have shape"):
        PatchworkNet(PRIOR_NET)(o, m, torch.zeros(2, 5))
    for bad in (-1.0, 5000.0, True):
        with pytest.raises(ValueError, match=r"prior_scale must be (a number|in \[0, 1000\])"):
            NetConfig(prior_scale=bad).validate()
    for option in ("group_scale", "kind_weights"):  # options of the prior: meaningless without it
        with pytest.raises(ValueError, match=f"net.{option} needs prior_scale > 0"):
            NetConfig(**{option: True}).validate()
    for bad_hidden in (-1, 2.5, True, 10**9):
        with pytest.raises(ValueError, match=r"net.kind_hidden must be (an integer|in \[0, 4096\])"):
            NetConfig(kind_hidden=bad_hidden).validate()  # type: ignore[arg-type]


def test_prior_agent_plays_legally_pickles_and_round_trips(
    positions: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    states, masks, _ = positions
    agent = NetworkAgent(PatchworkNet(PRIOR_NET))
    acts = agent.act_batch(states, masks, np.random.default_rng(0))
    assert all(masks[i, a] for i, a in enumerate(acts))
    clone = pickle.loads(pickle.dumps(agent))
    assert clone.net.uses_prior and np.array_equal(clone.act_batch(states, masks, np.random.default_rng(0)), acts)
    state = new_game(3)
    assert state.is_legal(clone.act(state, np.random.default_rng(0)))


def test_selfplay_with_prior_trains_checkpoints_and_loads(tmp_path: Path) -> None:
    cfg = from_dict(
        SelfPlayConfig,
        {
            "net": {"channels": 8, "blocks": 1, "hidden": 16, "head_features": 4, "head_hidden": 8, "prior_scale": 1.5},
            "run_dir": str(tmp_path / "prior"),
            "num_games": 8,
            "rollout_steps": 24,
            "total_updates": 2,
            "num_minibatches": 2,
            "epochs": 1,
            "snapshot_every": 1,
            "eval_every": 0,
            "eval_opponents": {"random": 1},
            "final_eval_pairs": 0,
            "progress": False,
            "latest_prob": 0.3,
            "greedy_weight": 0.5,
        },
        "test",
    )
    before = PatchworkNet(cfg.net).prior_weights.bias.detach().clone()
    summary = selfplay.main(cfg)
    agent = load_network_agent(str(Path(summary["run_folder"]) / "checkpoints" / "latest.pt"))
    assert agent.net.uses_prior and agent.net.config.prior_scale == 1.5
    assert not torch.equal(agent.net.prior_weights.bias, before)  # the weights are learned
    state = new_game(4)
    assert state.is_legal(agent.act(state, np.random.default_rng(0)))


def test_sb3_trainer_rejects_the_prior() -> None:
    with pytest.raises(ConfigError, match=r"net\.prior_scale must be 0 for MaskablePPO"):
        from_dict(SB3Config, {"net": {"prior_scale": 1.0}}, "test").validate()
    for bad in (-2.0, 5000.0):
        with pytest.raises(ConfigError, match=r"prior_scale must be in \[0, 1000\]"):
            from_dict(SelfPlayConfig, {"net": {"prior_scale": bad}}, "test").validate()
