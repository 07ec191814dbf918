"""A value head for search: the network's own games, their results, and the value head fitted to them.

``az`` reads the value head at every leaf. Trained inside PPO, the head predicts the results of the
*sampled* policy's games against the opponent pool, not of the games the searching agent plays.
Here the network plays its most probable move (``patchwork_env.players.policy.most_probable_move``) against
``greedy`` in three of every four games (its seat alternating game by game) and samples from its
policy against itself in the fourth; every decision of a finished game gets the game's result from
the mover's side (``patchwork_env.players.az_search.final_value``, the quantity the search backs up). Only the
value head (``value.*``) is fitted to it, on the frozen trunk: the policy stays bit-identical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from agents.az_selfplay import deal_states, decisions_to_end
from patchwork_env.core import rules
from patchwork_env.envs.observation import observe_movers
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, greedy_batch, rng_state
from patchwork_env.players.network import PatchworkNet
from patchwork_env.players.policy import NetworkAgent

IntArray = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]

MIRROR_EVERY = 4  # game g is a sampled mirror game when g % MIRROR_EVERY == MIRROR_EVERY - 1


def network_games(net: PatchworkNet, num_games: int, seed: int, margin_weight: float) -> tuple[IntArray, F32, IntArray]:
    """Every decision of ``num_games`` games of ``net`` (deals ``0..num_games-1`` of ``seed``, see
    the module docstring), its final value from the mover's side, and its game's index."""
    if num_games < 1:
        raise ValueError(f"num_games must be >= 1, got {num_games}")
    if not 0.0 <= margin_weight <= 1.0:
        raise ValueError(f"margin_weight must be in [0, 1], got {margin_weight}")
    games = np.arange(num_games)
    mirror = games % MIRROR_EVERY == MIRROR_EVERY - 1
    net_seat = games % 2
    best, sampled = NetworkAgent(net, deterministic=True), NetworkAgent(net, deterministic=False)
    stream, rng = rng_state(seed), np.random.default_rng(seed)
    masks = np.zeros((num_games, rules.NUM_ACTIONS), dtype=np.bool_)

    movers = np.empty(num_games, dtype=np.int64)

    def choose(block: IntArray, live: IntArray, out: IntArray) -> None:
        rules.current_player_batch(block, movers[: len(live)])
        rules.legal_mask_batch(block, masks[: len(live)], np.zeros(len(live), dtype=np.int64))
        greedy_batch(block, DEFAULT_WEIGHTS, 0.0, stream, out)
        for agent, rows in (
            (best, np.flatnonzero(~mirror[live] & (movers[: len(live)] == net_seat[live]))),
            (sampled, np.flatnonzero(mirror[live])),
        ):
            if rows.size:
                out[rows] = agent.act_batch(block[rows], masks[rows], rng)

    return decisions_to_end(deal_states(num_games, seed), choose, margin_weight)


@torch.no_grad()
def _pooled(net: PatchworkNet, states: IntArray) -> torch.Tensor:
    """The value head's input for a chunk of states, from each mover's seat (observations of one
    chunk at a time: ~6 KB each)."""
    return net.pooled(torch.from_numpy(observe_movers(states)))


@dataclass
class ValueStats:
    epoch: int
    train_mse: float
    """On the training games after the epoch (epoch 0: the head before fitting)."""
    val_mse: float
    val_explained_variance: float
    """1 - MSE / variance of the held-out targets (games never trained on)."""


def fit_value_head(
    net: PatchworkNet,
    states: IntArray,
    values: F32,
    games: IntArray,
    epochs: int,
    lr: float,
    seed: int = 0,
    val_share: float = 0.2,
    batch_size: int = 512,
) -> list[ValueStats]:
    """Fit ``net.value`` (the value head alone) to ``values`` with Adam on mean squared error; a
    ``val_share`` of the *games* is held out for the statistics. The trunk is frozen, so its
    features are computed once."""
    if epochs < 0 or not (math.isfinite(lr) and lr > 0) or not 0 < val_share < 1:
        raise ValueError(f"need epochs >= 0, lr > 0 and 0 < val_share < 1; got {epochs}, {lr}, {val_share}")
    rng = np.random.default_rng(seed)
    unique = np.unique(games)
    held = rng.choice(unique, max(1, int(len(unique) * val_share)), replace=False)
    val = np.isin(games, held)
    train_rows, val_rows = np.flatnonzero(~val), np.flatnonzero(val)
    if train_rows.size == 0:
        raise ValueError("fit_value_head: every game was held out; give it more games")
    net.eval()
    feats = torch.cat([_pooled(net, states[i : i + 2048]) for i in range(0, len(states), 2048)])
    target = torch.from_numpy(values)
    optimizer = torch.optim.Adam(net.value.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)

    def mse(rows: IntArray) -> float:
        with torch.no_grad():
            return float(((net.value(feats[rows]).squeeze(-1).clamp(-1.0, 1.0) - target[rows]) ** 2).mean())

    variance = float(target[val_rows].var(unbiased=False)) or 1.0
    history = [ValueStats(0, mse(train_rows), mse(val_rows), 1.0 - mse(val_rows) / variance)]
    train_t = torch.from_numpy(train_rows)
    for epoch in range(1, epochs + 1):
        order = train_t[torch.randperm(len(train_t), generator=gen)]
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            loss = ((net.value(feats[rows]).squeeze(-1) - target[rows]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        val_mse = mse(val_rows)
        history.append(ValueStats(epoch, mse(train_rows), val_mse, 1.0 - val_mse / variance))
    return history
