"""benchmarks.bench_network: its rows exist and its JSON carries ``flop_share`` and the provenance
(tiny sizes; no timing asserts)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from benchmarks import bench_network

NAMES = {
    "matmul 512x512 fp32",
    "PPO learner update (quick.yaml, 2 epochs)",
    "PPO rollout forward (quick.yaml, no grad)",
    "az evaluator (NetInference)",
    "az evaluator (reference forward)",
    "AlphaZero learner update (alphazero.yaml)",
    "compiled model (value and prior heads)",
    "AlphaZero self-play (alphazero.yaml)",
}
RATE_ONLY = {"AlphaZero self-play (alphazero.yaml)"}  # the loop's decisions per second: no FLOP share


def _refuse(constant: str) -> None:
    raise ValueError(f"{constant} in the JSON")


def test_the_rows_and_their_json(tmp_path: Path) -> None:
    path = tmp_path / "network.json"
    bench_network.main(["--quick", "--seconds", "0.01", "--repeats", "1", "--json", str(path)])
    data = json.loads(path.read_text(), parse_constant=_refuse)  # NaN is not JSON: the results page refuses it
    assert {"command", "commit", "date", "machine", "load", "rows"} <= set(data)
    assert data["command"].startswith("python -m benchmarks.bench_network --quick")
    rows = data["rows"]
    assert {r["name"] for r in rows} == NAMES
    evaluators = [(r["name"], r["N"]) for r in rows if r["name"].startswith("az evaluator")]
    assert sorted(evaluators) == sorted((name, n) for name in NAMES if name.startswith("az") for n in (1, 8))
    for r in rows:
        assert math.isfinite(r["value"]) and r["value"] > 0, r
        share = r["flop_share"]
        assert share is None if r["name"] in RATE_ONLY else (math.isfinite(share) and share > 0), r
        assert not r["note"].endswith("; "), r
        assert r["unit"] in ("GFLOP/s", "decisions/s", "evals/s")
    assert rows[0]["flop_share"] == 1.0
    assert all("MFLOP each" in r["note"] for r in rows[1:] if r["name"] not in RATE_ONLY)
