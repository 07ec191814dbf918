"""Expert iteration (ExIt; Anthony, Tian & Barber 2017): the network is the apprentice, the ``az``
search with the same network is the expert, and each iteration the apprentice learns the expert's
choices in positions of its own games, so the next expert searches with a better prior.

One iteration (``train.exit`` runs them):

1. **Positions** (``exit_positions``): the current network's own games, some against ``greedy``
   (its most probable move), the rest against itself (sampled from its policy); every decision of
   games played side by side on the vector engine (``agents.distill.student_positions``), of which
   a random subset with a choice of move kind is kept (``stride`` times as many are played, so the
   kept positions come from more games).
2. **Labels** (``search_labels``): the ``az`` agent's search (``agents.az_search.BatchedSearch``
   with ``agents.az_agent.NetEvaluator``: the current network's policy over kinds of move as the
   prior, greedy rollouts as leaf values, Gumbel root without noise) on ``batch`` positions at a
   time, one forward pass per simulation step for the whole batch. The label of a position is a
   distribution over its legal actions: the search's improved policy (``target="policy"``:
   Gumbel AlphaZero's ``softmax(logit + sigma(completed Q))``) or its root visit shares
   (``target="visits"``). The search branches over kinds of move (each at the network's most
   probable placement), so the label puts its mass on one placement per kind; as in
   ``agents.distill`` only the choice of kind is trained (``group_targets``), placements stay the
   greedy prior's.
3. **Fit** (``fit``): ``agents.distill.distill`` on the labels of the last iterations (a window),
   with every iteration's held-out positions kept out of training: its held-out loss and the
   agreement of the network's most probable kind with the search's are the statistics.
4. **Gate** (``gate``): the fitted network plays the one before it on paired deals (its most
   probable move); the new one is kept only if its win rate is above ``threshold``, else the old
   weights come back (the labels stay in the window).

Every random draw comes from the iteration's seed, so a run is a function of its config and seed
(one torch thread).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from agents.arena import PairResult, play_pairs
from agents.az_agent import NetEvaluator
from agents.az_search import BatchedSearch, SearchConfig
from agents.distill import (
    DistillStats,
    distill,
    group_logits,
    legal_groups,
    student_positions,
)
from agents.heuristic import NUM_GROUPS
from agents.network import GROUP_OF_ACTION, PatchworkNet, prior_for
from agents.ppo_agent import PPOAgent
from patchwork_env import rules
from patchwork_env.observation import observe_movers

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
TARGETS = ("policy", "visits")


# --- 1. positions ----------------------------------------------------------------------------------
def exit_positions(net: PatchworkNet, num: int, seed: int, greedy_share: float = 0.5, stride: int = 1) -> IntArray:
    """Up to ``num`` positions with a choice of move kind from ``net``'s own games: a
    ``greedy_share`` of them against ``greedy`` (``net`` plays its most probable move, seats
    alternating), the rest against itself (both seats sample from its policy). ``stride`` x as
    many decisions are played and a random subset kept. Deterministic for a seed."""
    if num < 1 or stride < 1 or not 0.0 <= greedy_share <= 1.0:
        raise ValueError(f"need num >= 1, stride >= 1, greedy_share in [0, 1]; got {num}, {stride}, {greedy_share}")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    parts = []
    vs_greedy = round(num * greedy_share)
    for mirror, count, key in ((False, vs_greedy, 1), (True, num - vs_greedy, 2)):
        if count == 0:
            continue
        # about two in three decisions offer a choice of kind; play enough for ``count`` after the filter
        raw = student_positions(
            2 * count * stride,
            int(np.random.SeedSequence(seed, spawn_key=(key,)).generate_state(1)[0]),
            net,
            mirror=mirror,
        )
        raw = raw[legal_groups(raw).sum(1) > 1]
        parts.append(raw[np.sort(rng.permutation(len(raw))[:count])])
    return np.concatenate(parts) if parts else np.zeros((0, rules.STATE_LEN), dtype=np.int64)


# --- 2. labels -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchSettings:
    """The expert: ``az``'s search (``agents.az_agent``'s defaults but for the simulations)."""

    sims: int = 100
    rollouts: int = 4
    expand: int = 4
    considered: int = 16
    c_puct: float = 1.25
    target: str = "policy"
    batch: int = 64

    def validate(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {self.target!r}")
        if min(self.sims, self.expand, self.considered, self.batch) < 1 or self.rollouts < 1:
            raise ValueError("sims, rollouts, expand, considered and batch must be >= 1")
        SearchConfig(sims=self.sims, expand=self.expand, considered=self.considered, c_puct=self.c_puct).validate()


@dataclass
class Labels:
    """The expert's labels: per position a distribution over the 2,026 actions (zero on illegal
    ones; mass on one placement per kind of move), its move, and the value of the root."""

    states: IntArray
    policies: npt.NDArray[np.float32]
    actions: IntArray
    root_values: FloatArray

    def __len__(self) -> int:
        return len(self.states)


def search_labels(net: PatchworkNet, states: IntArray, settings: SearchSettings, seed: int) -> Labels:
    """The ``az`` search with ``net`` on every position (``settings.batch`` searched together);
    deterministic for a seed and batch size (no root noise; each position's generator and each
    batch's rollouts from ``seed``)."""
    settings.validate()
    states = np.ascontiguousarray(states, dtype=np.int64)
    if states.ndim != 2 or states.shape[1] != rules.STATE_LEN:
        raise ValueError(f"states must have shape (N, {rules.STATE_LEN}), got {states.shape}")
    evaluator = NetEvaluator(net.eval(), kinds=True, rollouts=settings.rollouts, mix=1.0)
    config = SearchConfig(
        sims=settings.sims, expand=settings.expand, considered=settings.considered, c_puct=settings.c_puct
    )
    search = BatchedSearch(evaluator, config)
    n = len(states)
    policies = np.zeros((n, rules.NUM_ACTIONS), dtype=np.float32)
    actions = np.zeros(n, dtype=np.int64)
    values = np.zeros(n)
    for lo in range(0, n, settings.batch):
        hi = min(n, lo + settings.batch)
        evaluator.seed(int(np.random.SeedSequence(seed, spawn_key=(lo, 1)).generate_state(1)[0]))
        rngs = [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,))) for i in range(lo, hi)]
        result = search.run(states[lo:hi], rngs, noise=False)
        actions[lo:hi] = result.actions
        values[lo:hi] = result.root_values
        if settings.target == "policy":
            policies[lo:hi] = result.policies
        else:
            for k, root in enumerate(result.roots):
                assert root.actions is not None
                total = root.n.sum()
                policies[lo + k, root.actions] = root.n / total if total else root.prior
    return Labels(states, policies, actions, values)


