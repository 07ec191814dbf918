"""Expert iteration (ExIt; Anthony, Tian & Barber 2017): the network is the apprentice, the ``az``
search with the same network is the expert, and each iteration the apprentice learns the expert's
choices in positions of its own games, so the next expert searches with a better prior.

One iteration (``train.exit`` runs them):

1. **Positions** (``exit_positions``): the network's own games, a ``greedy_share`` against
   ``greedy`` (the network plays its most probable move), the rest against itself (both seats
   sample from its policy), played side by side on the vector engine
   (``agents.distill.student_positions``); a random subset of the decisions with a choice of move
   kind is kept (``stride`` times as many are played, so the kept ones come from more games).
2. **Labels** (``search_labels``): the ``az`` search (``BatchedSearch`` with ``NetEvaluator``: the
   current network's policy over kinds of move as the prior, greedy rollouts as leaf values, a
   Gumbel root without noise) on ``search_batch`` positions at a time, one forward pass per simulation
   step for the batch. A label is a distribution over the position's legal actions: the search's
   improved policy (``target="policy"``: Gumbel AlphaZero's softmax(logit + sigma(completed Q)))
   or its root visit shares (``"visits"``). The search branches over kinds of move (each at the
   network's most probable placement), so only the choice of kind is trained (``group_targets``:
   the label's mass per kind), as in ``agents.distill``; placements stay the greedy prior's.
3. **Fit** (``fit``): ``agents.distill.distill`` on the labels of the newest iterations (a
   ``Window``); every iteration's held-out positions (``agents.distill.held_out``) are never trained
   on, and give the held-out loss and agreement (the network's most probable kind is the search's).
4. **Gate** (``gate``): the fitted network plays the one before it on paired deals (most probable
   moves); it is kept only if its win rate is above a threshold, else the old weights come back
   (the labels stay in the window).

Every random draw comes from the seeds given, so an iteration is a function of its seeds (with one
torch thread).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from agents.distill import NUM_GROUPS, DistillStats, distill, group_logits, legal_groups, student_positions
from agents.expert import TARGETS, SearchSettings
from patchwork_env.core import rules
from patchwork_env.evaluation.arena import PairResult, play_pairs
from patchwork_env.evaluation.backend import Backend, LocalBackend
from patchwork_env.players.az_network import NetEvaluator
from patchwork_env.players.batched_search import BatchedSearch
from patchwork_env.players.network import GROUP_BOUNDS, PatchworkNet, net_inputs
from patchwork_env.players.policy import NetworkAgent

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


# --- 1. positions ------------------------------------------------------------------------------------
def exit_positions(net: PatchworkNet, num: int, seed: int, greedy_share: float = 0.5, stride: int = 1) -> IntArray:
    """Up to ``num`` positions with a choice of move kind from ``net``'s own games: a
    ``greedy_share`` of them against ``greedy``, the rest against itself; ``stride`` x as many
    decisions are played and a random subset kept. Deterministic for a seed."""
    if num < 1 or stride < 1 or not 0.0 <= greedy_share <= 1.0:
        raise ValueError(f"need num >= 1, stride >= 1, greedy_share in [0, 1]; got {num}, {stride}, {greedy_share}")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    vs_greedy = round(num * greedy_share)
    parts = []
    for mirror, count, key in ((False, vs_greedy, 1), (True, num - vs_greedy, 2)):
        if count == 0:
            continue
        # about two decisions in three offer a choice of kind: play twice as many as needed
        games_seed = int(np.random.SeedSequence(seed, spawn_key=(key,)).generate_state(1)[0])
        raw = student_positions(2 * count * stride, games_seed, net, mirror=mirror)
        raw = raw[legal_groups(raw).sum(1) > 1]
        parts.append(raw[np.sort(rng.permutation(len(raw))[:count])])
    return np.concatenate(parts)


# --- 2. labels ---------------------------------------------------------------------------------------
@dataclass
class Labels:
    """The expert's labels: per position a distribution over the 2,026 actions (zero on illegal
    ones; its mass on one placement per kind of move), the search's move and its root value."""

    states: IntArray
    policies: npt.NDArray[np.float32]
    actions: IntArray
    root_values: FloatArray
    searched_again: BoolArray
    """The positions whose label comes from the deeper search (``SearchSettings.unsure_sims``)."""


