"""The self-play opponent pool: past snapshots of the learner plus ``random`` and ``greedy``.

Schedule (drawn per game, when the game is dealt):

- with probability ``latest_prob`` the latest learner plays both seats (``SELF``): both seats'
  decisions are trained on;
- otherwise the learner takes a random seat and the other seat is drawn from the pool with the
  weights ``random_weight``, ``greedy_weight`` and ``snapshot_weight`` (the latter shared by the
  snapshots, one drawn uniformly); with no snapshot yet, its weight falls back to ``SELF``.

Snapshots are added by the trainer (every ``snapshot_every`` updates) and the oldest is dropped
beyond ``size``. Their weights are stored rounded to float16 (a checkpoint carries the whole pool
in a few MB) and played with exactly those rounded weights, so a resumed run plays the same pool.

Acting: ``act`` decides for the rows of the vector engine whose acting seat belongs to the pool,
grouped by opponent: one forward pass per snapshot, one batched call for ``greedy`` and for
``random``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet, prior_for, sample_actions
from patchwork_env.players.policy import NetworkAgent
from patchwork_env.players.random import RandomAgent

SELF = -1
RANDOM = -2
GREEDY = -3
FIXED_NAMES = {SELF: "self", RANDOM: "random", GREEDY: "greedy"}
IntArray = npt.NDArray[np.int64]


@dataclass
class Snapshot:
    """A frozen copy of the learner: its id (increasing), the update it was taken at, its net."""

    id: int
    update: int
    net: PatchworkNet


class OpponentPool:
    """Opponents for the learner; codes: ``SELF``, ``RANDOM``, ``GREEDY`` or a snapshot id (>= 0)."""

    def __init__(
        self,
        net_config: NetConfig,
        size: int,
        latest_prob: float,
        random_weight: float,
        greedy_weight: float,
        snapshot_weight: float,
    ) -> None:
        self.net_config = net_config
        self.size = size
        self.latest_prob = latest_prob
        self.weights = np.array([random_weight, greedy_weight, snapshot_weight], dtype=np.float64)
        self.snapshots: list[Snapshot] = []
        self._next_id = 0
        self._random = RandomAgent()
        self._greedy: Any = None
        self.latest: PatchworkNet | None = None  # plays SELF games in single-agent envs (set_latest)

    @classmethod
    def of(cls, net_config: NetConfig, settings: Any) -> OpponentPool:
        """A pool with the PPO trainers' settings (``train.config.PPOConfig``: ``pool_size``,
        ``latest_prob`` and the three weights, under the same names)."""
        weights = (settings.random_weight, settings.greedy_weight, settings.snapshot_weight)
        return cls(net_config, settings.pool_size, settings.latest_prob, *weights)

    # --- membership ---------------------------------------------------------------------------
    def add(self, net: PatchworkNet, update: int) -> Snapshot:
        """Freeze a float16-rounded copy of ``net``; drop the oldest snapshot beyond ``size``."""
        state = {k: v.detach().to(torch.float16) for k, v in net.state_dict().items()}
        snap = Snapshot(self._next_id, update, self._materialise(state))
        self._next_id += 1
        self.snapshots.append(snap)
        del self.snapshots[: max(0, len(self.snapshots) - self.size)]
        return snap

    def _materialise(self, half_state: dict[str, torch.Tensor]) -> PatchworkNet:
        net = PatchworkNet(self.net_config)
        net.load_state_dict({k: v.to(torch.float32) for k, v in half_state.items()})
        net.eval()
        for p in net.parameters():
            p.requires_grad_(False)
        return net

    def set_latest(self, net: PatchworkNet) -> None:
        """A frozen copy of the learner that plays ``SELF`` games in ``act`` (single-agent envs,
        where the learner cannot take both seats)."""
        if self.latest is None:
            self.latest = self._materialise({k: v.detach() for k, v in net.state_dict().items()})
        else:
            self.latest.load_state_dict(net.state_dict())

    def ids(self) -> list[int]:
        return [s.id for s in self.snapshots]

    def name(self, code: int) -> str:
        if code in FIXED_NAMES:
            return FIXED_NAMES[code]
        return "snapshot"

    # --- schedule -----------------------------------------------------------------------------
    def draw(self, n: int, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
        """Opponent codes and the learner's seat (0/1; meaningless for SELF) for ``n`` new games."""
        weights = self.weights.copy()
        if not self.snapshots:
            weights[2] = 0.0
        kinds = np.array([RANDOM, GREEDY, 0], dtype=np.int64)
        codes = np.full(n, SELF, dtype=np.int64)
        pooled = rng.random(n) >= self.latest_prob
        if weights.sum() > 0:
            picks = rng.choice(3, size=n, p=weights / weights.sum())
            codes = np.where(pooled, kinds[picks], SELF)
            snap = pooled & (picks == 2)
            if snap.any():
                ids = np.array(self.ids(), dtype=np.int64)
                codes[snap] = ids[rng.integers(len(ids), size=int(snap.sum()))]
        seats = rng.integers(2, size=n).astype(np.int64)
        return codes, seats

    def replace_missing(self, codes: IntArray) -> IntArray:
        """Codes of dropped snapshots replaced by the newest snapshot (or SELF if none)."""
        alive = set(self.ids())
        newest = self.snapshots[-1].id if self.snapshots else SELF
        out = codes.copy()
        for k, code in enumerate(codes.tolist()):
            if code >= 0 and code not in alive:
                out[k] = newest
        return out

    # --- acting -------------------------------------------------------------------------------
    @torch.no_grad()
    def act(
        self,
        codes: IntArray,
        states: IntArray,
        masks: npt.NDArray[np.bool_],
        obs: npt.NDArray[np.float32],
        rng: np.random.Generator,
        generator: torch.Generator,
    ) -> IntArray:
        """Actions for rows whose acting seat is pool opponent ``codes[k]`` (``SELF`` only once
        ``set_latest`` has been called)."""
        out = np.empty(len(codes), dtype=np.int64)
        by_id = {s.id: s.net for s in self.snapshots}
        if self.latest is not None:
            by_id[SELF] = self.latest
        for code in np.unique(codes).tolist():
            rows = np.flatnonzero(codes == code)
            if code == RANDOM:
                out[rows] = self._random.act_batch(states[rows], masks[rows], rng)
            elif code == GREEDY:
                out[rows] = self.greedy().act_batch(states[rows], masks[rows], rng)
            elif code in by_id:
                net = by_id[code]
                prior = prior_for(net, states[rows], masks[rows])
                logits, _ = net(torch.from_numpy(obs[rows]), torch.from_numpy(masks[rows]), prior)
                out[rows] = sample_actions(logits, generator).numpy()
            else:
                raise ValueError(f"opponent code {code} is not in the pool (snapshots {self.ids()})")
        return out

    def agent(self, code: int) -> Any:
        """Pool opponent ``code`` as one arena agent (the opponent of a whole single-agent env): ``random``,
        ``greedy``, or a snapshot or the latest learner (``SELF``, once ``set_latest`` was called) sampling
        from its policy."""
        if code == RANDOM:
            return "random"
        if code == GREEDY:
            return self.greedy()
        if code == SELF and self.latest is not None:
            return NetworkAgent(self.latest, deterministic=False, name="latest")
        snap = next((s for s in self.snapshots if s.id == code), None)
        if snap is None:
            raise ValueError(f"opponent code {code} is not in the pool (snapshots {self.ids()})")
        return NetworkAgent(snap.net, deterministic=False, name=f"snapshot-{snap.update}")

    def greedy(self) -> Any:
        if self._greedy is None:
            from patchwork_env.players.registry import make_agent

            self._greedy = make_agent("greedy")
        return self._greedy

    # --- checkpoints --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "next_id": self._next_id,
            "snapshots": [
                {
                    "id": s.id,
                    "update": s.update,
                    "weights": {k: v.to(torch.float16) for k, v in s.net.state_dict().items()},
                }
                for s in self.snapshots
            ],
        }

    def load_state_dict(self, data: dict[str, Any]) -> None:
        self._next_id = int(data["next_id"])
        self.snapshots = [
            Snapshot(int(s["id"]), int(s["update"]), self._materialise(s["weights"])) for s in data["snapshots"]
        ]
