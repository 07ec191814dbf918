"""Expert iteration (``agents.exit``): the ``az`` search with the network labels positions of the
network's own games, the network learns the search's choice of move kind, and a gate keeps it only
if it beats the network before it.

    python -m train.exit --config configs/exit.yaml
    python -m train.exit --config configs/exit.yaml --iterations 2 --positions-per-iteration 200   # a try
    python -m train.exit --help

Steps, in order (``main`` reads the same way):

1. **Start**: ``init_checkpoint`` (``configs/exit.yaml``: the shipped network) or a fresh
   greedy-prior network; evaluated alone as iteration 0.
2. **Iterations** 1..``iterations`` (``iterate``): ``positions_per_iteration`` positions of the
   network's games (a ``greedy_share`` against greedy, the rest against itself), labelled by the
   ``az`` search with the current network (``sims``, ``rollouts``, ``expand``, ``considered``,
   ``target``; in this process, or with ``--backend ray [--address HOST:PORT]`` each batch
   of ``search_batch`` positions a Ray task, the same labels); ``epochs`` passes of the choice
   of kind over the newest ``window`` iterations of labels (10% of each iteration's positions
   held out, never trained on); the gate: the fitted network against the one before on
   ``gate_pairs`` paired deals, kept only if it wins more than ``gate_threshold``, else the old
   weights come back.
3. **Evaluate and checkpoint** (``train.loop``): every ``eval_every`` iterations the network alone
   against ``eval_opponents`` (the same deals every time), with ``search_eval_opponents`` also the
   expert (``search_eval``: the ``az`` search with the network, e.g. against ``mcts:sims=100``),
   and ``checkpoints/iter_<k>.pt``; ``latest.pt`` every ``checkpoint_every`` iterations
   (``--resume``: the network, the window of labels and the history come back), ``minute-<m>.pt``
   for ``checkpoint_minutes``; stop at ``time_limit_minutes``.
4. **Finish**: the final evaluation of the network and of its start on the same fresh deals.

Per iteration, ``exit_history.json`` (one row each) and TensorBoard ``exit/``: positions per second
of the labelling, the network's agreement with the new labels before it trains on them, held-out
loss and agreement before and after the fit, the gate's win rate (and whether the fit was kept).
"""

from __future__ import annotations

import sys

from train.cli import parse_or_exit, run_trainer, train_or_report
from train.config import ConfigError, ExItConfig

if __name__ == "__main__":
    COMMAND_LINE = parse_or_exit(ExItConfig, __doc__)

import json
import time
from typing import Any

import numpy as np
import torch

from agents.distill import check_labels, held_out
from agents.exit import (
    Window,
    exit_positions,
    fit,
    gate,
    group_targets,
    label_loss,
    search_labels,
)
from patchwork_env.core.files import write_atomic
from patchwork_env.evaluation.arena import play_pairs
from patchwork_env.evaluation.backend import Backend, open_backend
from patchwork_env.players.az_network import EXPAND, AZAgent
from patchwork_env.players.batched_search import SearchConfig
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.network import PatchworkNet, count_parameters
from patchwork_env.players.registry import make_agent
from train.loop import Resumed, Trainer, initial_network, open_run, run_loop, starting_network
from train.run import Run, eval_tag, frozen_copy, preflight
from train.seeds import Stream, stream_seed

# the per-iteration numbers also drawn in TensorBoard (``exit/<name>``)
CHARTS = (
    "positions_per_second",
    "searched_again_share",
    "new_labels_agreement",
    "held_out_loss_before",
    "held_out_loss_after",
    "held_out_agreement_before",
    "held_out_agreement_after",
    "gate_win_rate",
    "kept_new",
)


def main(cfg: ExItConfig, name: str = "exit") -> dict[str, Any]:
    """Train; returns the summary (``train.run.Run.finish``) with the iterations' gate decisions."""
    preflight(cfg)
    for spec in cfg.search_eval_opponents:  # an opponent that does not build stops the run here
        try:
            make_agent(spec)
        except AgentSpecError as exc:
            raise ConfigError(f"search_eval_opponents: {exc}") from None
    net = initial_network(cfg)
    with open_backend(cfg.backend, cfg.address or None) as backend:
        run, resumed = open_run(cfg, name, "iteration")
        return run_loop(run, ExIt(run, net, backend, resumed), cfg.iterations, resumed)


