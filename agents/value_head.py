"""A value head for search: the network's own games, their results, and the value head fitted to them.

``az`` reads the value head at every leaf. Trained inside PPO, the head predicts the results of the
*sampled* policy's games against the opponent pool, not of the games the searching agent plays.
Here the network plays its most probable move (``patchwork_env.players.policy.most_probable_move``) against
``greedy`` in three of every four games (its seat alternating game by game) and samples from its
policy against itself in the fourth; every decision of a finished game gets the game's result from
the mover's side (``patchwork_env.players.batched_search.final_value``, the quantity the search backs up). Only the
value head (``value.*``) is fitted to it, on the frozen trunk: the policy stays bit-identical.

A second target replaces the one game's result by what ``az`` computes at a leaf: the mean of many
greedy rollouts from the position (``rollout_targets``; value distillation: the network then gives
the rollouts' expectation without their noise or cost). The trunk's features carry little of that
value (the head alone explains about a third of its variance), so ``fit_value`` with ``trunk`` trains the
trunk with the head, and keeps the policy where it was with a penalty on its divergence from the
start policy (KL over the legal actions). A third target is the value an ``mcts`` search gives the
position (``search_targets``): a leaf value with the search's look-ahead rather than the rollouts'
expectation. A fourth is the value ``az``'s compiled search gives it with a value model at its
leaves (``tree_targets``, ``patchwork_env.players.compiled_search``): the model's own value with the
search's look-ahead, at a fraction of a rollout search's cost (the targets of the next model).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import torch

from agents.az_selfplay import deal_states, decisions_to_end
from patchwork_env.core import rules
from patchwork_env.core.state import GameState
from patchwork_env.core.validate import check_state_rows
from patchwork_env.envs.observation import observe_movers
from patchwork_env.evaluation.workers import check_spawn_safe, run_unordered
from patchwork_env.players.az_network import rollout_values
from patchwork_env.players.batched_search import SearchConfig, final_value
from patchwork_env.players.compiled_search import CompiledSearch
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, greedy_batch, rng_state
from patchwork_env.players.mcts import MCTSAgent, result_for_player0
from patchwork_env.players.network import PatchworkNet, net_inputs
from patchwork_env.players.policy import NetworkAgent
from patchwork_env.players.value_model import ValueModel

IntArray = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]

MIRROR_EVERY = 4  # game g is a sampled mirror game when g % MIRROR_EVERY == MIRROR_EVERY - 1
LABEL_CHUNK = 500  # positions per labelling task (its generator: the seed and the chunk's index)


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
    val_policy_kl: float = 0.0
    """With ``trunk``: KL(start policy || policy) on held-out positions (0 when only the head moves)."""


def fit_value(
    net: PatchworkNet,
    states: IntArray,
    values: F32,
    games: IntArray,
    epochs: int,
    lr: float,
    seed: int = 0,
    *,
    trunk: bool = False,
    kl_weight: float = 1.0,
    val_share: float = 0.2,
    batch_size: int = 0,
    progress: Callable[[ValueStats], None] | None = None,
) -> list[ValueStats]:
    """Fit ``net``'s value to ``values`` with Adam on mean squared error; a ``val_share`` of the
    *games* is held out for the statistics (``held_out_split``; the first entry is the network before
    fitting, each entry is given to ``progress``). The value head alone (``_fit_head``: the trunk
    frozen, the policy bit-identical; ``batch_size`` 0: 512), or with ``trunk`` the trunk with it
    (``_fit_trunk``: ``kl_weight`` x KL(start policy || policy) keeps the policy near the start's; 0: 256)."""
    if epochs < int(trunk) or not (math.isfinite(lr) and lr > 0) or not 0 < val_share < 1 or kl_weight < 0:
        raise ValueError(
            f"need epochs >= {int(trunk)}, lr > 0, 0 < val_share < 1 and kl_weight >= 0; "
            f"got {epochs}, {lr}, {val_share}, {kl_weight}"
        )
    train_rows, val_rows = held_out_split(games, val_share, seed)
    target = torch.from_numpy(values)
    batch = batch_size or (256 if trunk else 512)
    fit = _Fit(states, target, train_rows, val_rows, float(target[val_rows].var(unbiased=False)) or 1.0, progress)
    if trunk:
        _fit_trunk(net, fit, epochs, lr, seed, batch, kl_weight)
    else:
        _fit_head(net, fit, epochs, lr, seed, batch)
    return fit.history


@dataclass
class _Fit:
    """What both fits share: the positions, their targets, the split, and the statistics so far."""

    states: IntArray
    target: torch.Tensor
    train_rows: IntArray
    val_rows: IntArray
    variance: float
    """Of the held-out targets (the explained variance's denominator)."""
    progress: Callable[[ValueStats], None] | None
    history: list[ValueStats] = field(default_factory=list)

    def record(self, epoch: int, train_mse: float, val_mse: float, kl: float = 0.0) -> None:
        self.history.append(ValueStats(epoch, train_mse, val_mse, 1.0 - val_mse / self.variance, kl))
        if self.progress is not None:
            self.progress(self.history[-1])


def _fit_head(net: PatchworkNet, fit: _Fit, epochs: int, lr: float, seed: int, batch_size: int) -> None:
    """The value head alone (``net.value``); the trunk is frozen, so its features are computed once."""
    net.eval()
    states, target = fit.states, fit.target
    feats = torch.cat([_pooled(net, states[i : i + 2048]) for i in range(0, len(states), 2048)])
    optimizer = torch.optim.Adam(net.value.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)

    def mse(rows: IntArray) -> float:
        with torch.no_grad():
            return float(((net.value(feats[rows]).squeeze(-1).clamp(-1.0, 1.0) - target[rows]) ** 2).mean())

    fit.record(0, mse(fit.train_rows), mse(fit.val_rows))
    train_t = torch.from_numpy(fit.train_rows)
    for epoch in range(1, epochs + 1):
        order = train_t[torch.randperm(len(train_t), generator=gen)]
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            loss = ((net.value(feats[rows]).squeeze(-1) - target[rows]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        fit.record(epoch, mse(fit.train_rows), mse(fit.val_rows))


def held_out_split(games: IntArray, val_share: float, seed: int) -> tuple[IntArray, IntArray]:
    """The rows to train on and the held-out rows: a ``val_share`` of the *games* (positions of one
    game are alike; holding out rows would flatter the fit)."""
    unique = np.unique(games)
    held = np.random.default_rng(seed).choice(unique, max(1, int(len(unique) * val_share)), replace=False)
    val = np.isin(games, held)
    train_rows, val_rows = np.flatnonzero(~val), np.flatnonzero(val)
    if train_rows.size == 0:
        raise ValueError("every game was held out; give it more games")
    return train_rows, val_rows


def _rollout_chunk(rollouts: int, margin_weight: float, seed: int, chunk: tuple[int, IntArray]) -> F32:
    index, states = chunk
    return rollout_values(states, rollouts, margin_weight, rng_state(_chunk_seed(seed, index))).astype(np.float32)


def _search_chunk(sims: int, seed: int, chunk: tuple[int, IntArray]) -> F32:
    index, states = chunk
    agent = MCTSAgent(sims=sims, reuse=False)
    rng = np.random.default_rng(_chunk_seed(seed, index))
    return np.array([search_value(agent, row, rng) for row in states], dtype=np.float32)


def _tree_chunk(model: ValueModel, config: SearchConfig, prior_temp: float, chunk: tuple[int, IntArray]) -> F32:
    search = CompiledSearch(config, model, prior_temp, reuse=False)
    return np.array([tree_value(search, row) for row in chunk[1]], dtype=np.float32)


def tree_value(search: CompiledSearch, row: IntArray) -> float:
    """``search``'s value of the position ``row`` for its mover, in [-1, 1] (the root's value,
    ``compiled_search.TreeResult.root_value``), through single-candidate positions (``value_at_a_choice``)
    down to a finished game's ``final_value``."""

    def searched(s: IntArray, player: int) -> tuple[int, float | None]:
        result = search.run(s)
        if not search.last_sims:
            return result.action, None
        return result.action, result.root_value if int(rules.current_player(s)) == player else -result.root_value

    return value_at_a_choice(
        row, searched, lambda s, player: float(final_value(s, player, search.config.margin_weight))
    )


def value_at_a_choice(
    row: IntArray,
    search: Callable[[IntArray, int], tuple[int, float | None]],
    final: Callable[[IntArray, int], float],
) -> float:
    """The value for ``row``'s mover of the first position from ``row`` on where the search has a
    choice: ``search(s, player)`` gives its move in ``s`` and its value for ``player``, or None if
    it had a single candidate (a leather patch's cell, nothing affordable), whose position is
    then searched in turn from the same player's side; a finished game is ``final(s, player)``."""
    s = np.array(row, dtype=np.int64)
    check_state_rows(s[None, :])  # the rules below trust their input
    player = int(rules.current_player(s))
    while not rules.is_terminal(s):
        action, value = search(s, player)
        if value is not None:
            return value
        rules.step_into(s, action)
    return final(s, player)


def _chunk_seed(seed: int, index: int) -> int:
    return int(np.random.SeedSequence(seed, spawn_key=(index,)).generate_state(1, np.uint64)[0])


def search_value(agent: MCTSAgent, row: IntArray, rng: np.random.Generator) -> float:
    """``agent``'s searched value of the position ``row`` for its mover, in [-1, 1] (``2 x
    MCTSAgent.last_value - 1``), through single-candidate positions (``value_at_a_choice``) down
    to a finished game's result."""

    def searched(s: IntArray, player: int) -> tuple[int, float | None]:
        action = agent.act(GameState._wrap(s.copy()), rng)
        if agent.last_value is None:
            return action, None
        value = agent.last_value if int(rules.current_player(s)) == player else 1.0 - agent.last_value
        return action, 2.0 * value - 1.0

    def final(s: IntArray, player: int) -> float:
        r0 = result_for_player0(int(rules.winner(s)), int(rules.score(s, 0) - rules.score(s, 1)))
        return 2.0 * (r0 if player == 0 else 1.0 - r0) - 1.0

    return value_at_a_choice(row, searched, final)


def _label(states: IntArray, label: Callable[[tuple[int, IntArray]], F32], workers: int, what: str) -> F32:
    """``label`` over chunks of ``LABEL_CHUNK`` positions, each with its own generator (from the
    seed and the chunk's index), so the targets do not depend on ``workers`` (processes; 1: this one)."""
    check_state_rows(states)  # the kernels trust their input
    chunks = [(i, states[lo : lo + LABEL_CHUNK]) for i, lo in enumerate(range(0, len(states), LABEL_CHUNK))]
    if workers == 1:
        return np.concatenate([label(c) for c in chunks]) if chunks else np.zeros(0, np.float32)
    check_spawn_safe(f"{what} workers")
    done = {i: part for (i, _), part in run_unordered(label, chunks, workers, describe=lambda c: f"chunk {c[0]}")}
    return np.concatenate([done[i] for i in range(len(chunks))])


def rollout_targets(states: IntArray, rollouts: int, margin_weight: float, seed: int, workers: int = 1) -> F32:
    """Each position's mean value over ``rollouts`` greedy rollouts
    (``patchwork_env.players.az_network.rollout_values``, ``az``'s leaf value), from the mover's side
    (``_label``: independent of ``workers``)."""
    if rollouts < 1 or workers < 1:
        raise ValueError(f"need rollouts >= 1 and workers >= 1, got {rollouts} and {workers}")
    return _label(states, functools.partial(_rollout_chunk, rollouts, margin_weight, seed), workers, "rollout_targets")


def search_targets(states: IntArray, sims: int, seed: int, workers: int = 1) -> F32:
    """Each position's value by an ``mcts:sims=<sims>`` search from it (``search_value``), from the
    mover's side: a leaf value with the search's look-ahead, not a greedy rollout's (``_label``)."""
    if sims < 1 or workers < 1:
        raise ValueError(f"need sims >= 1 and workers >= 1, got {sims} and {workers}")
    return _label(states, functools.partial(_search_chunk, sims, seed), workers, "search_targets")


def tree_targets(
    states: IntArray, model: ValueModel, sims: int, prior_temp: float, margin_weight: float, workers: int = 1
) -> F32:
    """Each position's value by ``az``'s compiled search with ``model`` at its leaves and the greedy
    prior at ``prior_temp`` (``sims`` simulations, ``tree_value``), from the mover's side; the search
    is deterministic, so the targets do not depend on ``workers`` (``_label``)."""
    if sims < 1 or workers < 1:
        raise ValueError(f"need sims >= 1 and workers >= 1, got {sims} and {workers}")
    config = SearchConfig(sims=sims, expand=1, margin_weight=margin_weight)
    return _label(states, functools.partial(_tree_chunk, model, config, prior_temp), workers, "tree_targets")


@torch.no_grad()
def network_values(net: PatchworkNet, states: IntArray) -> torch.Tensor:
    """The network's value of each position from its mover's side, clipped to [-1, 1] as ``az``'s
    leaves take it (chunks of 1,024 observations)."""
    net.eval()
    return torch.cat(
        [net.values(torch.from_numpy(observe_movers(states[i : i + 1024]))) for i in range(0, len(states), 1024)]
    ).clamp(-1, 1)


def _fit_trunk(
    net: PatchworkNet, fit: _Fit, epochs: int, lr: float, seed: int, batch_size: int, kl_weight: float
) -> None:
    """The trunk and the value head (one-cycle learning rate) with ``kl_weight`` x KL(start policy ||
    policy) over the legal actions in the loss (the policy-only parameters are not trained); each
    entry's ``val_policy_kl``: the held-out policy's divergence from the start."""
    states, target, train_rows, val_rows = fit.states, fit.target, fit.train_rows, fit.val_rows
    start = copy.deepcopy(net).eval()
    kl_rows = val_rows[: 2 * batch_size]
    rng = np.random.default_rng(seed)
    train_sample = rng.choice(train_rows, min(len(train_rows), 10_000), replace=False)

    def record(epoch: int) -> None:
        train_mse = float(((network_values(net, states[train_sample]) - target[train_sample]) ** 2).mean())
        val_mse = float(((network_values(net, states[val_rows]) - target[val_rows]) ** 2).mean())
        with torch.no_grad():
            fit.record(epoch, train_mse, val_mse, float(_policy_kl(start, net, states[kl_rows])))

    record(0)
    steps = epochs * max(1, len(train_rows) // batch_size)
    trained = _value_parameters(net, states[:1])
    optimizer = torch.optim.Adam(trained, lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.1)
    for epoch in range(1, epochs + 1):
        net.train()
        order = rng.permutation(train_rows)
        for k in range(max(1, len(order) // batch_size)):
            rows = order[k * batch_size : (k + 1) * batch_size]
            obs, masks, prior = net_inputs(net, states[rows])
            logits, value = net(obs, masks, prior)
            loss = ((value - target[rows]) ** 2).mean() + kl_weight * _kl(start, obs, masks, prior, logits)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            schedule.step()
        record(epoch)
    net.eval()


def _value_parameters(net: PatchworkNet, states: IntArray) -> list[torch.nn.Parameter]:
    """The parameters the value depends on (the trunk and the value head). The policy-only ones stay
    as they are: under Adam, the KL term's near-zero gradients would take full-size steps in them."""
    net.zero_grad()
    net.values(torch.from_numpy(observe_movers(states))).sum().backward()  # type: ignore[no-untyped-call]
    trained = [p for p in net.parameters() if p.grad is not None]
    net.zero_grad(set_to_none=True)
    return trained


def _kl(
    start: PatchworkNet, obs: torch.Tensor, masks: torch.Tensor, prior: torch.Tensor | None, logits: torch.Tensor
) -> torch.Tensor:
    """Mean KL(start policy || policy of ``logits``) over the legal actions."""
    with torch.no_grad():
        start_logp = torch.log_softmax(start(obs, masks, prior)[0], -1)
    logp = torch.log_softmax(logits, -1)
    return torch.where(masks, start_logp.exp() * (start_logp - logp), torch.zeros_like(logp)).sum(-1).mean()


def _policy_kl(start: PatchworkNet, net: PatchworkNet, states: IntArray) -> torch.Tensor:
    net.eval()
    obs, masks, prior = net_inputs(net, states)
    return _kl(start, obs, masks, prior, net(obs, masks, prior)[0])
