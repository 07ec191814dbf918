"""AlphaZero with the compiled search: the search's own games teach the small model at its leaves and
its prior (``train.tree_loop`` runs the loop).

The player is ``az``'s compiled search (``patchwork_env.players.az_tree``) with a value model
(``patchwork_env.players.value_model``) whose move-kind head corrects the greedy prior. One
iteration:

* **Self-play** (``self_play``): games of the search against itself, the Gumbel root sampling its
  move (``CompiledSearch.run(noise=...)``), the tree of the played move kept. Every decision the
  search made (a root with a choice) gives its position, the search's policy target summed per kind
  of move (``agents.distill.group_target``: the Gumbel root's ``softmax(logit + sigma(completed Q))``), the search's
  value of the root, and, once the game is over, its result for the mover (``final_value``). Work
  items are chunks of games, each seeded on its own, for any ``patchwork_env.evaluation.backend``
  (worker processes or Ray tasks): the same games whatever runs them.
* **Fit** (``fit``): the perceptron and its head from the current model's weights; the value to
  ``(1 - q_weight) * result + q_weight * search value`` (mean squared error), the head so that the
  prior the search builds from it (greedy's log-probability per kind, ``greedy_kind_logp``, plus the
  head's logit) matches the search's target per kind (cross-entropy over the kinds with a legal
  move). The held-out games (a share of the newest iteration's) are never trained on.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from agents.distill import group_target
from agents.value_model import from_value_model, perceptron
from patchwork_env.core import rules
from patchwork_env.core.files import write_atomic
from patchwork_env.envs.observation import observe_movers
from patchwork_env.evaluation.arena import deal
from patchwork_env.players.az_search import final_value
from patchwork_env.players.az_tree import CompiledSearch
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, GROUP_OF_ACTION, NUM_GROUPS, candidate_policy_batch
from patchwork_env.players.search_config import SearchConfig
from patchwork_env.players.value_model import ValueModel

IntArray = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Records:
    """Decisions of self-play games: one row each."""

    states: IntArray
    """(N, STATE_LEN) the positions."""
    targets: F32
    """(N, 5) the search's policy target per kind of move."""
    search_values: F32
    """(N,) the search's value of the position, from its mover's side."""
    results: F32
    """(N,) the game's result for the position's mover (``final_value``)."""
    games: IntArray
    """(N,) which game (unique within an iteration's records)."""

    @staticmethod
    def concat(parts: list[Records]) -> Records:
        if not parts:
            return Records(
                np.zeros((0, rules.STATE_LEN), np.int64), np.zeros((0, NUM_GROUPS), np.float32),
                np.zeros(0, np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64),
            )  # fmt: skip
        return Records(*(np.concatenate([getattr(p, f) for p in parts]) for f in Records.__dataclass_fields__))

    def save(self, path: str) -> None:
        """Written whole or not at all (``.npz``)."""
        buffer = io.BytesIO()
        np.savez(buffer, **{f: getattr(self, f) for f in Records.__dataclass_fields__})
        write_atomic(path, buffer.getvalue())

    @staticmethod
    def load(path: str) -> Records:
        with np.load(path, allow_pickle=False) as data:
            return Records(*(data[f] for f in Records.__dataclass_fields__))


@dataclass(frozen=True)
class SelfPlay:
    """What every self-play work item shares: the model, the search's settings, the seed."""

    model: ValueModel
    config: SearchConfig
    prior_temp: float
    seed: int


def self_play(shared: SelfPlay, item: tuple[int, int]) -> Records:
    """Games ``first .. first + count - 1`` of an iteration (``item``): each dealt and searched from
    its own seed (``shared.seed``, the game's index), so the records do not depend on who plays them."""
    first, count = item
    search = CompiledSearch(shared.config, shared.model, shared.prior_temp, reuse=True)
    parts = []
    for game in range(first, first + count):
        rng = np.random.default_rng(np.random.SeedSequence(shared.seed, spawn_key=(game,)))
        state = deal(shared.seed, game).array().copy()
        search.reset()
        rows, targets, values, movers = [], [], [], []
        while not rules.is_terminal(state):
            result = search.run(state, noise=rng)
            if len(result.actions) > 1:  # a choice: the search has something to teach
                rows.append(state.copy())
                targets.append(group_target(result.action, result.policy))
                values.append(result.root_value)
                movers.append(int(rules.current_player(state)))
            rules.step_into(state, result.action)
        margin = shared.config.margin_weight
        outcome = {p: final_value(state, p, margin) for p in (0, 1)}
        n = len(rows)
        parts.append(
            Records(
                np.array(rows, dtype=np.int64).reshape(n, rules.STATE_LEN),
                np.array(targets, dtype=np.float32).reshape(n, NUM_GROUPS),
                np.array(values, dtype=np.float32),
                np.array([outcome[p] for p in movers], dtype=np.float32),
                np.full(n, game, dtype=np.int64),
            )
        )
    return Records.concat(parts)