class ExIt(Trainer[PatchworkNet, ExItConfig]):
    """The loop's step: one iteration (``iterate``); ``exit_history.json`` gets its row."""

    def __init__(self, run: Run, net: PatchworkNet | None, backend: Backend | None, resumed: Resumed | None) -> None:
        super().__init__(run)
        cfg, self.backend = self.cfg, backend
        # 1. start --------------------------------------------------------------------------------------
        self.net = starting_network(cfg, net, resumed)
        run.log(
            f"network: {count_parameters(self.net):,} parameters ({cfg.init_checkpoint or 'fresh'}); "
            f"run folder {run.folder}"
        )
        self.start = frozen_copy(self.net)
        self.window = Window(cfg.window)
        self.rows: list[dict[str, Any]] = [{"iteration": 0, "minutes": run.minutes()}]
        self.resume(resumed)

    def step(self, step: int) -> None:
        """2. positions -> labels -> fit -> gate."""
        row = iterate(self.cfg, self.run, self.net, self.window, step, self.backend)
        self.rows.append({**row, "minutes": self.run.minutes()})
        self.write_history()

    def evaluate(self, step: int) -> None:
        """3. the network alone (and with ``search_eval_opponents`` the expert); ``iter_<k>.pt``."""
        if not self.cfg.eval_opponents:
            return
        row = self.rows[-1]
        if step:
            self.run.checkpoint(self.net, f"iter_{step}.pt")
        row["eval"] = self.run.evaluate(self.net, step)
        if step and self.cfg.search_eval_opponents:
            row["search_eval"] = search_eval(self.cfg, self.run, self.net, step)
        self.write_history()

    def state_dict(self) -> dict[str, Any]:
        parts = [
            {"states": torch.from_numpy(s), "targets": torch.from_numpy(t), "held_out": torch.from_numpy(h)}
            for s, t, h in self.window.parts
        ]
        return {"window": parts, "rows": json.dumps(self.rows)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.window.parts = []
        for part in state["window"]:  # checked before the compiled kernels read them (a damaged latest.pt)
            held = part["held_out"].numpy()
            self.window.parts.append((*check_labels(part["states"].numpy(), part["targets"].numpy(), held), held))
        self.rows = json.loads(state["rows"])

    def write_history(self) -> None:
        write_atomic(self.run.folder / "exit_history.json", json.dumps(self.rows, indent=1))

    def finish(self) -> tuple[PatchworkNet | None, dict[str, Any]]:
        """4. the final evaluation of the network and its start, on fresh deals (``Run.finish``)."""
        done = self.rows[1:]
        return None, {"kept": [bool(r["kept_new"]) for r in done], "positions": sum(r["positions"] for r in done)}


def iterate(
    cfg: ExItConfig, run: Run, net: PatchworkNet, window: Window, it: int, backend: Backend | None = None
) -> dict[str, Any]:
    """One iteration on ``net`` (trained in place; its old weights back if the gate rejects the
    fit): the row of ``exit_history.json``, also logged and drawn (``exit/``). The labelling runs
    on ``backend`` (the config's ``backend``) if one is given."""
    seed = [stream_seed(cfg.seed, Stream.EXIT, it, k) for k in range(5)]  # games, labels, held out, fit, gate
    t0 = time.time()
    states = exit_positions(net, cfg.positions_per_iteration, seed[0], cfg.greedy_share, cfg.position_stride)
    t1 = time.time()
    labels = search_labels(net, states, cfg, seed[1], backend)  # the config's are the expert's settings
    t2 = time.time()
    targets = group_targets(labels.policies)
    _, agreement = label_loss(net, states, targets)  # how far the search moved from the network's own choice
    window.add(states, targets, held_out(len(states), seed[2]))
    previous = frozen_copy(net)
    stats = fit(net, window, cfg.epochs, cfg.learning_rate, seed[3], cfg.batch_size)
    t3 = time.time()
    decision = gate(net, previous, cfg.gate_pairs, seed[4], cfg.gate_threshold, cfg.eval_workers)
    t4 = time.time()
    row = {
        "iteration": it,
        "positions": len(states),
        "window_positions": sum(len(part[0]) for part in window.parts),
        "positions_per_second": len(states) / max(t2 - t1, 1e-9),
        "searched_again_share": float(labels.searched_again.mean()) if len(states) else 0.0,
        "new_labels_agreement": agreement,
        "held_out_loss_before": stats[0].val_loss,
        "held_out_loss_after": stats[-1].val_loss,
        "held_out_agreement_before": stats[0].val_accuracy,
        "held_out_agreement_after": stats[-1].val_accuracy,
        "train_loss": stats[-1].train_loss,
        "gate_win_rate": decision.win_rate,
        "gate_ci": list(decision.result.ci95_a),
        "gate_games": decision.result.games,
        "kept_new": decision.keep_new,
        "label_counts": np.bincount(targets.argmax(1), minlength=targets.shape[1]).tolist(),
        "seconds": {"positions": t1 - t0, "labels": t2 - t1, "fit": t3 - t2, "gate": t4 - t3},
    }
    for key in CHARTS:
        run.writer.add_scalar(f"exit/{key}", float(row[key]), it)
    run.log(
        f"iteration {it}: {len(states)} positions labelled at {row['positions_per_second']:.1f}/s "
        f"({100 * row['searched_again_share']:.0f}% searched again), "
        f"agreement with them {agreement:.3f}; held-out loss {row['held_out_loss_before']:.3f} -> "
        f"{row['held_out_loss_after']:.3f}, agreement {row['held_out_agreement_before']:.3f} -> "
        f"{row['held_out_agreement_after']:.3f}; gate {decision.win_rate:.3f} "
        f"[{row['gate_ci'][0]:.3f}, {row['gate_ci'][1]:.3f}]: {'new' if decision.keep_new else 'previous'} kept"
    )
    return row


def search_eval(cfg: ExItConfig, run: Run, net: PatchworkNet, it: int) -> dict[str, dict[str, Any]]:
    """The ``az`` search with (a frozen copy of) ``net`` against ``search_eval_opponents`` on
    paired deals, the same at every evaluation (and not the network-alone evaluation's)."""
    agent = AZAgent(frozen_copy(net), SearchConfig(sims=cfg.search_eval_sims, expand=EXPAND), name="az")
    out = {}
    for spec, pairs in cfg.search_eval_opponents.items():
        r = play_pairs(agent, spec, pairs, seed=stream_seed(cfg.seed, Stream.EVAL, 1), workers=cfg.eval_workers)
        out[spec] = {"games": r.games, "wins": r.wins_a, "win_rate": r.win_rate_a, "ci95": list(r.ci95_a)}
        run.writer.add_scalar(f"exit/az_win_rate_vs_{eval_tag(spec)}", r.win_rate_a, it)
        run.log(f"iteration {it}: az ({cfg.search_eval_sims} sims) vs {spec} {100 * r.win_rate_a:.1f}% of {r.games}")
    return out


def cli(argv: list[str] | None = None) -> int:
    return run_trainer(ExItConfig, main, argv, __doc__)


if __name__ == "__main__":
    sys.exit(train_or_report(main, *COMMAND_LINE))
