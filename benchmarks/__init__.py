"""Speed and memory of the engine and the environments, each next to PettingZoo's connect four
measured in the same run.

    python -m benchmarks [--quick] [--json PATH]      (or: make bench)

``run_benchmarks(quick)`` returns the table as a list of row dicts (see ``Row``) for notebooks,
e.g. to plot throughput against batch size (rows with an ``"N"``). The modules:
``bench_engine`` (GameState random play, state copies, memory), ``bench_vector`` (the vector
engine, the Gymnasium vector env, random games through the batched path), ``bench_env``
(the AEC ``env()`` / ``raw_env``), ``bench_records`` (game records and the replay page) and
``bench_trainer`` (PPO learner decisions/s of ``train.selfplay``), ``bench_az`` (the az leaf
evaluator) and ``bench_network`` (the network's passes as a share of the machine's matmul rate).

Measurements are medians over repeats; the cases take turns inside every repeat so that noise
from other processes hits all of them alike. ``per_cpu_s`` is the same count per second of CPU
time used by this process: on a shared machine it shows what one dedicated core would do.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # connect four imports pygame

Row = dict[str, Any]
"""A table row: ``name``, ``N`` (batch size or None), ``value``, ``unit``, ``per_cpu_s`` (or None),
``reference`` (connect four's value for the same measure, or None), ``reference_name``,
``ratio`` (how many times better than the reference: value / reference for rates,
reference / value for times and bytes), ``target`` (or None), ``met`` (bool or None), ``note``."""

Counts = dict[str, float]
RunFn = Callable[[float], Counts]


@dataclass
class Case:
    """A measurement: ``run(seconds)`` works for about that long and returns its counts."""

    key: str
    run: RunFn


def timed(body: Callable[[], Counts], seconds: float) -> Counts:
    """Call ``body`` until ``seconds`` have passed; add up its counts, plus ``wall`` and ``cpu`` seconds."""
    total: Counts = {}
    start, cpu = time.perf_counter(), time.process_time()
    while True:
        for k, v in body().items():
            total[k] = total.get(k, 0.0) + v
        wall = time.perf_counter() - start
        if wall >= seconds:
            break
    total["wall"] = wall
    total["cpu"] = time.process_time() - cpu
    return total


def run_cases(cases: list[Case], seconds: float, repeats: int) -> dict[str, list[Counts]]:
    """Every case once per repeat, in turn; returns each case's counts per repeat."""
    out: dict[str, list[Counts]] = {c.key: [] for c in cases}
    for _ in range(repeats):
        for c in cases:
            out[c.key].append(c.run(seconds))
    return out


def rate(runs: list[Counts], count: str, clock: str = "wall") -> float:
    """Median over repeats of ``count`` per second of ``clock`` ("wall" or "cpu")."""
    return statistics.median(r[count] / r[clock] for r in runs if r[clock] > 0)


def row(
    name: str,
    value: float,
    unit: str,
    *,
    n: int | None = None,
    per_cpu_s: float | None = None,
    reference: float | None = None,
    reference_name: str = "",
    higher_is_better: bool = True,
    target: float | None = None,
    flop_share: float | None = None,
    note: str = "",
) -> Row:
    ratio = None
    if reference:
        ratio = value / reference if higher_is_better else reference / value
    met = None
    if target is not None:
        met = value >= target if higher_is_better else value <= target
    return {
        "name": name,
        "N": n,
        "value": value,
        "unit": unit,
        "per_cpu_s": per_cpu_s,
        "reference": reference,
        "reference_name": reference_name,
        "ratio": ratio,
        "target": target,
        "met": met,
        "flop_share": flop_share,
        "note": note,
    }


def run_benchmarks(quick: bool = False, seconds: float | None = None, repeats: int | None = None) -> list[Row]:
    """The whole table. ``quick``: a few seconds in all (CI, notebooks); otherwise about two minutes."""
    from benchmarks import bench_az, bench_engine, bench_network, bench_records, bench_vector

    secs = seconds if seconds is not None else (0.05 if quick else 1.0)
    reps = repeats if repeats is not None else 3 if quick else 5
    ref = bench_engine.ConnectFourReference()
    cases = [*ref.cases(), *bench_engine.cases(), *bench_vector.cases(quick)]  # built (and warmed) before timing
    runs = run_cases(cases, secs, reps)
    rows = bench_engine.rows(runs, ref)
    rows += env_rows(secs, reps)
    rows += bench_vector.rows(runs, ref, quick)
    rows += bench_engine.memory_rows(ref)
    rows += bench_records.measure(secs, reps)
    rows += trainer_rows(quick, reps)
    rows += bench_az.az_rows(secs, reps, quick)
    rows += bench_network.network_rows(secs, reps, quick)
    return rows


def trainer_rows(quick: bool, repeats: int) -> list[Row]:
    """The PPO trainer row (``bench_trainer``; needs the ``train`` extra: torch)."""
    try:
        from benchmarks.bench_trainer import rows as trainer
    except ImportError as exc:
        return [row("PPO learner decisions", float("nan"), "decisions/s", note=f"not available: {exc}")]
    return trainer(quick, 1 if quick else min(repeats, 3))


def env_rows(seconds: float, repeats: int) -> list[Row]:
    """The AEC env rows, from ``bench_env.measure_env`` (written alongside the AEC env)."""
    try:
        from benchmarks.bench_env import measure_env
    except ImportError as exc:
        return [row("env() / raw_env", float("nan"), "moves/s", note=f"benchmarks.bench_env not available: {exc}")]
    targets = {"patchwork raw_env": 20_000.0}
    out = []
    for r in measure_env(seconds, repeats):
        if not str(r["name"]).startswith("patchwork"):
            continue
        reference = r["moves_per_s"] / r["ratio"] if r["ratio"] else None
        target = targets.get(r["name"])
        note = "target: >= connect four env()" if r["name"] == "patchwork env()" else ""
        out.append(
            row(
                f"AEC {r['name'].removeprefix('patchwork ')}",
                r["moves_per_s"],
                "moves/s",
                reference=reference,
                reference_name=r["reference"],
                target=target,
                note=note,
            )
        )
    return out


def write_json(path: str, rows: list[Row], program: str, argv: list[str] | None, quick: bool) -> None:
    """The rows as a results file of kind ``speed`` (``patchwork_env.evaluation.results_file``) with
    their provenance (command, commit, date, machine) and the load average of the moment; checked,
    and written atomically."""
    from patchwork_env.evaluation import results_file
    from patchwork_env.evaluation.provenance import provenance

    command = " ".join([program, *(sys.argv[1:] if argv is None else argv)])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    data = {**provenance(command), "kind": results_file.SPEED, "quick": quick, "load": load, "rows": rows}
    results_file.write(path, data)


def format_table(rows: list[Row]) -> str:
    """The rows as one aligned text table."""

    def num(x: float | None, unit: str = "") -> str:
        if x is None or x != x:  # None or NaN
            return "-"
        if unit == "us":
            return f"{x:.2f}"
        if unit == "s":
            return f"{x:.1f}"
        return f"{x:,.0f}"

    header = f"{'measure':44s} {'N':>5s} {'value':>11s} {'unit':8s} {'per CPU-s':>10s} " + (
        f"{'connect4':>10s} {'ratio':>7s}  {'target':>8s}  note"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        target = "-" if r["target"] is None else f"{'ok' if r['met'] else 'MISS'} {num(r['target'], r['unit'])}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        lines.append(
            f"{r['name']:44s} {'' if r['N'] is None else r['N']:>5} {num(r['value'], r['unit']):>11s} "
            f"{r['unit']:8s} {num(r['per_cpu_s']):>10s} {num(r['reference'], r['unit']):>10s} {ratio:>7s}  "
            f"{target:>8s}  {r['note']}"
        )
    return "\n".join(lines)
