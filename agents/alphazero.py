"""Gumbel AlphaZero with the compiled search: the search's own games teach the model at its leaves
and its prior over whole moves (``train.alphazero`` runs the loop).

The player is ``az``'s compiled search (``patchwork_env.players.compiled_search``) with a value model
(``patchwork_env.players.value_model``) carrying both heads: the value, and a prior over every legal
move (its kind's logit plus the terms of the position after it, weighted by weights that depend on
the position). The search takes its candidates, the best ``width`` moves of each kind, from that
prior, so placements greedy ranks low can be searched, chosen and learned.

* **Self-play** (``self_play``): games of the search against itself with playout-cap randomisation
  (KataGo): a share ``full_share`` of the decisions gets a full search (``full_sims``) whose Gumbel
  root samples the move and whose policy target (``softmax(logit + sigma(completed Q))`` over the
  root's candidates, Gumbel MuZero's) is recorded; the rest get a fast search (``fast_sims``) that
  plays its best move (sampled during the first ``opening`` decisions) and teaches values only. Every
  decision with a choice records its position, the search's root value and, once the game is over,
  its result for the mover (``final_value``). Work items are chunks of games, each dealt and seeded
  from its own index, for any ``patchwork_env.evaluation.backend``: the same games wherever they run.
* **Learner** (``Learner``): the model's layers in torch (``agents.value_distill.ValueNet``); AdamW on mean squared
  value error (targets ``(1 - q_weight) * result + q_weight * root value``) plus the prior's
  cross-entropy against the full searches' targets, over minibatches sampled from a window of the
  newest decisions; the compiled model is read back from it (``to_value_model``) for the next games.

``init_model`` makes the starting model: the greedy prior exactly (zero move-kind logits, greedy's
term weights over the prior's temperature), and a value of 0 everywhere (``init="scratch"``) or a
given value model's.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from agents.value_distill import ValueNet, perceptron
from patchwork_env.core import rules
from patchwork_env.core.files import write_atomic
from patchwork_env.core.validate import check_state_rows
from patchwork_env.envs.observation import observe_movers
from patchwork_env.evaluation.arena import deal
from patchwork_env.players.batched_search import final_value
from patchwork_env.players.compiled_search import CompiledSearch, TreeResult
from patchwork_env.players.heuristic import GROUP_OF_ACTION, NUM_FEATURES, NUM_GROUPS, action_terms
from patchwork_env.players.search_config import SearchConfig
from patchwork_env.players.value_model import ValueModel

IntArray = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Records:
    """Decisions of self-play games, one row each; the policy columns are meaningful where ``full``."""

    states: IntArray
    """(N, STATE_LEN) the positions."""
    full: BoolArray
    """(N,) whether a full search chose the move (its policy target is recorded)."""
    actions: IntArray
    """(N, K) the root's candidate moves, -1 beyond the last."""
    targets: F32
    """(N, K) the search's policy target over them."""
    terms: F32
    """(N, K, 9) the terms of the position after each candidate (``heuristic.position_features``),
    less their mean over the position's candidates (the prior's softmax does not see a common shift)."""
    values: F32
    """(N,) the search's value of the position, from its mover's side."""
    results: F32
    """(N,) the game's result for the position's mover (``final_value``)."""
    games: IntArray
    """(N,) the game's index in its iteration."""

    def __len__(self) -> int:
        return len(self.states)

    @staticmethod
    def concat(parts: list[Records], width: int) -> Records:
        if not parts:
            k = NUM_GROUPS * width
            return Records(
                np.zeros((0, rules.STATE_LEN), np.int64), np.zeros(0, np.bool_), np.zeros((0, k), np.int64),
                np.zeros((0, k), np.float32), np.zeros((0, k, NUM_FEATURES), np.float32), np.zeros(0, np.float32),
                np.zeros(0, np.float32), np.zeros(0, np.int64),
            )  # fmt: skip
        return Records(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Records)))

    def take(self, rows: IntArray) -> Records:
        return Records(*(getattr(self, f.name)[rows] for f in fields(Records)))

    def save(self, path: str) -> None:
        """Written whole or not at all (``.npz``, compressed)."""
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **{f.name: getattr(self, f.name) for f in fields(Records)})
        write_atomic(path, buffer.getvalue())

    @staticmethod
    def load(path: str, width: int | None = None) -> Records:
        """A file ``save`` wrote, checked (``check``) before any compiled code reads it; anything else is a
        ``RecordsError`` naming the file and what is wrong."""
        try:
            with np.load(path, allow_pickle=False) as data:
                records = Records(*(data[f.name] for f in fields(Records)))
            records.check(width)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise RecordsError(f"{path} is not a decisions file of this run: {exc}") from None
        return records

    def check(self, width: int | None = None) -> None:
        """Raise ``ValueError`` at the first field ``self_play`` cannot have written: a dtype, a shape (N rows
        everywhere, ``NUM_GROUPS * width`` candidates), a state the rules refuse, a candidate out of range, a
        number that is not finite."""
        n = len(self.states) if self.states.ndim else 0
        k = NUM_GROUPS * width if width else (self.actions.shape[1] if self.actions.ndim == 2 else NUM_GROUPS)
        k = k if k % NUM_GROUPS == 0 else NUM_GROUPS  # whole kinds of move (width candidates each)
        shapes = {"states": (n, rules.STATE_LEN), "actions": (n, k), "targets": (n, k), "terms": (n, k, NUM_FEATURES)}
        for f in fields(Records):
            a, dtype = getattr(self, f.name), LAYOUT[f.name]
            if a.dtype != dtype or a.shape != shapes.get(f.name, (n,)):
                raise ValueError(f"{f.name} must be {np.dtype(dtype)} of shape {shapes.get(f.name, (n,))}, "
                                 f"got {a.dtype} of shape {a.shape}")  # fmt: skip
            if dtype == np.float32 and not np.isfinite(a).all():
                raise ValueError(f"{f.name} holds NaN or infinity")
        check_state_rows(self.states)
        if ((self.actions < -1) | (self.actions >= rules.NUM_ACTIONS)).any():
            raise ValueError(f"actions must be -1 (none) or in 0..{rules.NUM_ACTIONS - 1}")


