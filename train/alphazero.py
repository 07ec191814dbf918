"""AlphaZero-style training: batched search self-play -> replay buffer -> learner.

    python -m train.alphazero --config configs/alphazero.yaml
    python -m train.alphazero --config configs/alphazero_smoke.yaml      # seconds (tests)
    python -m train.alphazero --config configs/alphazero.yaml --seed 1 --search.sims 32
    python -m train.alphazero --help

Steps, in order (``train`` reads the same way):

1. **Start**: a fresh network (with ``prior_scale > 0`` a softened greedy) or ``init_checkpoint``.
2. **Value warm-up**: the greedy prior gives the policy a head start, the value head has none, and
   the search needs both; ``warmup_games`` greedy self-play games train the value head alone.
3. **Iterations**: self-play ``games_per_iteration`` games with the search
   (``agents.az_selfplay.play_games``: one forward pass per simulation step over all games; with
   ``selfplay_chunk`` in chunks of games, and with ``backend=ray`` [``address``] each
   chunk a Ray task: ``agents.az_backend``), add
   the samples to the replay buffer, then ``updates_per_iteration`` learner steps on uniform
   minibatches (policy cross-entropy to the search's targets + value MSE to the game results,
   with ``root_value_weight`` > 0 mixed with the search's root values).
4. **Evaluate and checkpoint** (``train.loop``): every ``eval_every`` iterations the network alone
   (its most probable legal move, as the ``pretrained`` agent plays) against ``eval_opponents`` on
   paired deals, with ``iter_<k>.pt``; ``checkpoints/latest.pt`` every ``checkpoint_every``
   iterations (``--resume`` continues from it: network, optimizer, replay buffer, generators); the
   project's checkpoint format: ``network:PATH`` / ``az:path=PATH`` load them.
5. **Finish**: the final evaluation on fresh deals, ``final.pt``, the learning curve, a summary.

The run folder is ``train.run``'s (TensorBoard: ``selfplay/``, ``losses/``, ``eval/``).
"""

from __future__ import annotations

import sys

from train.cli import parse_or_exit, run_trainer, train_or_report
from train.config import AlphaZeroConfig

if __name__ == "__main__":
    COMMAND_LINE = parse_or_exit(AlphaZeroConfig, __doc__)

import time
from typing import Any

import numpy as np
import torch

from agents.az_backend import play_chunked
from agents.az_selfplay import ReplayBuffer, Samples, greedy_value_samples, learn_step
from agents.distill import group_parameters
from patchwork_env.core import rules
from patchwork_env.evaluation.backend import Backend, open_backend
from patchwork_env.players.az import NetEvaluator
from patchwork_env.players.az_search import BatchedSearch
from patchwork_env.players.network import PatchworkNet, count_parameters
from train.loop import Resumed, Trainer, initial_network, open_run, run_loop
from train.run import Run, frozen_copy, preflight
from train.seeds import Stream, stream_rng, stream_seed


def main(cfg: AlphaZeroConfig, name: str = "alphazero") -> dict[str, Any]:
    """Train; returns the summary (``train.run.Run.finish``). With ``backend=ray`` the
    self-play runs on Ray (``address``: a cluster; empty: a local runtime), joined before anything
    is written."""
    cfg.validate()
    preflight(cfg)
    net = initial_network(cfg)
    with open_backend(cfg.backend, cfg.address or None) as backend:
        run, resumed = open_run(cfg, name, "iteration")
        return run_loop(run, AlphaZero(run, net, backend, resumed), cfg.iterations, resumed)