def search_labels(
    net: PatchworkNet, states: IntArray, settings: SearchSettings, seed: int, backend: Backend | None = None
) -> Labels:
    """The ``az`` search with ``net`` on every position, ``settings.search_batch`` at a time (``label_batch``):
    in this process, or each batch as a task of ``backend`` (``patchwork_env.evaluation.backend``:
    Ray, on this machine or a cluster); then, with ``unsure_sims``, the unsure positions again with
    that many simulations, their labels replaced. Deterministic for a seed and batch size, the same
    labels on either (no root noise; each position's generator and each batch's rollouts come from
    ``seed``; with one torch thread)."""
    settings.search_config()  # bad settings fail here, before any work is sent
    states = np.ascontiguousarray(states, dtype=np.int64)
    policies, actions, values = _search(net, states, settings, seed, backend)
    again = unsure(policies, settings.unsure_margin) if settings.unsure_sims else np.zeros(len(states), dtype=bool)
    if again.any():
        deeper = replace(settings, search=replace(settings.search, sims=settings.unsure_sims), unsure_sims=0)
        deep_seed = int(np.random.SeedSequence(seed, spawn_key=(2**32,)).generate_state(1)[0])
        policies[again], actions[again], values[again] = _search(net, states[again], deeper, deep_seed, backend)
    return Labels(states, policies, actions, values, again)


def _search(
    net: PatchworkNet, states: IntArray, settings: SearchSettings, seed: int, backend: Backend | None
) -> tuple[npt.NDArray[np.float32], IntArray, FloatArray]:
    """(policies, moves, root values) of every position: ``label_batch`` over batches."""
    if len(states) == 0:
        return np.zeros((0, rules.NUM_ACTIONS), dtype=np.float32), np.zeros(0, dtype=np.int64), np.zeros(0)
    shared = (net.eval(), states, settings, seed)
    starts = list(range(0, len(states), settings.search_batch))
    parts = (backend or LocalBackend()).map(label_batch, shared, starts)
    policies, actions, values = zip(*parts, strict=True)
    return np.concatenate(policies), np.concatenate(actions).astype(np.int64), np.concatenate(values)


def unsure(policies: npt.NDArray[Any], margin: float) -> BoolArray:
    """Labels whose two largest kinds of move (``group_targets``) are within ``margin``."""
    kinds = np.sort(group_targets(policies), axis=1)
    close: BoolArray = kinds[:, -1] - kinds[:, -2] < margin
    return close


def label_batch(
    shared: tuple[PatchworkNet, IntArray, SearchSettings, int], lo: int
) -> tuple[npt.NDArray[np.float32], IntArray, FloatArray]:
    """The labels of positions ``lo`` .. ``lo + batch`` of ``search_labels``: (policies, the
    search's moves, root values); a function of ``shared`` and ``lo`` alone (one work item)."""
    net, states, settings, seed = shared
    hi = min(len(states), lo + settings.search_batch)
    evaluator = NetEvaluator(net, kinds=True, rollouts=settings.rollouts, mix=1.0)
    evaluator.seed(int(np.random.SeedSequence(seed, spawn_key=(lo, 1)).generate_state(1)[0]))
    rngs = [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,))) for i in range(lo, hi)]
    result = BatchedSearch(evaluator, settings.search_config()).run(states[lo:hi], rngs, noise=False)
    if settings.target == "policy":
        policies = np.asarray(result.policies, dtype=np.float32)
    else:
        policies = np.zeros((hi - lo, rules.NUM_ACTIONS), dtype=np.float32)
        for k, root in enumerate(result.roots):
            assert root.actions is not None
            total = root.n.sum()
            policies[k, root.actions] = root.n / total if total else root.prior
    return policies, np.asarray(result.actions, dtype=np.int64), np.asarray(result.root_values, dtype=np.float64)