class RecordsError(ValueError):
    """A decisions file (``Records.load``) that ``Records.save`` did not write: the message names it."""


# each field's dtype in a file (``Records.check``)
LAYOUT = {"states": np.int64, "full": np.bool_, "actions": np.int64, "targets": np.float32, "terms": np.float32,
          "values": np.float32, "results": np.float32, "games": np.int64}  # fmt: skip


@dataclass(frozen=True)
class SelfPlay:
    """What every self-play work item shares: the model, the searches' settings, the seed."""

    model: ValueModel
    config: SearchConfig
    """The search (``sims`` is the full search's)."""
    fast_sims: int
    full_share: float
    opening: int
    """Decisions from the start of a game whose move is sampled (Gumbel) even in a fast search."""
    width: int
    seed: int


def self_play(shared: SelfPlay, item: tuple[int, int]) -> Records:
    """Games ``first .. first + count - 1`` of an iteration (``item``): each dealt and searched from
    its own seed (``shared.seed``, the game's index), so the records do not depend on who plays them."""
    first, count = item
    cfg = shared.config
    search = CompiledSearch(cfg, shared.model, width=shared.width, reuse=True)
    k_max = NUM_GROUPS * shared.width
    parts = []
    for game in range(first, first + count):
        rng = np.random.default_rng(np.random.SeedSequence(shared.seed, spawn_key=(game,)))
        state = deal(shared.seed, game).array().copy()
        search.reset()
        rows, full, actions, targets, terms, values, movers = [], [], [], [], [], [], []
        decision = 0
        while not rules.is_terminal(state):
            result, is_full = search_move(search, shared, state, decision, rng)
            k = len(result.actions)
            if k > 1:  # a choice: the search has something to teach
                acts = np.full(k_max, -1, np.int64)
                acts[:k] = result.actions
                target = np.zeros(k_max, np.float32)
                term = np.zeros((k_max, NUM_FEATURES), np.float64)
                if is_full:
                    target[:k] = result.policy[result.actions]
                    action_terms(state, result.actions, k, term)
                    term[:k] -= term[:k].mean(axis=0)
                rows.append(state.copy())
                full.append(is_full)
                actions.append(acts)
                targets.append(target)
                terms.append(term.astype(np.float32))
                values.append(result.root_value)
                movers.append(int(rules.current_player(state)))
                decision += 1
            rules.step_into(state, result.action)
        outcome = {p: final_value(state, p, cfg.margin_weight) for p in (0, 1)}
        n = len(rows)
        parts.append(
            Records(
                np.array(rows, dtype=np.int64).reshape(n, rules.STATE_LEN),
                np.array(full, dtype=np.bool_),
                np.array(actions, dtype=np.int64).reshape(n, k_max),
                np.array(targets, np.float32).reshape(n, k_max),
                np.array(terms, np.float32).reshape(n, k_max, NUM_FEATURES),
                np.array(values, np.float32),
                np.array([outcome[p] for p in movers], np.float32),
                np.full(n, game, np.int64),
            )
        )
    return Records.concat(parts, shared.width)