class AlphaZero(Trainer):
    """The loop's step: one iteration of search self-play into the replay buffer, then learner steps."""

    def __init__(self, run: Run, net: PatchworkNet | None, backend: Backend | None, resumed: Resumed | None) -> None:
        super().__init__(run)
        cfg = run.cfg
        assert isinstance(cfg, AlphaZeroConfig)
        self.cfg = cfg
        self.backend = backend
        # 1. start: a fresh network (seeded), init_checkpoint's, or the resumed one ----------------------
        torch.manual_seed(stream_seed(cfg.seed, Stream.TRAIN))
        self.rng = stream_rng(cfg.seed, Stream.TRAIN)
        self.net = resumed.net if resumed else net if net is not None else PatchworkNet(cfg.net)
        trained = list(self.net.parameters()) if cfg.train_placements else group_parameters(self.net)
        self.optimizer = torch.optim.AdamW(trained, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
        self.buffer = ReplayBuffer(cfg.buffer_size)
        self.games = 0
        run.log(f"network: {count_parameters(self.net):,} parameters; run folder {run.folder}")
        if resumed is None:
            self.value_warmup()
        self.start = frozen_copy(self.net)  # the policy as it starts (the warm-up trains the value head alone)
        self.resume(resumed)
        self.search = BatchedSearch(NetEvaluator(self.net), cfg.search)

    def value_warmup(self) -> None:
        """2. ``warmup_games`` greedy self-play games train the value head alone."""
        cfg = self.cfg
        if not (cfg.warmup_games and cfg.warmup_steps):
            return
        states, values = greedy_value_samples(
            cfg.warmup_games, stream_seed(cfg.seed, Stream.WARMUP), cfg.warmup_temp, cfg.search.margin_weight
        )
        no_policy = np.zeros((cfg.batch_size, rules.NUM_ACTIONS), dtype=np.float32)
        for step in range(cfg.warmup_steps):
            idx = self.rng.integers(len(states), size=cfg.batch_size)
            batch = Samples(states[idx], no_policy, values[idx])
            warm = learn_step(self.net, self.optimizer, batch, cfg.vf_coef, cfg.max_grad_norm, policy=False)
            self.run.writer.add_scalar("warmup/value_loss", warm["value_loss"], step)
        self.run.log(
            f"value warm-up: {len(states)} positions, {cfg.warmup_steps} steps, value loss {warm['value_loss']:.3f}"
        )

    def step(self, step: int) -> None:
        """3. self-play -> buffer -> learner."""
        cfg, writer = self.cfg, self.run.writer
        t0 = time.time()
        seed = stream_seed(cfg.seed, Stream.SELFPLAY, step)
        samples, stats = play_chunked(
            self.search,
            cfg.games_per_iteration,
            seed,
            cfg.temp_plies,
            cfg.selfplay_chunk,
            self.backend,
            cfg.root_value_weight,
        )
        selfplay_seconds = time.time() - t0
        evaluations = stats["leaf_evaluations"]
        self.buffer.add(samples)
        self.games += cfg.games_per_iteration
        t1 = time.time()
        losses: dict[str, Any] = {}
        for _ in range(cfg.updates_per_iteration):
            batch = self.buffer.sample(cfg.batch_size, self.rng)
            losses = learn_step(self.net, self.optimizer, batch, cfg.vf_coef, cfg.max_grad_norm)
        learn_seconds = time.time() - t1
        writer.add_scalar("selfplay/games", self.games, step)
        writer.add_scalar("selfplay/decisions_per_game", stats["decisions_per_game"], step)
        writer.add_scalar("selfplay/leaf_evaluations_per_second", evaluations / selfplay_seconds, step)
        writer.add_scalar("selfplay/seconds", selfplay_seconds, step)
        writer.add_scalar("losses/seconds", learn_seconds, step)
        for key, value in losses.items():
            writer.add_scalar(f"losses/{key}", value, step)
        self.run.log(
            f"iteration {step}: {len(samples)} positions in {selfplay_seconds:.0f} s "
            f"({evaluations / selfplay_seconds:.0f} leaf evals/s), learner {learn_seconds:.0f} s, "
            + ", ".join(f"{k} {v:.3f}" for k, v in losses.items())
        )

    def evaluate(self, step: int) -> None:
        """4. the network alone (its most probable legal move); ``iter_<k>.pt`` beside each evaluation."""
        if step:
            self.run.checkpoint(self.net, f"iter_{step}.pt")
        self.run.evaluate(self.net, step)

    def state_dict(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "buffer": self.buffer.state_dict(),
            "numpy_rng": self.rng.bit_generator.state,
            "games": self.games,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.buffer.load_state_dict(state["buffer"])
        self.rng.bit_generator.state = state["numpy_rng"]
        self.games = int(state["games"])

    def finish(self) -> tuple[PatchworkNet | None, dict[str, Any]]:
        """5. the final evaluation of the network and its start, on fresh deals (``Run.finish``)."""
        return None, {"games": self.games}


def cli(argv: list[str] | None = None) -> int:
    return run_trainer(AlphaZeroConfig, main, argv, __doc__)


if __name__ == "__main__":
    sys.exit(train_or_report(main, *COMMAND_LINE))
