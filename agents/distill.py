"""Distilling a search teacher's *which-move* decisions into the policy network (a warm start).

A Patchwork decision is two choices: which kind of move (buy the patch in market slot 0, 1 or 2,
place the leather patch, or advance) and, for a buy, where the patch goes. The greedy prior of the
network (``NetConfig.prior_scale > 0``) already places patches the way ``greedy`` does; what a
search such as ``mcts`` adds over greedy is mostly the first choice (MCTS itself only searches
advance plus each patch at greedy's best placement). So:

* **Positions** come from greedy self-play on the vector engine with a softmax temperature
  (``sample_positions``): every decision of every game, the kind of positions the learner meets.
* **Labels**: the teacher (any agent spec, normally ``mcts:sims=100``) plays each position once;
  the label is the *group* of its move (``GROUP_OF_ACTION``: slot 0, 1, 2, leather, advance).
  ``legal_groups`` finds the positions with a single legal group, which the trainer drops (the
  mask decides them). Labelling runs in worker processes; each position has its own random
  stream, so the labels do not depend on the number of workers.
* **Loss**: cross-entropy between the network's probability of each group (the log-sum-exp of
  its logits over the group's actions) and the teacher's group.
* **Only the group choice is trained** (``group_parameters``): the placement-only parts of the
  buy head and the learned correction of the prior's weights stay as they are, so placements stay
  the prior's (the shared trunk still moves the small residual placement logit a little).
  Measured in an offline experiment (53,050 decisions labelled by ``mcts:sims=100``, prior scale
  2, 6 epochs, 200 games against greedy each): training every parameter made the network choose
  better groups but place worse, 45.5% [38.7, 52.4]; that network's group choices with greedy's
  placements won 67.5% [60.7, 73.6]; training only the group choice (this module) won 69.5%
  [62.8, 75.5]. ``configs/selfplay.yaml`` runs it inside ``train.selfplay`` (results in README).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from agents.heuristic import DEFAULT_WEIGHTS, NUM_GROUPS, greedy_batch, rng_state
from agents.network import GROUP_BOUNDS, GROUP_OF_ACTION, PatchworkNet, prior_for
from agents.ray_backend import Backend
from agents.registry import make_agent
from patchwork_env import rules
from patchwork_env.state import GameState
from patchwork_env.vector import VectorGames

IntArray = npt.NDArray[np.int64]

# parameters that only shape the placement inside a group (or the prior's weights): not trained
PLACEMENT_ONLY = ("prior_weights", "place_in", "place_out", "slot_bias", "project", "edge")


def sample_positions(num: int, seed: int, temp: float = 0.5, num_games: int = 256) -> IntArray:
    """``num`` positions (rows of game states) from greedy self-play with softmax temperature
    ``temp`` (score points): every decision of ``num_games`` games played side by side, finished
    games dealt again."""
    if num < 1 or num_games < 1 or temp < 0:
        raise ValueError(f"need num >= 1, num_games >= 1, temp >= 0; got {num}, {num_games}, {temp}")
    games = VectorGames(num_games, seed=seed)
    stream = rng_state(seed)
    actions = np.empty(num_games, dtype=np.int64)
    out = np.empty(((num + num_games - 1) // num_games * num_games, rules.STATE_LEN), dtype=np.int64)
    for start in range(0, len(out), num_games):
        out[start : start + num_games] = games.states
        greedy_batch(games.states, DEFAULT_WEIGHTS, temp, stream, actions)
        games.step(actions)
    return out[:num]


def _as_states(states: IntArray) -> IntArray:
    """``states`` as a contiguous (N, STATE_LEN) int64 block, or a clear error (the compiled
    kernels would read out of bounds)."""
    arr = np.ascontiguousarray(states, dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != rules.STATE_LEN:
        raise ValueError(f"states must have shape (N, {rules.STATE_LEN}) (rows of game states), got {arr.shape}")
    return arr


def legal_groups(states: IntArray) -> npt.NDArray[np.bool_]:
    """(N, 5) which decision groups have a legal action in each position."""
    return _groups_of(_legal_masks(_as_states(states)))


def _legal_masks(states: IntArray) -> npt.NDArray[np.bool_]:
    masks = np.zeros((len(states), rules.NUM_ACTIONS), dtype=np.bool_)
    rules.legal_mask_batch(states, masks, np.zeros(len(states), dtype=np.int64))
    return masks


def _groups_of(masks: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    b = GROUP_BOUNDS
    return np.stack([masks[:, b[g] : b[g + 1]].any(1) for g in range(NUM_GROUPS)], axis=1)


# --- labelling in worker processes ------------------------------------------------------------------
_TEACHER: dict[str, Any] = {}


def _init_labeller(spec: str, seed: int) -> None:
    _TEACHER["agent"] = make_agent(spec)
    _TEACHER["seed"] = seed
    _TEACHER["key"] = (spec, seed)


def _init_worker(spec: str, seed: int) -> None:
    """Runs once in each spawned labelling process: one thread each, the processes share the cores."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _init_labeller(spec, seed)