def search_move(
    search: CompiledSearch, shared: SelfPlay, state: IntArray, decision: int, rng: np.random.Generator
) -> tuple[TreeResult, bool]:
    """A self-play move in ``state``, the ``decision``-th choice of its game: a full search (a share
    ``full_share`` of them) or a fast one, the move sampled in a full search and in the opening; the
    search's result, and whether it was full."""
    is_full = bool(rng.random() < shared.full_share)
    sample = is_full or decision < shared.opening
    sims = shared.config.sims if is_full else shared.fast_sims
    return search.run(state, sims=sims, noise=rng if sample else None), is_full


def results_from(shared: SelfPlay, state: IntArray, decision: int, count: int, key: int) -> F32:
    """(count,) results (+1 won, -1 lost) for the player to move in ``state`` (the ``decision``-th
    choice of its game) of ``count`` self-play games continued from it, each with randomness of its own
    (``shared.seed``, ``key`` and its index). The game has no chance after the deal: how much the
    results of one position differ is the players' sampling, which no value of the position can
    predict."""
    search = CompiledSearch(shared.config, shared.model, width=shared.width, reuse=True)
    mover = int(rules.current_player(state))
    results = np.empty(count, np.float32)
    for i in range(count):
        rng = np.random.default_rng(np.random.SeedSequence(shared.seed, spawn_key=(key, i)))
        s, d = state.copy(), decision
        search.reset()
        while not rules.is_terminal(s):
            result, _ = search_move(search, shared, s, d, rng)
            d += len(result.actions) > 1
            rules.step_into(s, result.action)
        results[i] = np.sign(final_value(s, mover, shared.config.margin_weight))
    return results


def value_ceiling(
    shared: SelfPlay, records: Records, positions: int, continuations: int, var: float
) -> dict[str, Any] | None:
    """The explained variance no value of the position can pass on these games: ``positions`` of the
    ``records`` drawn at random, each played on ``continuations`` times (``results_from``);
    the mean over them of an unbiased estimate of ``E[result | position]^2`` (``q``) gives the least mean
    squared error, ``1 - q``. With its 95% interval (the positions' spread); None with no positions."""
    if positions == 0:
        return None
    rows = np.sort(np.random.default_rng(shared.seed).choice(len(records), min(positions, len(records)), replace=False))
    first = {g: i for i, g in reversed(list(enumerate(records.games.tolist())))}  # each game's first row
    q = []
    for r in rows.tolist():
        res = results_from(shared, records.states[r], r - first[int(records.games[r])], continuations, r)
        q.append((res.sum() ** 2 - continuations) / (continuations * (continuations - 1)))
    half = 1.96 * float(np.std(q, ddof=1) / np.sqrt(len(q))) / var if len(q) > 1 else float("nan")
    ceiling = 1.0 - (1.0 - float(np.mean(q))) / var
    return {"ceiling": ceiling, "ci95": [ceiling - half, ceiling + half], "positions": len(q),
            "continuations": continuations}  # fmt: skip


def prior_logits(kind: torch.Tensor, weights: torch.Tensor, actions: torch.Tensor, terms: torch.Tensor) -> torch.Tensor:
    """(B, K) the prior's logits of the candidates ``actions`` (-1: none, -inf there): their kind's
    logit plus their ``terms`` weighted by ``weights`` (``heuristic.score_actions_terms``)."""
    groups = torch.from_numpy(GROUP_OF_ACTION)[actions.clamp(min=0)]
    logits = kind.gather(1, groups) + (terms * weights.unsqueeze(1)).sum(-1)
    return logits.masked_fill(actions < 0, -torch.inf)


