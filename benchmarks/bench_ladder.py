"""How many worker processes a rating should use: ``patchwork ladder`` end to end, as a user runs it
(a fresh ``python -m patchwork_env.cli`` process: imports, loading the agent, the games), for three
kinds of agent: a function in a script (``FILE.py:act``, the first legal action: it meets the
bottom rungs, cheap games), the shipped network (``pretrained``: a network's forward pass a move,
the mcts rungs) and a Stable-Baselines3 ``PPO`` model (a few training steps: torch and SB3 to
import, the bottom rungs); at the quick and standard budgets; with 1 worker, 2 workers and the
command's default. Every case runs once per repeat, in turn, so that the load of other processes
hits all of them alike; the table holds the median seconds and, for more than one worker, the
speed-up over 1 worker of the same agent and budget in the same run (above 1: faster).

    python -m benchmarks.bench_ladder [--repeats 3] [--budgets quick standard] [--json PATH]

The commands' default (``--workers`` not given: this process, and every core only once the games
left would take longer than ``patchwork_env.evaluation.arena.START_WORKERS_AFTER`` in it) was chosen
from this table (``benchmarks/results/ladder-workers.json``; ``docs/evaluation.md``, "Workers").
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import Row, format_table, row, write_json

AGENT_FILE = "def act(state):\n    return int(state.legal_actions()[0])\n"
WORKERS = ("1", "2", "default")


def make_agents(folder: Path) -> dict[str, str]:
    """The three agents' specs (files written to ``folder``; the SB3 model only if SB3 is installed)."""
    (folder / "first_legal.py").write_text(AGENT_FILE)
    agents = {"function": f"{folder / 'first_legal.py'}:act", "network": "pretrained"}
    try:
        from stable_baselines3 import PPO

        from patchwork_env import SingleAgentEnv
    except ImportError:
        return agents
    model = PPO("MlpPolicy", SingleAgentEnv(opponent="random"), n_steps=64, batch_size=64, seed=0)
    model.learn(64)
    model.save(folder / "ppo.zip")
    agents["sb3 PPO"] = f"sb3:{folder / 'ppo.zip'}"
    return agents


def rate_once(spec: str, budget: str, workers: str, cwd: Path) -> tuple[float, float]:
    """One ``patchwork ladder`` run: its wall seconds and the CPU seconds of its processes."""
    argv = [sys.executable, "-m", "patchwork_env.cli", "ladder", spec, "--budget", budget, "--no-progress"]
    argv += [] if workers == "default" else ["--workers", workers]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr[-1000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu


def measure(budgets: list[str], repeats: int, workers: tuple[str, ...] = WORKERS) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        agents = make_agents(folder)
        cases = [(b, kind, w) for b in budgets for kind in agents for w in workers]
        times: dict[tuple[str, str, str], list[tuple[float, float]]] = {c: [] for c in cases}
        for _ in range(repeats):
            for budget, kind, w in cases:
                times[budget, kind, w].append(rate_once(agents[kind], budget, w, folder))
    rows = []
    for budget, kind, w in cases:
        wall = statistics.median(t for t, _ in times[budget, kind, w])
        cpu = statistics.median(c for _, c in times[budget, kind, w])
        one = statistics.median(t for t, _ in times[budget, kind, "1"]) if "1" in workers else None
        label = "the default workers" if w == "default" else f"{w} worker{'s' if w != '1' else ''}"
        rows.append(
            row(
                f"ladder {budget}, {kind}, {label}",
                wall,
                "s",
                reference=one if w != "1" else None,
                reference_name="1 worker",
                higher_is_better=False,
                note=f"median of {repeats}; CPU {cpu:.1f} s (all processes)",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_ladder", description=__doc__)
    parser.add_argument("--repeats", type=int, default=3, help="runs of every case, medians reported (default 3)")
    parser.add_argument("--budgets", nargs="+", default=["quick", "standard"], choices=("quick", "standard"))
    parser.add_argument("--workers", nargs="+", default=list(WORKERS), choices=WORKERS)
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON (a speed results file)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = measure(args.budgets, args.repeats, tuple(args.workers))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{os.cpu_count()} cores, load {load:.1f}; {time.perf_counter() - start:.0f} s; ratio = speed-up over 1 worker"
    )
    print(format_table(rows))
    if args.json:
        write_json(args.json, rows, "python -m benchmarks.bench_ladder", argv, quick=False)


if __name__ == "__main__":
    main()
