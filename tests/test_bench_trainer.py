"""benchmarks.bench_trainer: a row per recipe (the quick network and the from-scratch recipe of issue
64), each the whole loop's decisions per wall-second and per CPU-second (tiny batches; no timing asserts)."""

from __future__ import annotations

import math

from benchmarks import bench_trainer


def test_a_row_per_recipe_with_its_rates_per_second_and_per_cpu_second() -> None:
    rows = bench_trainer.rows(quick=True)
    assert [r["name"] for r in rows] == [
        f"PPO learner decisions (train.selfplay, {label})" for label in bench_trainer.RECIPES
    ]
    for r, config in zip(rows, bench_trainer.RECIPES.values(), strict=True):
        assert r["unit"] == "decisions/s" and r["note"].startswith(f"{config}, "), r
        assert math.isfinite(r["value"]) and r["value"] > 0 and math.isfinite(r["per_cpu_s"]) and r["per_cpu_s"] > 0, r
