"""A sweep of short from-scratch self-play PPO runs (Optuna's TPE sampler), to choose the recipe of
``configs/selfplay_scratch.yaml`` by measurement:

    python -m train.sweep --trials 12 --minutes 10 --out runs/sweep
    python -m train.sweep --trials 12 --minutes 10 --out runs/sweep   # again: continues the study
    python -m train.sweep --trials 6 --out runs/sweep --worker 1 &   # a second process on the same study

Each trial trains ``train.selfplay`` from a random network for ``--minutes`` of this process's CPU
time (``clock: process``, one torch thread) with the sampled settings over the base config, then
plays ``--pairs`` paired deals against greedy (fresh deals: the final evaluation's stream). The
study is kept in ``OUT/study.log`` (Optuna's journal: an interrupted sweep continues where it
stopped); ``OUT/sweep.json`` lists every finished trial (settings, win rate, its 95% Wilson interval),
rewritten whole after each trial. One trial's number is one seed's: confirm the best on 3 seeds.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

from patchwork_env.core.bounds import MAX_PAIRS, MAX_SEED, above, bounded
from patchwork_env.core.files import check_output_folder, write_atomic
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.provenance import provenance
from patchwork_env.evaluation.stats import format_win_rate, wilson_interval
from patchwork_env.players.net_config import NetConfig
from train.cli import check_results_path, command_line, load_yaml, parse_args, write_results
from train.config import ConfigError, SelfPlayConfig

BASE = "configs/selfplay_scratch.yaml"


# what a trial may try: choices (lists) and ranges (tuples: low, high; "log" for a log scale, "int" for integers)
SPACE: dict[str, Any] = {
    "net.channels": [16, 32, 64],
    "net.blocks": (1, 3, "int"),
    "net.kind_hidden": [0, 64],  # 0: the market patches' ranking cannot depend on the position
    "num_games": [64, 128, 256],
    "rollout_steps": [16, 32, 64],
    "epochs": (1, 4, "int"),
    "num_minibatches": [4, 8, 16],
    "learning_rate": (2e-4, 3e-3, "log"),
    "ent_coef": (1e-3, 3e-2, "log"),
    "reward_margin_weight": (0.0, 1.0),
    "greedy_weight": (0.0, 0.8),
    "latest_prob": (0.2, 0.8),
}


def suggest(trial: optuna.Trial) -> dict[str, Any]:
    """The settings one trial tries: network size, batch, epochs, learning rate, entropy, reward
    and the opponents' mix (``SPACE``)."""
    out: dict[str, Any] = {}
    for name, space in SPACE.items():
        if isinstance(space, list):
            out[name] = trial.suggest_categorical(name, space)
        elif space[2:] == ("int",):
            out[name] = trial.suggest_int(name, space[0], space[1])
        else:
            out[name] = trial.suggest_float(name, space[0], space[1], log=space[2:] == ("log",))
    return out


def trial_config(
    base: SelfPlayConfig, settings: dict[str, Any], minutes: float, pairs: int, folder: Path
) -> SelfPlayConfig:
    """The base config with a trial's settings, cut to ``minutes`` of CPU time, evaluated against greedy only."""
    net = {k.removeprefix("net."): v for k, v in settings.items() if k.startswith("net.")}
    flat = {k: v for k, v in settings.items() if not k.startswith("net.")}
    return dataclasses.replace(
        base,
        **flat,
        net=NetConfig(**{**base.net.to_dict(), **net}),
        run_dir=str(folder),
        time_limit_minutes=minutes,
        clock="process",
        torch_threads=1,
        progress=False,
        eval_every=0,
        eval_opponents={"greedy": 5},
        eval_sampled=False,
        checkpoint_minutes=[],
        final_eval_pairs=pairs,
        final_eval_opponents=["greedy"],
        final_eval_start=False,
    )


@dataclass
class SweepArgs:
    """A sweep of short from-scratch self-play PPO runs (Optuna's TPE sampler)."""

    trials: int = bounded(12, 0, 10_000)
    """trials of this call (the study keeps earlier ones)"""
    minutes: float = above(10.0, 0.0, 10_000)
    """CPU minutes of training per trial"""
    pairs: int = bounded(100, 1, MAX_PAIRS)
    """paired deals against greedy per trial"""
    seed: int = bounded(0, 0, MAX_SEED)
    """the runs' seed and the sampler's"""
    worker: int = bounded(0, 0, 999)
    """this process's number when several share one study (its sampler's seed: 1000 x seed + worker)"""
    base: str = BASE
    """the config the trials change"""
    out: Path = Path("runs/sweep")
    """the study's folder (continued if it holds one)"""
    results: Path | None = None
    """also write the study's finished trials as a results file here (``--trials 0``: only that)"""

    def validate(self) -> None:
        check_results_path(self.results)
        base_config(self)  # before anything is written
        check_output_folder(self.out, "--out")


