"""PatchworkNet's prior logits at the used actions only, its geometry inputs from a compiled
kernel and its channels-last convolutions give the learner the same losses and gradients (within
float rounding) as the formulation they replace (``ReferenceNet``: the greedy prior's logits over
all 2,026 actions, the geometry counts by torch ops, channels-first convolutions)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from agents.az_selfplay import greedy_value_samples
from agents.ppo import PPOSettings, ppo_update
from patchwork_env.core.bitboard import BOARD, CELLS
from patchwork_env.envs import observation
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import MAX_BORDER, MAX_COVER, NUM_BUY, PatchworkNet, legal_entropy, net_inputs

CONFIGS = {
    "quick": NetConfig(blocks=1, head_features=8, prior_scale=6.0),
    "kind weights, group scale, kind mlp": NetConfig(
        channels=8,
        blocks=1,
        hidden=16,
        head_features=4,
        head_hidden=8,
        prior_scale=2.0,
        group_scale=True,
        kind_weights=True,
        kind_hidden=6,
    ),
    "no prior": NetConfig(channels=8, blocks=2, hidden=16, head_features=4, head_hidden=8),
}
NEIGHBOURS = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]).view(1, 1, 3, 3)


class ReferenceNet(PatchworkNet):
    """The dense formulation: prior logits over every action, geometry by torch ops, the
    convolutions in torch's default (channels-first) layout."""

    def __init__(self, config: NetConfig) -> None:
        super().__init__(config)
        self.to(memory_format=torch.contiguous_format)

    def _body(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        emb = self.embed(observation.vector(obs))
        planes = observation.planes(obs).contiguous()
        trunk = self.blocks(F.relu(self.stem(planes) + self.film(emb)[:, :, None, None]))
        assert trunk.is_contiguous()
        return emb, trunk, torch.cat([trunk.mean((2, 3)), trunk.amax((2, 3)), emb], dim=1)

    def _prior_logits(
        self,
        prior: torch.Tensor,
        rows: torch.Tensor,
        acts: torch.Tensor,
        weights: torch.Tensor,
        kind_weights: torch.Tensor | None,
        prior_rows: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        prior = (prior if prior_rows is None else prior[prior_rows]).float()
        full = torch.einsum("bak,bk->ba", prior, weights)
        kind = full if kind_weights is None else torch.einsum("bak,bk->ba", prior, kind_weights)
        return full[rows, acts], kind[rows, acts], full[:, NUM_BUY:], kind[:, -1:]

    def _geometry(
        self, obs: torch.Tensor, rows: torch.Tensor, cells: torch.Tensor, patch: torch.Tensor, orientation: torch.Tensor
    ) -> torch.Tensor:
        b = obs.shape[0]
        border_index = rows.unsqueeze(1) * (CELLS + 2) + cells[:, MAX_COVER:]
        empty = 1.0 - observation.planes(obs)[:, 0].reshape(b, CELLS)  # plane 0: the observer's quilt
        free_neighbours = F.conv2d(empty.view(b, 1, BOARD, BOARD), NEIGHBOURS, padding=1).view(b, CELLS)
        pad = empty.new_zeros(b, 2)  # the padding and off-board rows: never empty
        empty_b = torch.cat([empty, pad], 1).reshape(-1)[border_index]  # (M, 12)
        left = torch.cat([free_neighbours, pad], 1).reshape(-1)[border_index] - self.border_touching[patch, orientation]
        isolated = (empty_b * (left == 0)).sum(1)
        narrow = (empty_b * (left == 1)).sum(1)
        contact = self.border_size[patch, orientation] - empty_b.sum(1)
        return torch.stack([isolated / 4.0, narrow / 4.0, contact / MAX_BORDER], dim=1)


@pytest.fixture(scope="module")
def batch() -> dict[str, torch.Tensor]:
    """A PPO batch of 120 decisions of greedy games (random actions, advantages and returns)."""
    states, _ = greedy_value_samples(2, seed=3, temp=1.0, margin_weight=0.0)
    states = states[:120]
    net = PatchworkNet(CONFIGS["quick"])
    obs, masks, prior = net_inputs(net, states)
    assert prior is not None
    gen = torch.Generator().manual_seed(0)
    actions = torch.multinomial(masks.float(), 1, generator=gen).squeeze(1)
    n = len(states)
    return {
        "obs": obs,
        "masks": masks,
        "prior": prior.half(),  # as the rollout stores it
        "actions": actions,
        "logprobs": -torch.rand(n, generator=gen) * 3,
        "values": torch.rand(n, generator=gen) * 2 - 1,
        "advantages": torch.randn(n, generator=gen),
        "returns": torch.rand(n, generator=gen) * 2 - 1,
    }


def _pair(name: str) -> tuple[PatchworkNet, ReferenceNet]:
    torch.manual_seed(1)
    net = PatchworkNet(CONFIGS[name])
    assert net.stem.weight.is_contiguous(memory_format=torch.channels_last)
    with torch.no_grad():  # away from the initialisation's zeros, so that every head counts
        for p in net.parameters():
            p.add_(0.05 * torch.randn_like(p))
    ref = ReferenceNet(CONFIGS[name])
    ref.load_state_dict(net.state_dict())
    return net, ref


@pytest.mark.parametrize("name", list(CONFIGS))
def test_logits_losses_and_gradients_equal_the_dense_formulation(name: str, batch: dict[str, torch.Tensor]) -> None:
    net, ref = _pair(name)
    prior = batch["prior"] if net.uses_prior else None  # float16, as stored
    grads = []
    for model in (net, ref):
        model.zero_grad()
        logits, values = model(batch["obs"], batch["masks"], prior)
        logp = torch.log_softmax(logits, -1)
        chosen = logp.gather(1, batch["actions"].unsqueeze(1)).squeeze(1)
        loss = -(chosen * batch["advantages"]).mean() + ((values - batch["returns"]) ** 2).mean()
        loss = loss - 0.01 * legal_entropy(logp, batch["masks"]).mean()
        loss.backward()  # type: ignore[no-untyped-call]
        grads.append((logits.detach(), values.detach(), loss.item(), [p.grad.clone() for p in model.parameters()]))
    (logits, values, loss, grad), (logits_r, values_r, loss_r, grad_r) = grads
    legal = batch["masks"]
    torch.testing.assert_close(logits[legal], logits_r[legal], rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(values, values_r, rtol=1e-5, atol=1e-6)
    assert loss == pytest.approx(loss_r, rel=1e-5, abs=1e-6)
    for (pname, _), g, g_r in zip(net.named_parameters(), grad, grad_r, strict=True):
        torch.testing.assert_close(g, g_r, rtol=1e-4, atol=1e-5, msg=f"{name}: gradient of {pname}")


def test_a_ppo_update_moves_both_the_same_way(batch: dict[str, torch.Tensor]) -> None:
    """Two epochs of four minibatches with the same generator: the same metrics and weights."""
    settings = PPOSettings(epochs=2, num_minibatches=4, clip_coef=0.2, clip_vloss=True, ent_coef=0.01,
                           vf_coef=0.5, max_grad_norm=0.5, target_kl=0.0)  # fmt: skip
    out = []
    for model in _pair("quick"):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-5)
        metrics = ppo_update(model, optimizer, batch, settings, torch.Generator().manual_seed(5))
        out.append((metrics, [p.detach().clone() for p in model.parameters()]))
    (metrics, params), (metrics_r, params_r) = out
    for key, value in metrics.items():
        assert value == pytest.approx(metrics_r[key], rel=1e-4, abs=1e-6), key
    for p, p_r in zip(params, params_r, strict=True):
        torch.testing.assert_close(p, p_r, rtol=1e-4, atol=1e-5)
    start = _pair("quick")[0].parameters()
    assert not all(torch.allclose(p, q) for p, q in zip(params, start, strict=True))  # the update did move


def test_prior_rows_read_a_minibatch_where_it_is_stored(batch: dict[str, torch.Tensor]) -> None:
    """``prior_rows`` (the PPO update's minibatch rows of the rollout's prior): the same logits and
    gradients, bit for bit, as the minibatch's copied prior; a wrong shape is an error."""
    net = _pair("kind weights, group scale, kind mlp")[0]
    idx = torch.tensor([7, 3, 3, 50, 0, 80])
    out = []
    for prior, rows in ((batch["prior"][idx], None), (batch["prior"], idx)):
        net.zero_grad()
        logits, values = net(batch["obs"][idx], batch["masks"][idx], prior, rows)
        (logits[batch["masks"][idx]].sum() + values.sum()).backward()  # type: ignore[no-untyped-call]
        out.append(
            [logits.detach(), values.detach(), *(p.grad.clone() for p in net.parameters() if p.grad is not None)]
        )
    assert len(out[0]) == len(out[1]) and all(torch.equal(a, b) for a, b in zip(*out, strict=True))
    with pytest.raises(ValueError, match="prior_rows must be given with prior and have shape"):
        net(batch["obs"][idx], batch["masks"][idx], batch["prior"], idx[:2])
