"""Distilling a search teacher's *which-move* decisions into the policy network (a warm start).

A Patchwork decision is two choices: which kind of move (buy the patch in market slot 0, 1 or 2,
place the leather patch, or advance) and, for a buy, where the patch goes. The greedy prior of the
network (``NetConfig.prior_scale > 0``) already places patches the way ``greedy`` does; what a
search such as ``mcts`` adds over greedy is mostly the first choice (MCTS itself only searches
advance plus each patch at greedy's best placement). So:

* **Positions** come from greedy self-play on the vector engine with a softmax temperature
  (``sample_positions``), and then, round by round (DAgger), from the network's own games against
  greedy and against itself (``student_positions``): the positions the student actually reaches,
  which greedy self-play never shows the teacher (for example both players waiting).
* **Targets**: the teacher (any agent spec, normally ``mcts:sims=100``) searches each position
  once; the target is its root visit share per *group* of moves (``GROUP_OF_ACTION``: slot 0, 1,
  2, leather, advance), ``az``'s policy target per group (``last_policy``: the Gumbel root's
  improved policy), or the one-hot group of its move for an agent without a search tree
  (``teacher_targets``, ``group_target``). ``legal_groups`` finds the positions with a single legal group, which the
  trainer drops (the mask decides them). Labelling runs in worker processes (or Ray tasks); each
  position has its own random stream, so the targets do not depend on the number of workers.
  Soft targets, because a search's visit shares are often split between two kinds of move.
* **Loss**: cross-entropy between the teacher's distribution and the network's probability of each
  group (the log-sum-exp of its logits over the group's actions).
* **Only the group choice is trained** (``group_parameters``): the placement-only parts of the
  buy head and the learned correction of the prior's weights stay as they are, so placements stay
  the prior's (the shared trunk still moves the small residual placement logit a little):
  retrained against a search teacher, the placements got worse. The network needs
  ``NetConfig.group_scale`` to follow the teacher: without it the prior's group-level logits
  (score points x ``prior_scale``) cannot be undone. ``train.distill`` runs it all
  (``configs/dagger.yaml``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from patchwork_env.core import rules
from patchwork_env.core.actions import IllegalActionError, as_action_id
from patchwork_env.core.state import GameState
from patchwork_env.core.validate import check_state_rows
from patchwork_env.envs.observation import observe_movers
from patchwork_env.envs.vector import VectorGames
from patchwork_env.evaluation.backend import Backend, LocalBackend
from patchwork_env.evaluation.games import AgentError
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, NUM_GROUPS, greedy_batch, rng_state
from patchwork_env.players.network import GROUP_BOUNDS, GROUP_OF_ACTION, PatchworkNet, prior_for
from patchwork_env.players.policy import NetworkAgent
from patchwork_env.players.registry import make_agent

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

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


def student_positions(num: int, seed: int, net: PatchworkNet, mirror: bool = False, num_games: int = 128) -> IntArray:
    """``num`` positions from games of the network ``net`` (the student), where greedy self-play
    does not lead (DAgger): against ``greedy`` (deterministic; the network's seat alternates game
    by game and it plays its most probable move), or with ``mirror`` against itself (both seats
    sample from its policy, so games differ). Every decision of ``num_games`` games played side by
    side, finished games dealt again."""
    if num < 1 or num_games < 1:
        raise ValueError(f"need num >= 1 and num_games >= 1; got {num}, {num_games}")
    student = NetworkAgent(net, deterministic=not mirror)
    games = VectorGames(num_games, seed=seed)
    stream = rng_state(seed)
    rng = np.random.default_rng(seed)
    seat = np.arange(num_games) % 2  # the student's seat in each game (ignored in a mirror)
    actions = np.empty(num_games, dtype=np.int64)
    out = np.empty(((num + num_games - 1) // num_games * num_games, rules.STATE_LEN), dtype=np.int64)
    for start in range(0, len(out), num_games):
        out[start : start + num_games] = games.states
        turn = np.ones(num_games, dtype=np.bool_) if mirror else games.current_player == seat
        if not turn.all():
            greedy_batch(games.states, DEFAULT_WEIGHTS, 0.0, stream, actions)
        rows = np.flatnonzero(turn)
        if rows.size:
            actions[rows] = student.act_batch(games.states[rows], games.masks[rows], rng)
        done = games.step(actions).done
        seat[done] = 1 - seat[done]
    return out[:num]


def _as_states(states: IntArray) -> IntArray:
    """``states`` as a contiguous (N, STATE_LEN) int64 block of states the rules accept
    (``check_state_rows``), or a clear error (the compiled kernels would read out of bounds)."""
    check_state_rows(states)
    return np.ascontiguousarray(states, dtype=np.int64)


def check_labels(
    states: IntArray, targets: npt.NDArray[Any], held_out: npt.NDArray[np.bool_] | None = None
) -> tuple[IntArray, FloatArray]:
    """Labelled positions as distillation reads them, checked before any compiled code does: (N, STATE_LEN)
    states the rules accept, their (N, 5) target distributions or (N,) group labels (``_as_targets``), and
    ``held_out`` None or (N,) bools; the states and the targets as distributions, else a ValueError."""
    states, dist = _as_states(states), _as_targets(targets)
    if len(states) != len(dist):
        raise ValueError(f"states and targets differ in length: {len(states)} vs {len(dist)}")
    held = np.asarray(held_out if held_out is not None else np.zeros(len(states), np.bool_))
    if held.shape != (len(states),) or held.dtype != np.bool_:
        raise ValueError(f"held_out must be ({len(states)},) bools, got {held.dtype} of shape {held.shape}")
    return states, dist


def held_out(n: int, seed: int, share: float = 0.1) -> npt.NDArray[np.bool_]:
    """A random ``share`` of ``n`` positions (at least one) that the fits never train on."""
    chosen = np.zeros(n, dtype=np.bool_)
    chosen[np.random.default_rng(seed).permutation(n)[: max(1, round(share * n))]] = True
    return chosen


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


def _label(job: tuple[int, IntArray]) -> FloatArray:
    index, row = job
    agent = _TEACHER["agent"]
    reset = getattr(agent, "reset", None)
    if callable(reset):
        reset()  # positions are unrelated: no tree (or other memory) carries over
    rng = np.random.default_rng(np.random.SeedSequence(_TEACHER["seed"], spawn_key=(index,)))
    state = GameState._wrap(row.copy())
    try:  # the engine's reason (it names the move), if the teacher's answer is not a legal move
        action = as_action_id(agent.act(state, rng))
        state.step(action)
    except IllegalActionError as exc:
        spec = _TEACHER["key"][0]
        raise AgentError(f"the teacher {spec} played no legal move in labelled position {index}: {exc}", spec) from None
    return group_target(action, getattr(agent, "last_policy", None), getattr(agent, "last_visits", None))


def group_target(
    action: int, policy: npt.NDArray[Any] | None = None, visits: list[tuple[int, int]] | None = None
) -> FloatArray:
    """(5,) a teacher's choice of move kind: its ``policy`` target summed per group (``az``'s Gumbel
    policy: its root visits follow sequential halving's schedule, not the moves' worth), else its
    root ``visits`` per group (``mcts``), else (none given, or nothing searched: a single legal move)
    the one-hot group of its ``action``."""
    target: FloatArray = np.zeros(NUM_GROUPS)
    if policy is not None and policy.sum() > 0:
        target += np.bincount(GROUP_OF_ACTION, weights=policy, minlength=NUM_GROUPS)
    else:
        for candidate, n in visits or []:
            target[GROUP_OF_ACTION[candidate]] += n
        if target.sum() <= 0:
            target[GROUP_OF_ACTION[action]] = 1.0
    out: FloatArray = target / target.sum()
    return out


def _label_chunk(shared: tuple[str, int], jobs: list[tuple[int, IntArray]]) -> list[FloatArray]:
    """A chunk of positions labelled on a backend's worker (the teacher is built once per worker)."""
    if _TEACHER.get("key") != shared:
        _init_labeller(*shared)
    return [_label(job) for job in jobs]