def group_targets(policies: npt.NDArray[Any]) -> FloatArray:
    """(N, 5) each label's mass per kind of move (the targets of ``agents.distill``)."""
    b = GROUP_BOUNDS
    out = np.stack([policies[:, b[g] : b[g + 1]].sum(1) for g in range(NUM_GROUPS)], axis=1).astype(np.float64)
    normalised: FloatArray = out / out.sum(1, keepdims=True)
    return normalised


# --- 3. fit ------------------------------------------------------------------------------------------
@dataclass
class Window:
    """The labels of the newest ``size`` iterations: states, (N, 5) targets, held-out flags."""

    size: int
    parts: list[tuple[IntArray, FloatArray, BoolArray]] = field(default_factory=list)

    def add(self, states: IntArray, targets: FloatArray, held: BoolArray) -> None:
        self.parts = [*self.parts, (states, targets, held)][-self.size :]

    def arrays(self) -> tuple[IntArray, FloatArray, BoolArray]:
        states, targets, held = zip(*self.parts, strict=True)
        return np.concatenate(states), np.concatenate(targets), np.concatenate(held)


@torch.no_grad()
def label_loss(net: PatchworkNet, states: IntArray, targets: FloatArray) -> tuple[float, float]:
    """Cross-entropy of ``net``'s choice of kind to the (N, 5) targets, and the agreement: the
    share of positions where its most probable kind is the targets'."""
    net.eval()
    losses, agree = [], []
    for lo in range(0, len(states), 1024):
        logits, _ = net(*net_inputs(net, states[lo : lo + 1024]))
        g = group_logits(logits)
        t = torch.from_numpy(targets[lo : lo + 1024].astype(np.float32))
        losses.append(-(t * torch.log_softmax(g, 1).clamp_min(-1e4)).sum(1))
        agree.append((g.argmax(1) == t.argmax(1)).float())
    return float(torch.cat(losses).mean()), float(torch.cat(agree).mean())


def fit(
    net: PatchworkNet,
    window: Window,
    epochs: int,
    lr: float,
    seed: int,
    batch_size: int = 256,
    log: Callable[[DistillStats], None] | None = None,
) -> list[DistillStats]:
    """Train ``net``'s choice of kind on the window's labels (``agents.distill.distill``: soft
    targets, the group parameters only, the held-out positions never trained on); the first entry
    is the network before the fit."""
    states, targets, held = window.arrays()
    return distill(net, states, targets, epochs, lr, seed=seed, batch_size=batch_size, held_out=held, log=log)


# --- 4. gate -----------------------------------------------------------------------------------------
@dataclass
class GateResult:
    keep_new: bool
    win_rate: float
    """The fitted network's win rate against the one before it on the gate's deals."""
    result: PairResult


def gate(
    net: PatchworkNet, previous: PatchworkNet, pairs: int, seed: int, threshold: float = 0.5, workers: int = 1
) -> GateResult:
    """``net`` (just fitted) against ``previous`` on ``pairs`` paired deals, most probable moves:
    ``net`` is kept only if its win rate is above ``threshold``; otherwise ``previous``'s weights
    are loaded back into it."""
    result = play_pairs(
        NetworkAgent(net, deterministic=True, name="new"),
        NetworkAgent(previous, deterministic=True, name="previous"),
        pairs,
        seed=seed,
        workers=workers,
    )
    keep = result.win_rate_a > threshold
    if not keep:
        net.load_state_dict(previous.state_dict())
    return GateResult(keep, result.win_rate_a, result)


__all__ = [
    "TARGETS",
    "GateResult",
    "Labels",
    "SearchSettings",
    "Window",
    "exit_positions",
    "fit",
    "gate",
    "group_targets",
    "label_batch",
    "label_loss",
    "search_labels",
]
