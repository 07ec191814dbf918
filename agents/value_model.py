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


def perceptron(hidden: tuple[int, int], seed: int) -> nn.Sequential:
    """The model's layers in torch (``to_value_model`` reads them)."""
    torch.manual_seed(seed)
    h1, h2 = hidden
    return nn.Sequential(nn.Linear(OBS_DIM, h1), nn.ReLU(), nn.Linear(h1, h2), nn.ReLU(), nn.Linear(h2, 1))


def to_value_model(layers: nn.Sequential) -> ValueModel:
    """The compiled model of ``perceptron``'s layers (weights transposed to (in, out))."""
    linear = [m for m in layers if isinstance(m, nn.Linear)]
    arrays = []
    for m in linear:
        arrays += [m.weight.detach().t().contiguous().numpy().copy(), m.bias.detach().numpy().copy()]
    return ValueModel(*(np.ascontiguousarray(a, dtype=np.float32) for a in arrays))


def from_value_model(layers: nn.Sequential, model: ValueModel) -> None:
    """Put ``model``'s weights into ``perceptron`` layers of its sizes (``to_value_model``'s inverse)."""
    linear = [m for m in layers if isinstance(m, nn.Linear)]
    arrays = [getattr(model, name) for name in ("w1", "b1", "w2", "b2", "w3", "b3")]
    with torch.no_grad():
        for k, m in enumerate(linear):
            m.weight.copy_(torch.from_numpy(arrays[2 * k]).t())
            m.bias.copy_(torch.from_numpy(arrays[2 * k + 1]))


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
    train_rows, val_rows = held_out_split(games, val_share, seed)
    x = observations(states)
    y, r = torch.from_numpy(targets), torch.from_numpy(results)
    layers = perceptron(init.hidden if init is not None else hidden, seed)
    if init is not None:
        from_value_model(layers, init)
    variance = float(y[val_rows].var(unbiased=False)) or 1.0

    def predict(rows: IntArray) -> torch.Tensor:
        with torch.no_grad():
            return torch.cat([torch.tanh(layers(x[rows[i : i + 8192]])).squeeze(-1) for i in range(0, len(rows), 8192)])

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
            loss = ((torch.tanh(layers(x[rows])).squeeze(-1) - y[rows]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward untyped
            optimizer.step()
            schedule.step()
        history.append(stats(epoch))
    return to_value_model(layers), history