def greedy_kind_logp(states: IntArray, prior_temp: float) -> F32:
    """(N, 5) the greedy prior's log-probability of each kind's candidate (the compiled search's
    prior before the head: one candidate per kind), -inf for a kind without a legal move."""
    legal = np.zeros((len(states), rules.NUM_ACTIONS), dtype=np.bool_)
    logp = np.empty((len(states), rules.NUM_ACTIONS), dtype=np.float64)
    candidate_policy_batch(np.ascontiguousarray(states), DEFAULT_WEIGHTS, 1, prior_temp, legal, logp)
    out = np.full((len(states), NUM_GROUPS), -np.inf, dtype=np.float32)
    rows, actions = np.nonzero(legal)
    out[rows, GROUP_OF_ACTION[actions]] = logp[rows, actions]
    return out


class TwoHeads(nn.Module):
    """The value model's layers in torch: the perceptron (``agents.value_model.perceptron``) and the
    move-kind head on its last hidden layer."""

    def __init__(self, model: ValueModel) -> None:
        super().__init__()
        self.layers = perceptron(model.hidden, 0)
        from_value_model(self.layers, model)
        self.kind = nn.Linear(model.hidden[1], NUM_GROUPS)
        wp, bp = model.head()
        with torch.no_grad():
            self.kind.weight.copy_(torch.from_numpy(wp).t())
            self.kind.bias.copy_(torch.from_numpy(bp))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.layers[:4](x)
        return torch.tanh(self.layers[4](hidden)).squeeze(-1), self.kind(hidden)

    def to_value_model(self) -> ValueModel:
        linear = [m for m in self.layers if isinstance(m, nn.Linear)] + [self.kind]
        arrays = []
        for m in linear:
            arrays += [m.weight.detach().t().contiguous().numpy(), m.bias.detach().numpy()]
        return ValueModel(*(np.ascontiguousarray(a, dtype=np.float32) for a in arrays))


@dataclass
class FitStats:
    """Held-out statistics (games never trained on) of a model."""

    value_mse: float
    """Against the value targets."""
    result_mse: float
    """Against the games' results."""
    kind_loss: float
    """The prior's cross-entropy against the search's targets per kind."""
    kind_agreement: float
    """Share of positions where the prior's most probable kind is the search's."""


def fit(
    model: ValueModel,
    records: Records,
    held_out: npt.NDArray[np.bool_],
    prior_temp: float,
    q_weight: float,
    epochs: int,
    lr: float,
    seed: int,
    batch_size: int = 512,
    head_lr: float = 3e-3,
    log: Callable[[int, FitStats], None] | None = None,
) -> tuple[ValueModel, list[FitStats]]:
    """``model`` fitted to ``records`` but the ``held_out`` rows, and the held-out statistics before
    training and after each epoch (each also given to ``log``)."""
    if epochs < 1 or not (math.isfinite(lr) and lr > 0) or not 0 <= q_weight <= 1:
        raise ValueError(f"need epochs >= 1, lr > 0 and q_weight in [0, 1]; got {epochs}, {lr}, {q_weight}")
    train_rows, val_rows = np.flatnonzero(~held_out), np.flatnonzero(held_out)
    if train_rows.size == 0 or val_rows.size == 0:
        raise ValueError("need rows to train on and held-out rows")
    torch.manual_seed(seed)
    net = TwoHeads(model)
    value_target = torch.from_numpy((1 - q_weight) * records.results + q_weight * records.search_values)
    result = torch.from_numpy(records.results)
    target = torch.from_numpy(records.targets)
    prior = torch.from_numpy(greedy_kind_logp(records.states, prior_temp))

    def losses(rows: IntArray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = torch.from_numpy(observe_movers(records.states[rows]))
        value, logits = net(x)
        logp = torch.log_softmax(prior[rows] + logits, dim=-1)
        t = target[rows]
        kind = -(t * torch.where(t > 0, logp, torch.zeros_like(logp))).sum(-1)
        return value, logp, kind

    def stats(epoch: int) -> FitStats:
        with torch.no_grad():
            parts = [losses(val_rows[i : i + 4096]) for i in range(0, len(val_rows), 4096)]
        value = torch.cat([p[0] for p in parts])
        logp = torch.cat([p[1] for p in parts])
        kind = torch.cat([p[2] for p in parts])
        rows = torch.from_numpy(val_rows)
        agree = (logp.argmax(-1) == target[rows].argmax(-1)).float().mean()
        out = FitStats(
            float(((value - value_target[rows]) ** 2).mean()), float(((value - result[rows]) ** 2).mean()),
            float(kind.mean()), float(agree),
        )  # fmt: skip
        if log is not None:
            log(epoch, out)
        return out

    history = [stats(0)]
    optimizer = torch.optim.Adam(
        [{"params": net.layers.parameters(), "lr": lr}, {"params": net.kind.parameters(), "lr": head_lr}]
    )
    gen = np.random.default_rng(seed)
    for epoch in range(1, epochs + 1):
        order = gen.permutation(train_rows)
        for k in range(0, len(order), batch_size):
            rows = order[k : k + batch_size]
            value, _, kind = losses(rows)
            loss = ((value - value_target[rows]) ** 2).mean() + kind.mean()
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward untyped
            optimizer.step()
        history.append(stats(epoch))
    return net.to_value_model(), history
