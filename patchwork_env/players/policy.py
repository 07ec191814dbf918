"""A policy-value network as a player (``network:PATH``; ``ppo:PATH`` is its old name until 0.5.0):
``NetworkAgent`` plays a ``PatchworkNet``'s most probable legal move (``deterministic=True``, the
default; ``most_probable_move``) or samples from its policy, whichever trainer made the network
(PPO, AlphaZero, ExIt, distillation) or the shipped ``pretrained`` one.

``load_network_agent(path)`` plays the network of a checkpoint in the format every trainer writes
(``checkpoint.load_network`` reads, checks and builds it). ``PPOAgent`` and ``load_ppo_agent`` are
the old names of the two, kept for old code until 0.5.0, which removes them.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from patchwork_env.core.state import GameState
from patchwork_env.envs import observation
from patchwork_env.envs.observation import observe_movers
from patchwork_env.players.checkpoint import load_network
from patchwork_env.players.network import GROUP_BOUNDS, MASK_VALUE, PatchworkNet, net_from_config, prior_for


def one_thread_in_workers() -> None:
    """In a worker process (the arena's), torch gets one thread: the other cores run other workers."""
    if multiprocessing.parent_process() is not None:
        torch.set_num_threads(1)


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block on one torch thread, then give back the thread count it had. A search's
    network calls (a few positions each) gain nothing from a second thread, and on a shared
    machine lose several times over (``az`` with 1,000 simulations, one other busy process per
    core: a median 0.50 s per move on one thread, 1.91 s on two); with one thread a time budget buys
    one core's work, as ``mcts``'s does."""
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def kind_policy(logits: torch.Tensor, masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The network's policy over *kinds* of move (advance, buy from slot s, leather), each kind
    played at its most probable placement: (B, 2026) bool, True at each legal kind's placement,
    and (B, 2026) log-probabilities there (the kind's whole mass; ``MASK_VALUE`` elsewhere)."""
    logp = torch.log_softmax(logits.masked_fill(~masks, MASK_VALUE), -1)
    chosen = torch.zeros_like(masks)
    out = torch.full_like(logp, MASK_VALUE)
    rows = torch.arange(len(logp))
    for lo, hi in itertools.pairwise(GROUP_BOUNDS):
        legal = masks[:, lo:hi].any(1)
        part = logp[:, lo:hi].masked_fill(~masks[:, lo:hi], 2 * MASK_VALUE)
        best = part.argmax(1) + int(lo)
        chosen[rows[legal], best[legal]] = True
        out[rows[legal], best[legal]] = torch.logsumexp(part, 1)[legal]
    return chosen, out


def most_probable_move(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """The mode of the network's two-level policy: the most probable kind of move (advance, buy
    from slot s, leather), then its most probable placement (``kind_policy``). (The flat argmax
    would favour advance, whose probability is not spread over placements.)"""
    chosen, logp = kind_policy(logits, masks)
    return logp.masked_fill(~chosen, 3 * MASK_VALUE).argmax(1)


class NetworkAgent:
    """Plays with a ``PatchworkNet``: the policy's most probable move (``most_probable_move``), or
    a sample from the policy (``deterministic=False``)."""

    def __init__(self, net: PatchworkNet, deterministic: bool = True, name: str = "network") -> None:
        self.net = net.eval()
        self.deterministic = deterministic
        self.name = name
        self._obs = np.zeros((1, observation.OBS_DIM), dtype=np.float32)

    @torch.no_grad()
    def _choose(
        self,
        obs: npt.NDArray[np.float32],
        masks: npt.NDArray[np.bool_],
        states: npt.NDArray[np.int64],
        rng: np.random.Generator,
    ) -> npt.NDArray[np.int64]:
        logits, _ = self.net(torch.from_numpy(obs), torch.from_numpy(masks), prior_for(self.net, states, masks))
        if self.deterministic:
            chosen: npt.NDArray[np.int64] = most_probable_move(logits, torch.from_numpy(masks)).numpy()
            return chosen
        scores = logits.numpy().astype(np.float64)
        scores = scores - np.log(-np.log(rng.random(scores.shape).clip(1e-300, 1.0)))
        scores[~masks] = MASK_VALUE * 10  # never an illegal action, whatever the noise
        sampled: npt.NDArray[np.int64] = scores.argmax(axis=1).astype(np.int64)
        return sampled

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        if state.is_terminal:
            raise ValueError(f"{self.name}: the game is over, there is no action to take")
        observation.observe_into(state.array(), state.current_player, self._obs[0])
        mask = np.array(state.legal_action_mask())[None, :]
        return int(self._choose(self._obs, mask, state.array()[None, :], rng)[0])

    def act_batch(
        self, states: npt.NDArray[np.int64], masks: npt.NDArray[np.bool_], rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        states = np.ascontiguousarray(states, dtype=np.int64)
        return self._choose(observe_movers(states), np.asarray(masks, dtype=np.bool_), states, rng)

    # pickled for the arena's worker processes: weights and settings only
    def __getstate__(self) -> dict[str, Any]:
        return {
            "net_config": self.net.config.to_dict(),
            "model": self.net.state_dict(),
            "deterministic": self.deterministic,
            "name": self.name,
        }

    def __setstate__(self, data: dict[str, Any]) -> None:
        one_thread_in_workers()
        net = net_from_config(dict(data["net_config"]))
        net.load_state_dict(data["model"])
        self.__init__(net, data["deterministic"], data["name"])  # type: ignore[misc]


def load_network_agent(path: str, deterministic: bool = True) -> NetworkAgent:
    """The network of the checkpoint at ``path`` (any trainer's) as a player."""
    return NetworkAgent(load_network(path), deterministic=deterministic, name=f"network:{path}")


#: the old names (before the network player was named for what it plays, not for one trainer), removed in 0.5.0
PPOAgent = NetworkAgent
load_ppo_agent = load_network_agent