@dataclass
class Losses:
    value: float
    """Mean squared error against the value targets."""
    policy: float
    """Cross-entropy of the prior against the full searches' targets."""
    agreement: float
    """Share of full-search positions whose most probable candidate under the prior is the target's."""


class Learner:
    """The model being trained: its torch layers, their optimizer, the value target's mix."""

    def __init__(self, model: ValueModel, prior_temp: float, lr: float, weight_decay: float, q_weight: float) -> None:
        self.net = ValueNet.of(model, prior_temp)
        self.optimizer = torch.optim.AdamW(self.net.parameters(), lr=lr, weight_decay=weight_decay)
        self.q_weight = q_weight

    def losses(self, batch: Records) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The batch's value loss, policy loss (over its full-search rows; 0 without) and agreement."""
        x = torch.from_numpy(observe_movers(batch.states))
        value, kind, weights = self.net(x)
        target = torch.from_numpy((1 - self.q_weight) * batch.results + self.q_weight * batch.values)
        value_loss = ((value - target) ** 2).mean()
        rows = torch.from_numpy(np.flatnonzero(batch.full))
        if len(rows) == 0:
            return value_loss, torch.zeros(()), torch.zeros(())
        actions = torch.from_numpy(batch.actions)[rows]
        logits = prior_logits(kind[rows], weights[rows], actions, torch.from_numpy(batch.terms)[rows])
        logp = torch.log_softmax(logits, dim=-1)
        pi = torch.from_numpy(batch.targets)[rows]
        policy_loss = -(pi * torch.where(actions >= 0, logp, torch.zeros_like(logp))).sum(-1).mean()
        agreement = (logits.argmax(-1) == pi.argmax(-1)).float().mean()
        return value_loss, policy_loss, agreement

    def step(self, batch: Records, max_grad_norm: float) -> Losses:
        value_loss, policy_loss, agreement = self.losses(batch)
        self.optimizer.zero_grad()
        (value_loss + policy_loss).backward()  # type: ignore[no-untyped-call]  # torch leaves backward untyped
        nn.utils.clip_grad_norm_(self.net.parameters(), max_grad_norm)
        self.optimizer.step()
        return Losses(float(value_loss.detach()), float(policy_loss.detach()), float(agreement))

    def measure(self, records: Records, chunk: int = 4096) -> Losses:
        """The losses over ``records`` (e.g. held-out games), without training."""
        sums, weights = np.zeros(3), np.zeros(3)
        with torch.no_grad():
            for i in range(0, len(records), chunk):
                part = records.take(np.arange(i, min(i + chunk, len(records))))
                v, p, a = self.losses(part)
                n_full = int(part.full.sum())
                sums += [float(v) * len(part), float(p) * n_full, float(a) * n_full]
                weights += [len(part), n_full, n_full]
        return Losses(*(sums / np.maximum(weights, 1)))

    def model(self) -> ValueModel:
        return self.net.to_value_model(heads=True)


def init_model(hidden: tuple[int, int], prior_temp: float, seed: int, value: ValueModel | None = None) -> ValueModel:
    """The starting model: the greedy prior at ``prior_temp`` exactly (zero kind logits and placement
    weights from the hidden layer, greedy's term weights as the bias), with ``value``'s layers, or
    (None) fresh layers of sizes ``hidden`` whose value is 0 everywhere (a zero output layer)."""
    if value is None:
        fresh = perceptron(hidden, seed).to_value_model()
        h2 = hidden[1]
        value = ValueModel(
            fresh.w1, fresh.b1, fresh.w2, fresh.b2, np.zeros((h2, 1), np.float32), np.zeros(1, np.float32)
        )
    h2 = value.hidden[1]
    _, bf = value.placement(prior_temp)  # without a placement head: greedy's weights
    return ValueModel(
        value.w1, value.b1, value.w2, value.b2, value.w3, value.b3,
        np.zeros((h2, NUM_GROUPS), np.float32), np.zeros(NUM_GROUPS, np.float32),
        np.zeros((h2, NUM_FEATURES), np.float32), np.ascontiguousarray(bf, dtype=np.float32),
    )  # fmt: skip
