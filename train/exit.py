"""Expert iteration (``agents.exit``): positions of the network's own games, labelled by the ``az``
search with the same network, a fit on a window of recent labels, a gate against the previous
network.

    python -m train.exit --config configs/exit.yaml
    python -m train.exit --config configs/exit.yaml iterations=2 positions_per_iteration=200   # a try
    python -m train.exit --help-config

Per iteration (``iterate`` reads the same way), logged to ``exit_history.json`` and printed: the
positions and the labelling speed (positions per second of search), the network's agreement with
the new labels before it trains on them, the held-out loss and agreement before and after the fit
(every iteration's held-out positions are never trained on), the gate (the fitted network against
the one before, paired deals; kept only if it wins more than ``gate_threshold``), and the network
alone against ``eval_opponents`` (the same deals at every evaluation, so the curve compares like
with like). Checkpoints ``iter_<k>.pt`` (the network after iteration k's gate) and ``final.pt``
are the project's format (``ppo:PATH``, ``az:path=PATH``). The final evaluation plays
``final_eval_opponents`` on deals no other evaluation used.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from agents.az_agent import load_net
from agents.exit import SearchSettings, exit_positions, fit, gate, group_targets, label_loss, search_labels
from agents.network import PatchworkNet, count_parameters
from agents.ppo_agent import save_checkpoint
from train import run_utils
from train.cli import run_trainer, trainer_parser
from train.config import CommonConfig, ConfigError, _at_least, _between, _check_checkpoint, _positive
from train.seeds import Stream, stream_seed


@dataclass
class ExItConfig(CommonConfig):
    """The expert-iteration trainer (``train.exit``). Of the shared keys it uses the run folder,
    seed, threads, the network keys (a fresh network when ``init_checkpoint`` is empty),
    ``learning_rate`` (of the fit) and the evaluation keys; the PPO keys are ignored."""

    period_unit = ("iterations", "iterations")

    init_checkpoint: str = ""
    """Start from the network in this checkpoint (``configs/exit.yaml``: the shipped network,
    ``agents/models/pretrained.pt``); empty: a fresh network from the network keys (with
    ``prior_scale > 0``: a softened greedy)."""
    iterations: int = 20
    """Iterations of positions -> labels -> fit -> gate."""
    time_limit_minutes: float = 0.0
    """Stop after the iteration that passes this many minutes (then the final evaluation); 0: none."""
    positions_per_iteration: int = 4000
    """Positions labelled per iteration (all with a choice of move kind)."""
    greedy_share: float = 0.5
    """Share of the positions from the network's games against ``greedy`` (its most probable
    move); the rest from its games against itself (sampled from its policy)."""
    position_stride: int = 4
    """Decisions played per position kept (a random subset is kept: positions from more games)."""
    sims: int = 100
    """Simulations of the labelling search per position (``az:sims``)."""
    rollouts: int = 4
    """Greedy rollouts per valued leaf of the search (``az:rollouts``; the leaf value is theirs alone)."""
    expand: int = 4
    """Visits of a leaf before the network expands it (``az:expand``)."""
    considered: int = 16
    """Gumbel root: kinds of move kept for sequential halving (``az:considered``)."""
    c_puct: float = 1.25
    """PUCT constant below the root (``az:c_puct``)."""
    target: str = "policy"
    """``policy``: the search's improved policy (Gumbel: softmax(logit + sigma(completed Q)));
    ``visits``: its root visit shares."""
    search_batch: int = 64
    """Positions searched together (one forward pass per simulation step for all of them)."""
    window: int = 4
    """Iterations of labels the fit trains on (the newest)."""
    epochs: int = 2
    """Passes over the window per iteration."""
    batch_size: int = 256
    """Minibatch of the fit."""
    gate_pairs: int = 100
    """Paired deals of the gate (the fitted network against the one before it)."""
    gate_threshold: float = 0.5
    """The fitted network replaces the previous one only with a win rate above this in the gate."""
    eval_every: int = 1
    """Iterations between evaluations of the network alone against ``eval_opponents`` (and one
    before the first and after the last); 0: only those two."""
    eval_opponents: dict[str, int] = field(default_factory=lambda: {"greedy": 100})
    """Agent spec -> paired deals of the periodic evaluation."""
    final_eval_pairs: int = 200
    """Paired deals against each ``final_eval_opponents`` entry at the end (0: skip)."""
    final_eval_opponents: list[str] = field(default_factory=lambda: ["greedy"])
    """Agent specs of the final evaluation."""

    def validate(self) -> None:
        super().validate()
        for key in ("iterations", "positions_per_iteration", "position_stride", "window", "epochs", "batch_size"):
            _positive(self, key)
        _at_least(self, "gate_pairs", 1)
        _at_least(self, "eval_every", 0)
        _at_least(self, "time_limit_minutes", 0.0)
        _between(self, "greedy_share", 0.0, 1.0)
        _between(self, "gate_threshold", 0.0, 1.0)
        try:
            self.search_settings().validate()
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        _check_checkpoint("init_checkpoint", self.init_checkpoint)
        if not self.init_checkpoint and self.net_config().prior_scale <= 0:
            raise ConfigError("a fresh network needs prior_scale > 0: only the choice of kind is trained")

    def search_settings(self) -> SearchSettings:
        return SearchSettings(
            self.sims, self.rollouts, self.expand, self.considered, self.c_puct, self.target, self.search_batch
        )


def _held_out(n: int, seed: int, share: float = 0.1) -> npt.NDArray[np.bool_]:
    chosen = np.zeros(n, dtype=np.bool_)
    chosen[np.random.default_rng(seed).permutation(n)[: max(1, round(share * n))]] = True
    return chosen


@dataclass
class Window:
    """The labels of the newest ``size`` iterations: states, (N, 5) targets, held-out flags."""

    size: int
    parts: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.bool_]]] = field(
        default_factory=list
    )

    def add(self, states: npt.NDArray[np.int64], targets: npt.NDArray[np.float64], held: npt.NDArray[np.bool_]) -> None:
        self.parts = [*self.parts, (states, targets, held)][-self.size :]

    def arrays(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
        return tuple(np.concatenate([p[k] for p in self.parts]) for k in range(3))  # type: ignore[return-value]


def _rate(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        spec: {k: r[k] for k in ("games", "win_rate", "ci_low", "ci_high", "mean_margin")}
        for spec, r in results.items()
    }


def iterate(cfg: ExItConfig, net: PatchworkNet, window: Window, it: int) -> dict[str, Any]:
    """One iteration on ``net`` (changed in place, or restored when the gate rejects the fit)."""
    row: dict[str, Any] = {"iteration": it}
    t0 = time.time()
    states = exit_positions(
        net,
        cfg.positions_per_iteration,
        stream_seed(cfg.seed, Stream.SELFPLAY, it),
        cfg.greedy_share,
        cfg.position_stride,
    )
    t1 = time.time()
    labels = search_labels(net, states, cfg.search_settings(), stream_seed(cfg.seed, Stream.SELFPLAY, it, 1))
    t2 = time.time()
    targets = group_targets(labels.policies)
    loss_new, agree_new = label_loss(net, states, targets)
    held = _held_out(len(states), stream_seed(cfg.seed, Stream.SELFPLAY, it, 2))
    window.add(states, targets, held)
    old = run_utils.frozen_copy(net)
    all_states, all_targets, all_held = window.arrays()
    stats = fit(
        net,
        all_states,
        all_targets,
        all_held,
        cfg.epochs,
        cfg.learning_rate,
        stream_seed(cfg.seed, Stream.SELFPLAY, it, 3),
        cfg.batch_size,
    )
    t3 = time.time()
    g = gate(net, old, cfg.gate_pairs, stream_seed(cfg.seed, Stream.EVAL, it), cfg.gate_threshold, cfg.eval_workers)
    if not g.keep_new:
        net.load_state_dict(old.state_dict())
    t4 = time.time()
    row |= {
        "positions": len(states),
        "window_positions": len(all_states),
        "positions_seconds": t1 - t0,
        "label_seconds": t2 - t1,
        "positions_per_second": len(states) / max(t2 - t1, 1e-9),
        "new_labels_loss_before": loss_new,
        "new_labels_agreement_before": agree_new,
        "held_out_loss_before": stats[0].val_loss,
        "held_out_loss_after": stats[-1].val_loss,
        "held_out_agreement_before": stats[0].val_accuracy,
        "held_out_agreement_after": stats[-1].val_accuracy,
        "train_loss": stats[-1].train_loss,
        "fit_seconds": t3 - t2,
        "gate_win_rate": g.win_rate,
        "gate_ci": list(g.result.ci95_a),
        "gate_games": g.result.games,
        "gate_margin": g.result.mean_margin_a,
        "kept_new": g.keep_new,
        "gate_seconds": t4 - t3,
        "label_counts": np.bincount(targets.argmax(1), minlength=targets.shape[1]).tolist(),
    }
    return row


def main(config: ExItConfig, run_dir: str | None = None, config_name: str = "exit") -> dict[str, Any]:
    """Train; returns the summary (also ``summary.json`` in the run folder)."""
    cfg = config
    cfg.validate()
    run_utils.set_threads(cfg.torch_threads)
    torch.manual_seed(stream_seed(cfg.seed, Stream.TRAIN))
    folder = run_utils.run_folder(cfg, config_name, run_dir)
    run_utils.save_config(cfg, folder)
    ckpt = folder / "checkpoints"
    start = time.time()

    def minutes() -> float:
        return (time.time() - start) / 60

    def log(text: str) -> None:
        if cfg.progress:
            print(f"[{minutes():6.1f} min] {text}", flush=True)

    net = load_net(cfg.init_checkpoint) if cfg.init_checkpoint else PatchworkNet(cfg.net_config())
    log(f"network: {count_parameters(net):,} parameters ({cfg.init_checkpoint or 'fresh'}); run folder {folder}")
    save_checkpoint(ckpt / "iter_0.pt", net)
    rows: list[dict[str, Any]] = []
    curve: list[dict[str, Any]] = []  # run_utils.plot_learning_curve's rows
    seconds = [0.0]  # spent in evaluations (not the gate)

    def evaluate(it: int, opponents: dict[str, int], seed: int, final: bool = False) -> dict[str, Any]:
        t = time.time()
        results = _rate(run_utils.evaluate(net, opponents, seed=seed, workers=cfg.eval_workers))
        for spec, r in results.items():
            curve.append({"minutes": minutes(), "iteration": it, "opponent": spec, "final": final, **r})
            log(f"iteration {it}: alone vs {spec} {r['win_rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]")
        seconds[0] += time.time() - t
        return results

    def write() -> None:
        (folder / "exit_history.json").write_text(json.dumps(rows, indent=1))
        run_utils.write_history(curve, folder)
        run_utils.plot_learning_curve(curve, folder / "learning_curve.png", f"expert iteration ({folder.name})")

    rows.append({"iteration": 0, "minutes": minutes(), "eval": evaluate(0, cfg.eval_opponents, _eval_seed(cfg))})
    write()
    window = Window(cfg.window)
    it = 0
    for it in range(1, cfg.iterations + 1):
        row = iterate(cfg, net, window, it)
        curve.append(
            {
                "minutes": minutes(),
                "iteration": it,
                "opponent": "previous network (gate)",
                "win_rate": row["gate_win_rate"],
                "ci_low": row["gate_ci"][0],
                "ci_high": row["gate_ci"][1],
            }
        )
        log(
            f"iteration {it}: {row['positions']} positions, {row['positions_per_second']:.1f}/s labelled; "
            f"agreement with new labels {row['new_labels_agreement_before']:.3f}; held-out loss "
            f"{row['held_out_loss_before']:.3f} -> {row['held_out_loss_after']:.3f}, agreement "
            f"{row['held_out_agreement_before']:.3f} -> {row['held_out_agreement_after']:.3f}; gate "
            f"{row['gate_win_rate']:.3f} [{row['gate_ci'][0]:.3f}, {row['gate_ci'][1]:.3f}] -> "
            f"{'new' if row['kept_new'] else 'old'} kept"
        )
        out_of_time = cfg.time_limit_minutes > 0 and minutes() >= cfg.time_limit_minutes
        last = it == cfg.iterations or out_of_time
        if (cfg.eval_every and it % cfg.eval_every == 0) or last:
            row["eval"] = evaluate(it, cfg.eval_opponents, _eval_seed(cfg))
        row["minutes"] = minutes()
        row["eval_seconds"] = seconds[0]
        seconds[0] = 0.0
        rows.append(row)
        save_checkpoint(ckpt / f"iter_{it}.pt", net)
        save_checkpoint(ckpt / "latest.pt", net, {"iteration": it, "config": asdict(cfg)})
        write()
        if out_of_time:
            log(f"time limit of {cfg.time_limit_minutes} minutes reached")
            break
    save_checkpoint(ckpt / "final.pt", net)
    training_minutes = minutes()
    final: dict[str, Any] = {}
    if cfg.final_eval_pairs:
        opponents = dict.fromkeys(cfg.final_eval_opponents, cfg.final_eval_pairs)
        final = evaluate(it, opponents, stream_seed(cfg.seed, Stream.FINAL_EVAL), final=True)
        write()
    summary = {
        "run_dir": str(folder),
        "iterations": it,
        "kept": sum(bool(r.get("kept_new")) for r in rows),
        "training_minutes": training_minutes,
        "minutes": minutes(),
        "final_eval": final,
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _eval_seed(cfg: ExItConfig) -> int:
    return stream_seed(cfg.seed, Stream.EVAL)


def cli(argv: list[str] | None = None) -> int:
    parser = trainer_parser(
        "python -m train.exit",
        "Expert iteration for Patchwork (see the module docstring).",
        "configs/exit.yaml",
        "iterations=5 sims=50",
    )

    def run(cfg: ExItConfig, args: argparse.Namespace, name: str) -> None:
        main(cfg, run_dir=args.run_dir, config_name=name)

    return run_trainer(parser, argv, ExItConfig, "exit", run)


if __name__ == "__main__":
    sys.exit(cli())

__all__ = ["ExItConfig", "iterate", "main"]