def _label(job: tuple[int, IntArray]) -> int:
    index, row = job
    agent = _TEACHER["agent"]
    reset = getattr(agent, "reset", None)
    if callable(reset):
        reset()  # positions are unrelated: no tree (or other memory) carries over
    rng = np.random.default_rng(np.random.SeedSequence(_TEACHER["seed"], spawn_key=(index,)))
    return int(GROUP_OF_ACTION[agent.act(GameState._wrap(row.copy()), rng)])


def _label_chunk(shared: tuple[str, int], jobs: list[tuple[int, IntArray]]) -> list[int]:
    """A chunk of positions labelled on a backend's worker (the teacher is built once per worker)."""
    if _TEACHER.get("key") != shared:
        _init_labeller(*shared)
    return [_label(job) for job in jobs]


def teacher_groups(
    states: IntArray,
    teacher: str,
    seed: int = 0,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
    backend: Backend | None = None,
) -> IntArray:
    """The group of the move ``teacher`` (an agent spec) makes in each position; the same labels
    for any number of ``workers`` (processes; 1 labels in this process) and on a ``backend``
    (``agents.ray_backend``: chunks of positions as its tasks, instead of ``workers``).
    ``progress(k)`` is called as labels arrive."""
    make_agent(teacher)  # a bad spec fails here, with the registry's message
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    states = _as_states(states)
    finished = np.flatnonzero(~legal_groups(states).any(1))
    if finished.size:
        raise ValueError(f"positions {finished[:8].tolist()} are finished games: there is no move to label")
    jobs = list(enumerate(states))
    if not jobs:
        return np.zeros(0, dtype=np.int64)
    chunk = max(1, min(64, len(jobs) // (4 * workers)))
    labels: Iterator[int]
    if backend is not None:
        chunks = [jobs[k : k + chunk] for k in range(0, len(jobs), chunk)]
        labels = (label for part in backend.map(_label_chunk, (teacher, seed), chunks) for label in part)
        out = _collect(labels, len(jobs), chunk, progress)
    elif workers == 1:
        _init_labeller(teacher, seed)
        labels = map(_label, jobs)
        out = _collect(labels, len(jobs), chunk, progress)
    else:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(workers, initializer=_init_worker, initargs=(teacher, seed)) as pool:
            out = _collect(pool.imap(_label, jobs, chunksize=chunk), len(jobs), chunk, progress)
    return out


def _collect(labels: Iterator[int], n: int, every: int, progress: Callable[[int], None] | None) -> IntArray:
    out = np.empty(n, dtype=np.int64)
    for i, label in enumerate(labels):
        out[i] = label
        if progress is not None and (i + 1) % every == 0:
            progress(every)
    if progress is not None and n % every:
        progress(n % every)
    return out


# --- the student ----------------------------------------------------------------------------------
def group_logits(logits: torch.Tensor) -> torch.Tensor:
    """(B, 5) log-probability mass (up to a constant) of each decision group, from masked logits."""
    return torch.stack(
        [torch.logsumexp(logits[:, GROUP_BOUNDS[g] : GROUP_BOUNDS[g + 1]], dim=1) for g in range(NUM_GROUPS)], dim=1
    )


def group_parameters(net: PatchworkNet) -> list[torch.nn.Parameter]:
    """The parameters distillation trains: all but the placement-only ones (``PLACEMENT_ONLY``)."""
    return [p for name, p in net.named_parameters() if not name.startswith(PLACEMENT_ONLY)]


@dataclass
class DistillStats:
    epoch: int
    train_loss: float
    val_loss: float
    val_accuracy: float
    """Share of held-out positions where the network's most probable group is the teacher's."""


def distill(
    net: PatchworkNet,
    states: IntArray,
    groups: IntArray,
    epochs: int,
    lr: float,
    seed: int = 0,
    batch_size: int = 256,
    val_share: float = 0.1,
    log: Callable[[DistillStats], None] | None = None,
) -> list[DistillStats]:
    """Train ``net``'s group choice on (position, teacher group) pairs with Adam; a ``val_share``
    of the positions is held out for the statistics (the epoch-0 entry is the untrained net)."""
    states = _as_states(states)
    if len(states) != len(groups):
        raise ValueError(f"states and groups differ in length: {len(states)} vs {len(groups)}")
    if len(states) < 2:
        raise ValueError(f"distillation needs at least 2 labelled positions, got {len(states)}")
    n = len(states)
    masks = _legal_masks(states)
    seats = np.empty(n, dtype=np.int64)
    rules.current_player_batch(states, seats)
    obs = np.empty((n, rules.OBS_DIM), dtype=np.float32)
    rules.observe_batch(states, seats, obs)
    groups = np.asarray(groups, dtype=np.int64)
    if ((groups < 0) | (groups >= NUM_GROUPS)).any():
        raise ValueError(f"groups must be in [0, {NUM_GROUPS}), got values {sorted(set(groups.tolist()))[:8]}")
    if not _groups_of(masks)[np.arange(n), groups].all():
        raise ValueError("a label names a group with no legal action in its position (labels and states out of step?)")
    target = torch.from_numpy(groups)

    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    n_val = max(1, round(val_share * n))
    val, train = order[:n_val], order[n_val:]
    if len(train) == 0:
        raise ValueError("no positions left to train on after the held-out share")

    def loss_on(rows: IntArray) -> tuple[torch.Tensor, torch.Tensor]:
        logits, _ = net(
            torch.from_numpy(obs[rows]), torch.from_numpy(masks[rows]), prior_for(net, states[rows], masks[rows])
        )
        g = group_logits(logits)
        return torch.nn.functional.cross_entropy(g, target[rows]), (g.argmax(1) == target[rows]).float().mean()

    def evaluate(epoch: int, train_loss: float) -> DistillStats:
        net.eval()
        with torch.no_grad():
            parts = [loss_on(val[i : i + 1024]) for i in range(0, len(val), 1024)]
        weights = [min(1024, len(val) - i) for i in range(0, len(val), 1024)]
        val_loss = float(np.average([float(p[0]) for p in parts], weights=weights))
        accuracy = float(np.average([float(p[1]) for p in parts], weights=weights))
        stats = DistillStats(epoch, train_loss, val_loss, accuracy)
        if log is not None:
            log(stats)
        return stats

    history = [evaluate(0, float("nan"))]
    trained = group_parameters(net)
    optimizer = torch.optim.Adam(trained, lr=lr)
    for epoch in range(1, epochs + 1):
        net.train()
        losses = []
        shuffled = rng.permutation(train)
        for start in range(0, len(shuffled), batch_size):
            loss, _ = loss_on(shuffled[start : start + batch_size])
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward untyped
            torch.nn.utils.clip_grad_norm_(trained, 0.5)
            optimizer.step()
            losses.append(loss.item())
        history.append(evaluate(epoch, float(np.mean(losses))))
    net.train()
    return history


__all__ = [
    "GROUP_OF_ACTION",
    "NUM_GROUPS",
    "DistillStats",
    "distill",
    "group_logits",
    "group_parameters",
    "legal_groups",
    "sample_positions",
    "teacher_groups",
]
