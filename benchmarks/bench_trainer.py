"""Trainer speed: PPO learner decisions per second of ``train.selfplay``'s whole loop.

    python -m benchmarks.bench_trainer [--repeats 3] [--quick] [--threads N]

One iteration is exactly what the trainer does per update (``train.selfplay.collect_rollout`` then
``update_policy``), for two recipes: ``configs/quick.yaml`` (greedy prior, 128 games x 32 steps, 2
epochs of 4 minibatches) and ``configs/selfplay_scratch.yaml`` (from scratch: 64 games x 32 steps, 2
epochs of 8 minibatches; issue 64's learning speed); the rate counts the learner's decisions of the
rollout over the wall time of rollout + update, and over the CPU time of this process (every thread).
The note splits it: decisions/s of the rollout alone and of the update alone.
``--quick`` (CI, notebooks): 16 games x 8 steps, one iteration per repeat. ``--threads N`` runs
torch with N threads instead of the config's ``torch_threads`` (1 in ``quick.yaml``).

Target (issue 16): >= 3,000 learner decisions/s on 2 cores (the demo measured about 1,050/s).
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from benchmarks import Row, format_table, row
from patchwork_env.cli.common import Parser, positive_int

TRAINER_TARGET = 3_000.0
ROOT = Path(__file__).resolve().parent.parent


RECIPES = {"quick net": "quick.yaml", "from-scratch recipe": "selfplay_scratch.yaml"}  # row label: config


def measure(
    quick: bool = False, repeats: int = 3, threads: int | None = None, config: str = "quick.yaml"
) -> dict[str, float]:
    """Median over ``repeats`` iterations (after one warm-up) of the rollout and update times of the
    recipe ``configs/<config>``; torch runs with ``threads`` threads (default: the config's
    ``torch_threads``)."""
    import torch

    from train import selfplay as S
    from train.cli import parse_config
    from train.config import SelfPlayConfig

    extra = ["--num-games", "16", "--rollout-steps", "8"] if quick else []
    extra += ["--torch-threads", str(threads)] if threads is not None else []
    argv = ["--config", str(ROOT / "configs" / config), "--critic-warmup-updates", "0", *extra]
    cfg, _ = parse_config(SelfPlayConfig, argv)
    before = torch.get_num_threads()
    torch.set_num_threads(cfg.torch_threads)
    try:
        learner = S.new_learner(cfg, S.start_network(cfg))
        S.update_policy(learner, S.collect_rollout(learner))  # compiles, fills the pool's first draws
        rollout, update, decisions, cpu = [], [], [], []
        for _ in range(repeats):
            c0 = time.process_time()
            collected = S.collect_rollout(learner)
            t1 = time.perf_counter()
            S.update_policy(learner, collected)
            update.append(time.perf_counter() - t1)
            rollout.append(collected.seconds)
            cpu.append(time.process_time() - c0)
            decisions.append(float(collected.batch["actions"].shape[0]))
    finally:
        torch.set_num_threads(before)
    total = [d / (r + u) for d, r, u in zip(decisions, rollout, update, strict=True)]
    return {
        "decisions_per_s": statistics.median(total),
        "per_cpu_s": statistics.median(d / c for d, c in zip(decisions, cpu, strict=True)),
        "rollout_per_s": statistics.median(d / r for d, r in zip(decisions, rollout, strict=True)),
        "update_per_s": statistics.median(d / u for d, u in zip(decisions, update, strict=True)),
        "decisions": statistics.median(decisions),
        "threads": float(cfg.torch_threads),
    }


def rows(quick: bool = False, repeats: int | None = None, threads: int | None = None) -> list[Row]:
    out = []
    for label, config in RECIPES.items():
        m = measure(quick, repeats or (1 if quick else 3), threads, config)
        note = (
            f"{config}, {m['threads']:.0f} torch threads, {m['decisions']:.0f} decisions/update; "
            f"rollout {m['rollout_per_s']:,.0f}/s, update {m['update_per_s']:,.0f}/s"
        )
        out.append(
            row(
                f"PPO learner decisions (train.selfplay, {label})",
                m["decisions_per_s"],
                "decisions/s",
                per_cpu_s=m["per_cpu_s"],
                target=None if quick or config != "quick.yaml" else TRAINER_TARGET,
                note=note,
            )
        )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = Parser(description="PPO trainer throughput (learner decisions/s)")
    parser.add_argument("--repeats", type=positive_int, default=3, help="timed iterations (medians are reported)")
    parser.add_argument("--quick", action="store_true", help="a tiny batch (seconds)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch threads (default: the config's)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    print(f"load {load:.1f}; median of {args.repeats} iterations")
    print(format_table(rows(args.quick, args.repeats, args.threads)))


if __name__ == "__main__":
    main()
