"""Measure the demo recipe (configs/quick_dagger.yaml) on one seed and write seed<S>.json here.

    taskset -c 1 python results/demo_recipe/measure.py --seed 0 [--workers 1] [--config configs/quick_dagger.yaml]

Three commands, run one after the other and timed (wall clock): the training (labelling and fitting
times from the run's final_eval.json), the untrained start (same seed, no teacher), and the round
robin of end, start, greedy and random on fresh deals (seed 1000 + S, 100 paired deals per pair).
Every figure in the JSON is read from those commands' own outputs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(cmd: list[str]) -> float:
    print("$", " ".join(cmd), flush=True)
    t0 = time.time()
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.time() - t0


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def wilson(wins: int, n: int, z: float = 1.959963984540054) -> list[float]:
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [centre - half, centre + half]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--workers", type=int, default=1, help="labelling and evaluation processes")
    p.add_argument("--config", default="configs/quick_dagger.yaml")
    p.add_argument("--pairs", type=int, default=100)
    p.add_argument("--runs", default="runs/demo_recipe")
    p.add_argument("--out", default=None)
    p.add_argument("--collect-only", action="store_true", help="only rewrite the JSON from a finished run")
    args = p.parse_args()
    s = args.seed
    py = sys.executable
    folder = Path(args.runs) / f"{Path(args.config).stem}-s{s}"
    train_dir, start_dir = folder / "train", folder / "untrained"
    eval_json = folder / "eval.json"
    eval_seed = 1000 + s
    train_cmd = [
        py,
        "-m",
        "train.selfplay",
        "--config",
        args.config,
        f"seed={s}",
        f"distill_workers={args.workers}",
        "progress=false",
        "--run-dir",
        str(train_dir),
    ]
    start_cmd = [
        py,
        "-m",
        "train.selfplay",
        "--config",
        args.config,
        f"seed={s}",
        "teacher=",
        "progress=false",
        "--run-dir",
        str(start_dir),
    ]
    end, start = f"ppo:{train_dir}/checkpoints/final.pt", f"ppo:{start_dir}/checkpoints/final.pt"
    eval_cmd = [
        py,
        "-m",
        "train.evaluate",
        "--agents",
        end,
        start,
        "greedy",
        "random",
        "--pairs",
        str(args.pairs),
        "--seed",
        str(eval_seed),
        "--workers",
        str(args.workers),
        "--no-progress",
        "--json",
        str(eval_json),
    ]
    times_file = ROOT / folder / "times.json"
    if args.collect_only:
        t_train, t_start, t_eval = json.loads(times_file.read_text())
    else:
        t_train = run(train_cmd)
        t_start = run(start_cmd)
        t_eval = run(eval_cmd)
        times_file.write_text(json.dumps([t_train, t_start, t_eval]))

    summary = json.loads((ROOT / train_dir / "final_eval.json").read_text())
    result = json.loads((ROOT / eval_json).read_text())
    names = {end: "end", start: "start", "greedy": "greedy", "random": "random"}
    matches = {}
    for pair in result["pairs"]:
        a, b = names[pair["a"]], names[pair["b"]]
        draws = pair["games"] - pair["wins_a"] - pair["wins_b"]
        matches[f"{a}_vs_{b}"] = {
            "games": pair["games"],
            "wins": pair["wins_a"],
            "losses": pair["wins_b"],
            "draws": draws,
            "win_rate": pair["win_rate_a"],
            "wilson95": pair["ci95_a"],
            "wilson95_check": wilson(pair["wins_a"], pair["games"]),
            "mean_margin": pair["mean_margin_a"],
        }
    distill = summary["distill"]
    start_rate = matches["start_vs_greedy"]["win_rate"]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(
        subprocess.run(
            ["git", "status", "--porcelain", args.config], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    )
    out = {
        "config": args.config,
        "commands": {
            "train": " ".join(["python", *train_cmd[1:]]),
            "untrained_start": " ".join(["python", *start_cmd[1:]]),
            "evaluate": " ".join(["python", *eval_cmd[1:]]),
            "driver": f"taskset -c 1 python results/demo_recipe/measure.py --seed {s} --workers {args.workers}",
        },
        "commit": commit + (" (config modified)" if dirty else ""),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "affinity": sorted(os.sched_getaffinity(0)),
            "load_average_at_end": os.getloadavg(),
        },
        "seed": s,
        "eval_seed": eval_seed,
        "workers": args.workers,
        "seconds": {
            "labelling": round(60 * distill["labelling_minutes"], 1),
            "training": round(60 * distill["training_minutes"], 1),
            "train_command_total": round(t_train, 1),
            "untrained_start_command": round(t_start, 1),
            "evaluation": round(t_eval, 1),
            "total": round(t_train + t_start + t_eval, 1),
        },
        "labels": {
            "positions": distill["positions"],
            "teacher": distill["teacher"],
            "val_accuracy": distill["val_accuracy"],
        },
        "matches": matches,
        "gain_vs_greedy_points": round(100 * (matches["end_vs_greedy"]["win_rate"] - start_rate), 1),
    }
    path = Path(args.out) if args.out else Path(__file__).parent / f"seed{s}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("seconds", "gain_vs_greedy_points")}, indent=1))
    for k, m in matches.items():
        low, high = m["wilson95"]
        print(f"{k}: {m['wins']}-{m['losses']}-{m['draws']} {m['win_rate']:.3f} [{low:.3f}, {high:.3f}]")
    print("wrote", path)


if __name__ == "__main__":
    main()
