"""Gumbel AlphaZero with the compiled search: the search's own games teach the model at its leaves
and its prior over whole moves, iteration after iteration (``agents.alphazero``).

    python -m train.alphazero --config configs/alphazero.yaml --seed 0 --run-dir runs/az-s0
    python -m train.alphazero --resume runs/az-s0/checkpoints/latest.pt          # continue
    python -m train.alphazero --config configs/alphazero_smoke.yaml             # seconds (tests)
    patchwork evaluate --agents az:value=runs/az-s0/checkpoints/final.npz,width=2,sims=128 az:sims=128

Steps, in order (``AlphaZero`` reads the same way):

1. **Start**: the model ``init_model`` makes: the greedy prior exactly, and a value of 0 everywhere
   (``init: scratch``) or a value model's (``init: v1``).
2. **Self-play**: ``games_per_iteration`` games of the search with the newest model against itself
   (``agents.alphazero.self_play``): a share ``full_share`` of the decisions searched in full
   (``search.sims``; Gumbel root, its move sampled, its policy target recorded), the rest fast
   (``fast_sims``; values only). Chunks of ``chunk`` games on ``workers`` processes or Ray tasks,
   each game seeded by its index: the same games wherever they run.
3. **Learn**: the new decisions join the window (the newest ``window`` decisions, whole
   iterations; ``data/records-<k>.npz``) after the model is measured on them (games it never
   trained on: ``heldout/``); ``reuse * new / batch_size`` Adam steps on minibatches drawn from the
   window (value: mean squared error; prior: cross-entropy against the full searches' targets).
4. **Evaluate and checkpoint** (``train.loop``): every ``eval_every`` iterations the search with
   the model (``eval_sims`` simulations, ``width``) against ``eval_opponents`` and the prior alone
   against ``policy_eval_opponents``, on the same deals each time; ``checkpoints/model-<k>.npz``
   (``az:value=PATH``); ``checkpoints/latest.pt`` every ``checkpoint_every`` iterations, on Ctrl-C
   and at the time limit: ``--resume`` continues from it (model, optimizer, window, counters).
5. **Finish**: the final evaluation on fresh deals (the end and the start), the learning curve, a
   summary.

The run folder is ``train.run``'s (TensorBoard: ``selfplay/``, ``losses/``, ``heldout/``, ``eval/``).
"""

from __future__ import annotations

import sys

from train.cli import parse_or_exit, run_trainer, train_or_report
from train.config import AlphaZeroConfig

if __name__ == "__main__":
    COMMAND_LINE = parse_or_exit(AlphaZeroConfig, __doc__)

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.alphazero import Learner, Records, SelfPlay, init_model, self_play
from patchwork_env.envs.observation import observe_movers
from patchwork_env.evaluation.backend import Backend, open_backend
from patchwork_env.players.search_config import SearchConfig
from patchwork_env.players.shipped import value_model_path
from patchwork_env.players.value_model import ValueModel, load_value_model
from train.artefact import SearchModel
from train.config import ConfigError
from train.loop import Resumed, Trainer, open_run, run_loop
from train.run import Run, preflight
from train.seeds import Stream, stream_rng, stream_seed


def main(cfg: AlphaZeroConfig, name: str = "alphazero") -> dict[str, Any]:
    """Train; returns the summary (``train.run.Run.finish``)."""
    preflight(cfg)
    value = starting_value(cfg.init) if not cfg.resume else None
    with open_backend(cfg.backend, cfg.address or None, cfg.workers) as backend:
        run, resumed = open_run(cfg, name, "iteration")
        return run_loop(run, AlphaZero(run, value, backend, resumed), cfg.iterations, resumed)


def starting_value(init: str) -> ValueModel | None:
    """The value model ``init`` names (None for ``scratch``), read before the run folder is made."""
    if init == "scratch":
        return None
    try:
        path = value_model_path(init)
        if path is None:
            raise ValueError("it names no value model")
        return load_value_model(path)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"init: {init!r} is not scratch or a value model: {exc}") from None