def group_targets(policies: npt.NDArray[Any]) -> FloatArray:
    """(N, 5) each label's mass per kind of move (``agents.distill``'s targets)."""
    out = np.zeros((len(policies), NUM_GROUPS))
    for g in range(NUM_GROUPS):
        out[:, g] = policies[:, g == GROUP_OF_ACTION].sum(1)
    out /= out.sum(1, keepdims=True)
    return out


# --- 3. fit -----------------------------------------------------------------------------------------
@torch.no_grad()
def label_loss(net: PatchworkNet, states: IntArray, targets: FloatArray) -> tuple[float, float]:
    """Cross-entropy of ``net``'s choice of kind to the (N, 5) targets, and the share of positions
    where its most probable kind is the targets' (the agreement)."""
    net.eval()
    states = np.ascontiguousarray(states, dtype=np.int64)
    losses, agree = [], []
    for lo in range(0, len(states), 1024):
        rows = states[lo : lo + 1024]
        masks = np.zeros((len(rows), rules.NUM_ACTIONS), dtype=np.bool_)
        rules.legal_mask_batch(rows, masks, np.zeros(len(rows), dtype=np.int64))
        logits, _ = net(torch.from_numpy(observe_movers(rows)), torch.from_numpy(masks), prior_for(net, rows, masks))
        g = group_logits(logits)
        t = torch.from_numpy(targets[lo : lo + 1024].astype(np.float32))
        logp = torch.log_softmax(g, 1)
        losses.append(-(t * logp.clamp_min(-1e4)).sum(1))
        agree.append((g.argmax(1) == t.argmax(1)).float())
    return float(torch.cat(losses).mean()), float(torch.cat(agree).mean())


def fit(
    net: PatchworkNet,
    states: IntArray,
    targets: FloatArray,
    held_out: npt.NDArray[np.bool_],
    epochs: int,
    lr: float,
    seed: int,
    batch_size: int = 256,
) -> list[DistillStats]:
    """Train ``net``'s choice of kind on the labels (``agents.distill.distill``: soft targets,
    only the group parameters, the ``held_out`` positions never trained on)."""
    return distill(net, states, targets, epochs, lr, seed=seed, batch_size=batch_size, held_out=held_out)


# --- 4. gate ----------------------------------------------------------------------------------------
@dataclass
class GateResult:
    keep_new: bool
    win_rate: float
    """The new network's win rate against the old on the gate's deals."""
    result: PairResult


def gate(
    new: PatchworkNet, old: PatchworkNet, pairs: int, seed: int, threshold: float = 0.5, workers: int = 1
) -> GateResult:
    """The new network against the old on ``pairs`` paired deals (most probable moves): keep the
    new one only if its win rate is above ``threshold``."""
    result = play_pairs(
        PPOAgent(new, deterministic=True, name="new"),
        PPOAgent(old, deterministic=True, name="old"),
        pairs,
        seed=seed,
        workers=workers,
    )
    return GateResult(result.win_rate_a > threshold, result.win_rate_a, result)


__all__ = [
    "TARGETS",
    "GateResult",
    "Labels",
    "SearchSettings",
    "exit_positions",
    "fit",
    "gate",
    "group_targets",
    "label_loss",
    "search_labels",
]