def base_config(args: SweepArgs) -> SelfPlayConfig:
    """The config the trials change, with the sweep's seed; ``ConfigError`` if it cannot be used."""
    try:
        base = dataclasses.replace(load_yaml(SelfPlayConfig, args.base), seed=args.seed)
        base.validate()
    except ConfigError as exc:
        raise ConfigError(f"--base: {exc}") from None
    return base


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(SweepArgs, argv, __doc__.split("\n\n")[0])
    command = command_line("train.sweep", argv)
    from train.selfplay import main as train

    base, out = base_config(args), args.out
    storage = JournalStorage(JournalFileBackend(str(out / "study.log")))
    study = optuna.create_study(
        study_name="selfplay-scratch",
        storage=storage,
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=1000 * args.seed + args.worker, n_startup_trials=6),
        load_if_exists=True,
    )
    if not study.trials:  # the base config first: the row every other trial is compared against
        study.enqueue_trial(flat_base(base), skip_if_exists=True)

    def objective(trial: optuna.Trial) -> float:
        settings = suggest(trial)
        folder = out / f"trial-{trial.number:03d}"
        summary = train(trial_config(base, settings, args.minutes, args.pairs, folder))
        greedy = summary["final_eval"]["greedy"]
        trial.set_user_attr("games", int(greedy["games"]))
        trial.set_user_attr("wins", float(greedy["win_rate"]) * int(greedy["games"]))
        trial.set_user_attr("updates", int(summary.get("updates", 0)))
        write_summary(study, out, args, command)
        return float(greedy["win_rate"])

    if args.trials:
        study.optimize(objective, n_trials=args.trials, catch=())
    rows = write_summary(study, out, args, command)
    if args.results is not None:
        write_results(args.results, results(rows, args, command))
    return 0


def results(rows: list[dict[str, Any]], args: SweepArgs, command: str) -> dict[str, Any]:
    """The study as a results file (kind ``training``): per trial its win rate against greedy
    with the 95% interval, and its settings; the raw counts in ``raw``."""
    columns = [f"vs greedy at {args.minutes:g} min", "settings (changed from the base)"]
    base: dict[str, Any] = next((r["params"] for r in rows if r["trial"] == 0), {})
    runs = [
        {
            "seed": f"trial {r['trial']}",
            "cells": {
                columns[0]: format_win_rate(r["win_rate_vs_greedy"], tuple(r["ci95"])),
                columns[1]: ", ".join(f"{k}={v:.3g}" for k, v in r["params"].items() if base.get(k) != v) or "the base",
            },
        }
        for r in rows
    ]
    return {
        **provenance(command, [args.seed]),
        "kind": results_file.TRAINING,
        "title": f"Self-play PPO from scratch: a sweep of {args.minutes:g}-minute recipes",
        "description": f"Optuna (TPE, seed {args.seed}) over network size, batch, epochs, learning rate, entropy, "
        f"reward and opponents' mix (`train.sweep.SPACE`); each trial trains `train.selfplay` from a random network "
        f"over `{args.base}` for {args.minutes:g} minutes of its process's CPU time (seed {args.seed}), then plays "
        f"{args.pairs} paired deals against greedy on fresh deals. Trial 0 is the base config. One seed per trial: "
        "a difference under about 10 points is within the intervals. The trials ran as `python -m train.sweep` "
        f"processes on the study in `{args.out}` (its `study.log`; several at once with `--worker k`); this file, "
        "written from the study, lists every finished trial.",
        "columns": columns,
        "runs": runs,
        "raw": {f"trial {r['trial']}": r for r in rows},
    }


def flat_base(base: SelfPlayConfig) -> dict[str, Any]:
    """The base config's values of the swept settings, each moved into ``SPACE`` (the nearest
    choice, or clipped into the range)."""
    out: dict[str, Any] = {}
    for name, space in SPACE.items():
        value = getattr(base.net, name[4:]) if name.startswith("net.") else getattr(base, name)
        if isinstance(space, list):
            out[name] = min(space, key=lambda choice: abs(choice - value))
        else:
            out[name] = min(max(value, space[0]), space[1])
    return out


def write_summary(study: optuna.Study, out: Path, args: SweepArgs, command: str) -> list[dict[str, Any]]:
    """``OUT/sweep.json``: every finished trial, best first; returns its rows."""
    rows: list[dict[str, Any]] = []
    for t in study.trials:
        if t.state != optuna.trial.TrialState.COMPLETE or t.value is None:
            continue
        games = int(t.user_attrs.get("games", 0))
        lo, hi = wilson_interval(round(t.value * games), games) if games else (0.0, 1.0)
        rows.append(
            {"trial": t.number, "win_rate_vs_greedy": t.value, "ci95": [lo, hi], "games": games, "params": t.params}
        )
    rows.sort(key=lambda r: -float(r["win_rate_vs_greedy"]))  # type: ignore[arg-type]
    doc = {
        "command": command,
        "base": args.base,
        "minutes": args.minutes,
        "clock": "process",
        "seed": args.seed,
        "pairs": args.pairs,
        "trials": rows,
    }
    write_atomic(out / "sweep.json", json.dumps(doc, indent=1))
    return rows


if __name__ == "__main__":
    sys.exit(main())
