"""AlphaZero's actors and learner, each small: self-play games, a replay buffer, one learning step.

* ``play_games(search, num_games, seed, temp_plies)`` plays ``num_games`` fresh deals side by side,
  every decision searched by one ``BatchedSearch.run`` call over all unfinished games (so every
  simulation step is one forward pass over the batch), and returns the ``Samples``: each decision's
  state, its policy target (a distribution over the legal actions) and the final value of the game
  from the mover's side (with ``root_value_weight`` w > 0: ``(1 - w) * final value + w * the
  search's root value``, the search's estimate lowering the single result's variance). For the
  first ``temp_plies`` decisions of a game the move is drawn from the policy target (temperature
  1), afterwards it is the search's choice. A function of a number of games and a seed, so that
  another backend (processes, Ray) can run it elsewhere: game ``g`` of a seed has its deal and
  random stream from ``(seed, g)`` whatever else is played beside it, so ``first`` plays games
  ``first, first + 1, ...`` of a larger set (a chunk; ``agents.az_backend``).
* ``greedy_value_samples`` plays greedy self-play games for the value head's warm-up: a network
  with the greedy prior starts with a good policy and a meaningless value, and the search needs both.
* ``ReplayBuffer``: the newest ``capacity`` samples, uniform minibatches.
* ``learn_step``: cross-entropy to the policy targets + mean squared error to the values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from patchwork_env.core import rules
from patchwork_env.core.state import new_game
from patchwork_env.players.az_search import BatchedSearch, final_value
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, greedy_batch, rng_state
from patchwork_env.players.network import PatchworkNet, net_inputs

IntArray = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]


@dataclass
class Samples:
    """Training positions: states (N, STATE_LEN), policy targets (N, 2026), values (N,)."""

    states: IntArray
    policies: F32
    values: F32

    def __len__(self) -> int:
        return len(self.states)


def deal_states(num_games: int, seed: int, first: int = 0) -> IntArray:
    """``num_games`` fresh deals (rows of game states) of games ``first, first + 1, ...``; deal ``g``
    from seed stream ``(seed, g)``."""
    return np.stack(
        [
            new_game(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(g,)))).array()
            for g in range(first, first + num_games)
        ]
    )


def play_games(
    search: BatchedSearch,
    num_games: int,
    seed: int,
    temp_plies: int,
    first: int = 0,
    root_value_weight: float = 0.0,
) -> tuple[Samples, dict[str, float]]:
    """Self-play ``num_games`` deals (games ``first, first + 1, ...`` of ``seed``) to the end with
    root noise; the samples (game by game) and statistics. Each sample's value target is
    ``(1 - root_value_weight) * the game's final value + root_value_weight * the search's root value``,
    both from the mover's side."""
    if not 0.0 <= root_value_weight <= 1.0:
        raise ValueError(f"root_value_weight must be in [0, 1], got {root_value_weight}")
    states = deal_states(num_games, seed, first)
    rngs = [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(first + g, 1))) for g in range(num_games)]
    evaluations0 = getattr(search.evaluator, "evaluations", 0)
    history: list[list[tuple[IntArray, F32, float]]] = [[] for _ in range(num_games)]
    active = list(range(num_games))
    searches = 0
    while active:
        result = search.run(states[active], [rngs[g] for g in active], noise=True)
        searches += 1
        for k, g in enumerate(active):
            policy = result.policies[k]
            history[g].append((states[g].copy(), policy, float(result.root_values[k])))
            if states[g, rules.PLY] < temp_plies:
                p = policy.astype(np.float64)
                action = int(rngs[g].choice(rules.NUM_ACTIONS, p=p / p.sum()))
            else:
                action = int(result.actions[k])
            if rules.step_into(states[g], action) != rules.OK:  # pragma: no cover - the search only plays legal moves
                raise RuntimeError(f"self-play: the search chose illegal action {action}")
        active = [g for g in active if not rules.is_terminal(states[g])]
    margin_weight = search.config.margin_weight
    rows, policies, values = [], [], []
    for g in range(num_games):
        for state, policy, root_value in history[g]:
            rows.append(state)
            policies.append(policy)
            result_value = final_value(states[g], int(rules.current_player(state)), margin_weight)
            values.append((1.0 - root_value_weight) * result_value + root_value_weight * root_value)
    wins0 = np.mean([rules.winner(states[g]) == 0 for g in range(num_games)])
    stats = {
        "decisions": float(len(rows)),
        "decisions_per_game": len(rows) / num_games,
        "seat0_win_rate": float(wins0),
        "games": float(num_games),
        "leaf_evaluations": float(getattr(search.evaluator, "evaluations", 0) - evaluations0),
    }
    return Samples(np.stack(rows), np.stack(policies), np.asarray(values, dtype=np.float32)), stats


