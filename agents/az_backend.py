"""AlphaZero self-play in chunks of games: here, or as the tasks of a backend (Ray).

    samples, stats = play_chunked(search, num_games=64, seed=seed, temp_plies=8, chunk=16, backend=backend)

splits the games into chunks of ``chunk`` games (0: one chunk of all of them) and plays each chunk
with ``agents.az_selfplay.play_games`` (the chunk's games side by side, one forward pass per
simulation step): in this process without a backend, or one chunk per task of an
``patchwork_env.evaluation.backend`` backend. The samples come back game by game, chunk after chunk: the order
of one ``play_games`` call over all the games.

* **Games do not depend on the chunking or the backend.** Game ``g`` of a seed takes its deal and
  its random stream from ``(seed, g)`` (``play_games``' ``first`` offset), wherever it is played.
* **The batch can.** The network evaluates a chunk's leaves as one batch, and a batch of another
  size may round the network's outputs differently in the last bits (torch picks its kernels by
  shape), which can tip a close search decision. So the same chunking gives identical samples
  here and on a backend (tested); another chunking plays the same deals, not necessarily the same
  games.
* **A task builds its search once per worker**: the job carries the network's config and weights
  and the search config; a worker builds the network, ``NetEvaluator`` and ``BatchedSearch`` on
  its first chunk and keeps them for the next chunks of the same job (the same weights, by their
  digest), as ``agents.distill`` builds its teacher once per worker. Workers use one torch thread
  (a task holds one CPU).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agents.az_selfplay import Samples, play_games
from patchwork_env.evaluation.backend import Backend, LocalBackend
from patchwork_env.players.az import NetEvaluator
from patchwork_env.players.az_search import BatchedSearch, SearchConfig
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet

Stats = dict[str, float]


@dataclass(frozen=True)
class SelfPlayJob:
    """What every chunk of one self-play round shares: the network (config and weights), the
    search config, the seed, ``temp_plies`` and ``root_value_weight``; ``digest`` names the network and search."""

    net_config: NetConfig
    weights: dict[str, torch.Tensor]
    search: SearchConfig
    seed: int
    temp_plies: int
    digest: str
    root_value_weight: float = 0.0


def selfplay_job(search: BatchedSearch, seed: int, temp_plies: int, root_value_weight: float = 0.0) -> SelfPlayJob:
    """The job of ``search`` (its evaluator must be a ``NetEvaluator``: the network travels)."""
    evaluator = search.evaluator
    if not isinstance(evaluator, NetEvaluator):
        raise TypeError(f"self-play on a backend needs a NetEvaluator search, got {type(evaluator).__name__}")
    net = evaluator.net
    weights = {k: v.detach().clone() for k, v in net.state_dict().items()}
    h = hashlib.sha256(repr((net.config, search.config)).encode())
    for key, value in weights.items():
        h.update(key.encode())
        h.update(value.numpy().tobytes())
    return SelfPlayJob(net.config, weights, search.config, seed, temp_plies, h.hexdigest(), root_value_weight)


def chunks_of(num_games: int, chunk: int) -> list[tuple[int, int]]:
    """(first game, games) of each chunk of ``chunk`` games (0: one chunk of all ``num_games``)."""
    if num_games < 1 or chunk < 0:
        raise ValueError(f"need num_games >= 1 and chunk >= 0, got {num_games} and {chunk}")
    size = chunk or num_games
    return [(first, min(size, num_games - first)) for first in range(0, num_games, size)]


_WORKER: dict[str, Any] = {}  # the search a worker built for the last job it saw


def _play_chunk(job: SelfPlayJob, chunk: tuple[int, int]) -> tuple[Samples, Stats]:
    """One chunk of games on a backend's worker (the search built once per worker and job)."""
    if _WORKER.get("digest") != job.digest:
        torch.set_num_threads(1)
        net = PatchworkNet(job.net_config)
        net.load_state_dict(job.weights)
        _WORKER.update(digest=job.digest, search=BatchedSearch(NetEvaluator(net), job.search))
    first, count = chunk
    return play_games(_WORKER["search"], count, job.seed, job.temp_plies, first, job.root_value_weight)


def merge(parts: list[tuple[Samples, Stats]]) -> tuple[Samples, Stats]:
    """The chunks' samples concatenated in order, and their statistics summed up."""
    samples = Samples(
        np.concatenate([s.states for s, _ in parts]),
        np.concatenate([s.policies for s, _ in parts]),
        np.concatenate([s.values for s, _ in parts]),
    )
    games = sum(st["games"] for _, st in parts)
    decisions = sum(st["decisions"] for _, st in parts)
    stats = {
        "decisions": decisions,
        "decisions_per_game": decisions / games,
        "seat0_win_rate": sum(st["seat0_win_rate"] * st["games"] for _, st in parts) / games,
        "games": games,
        "leaf_evaluations": sum(st["leaf_evaluations"] for _, st in parts),
    }
    return samples, stats


def play_chunked(
    search: BatchedSearch,
    num_games: int,
    seed: int,
    temp_plies: int,
    chunk: int = 0,
    backend: Backend | None = None,
    root_value_weight: float = 0.0,
) -> tuple[Samples, Stats]:
    """``play_games`` over chunks of ``chunk`` games (0: one call over all the games, exactly
    ``play_games(search, num_games, seed, temp_plies, 0, root_value_weight)``); on ``backend`` one
    task per chunk."""
    chunks = chunks_of(num_games, chunk)
    if backend is not None and not (isinstance(backend, LocalBackend) and backend.workers == 1):
        job = selfplay_job(search, seed, temp_plies, root_value_weight)
        return merge(list(backend.map(_play_chunk, job, chunks)))
    # in this process: ``search`` itself plays (any evaluator; no copy of the network, no thread change)
    if len(chunks) == 1:
        return play_games(search, num_games, seed, temp_plies, 0, root_value_weight)
    return merge([play_games(search, count, seed, temp_plies, first, root_value_weight) for first, count in chunks])


__all__ = ["SelfPlayJob", "chunks_of", "merge", "play_chunked", "selfplay_job"]
