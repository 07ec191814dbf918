"""Distillation with DAgger rounds: a search teacher's choice of move kind taught to a greedy-prior
network (``agents.distill``); the recipe of the shipped ``pretrained`` network.

    python -m train.distill --config configs/dagger.yaml
    python -m train.distill --config configs/dagger.yaml --seed 1 --rounds 1
    python -m train.distill --help

Steps, in order (``main`` reads the same way):

1. **Start**: a fresh network with the greedy prior (``net.prior_scale > 0``: the untrained policy
   is a softened greedy) or ``init_checkpoint``; evaluated as round 0.
2. **Round 0**: ``positions`` greedy self-play positions with a choice of move kind, labelled by
   the ``teacher`` (its root visit shares per kind: which market patch, leather or advance; in
   ``workers`` processes or as Ray tasks), then ``epochs`` supervised passes on the kind only
   (placements stay the prior's); 10% of each round's positions are held out.
3. **DAgger rounds** 1..``rounds``: ``dagger_positions`` positions of the network's own games (half
   against greedy, half against itself) labelled and added; training again on every label so far.
4. **Finish**: the final evaluation of the network and of its start on the same fresh deals.

The loop is ``train.loop``'s: step r + 1 is round r (step 0 of the learning curve: the start);
an evaluation every ``eval_every`` rounds; ``--resume`` brings back the network and every label so far.
TensorBoard: ``distill/`` (held-out accuracy and loss per epoch, train loss), ``eval/``.
"""

from __future__ import annotations

import sys

from train.cli import parse_or_exit, run_trainer, train_or_report
from train.config import DistillConfig

if __name__ == "__main__":
    COMMAND_LINE = parse_or_exit(DistillConfig, __doc__)

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from agents.distill import (
    DistillStats,
    check_labels,
    distill,
    held_out,
    legal_groups,
    sample_positions,
    student_positions,
    teacher_targets,
)
from patchwork_env.evaluation.backend import Backend, open_backend
from patchwork_env.players.network import PatchworkNet
from patchwork_env.players.registry import make_agent
from train.config import STATE_LEN
from train.loop import Resumed, Trainer, initial_network, open_run, run_loop, starting_network
from train.run import Run, frozen_copy, preflight
from train.seeds import Stream, stream_seed

HELD_OUT = 0.1  # share of each round's new positions never trained on


def main(cfg: DistillConfig, name: str = "distill") -> dict[str, Any]:
    """Train; returns the summary (``train.run.Run.finish``) with what the distillation measured."""
    preflight(cfg)
    make_agent(cfg.teacher)  # a teacher that does not build stops the run before anything is written
    net = initial_network(cfg)
    with open_backend(cfg.backend, cfg.address or None, cfg.workers) as backend:
        run, resumed = open_run(cfg, name, "round")
        return run_loop(run, Distill(run, net, backend, resumed), cfg.rounds + 1, resumed)