def teacher_targets(
    states: IntArray,
    teacher: str,
    seed: int = 0,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
    backend: Backend | None = None,
) -> FloatArray:
    """(N, 5) the choice of move kind ``teacher`` (an agent spec) makes in each position, as a
    distribution over the groups (``group_target``): ``az``'s policy target per group, ``mcts``'s
    root visit shares per group, any other agent's the one-hot group of its move. The same targets
    for any number of ``workers`` (processes; 1 labels in this process) and on a ``backend``
    (``patchwork_env.evaluation.backend``: chunks of positions as its tasks, instead of ``workers``).
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
        return np.zeros((0, NUM_GROUPS))
    chunk = max(1, min(64, len(jobs) // (4 * workers)))
    chunks = [jobs[k : k + chunk] for k in range(0, len(jobs), chunk)]
    out = np.empty((len(jobs), NUM_GROUPS))
    parts = (backend or LocalBackend(workers)).map(_label_chunk, (teacher, seed), chunks)
    for part, labels in zip(chunks, parts, strict=True):
        out[[index for index, _ in part]] = labels
        if progress is not None:
            progress(len(part))
    return out


def _as_targets(targets: npt.NDArray[Any]) -> FloatArray:
    """(N, 5) distributions from distributions or group labels, or a clear error."""
    arr = np.asarray(targets)
    if arr.ndim == 1:
        if arr.dtype.kind not in "iu" or ((arr < 0) | (arr >= NUM_GROUPS)).any():
            raise ValueError(f"group labels must be integers in [0, {NUM_GROUPS}), got {sorted(set(arr.tolist()))[:8]}")
        one_hot: FloatArray = np.eye(NUM_GROUPS)[arr]
        return one_hot
    if arr.ndim != 2 or arr.shape[1] != NUM_GROUPS:
        raise ValueError(f"targets must be (N,) group labels or (N, {NUM_GROUPS}) distributions, got shape {arr.shape}")
    dist = arr.astype(np.float64)
    if not np.isfinite(dist).all() or (dist < 0).any() or not np.allclose(dist.sum(1), 1.0, atol=1e-6):
        raise ValueError("target distributions must be finite, non-negative and sum to 1 in every row")
    return dist


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
    targets: npt.NDArray[Any],
    epochs: int,
    lr: float,
    seed: int = 0,
    batch_size: int = 256,
    val_share: float = 0.1,
    log: Callable[[DistillStats], None] | None = None,
    held_out: npt.NDArray[np.bool_] | None = None,
) -> list[DistillStats]:
    """Train ``net``'s group choice on (position, teacher target) pairs with Adam: ``targets`` are
    (N, 5) distributions over the groups (``teacher_targets``) or (N,) group labels. A
    ``val_share`` of the positions is held out for the statistics (the epoch-0 entry is the
    untrained net; accuracy: the net's most probable group is the target's). ``held_out`` (N,)
    bool: these positions instead (DAgger rounds keep earlier rounds' held-out positions out of
    training)."""
    states, dist = check_labels(states, targets, held_out)
    if len(states) < 2:
        raise ValueError(f"distillation needs at least 2 labelled positions, got {len(states)}")
    n = len(states)
    masks = _legal_masks(states)
    obs = observe_movers(states)
    if (dist[~_groups_of(masks)] > 0).any():
        raise ValueError(
            "a target puts mass on a group with no legal action in its position (targets and states out of step?)"
        )
    target = torch.from_numpy(dist.astype(np.float32))
    best = torch.from_numpy(dist.argmax(1))

    rng = np.random.default_rng(seed)
    if held_out is None:
        order = rng.permutation(n)
        n_val = max(1, round(val_share * n))
        val, train = order[:n_val], order[n_val:]
    else:
        if not held_out.any():
            raise ValueError("held_out must hold at least one True (the positions the statistics measure)")
        val, train = np.flatnonzero(held_out), rng.permutation(np.flatnonzero(~held_out))
    if len(train) == 0:
        raise ValueError("no positions left to train on after the held-out share")

    def loss_on(rows: IntArray) -> tuple[torch.Tensor, torch.Tensor]:
        logits, _ = net(
            torch.from_numpy(obs[rows]), torch.from_numpy(masks[rows]), prior_for(net, states[rows], masks[rows])
        )
        g = group_logits(logits)
        loss = -(target[rows] * torch.log_softmax(g, 1)).sum(1).mean()
        return loss, (g.argmax(1) == best[rows]).float().mean()

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
    "check_labels",
    "distill",
    "group_logits",
    "group_parameters",
    "held_out",
    "legal_groups",
    "sample_positions",
    "student_positions",
    "teacher_targets",
]