class AlphaZero(Trainer[SearchModel, AlphaZeroConfig]):
    """The loop's step: one iteration of self-play into the window, then learner steps."""

    def __init__(self, run: Run, value: ValueModel | None, backend: Backend, resumed: Resumed | None) -> None:
        super().__init__(run)
        cfg, self.backend = self.cfg, backend
        self.played = SearchConfig(**{**vars(cfg.search), "sims": cfg.eval_sims})  # how evaluations play it
        # 1. start: the greedy prior with a value of 0 (or init's), or the resumed model
        torch.manual_seed(stream_seed(cfg.seed, Stream.TRAIN))
        first = init_model((cfg.hidden[0], cfg.hidden[1]), cfg.prior_temp, stream_seed(cfg.seed, Stream.TRAIN), value)
        model = resumed.net.model if resumed and isinstance(resumed.net, SearchModel) else first
        self.learner = Learner(model, cfg.prior_temp, cfg.learning_rate, cfg.weight_decay, cfg.q_weight)
        self.net = SearchModel(model, self.played, cfg.width)
        self.start = SearchModel(first, self.played, cfg.width)
        self.window: list[tuple[int, Records]] = []
        self.decisions = 0
        self.resume(resumed)

    # 2. self-play -------------------------------------------------------------------------------
    def play(self, step: int) -> Records:
        cfg = self.cfg
        shared = SelfPlay(self.net.model, cfg.search, cfg.fast_sims, cfg.full_share, cfg.opening, cfg.width,
                          stream_seed(cfg.seed, Stream.SELFPLAY, step))  # fmt: skip
        items = [(g, min(cfg.chunk, cfg.games_per_iteration - g)) for g in range(0, cfg.games_per_iteration, cfg.chunk)]
        return Records.concat(list(self.backend.map(self_play, shared, items)), cfg.width)

    # 3. learn ----------------------------------------------------------------------------------
    def step(self, step: int) -> None:
        cfg, writer = self.cfg, self.run.writer
        started = time.perf_counter()
        records = self.play(step)
        seconds = time.perf_counter() - started
        held = self.learner.measure(records)  # games the model never trained on
        held_ev = explained_variance(self.learner, records)
        self.add(step, records)
        data = Records.concat([r for _, r in self.window], cfg.width)
        rng = stream_rng(cfg.seed, Stream.TRAIN, step)
        steps = max(1, math.ceil(cfg.reuse * len(records) / cfg.batch_size))
        totals = np.zeros(3)
        for _ in range(steps):
            losses = self.learner.step(data.take(rng.integers(len(data), size=cfg.batch_size)), cfg.max_grad_norm)
            totals += [losses.value, losses.policy, losses.agreement]
        self.net = SearchModel(self.learner.model(), self.played, cfg.width)
        self.decisions += len(records)
        value, policy, agreement = totals / steps
        for tag, x in {
            "selfplay/decisions": len(records), "selfplay/full_searches": int(records.full.sum()),
            "selfplay/decisions_per_second": len(records) / seconds, "selfplay/window": len(data),
            "losses/value": value, "losses/policy": policy, "losses/agreement": agreement,
            "heldout/value_mse": held.value, "heldout/policy": held.policy, "heldout/agreement": held.agreement,
            "heldout/explained_variance": held_ev,
        }.items():  # fmt: skip
            writer.add_scalar(tag, x, step)
        self.run.log(
            f"iteration {step}: {len(records)} decisions ({len(records) / seconds:.0f}/s), {steps} steps; "
            f"held out: value EV {held_ev:.3f}, policy {held.policy:.3f}, agreement {held.agreement:.2f}"
        )

    def add(self, step: int, records: Records) -> None:
        """``records`` join the window (and ``data/``); the oldest iterations beyond ``window`` leave
        it (their files stay until a checkpoint no longer needs them: ``checkpointed``)."""
        folder = self.run.folder / "data"
        folder.mkdir(exist_ok=True)
        records.save(str(folder / f"records-{step}.npz"))
        self.window.append((step, records))
        while len(self.window) > 1 and sum(len(r) for _, r in self.window[1:]) >= self.cfg.window:
            self.window.pop(0)

    def checkpointed(self) -> None:
        """``latest.pt`` lists the window: decision files older than its first iteration go."""
        first = self.window[0][0] if self.window else 0
        for path in (self.run.folder / "data").glob("records-*.npz"):
            number = path.stem.removeprefix("records-")
            if number.isdigit() and int(number) < first:
                path.unlink(missing_ok=True)

    # 4. evaluate and checkpoint ----------------------------------------------------------------
    def evaluate(self, step: int) -> None:
        self.net.model.save(self.run.folder / "checkpoints" / f"model-{step}.npz")
        self.run.evaluate(self.net, step)
        if self.cfg.policy_eval_opponents:
            policy = self.net.policy_agent("learner-policy")
            self.run.evaluate(policy, step, opponents=self.cfg.policy_eval_opponents, player="policy")

    def state_dict(self) -> dict[str, Any]:
        return {
            "optimizer": self.learner.optimizer.state_dict(),
            "window": [step for step, _ in self.window],
            "decisions": self.decisions,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learner.optimizer.load_state_dict(state["optimizer"])
        self.decisions = int(state["decisions"])
        folder = self.run.folder / "data"
        for step in state["window"]:
            path = folder / f"records-{step}.npz"
            if not path.is_file():
                raise ConfigError(f"cannot resume: {path} (a decision file of the window) is missing")
            self.window.append((int(step), Records.load(str(path), self.cfg.width)))

    def finish(self) -> tuple[SearchModel | None, dict[str, Any]]:
        self.net.model.save(Path(self.run.folder) / "checkpoints" / "final.npz")
        return None, {"decisions": self.decisions}


def explained_variance(learner: Learner, records: Records) -> float:
    """1 - MSE / variance of the model's values against the records' game results."""
    with torch.no_grad():
        value = learner.net(torch.from_numpy(observe_movers(records.states)))[0].numpy()
    var = float(np.var(records.results)) or 1.0
    return 1.0 - float(np.mean((value - records.results) ** 2)) / var


def cli(argv: list[str] | None = None) -> int:
    return run_trainer(AlphaZeroConfig, main, argv, __doc__)


if __name__ == "__main__":
    sys.exit(train_or_report(main, *COMMAND_LINE))