class Distill(Trainer[PatchworkNet, DistillConfig]):
    """The loop's step ``k``: round ``k - 1`` (new labels, then ``epochs`` passes on every label so far)."""

    def __init__(self, run: Run, net: PatchworkNet | None, backend: Backend | None, resumed: Resumed | None) -> None:
        super().__init__(run)
        self.backend = backend
        self.net = starting_network(self.cfg, net, resumed)
        self.start = frozen_copy(self.net)
        self.states = np.zeros((0, STATE_LEN), dtype=np.int64)
        self.targets = np.zeros((0, 5), dtype=np.float64)
        self.held_out = np.zeros(0, dtype=np.bool_)
        self.accuracy: list[list[float]] = []
        self.resume(resumed)

    def step(self, step: int) -> None:
        round_ = step - 1
        states, targets, held = new_labels(self.cfg, self.run, round_, self.net if round_ else None, self.backend)
        self.states = np.concatenate([self.states, states])
        self.targets = np.concatenate([self.targets, targets])
        self.held_out = np.concatenate([self.held_out, held])
        self.accuracy.append(
            train_round(self.cfg, self.run, self.net, self.states, self.targets, self.held_out, round_)
        )

    def evaluate(self, step: int) -> None:
        if self.cfg.eval_opponents:
            self.run.evaluate(self.net, step)

    def state_dict(self) -> dict[str, Any]:
        return {
            "states": torch.from_numpy(self.states),
            "targets": torch.from_numpy(self.targets),
            "held_out": torch.from_numpy(self.held_out),
            "accuracy": self.accuracy,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.held_out, self.accuracy = state["held_out"].numpy(), [list(a) for a in state["accuracy"]]
        self.states, self.targets = check_labels(state["states"].numpy(), state["targets"].numpy(), self.held_out)

    def finish(self) -> tuple[PatchworkNet | None, dict[str, Any]]:
        return None, {
            "teacher": self.cfg.teacher,
            "positions": len(self.states),
            "held_out_accuracy": self.accuracy,
            "label_counts": np.bincount(self.targets.argmax(1), minlength=5).tolist(),
        }


def new_labels(
    cfg: DistillConfig, run: Run, round_: int, net: PatchworkNet | None, backend: Backend | None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Round 0: greedy self-play positions; later rounds: the network's own games. The positions
    that offer a choice of move kind, the teacher's targets in them, and which are held out."""
    seed = round_seed(cfg, round_)
    if net is None:
        states, source = sample_positions(cfg.positions, seed=seed, temp=cfg.temp), "greedy self-play"
    else:
        half = max(1, cfg.dagger_positions // 2)
        states = np.concatenate(
            [student_positions(half, seed, net), student_positions(half, seed + 1, net, mirror=True)]
        )
        source = "the network's games"
    states = states[legal_groups(states).sum(1) > 1]
    t0 = time.time()
    run.log(f"round {round_}: {cfg.teacher} labels {len(states):,} positions of {source}")
    with run.progress_bar(len(states), "pos") as bar:
        targets = teacher_targets(
            states, cfg.teacher, seed=seed, workers=cfg.workers, progress=bar.update, backend=backend
        )
    run.writer.add_scalar("distill/labels_per_second", len(states) / max(time.time() - t0, 1e-9), round_)
    return states, targets, held_out(len(states), seed, HELD_OUT)


def train_round(
    cfg: DistillConfig,
    run: Run,
    net: PatchworkNet,
    states: npt.NDArray[np.int64],
    targets: npt.NDArray[np.float64],
    held_out: npt.NDArray[np.bool_],
    round_: int,
) -> list[float]:
    """``epochs`` passes on every label so far; the held-out accuracy per epoch."""
    seed = round_seed(cfg, round_)
    stats = distill(
        net,
        states,
        targets,
        cfg.epochs,
        cfg.learning_rate,
        seed=seed,
        held_out=held_out,
        log=epoch_log(run, round_ * (cfg.epochs + 1)),
    )
    return [s.val_accuracy for s in stats]


def round_seed(cfg: DistillConfig, round_: int) -> int:
    """The seed of a round's positions, labels, held-out draw and training."""
    return stream_seed(cfg.seed, Stream.DISTILL, *([round_] if round_ else []))


def epoch_log(run: Run, offset: int) -> Callable[[DistillStats], None]:
    """Logs a round's epochs (TensorBoard step ``offset + epoch``: the rounds in sequence)."""

    def log(stats: DistillStats) -> None:
        step = offset + stats.epoch
        run.writer.add_scalar("distill/val_accuracy", stats.val_accuracy, step)
        run.writer.add_scalar("distill/val_loss", stats.val_loss, step)
        if stats.epoch:
            run.writer.add_scalar("distill/train_loss", stats.train_loss, step)
        trained = f"train loss {stats.train_loss:.3f}" if stats.epoch else "before training"
        run.log(
            f"  epoch {stats.epoch}: held-out accuracy {stats.val_accuracy:.3f}, loss {stats.val_loss:.3f} ({trained})"
        )

    return log


def cli(argv: list[str] | None = None) -> int:
    return run_trainer(DistillConfig, main, argv, __doc__)


if __name__ == "__main__":
    sys.exit(train_or_report(main, *COMMAND_LINE))