def decisions_to_end(
    states: IntArray, choose: Callable[[IntArray, IntArray, IntArray], None], margin_weight: float
) -> tuple[IntArray, F32, IntArray]:
    """Play every game of ``states`` (rows, stepped in place) to its end; ``choose(block, live,
    out)`` writes into ``out`` the move of each unfinished game (``block``: their states, ``live``:
    their rows). Returns every decision, its final value from the mover's side (``final_value``)
    and its game's row."""
    actions = np.empty(len(states), dtype=np.int64)
    seen: list[IntArray] = []
    owner: list[IntArray] = []
    while True:
        live = np.flatnonzero([not rules.is_terminal(s) for s in states])
        if live.size == 0:
            break
        block = np.ascontiguousarray(states[live])
        seen.append(block.copy())
        owner.append(live)
        choose(block, live, actions[: len(live)])
        for k, g in enumerate(live):
            rules.step_into(states[g], int(actions[k]))
    rows = np.concatenate(seen)
    games = np.concatenate(owner)
    values = [
        final_value(states[g], int(rules.current_player(s)), margin_weight) for s, g in zip(rows, games, strict=True)
    ]
    return rows, np.asarray(values, dtype=np.float32), games


def greedy_value_samples(num_games: int, seed: int, temp: float, margin_weight: float) -> tuple[IntArray, F32]:
    """Every decision of ``num_games`` greedy self-play games (softmax temperature ``temp`` score
    points) and its final value from the mover's side: the value head's warm-up data."""
    stream = rng_state(seed)

    def greedy(block: IntArray, live: IntArray, out: IntArray) -> None:
        greedy_batch(block, DEFAULT_WEIGHTS, temp, stream, out)

    rows, values, _ = decisions_to_end(deal_states(num_games, seed), greedy, margin_weight)
    return rows, values


class ReplayBuffer:
    """The newest ``capacity`` samples (a ring); uniform minibatches from a given generator."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.states = np.zeros((capacity, rules.STATE_LEN), dtype=np.int64)
        self.policies = np.zeros((capacity, rules.NUM_ACTIONS), dtype=np.float32)
        self.values = np.zeros(capacity, dtype=np.float32)
        self.size = 0
        self.next = 0
        self.added = 0

    def add(self, samples: Samples) -> None:
        for k in range(len(samples)):
            self.states[self.next] = samples.states[k]
            self.policies[self.next] = samples.policies[k]
            self.values[self.next] = samples.values[k]
            self.next = (self.next + 1) % self.capacity
            self.size = min(self.size + 1, self.capacity)
        self.added += len(samples)

    def sample(self, batch: int, rng: np.random.Generator) -> Samples:
        idx = rng.integers(self.size, size=batch)
        return Samples(self.states[idx], self.policies[idx], self.values[idx])

    def state_dict(self) -> dict[str, Any]:
        """The samples held (the policy targets sparse: a search's target has few nonzero actions)
        and the ring's position, as tensors (a checkpoint holds them)."""
        rows, cols = np.nonzero(self.policies[: self.size])
        return {
            "states": torch.from_numpy(self.states[: self.size].copy()),
            "policy_index": torch.from_numpy(np.stack([rows, cols]).astype(np.int64)),
            "policy_value": torch.from_numpy(self.policies[rows, cols]),
            "values": torch.from_numpy(self.values[: self.size].copy()),
            "counters": {"size": self.size, "next": self.next, "added": self.added},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back what ``state_dict`` returned (into a buffer of at least its size)."""
        size = int(state["counters"]["size"])
        if size > self.capacity:
            raise ValueError(f"the saved buffer holds {size} samples, this one only {self.capacity}")
        self.states[:size] = state["states"].numpy()
        self.values[:size] = state["values"].numpy()
        self.policies[:size] = 0.0
        rows, cols = state["policy_index"].numpy()
        self.policies[rows, cols] = state["policy_value"].numpy()
        self.size, self.next, self.added = size, int(state["counters"]["next"]), int(state["counters"]["added"])


def learn_step(
    net: PatchworkNet,
    optimizer: torch.optim.Optimizer,
    batch: Samples,
    value_coef: float,
    max_grad_norm: float,
    policy: bool = True,
) -> dict[str, Any]:
    """One gradient step: cross-entropy to the policy targets (unless ``policy=False``: the value
    warm-up) + ``value_coef`` x squared error of the value; the losses as floats."""
    net.train()
    obs, masks, prior = net_inputs(net, batch.states)
    logits, values = net(obs, masks, prior)
    target = torch.from_numpy(batch.values)
    value_loss = torch.mean((values - target) ** 2)
    logp = torch.log_softmax(logits, -1)
    pi = torch.from_numpy(batch.policies)
    policy_loss = -(pi * torch.where(masks, logp, torch.zeros_like(logp))).sum(-1).mean()
    loss = value_coef * value_loss + (policy_loss if policy else 0.0)
    # every gradient cleared, not only the optimizer's: a parameter it does not train (the
    # placement-only ones with train_placements=False) would keep summing gradients into the norm clipped
    net.zero_grad(set_to_none=True)
    loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward untyped
    trained = [p for group in optimizer.param_groups for p in group["params"]]
    torch.nn.utils.clip_grad_norm_(trained, max_grad_norm)
    optimizer.step()
    net.eval()
    entropy_target = -(pi * torch.log(pi.clamp_min(1e-12))).sum(-1).mean()
    return {
        "policy_loss": float(policy_loss.detach()),
        "value_loss": float(value_loss.detach()),
        "policy_kl": float((policy_loss - entropy_target).detach()),
    }
