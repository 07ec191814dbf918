"""Distil a network's leaf value into a small compiled value model (``patchwork_env.players.value_model``).

The network plays its games (``agents.value_head.network_games``: its most probable move against
greedy, one game in four sampled against itself); every decision's target is the network's own
value of it (``agents.value_head.network_values``, clipped to [-1, 1] as ``az``'s leaves take it).
A perceptron (observation -> ReLU(H1) -> ReLU(H2) -> tanh) is fitted to those values with Adam on
mean squared error and a one-cycle learning rate; a fifth of the *games* is held out
(``held_out_split``). The statistics: the held-out explained variance of the network's values, and
both the model's and the network's mean squared error against the held-out games' results.
The targets may instead be a search's values of the same positions (``agents.value_head.tree_targets``:
``az``'s compiled search with a model at its leaves), the fit starting from that model: one step
of search bootstrapping, the next model learning what the last one's search saw.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from agents.value_head import held_out_split
from patchwork_env.envs.observation import OBS_DIM, observe_movers
from patchwork_env.players.heuristic import NUM_FEATURES, NUM_GROUPS
from patchwork_env.players.search_config import GREEDY_PRIOR_TEMP
from patchwork_env.players.value_model import ValueModel

IntArray = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]

FEATURE_CHUNK = 8192  # observations computed per call (about 48 MB)
VAL_SHARE = 0.2  # of the games, held out


@dataclass
class ModelStats:
    epoch: int
    val_explained_variance: float
    """1 - MSE / variance of the network's held-out values (games never trained on)."""
    val_mse: float
    """Against the network's held-out values."""
    val_result_mse: float
    """The model's mean squared error against the held-out positions' game results."""


class ValueNet(nn.Module):
    """A compiled value model's layers in torch, the one mirror of ``ValueModel`` (this module's
    value distillation and ``agents.alphazero``'s learner train it): observation -> ReLU(H1) ->
    ReLU(H2) -> the value (tanh), the move-kind logits and the placement head's term weights.
    Fresh layers take torch's default initialisation (``perceptron``); ``of`` copies a model's."""

    def __init__(self, hidden: tuple[int, int]) -> None:
        super().__init__()
        h1, h2 = hidden
        self.first, self.second, self.value = nn.Linear(OBS_DIM, h1), nn.Linear(h1, h2), nn.Linear(h2, 1)
        self.kind, self.terms = nn.Linear(h2, NUM_GROUPS), nn.Linear(h2, NUM_FEATURES)

    @classmethod
    def of(cls, model: ValueModel, prior_temp: float = GREEDY_PRIOR_TEMP) -> ValueNet:
        """The layers of ``model`` (a model without prior heads: zero kind logits and greedy's term
        weights over ``prior_temp``, ``ValueModel.placement``)."""
        net = cls(model.hidden)
        wp, bp = model.head()
        wf, bf = model.placement(prior_temp)
        weights = [(net.first, model.w1, model.b1), (net.second, model.w2, model.b2), (net.value, model.w3, model.b3),
                   (net.kind, wp, bp), (net.terms, wf, bf)]  # fmt: skip
        with torch.no_grad():
            for layer, w, b in weights:
                layer.weight.copy_(torch.from_numpy(np.asarray(w, np.float32)).t())
                layer.bias.copy_(torch.from_numpy(np.asarray(b, np.float32)))
        return net

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B,) values, (B, 5) move-kind logits, (B, 9) term weights."""
        hidden = torch.relu(self.second(torch.relu(self.first(x))))
        return torch.tanh(self.value(hidden)).squeeze(-1), self.kind(hidden), self.terms(hidden)

    def to_value_model(self, heads: bool = False) -> ValueModel:
        """The compiled model (weights transposed to (in, out)); ``heads``: with the prior's heads."""
        layers = (self.first, self.second, self.value, *((self.kind, self.terms) if heads else ()))
        arrays = []
        for m in layers:
            arrays += [m.weight.detach().t().contiguous().numpy().copy(), m.bias.detach().numpy().copy()]
        return ValueModel(*(np.ascontiguousarray(a, dtype=np.float32) for a in arrays))


def perceptron(hidden: tuple[int, int], seed: int) -> ValueNet:
    """Fresh layers of sizes ``hidden``, seeded."""
    torch.manual_seed(seed)
    return ValueNet(hidden)


def to_value_model(net: ValueNet) -> ValueModel:
    """The compiled value model of ``net`` (no prior heads)."""
    return net.to_value_model()


def observations(states: IntArray) -> torch.Tensor:
    """(N, OBS_DIM) observations from each mover's seat, in chunks."""
    return torch.cat(
        [torch.from_numpy(observe_movers(states[i : i + FEATURE_CHUNK])) for i in range(0, len(states), FEATURE_CHUNK)]
    )


def fit_value_model(
    states: IntArray,
    targets: F32,
    results: F32,
    games: IntArray,
    hidden: tuple[int, int],
    epochs: int,
    lr: float,
    seed: int = 0,
    batch_size: int = 1024,
    val_share: float = VAL_SHARE,
    progress: Callable[[ModelStats], None] | None = None,
    init: ValueModel | None = None,
) -> tuple[ValueModel, list[ModelStats]]:
    """A ``ValueModel`` fitted to ``targets`` (the network's values of ``states``, or a search's), and
    its held-out statistics before training and after each epoch (each given to ``progress``);
    ``init``: start from that model's weights (its sizes; ``hidden`` is then not used)."""
    if epochs < 1 or not (math.isfinite(lr) and lr > 0) or batch_size < 1:
        raise ValueError(f"need epochs >= 1, lr > 0 and batch_size >= 1; got {epochs}, {lr}, {batch_size}")
    for name, column in (("targets", targets), ("results", results), ("games", games)):
        if np.shape(column) != (len(states),):
            raise ValueError(f"{name} must hold one entry per state ({len(states)}), got shape {np.shape(column)}")
        if not np.isfinite(column).all():
            raise ValueError(f"{name} hold NaN or infinity: a fit to them would train to NaN")
    train_rows, val_rows = held_out_split(games, val_share, seed)
    x = observations(states)
    y, r = torch.from_numpy(targets), torch.from_numpy(results)
    layers = perceptron(hidden, seed) if init is None else ValueNet.of(init)
    variance = float(y[val_rows].var(unbiased=False)) or 1.0

    def predict(rows: IntArray) -> torch.Tensor:
        with torch.no_grad():
            return torch.cat([layers(x[rows[i : i + 8192]])[0] for i in range(0, len(rows), 8192)])

    def stats(epoch: int) -> ModelStats:
        p = predict(val_rows)
        mse = float(((p - y[val_rows]) ** 2).mean())
        out = ModelStats(epoch, 1.0 - mse / variance, mse, float(((p - r[val_rows]) ** 2).mean()))
        if progress is not None:
            progress(out)
        return out

    history = [stats(0)]
    steps_per_epoch = max(1, len(train_rows) // batch_size)
    optimizer = torch.optim.Adam(layers.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, total_steps=epochs * steps_per_epoch, pct_start=0.1
    )
    gen = torch.Generator().manual_seed(seed)
    train_t = torch.from_numpy(train_rows)
    for epoch in range(1, epochs + 1):
        order = train_t[torch.randperm(len(train_t), generator=gen)]
        for k in range(steps_per_epoch):
            rows = order[k * batch_size : (k + 1) * batch_size]
            loss = ((layers(x[rows])[0] - y[rows]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward untyped
            optimizer.step()
            schedule.step()
        history.append(stats(epoch))
    return to_value_model(layers), history
