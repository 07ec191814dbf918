"""benchmarks.bench_az: the searches' simulation rates (mcts, az with rollouts, az with network
leaves, and mcts and az in a deep tree) are rows of the benchmark, measured and positive."""

from __future__ import annotations

import math

from benchmarks import bench_az


def test_the_search_rows_are_measured() -> None:
    rows = {r["name"]: r for r in bench_az.az_rows(0.05, 1, quick=True)}
    for name in bench_az.SEARCHES:
        r = rows[f"{name} simulations (one core)"]
        assert r["unit"] == "sims/s" and math.isfinite(r["value"]) and r["value"] > 0, r
    for name, reference in bench_az.REFERENCE.items():  # the compiled tree's rows carry their ratio to mcts
        r = rows[f"{name} simulations (one core)"]
        assert r["reference_name"] == reference
        assert r["ratio"] == r["value"] / rows[f"{reference} simulations (one core)"]["value"]
    model = rows["value-model leaf evaluations (one position per call)"]
    assert model["unit"] == "evals/s" and math.isfinite(model["value"]) and model["value"] > 0
