"""Speed of the AEC environment in random legal play, next to PettingZoo's connect_four_v3.

Every environment is driven the same way, through ``agent_iter`` / ``last`` / ``step``, choosing
uniformly among the legal actions read from ``observation["action_mask"]`` with the same cheap
sampler for all (``nonzero`` of a bool view of the 0/1 int8 mask, about 3x faster than on the int8
array itself; ``action_space.sample(mask)`` would cost ~35 us per move on its own), so the ratios
compare the environments, not the samplers. The four environments take turns
within each repeat so that machine noise hits them alike; the table shows medians over repeats and
each environment's speed as a ratio to connect four's at the same wrapping level.

    python -m benchmarks.bench_env [--seconds 2] [--repeats 5]

Targets (issue 3): ``raw_env`` >= 20,000 moves/s and ``env()`` >= connect_four_v3 ``env()``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

RAW_TARGET = 20_000.0


def _connect_four() -> Any:
    """``pettingzoo.classic.connect_four_v3``, the reference (needs pygame: the ``dev`` extra)."""
    from pettingzoo.classic import connect_four_v3

    return connect_four_v3


def play(env: Any, seconds: float, seed: int = 0) -> float:
    """Moves per second of random legal play on ``env`` for about ``seconds`` (whole games)."""
    rng = np.random.default_rng(seed)
    moves = 0
    games = 0
    start = time.perf_counter()
    while True:
        env.reset(seed=seed + games)
        for _agent in env.agent_iter():
            obs, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                action = None
            else:
                legal = obs["action_mask"].view(np.bool_).nonzero()[0]  # 0/1 int8: bool view, numpy's fast path
                action = int(legal[int(rng.random() * len(legal))])
                moves += 1
            env.step(action)
        games += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return moves / elapsed


def _makers() -> dict[str, tuple[Callable[[], Any], str]]:
    """name -> (constructor, name of the reference it is compared with)."""
    from patchwork_env.envs import aec

    c4 = _connect_four()
    return {
        "connect_four_v3 env()": (c4.env, "connect_four_v3 env()"),
        "connect_four_v3 raw_env": (c4.raw_env, "connect_four_v3 raw_env"),
        "patchwork env()": (aec.env, "connect_four_v3 env()"),
        "patchwork raw_env": (aec.raw_env, "connect_four_v3 raw_env"),
    }


def measure_env(seconds: float = 2.0, repeats: int = 5) -> list[dict[str, Any]]:
    """Rows ``{"name", "moves_per_s", "ratio", "reference"}``: median moves/s over ``repeats``
    rounds of ``seconds`` each, and the ratio to the connect four env at the same wrapping."""
    makers = _makers()
    envs = {name: make() for name, (make, _) in makers.items()}
    for e in envs.values():  # warm up (numba dispatch, caches)
        play(e, 0.05)
    runs: dict[str, list[float]] = {name: [] for name in envs}
    for r in range(repeats):
        for name, e in envs.items():
            runs[name].append(play(e, seconds, seed=1000 * r))
    medians = {name: statistics.median(v) for name, v in runs.items()}
    return [
        {
            "name": name,
            "moves_per_s": medians[name],
            "ratio": medians[name] / medians[ref],
            "reference": ref,
        }
        for name, (_, ref) in makers.items()
    ]


def format_rows(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'environment':26s} {'moves/s':>10s} {'ratio':>7s}  reference"]
    for row in rows:
        lines.append(f"{row['name']:26s} {row['moves_per_s']:10,.0f} {row['ratio']:7.2f}  {row['reference']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per environment per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (medians are reported)")
    args = parser.parse_args(argv)
    rows = measure_env(args.seconds, args.repeats)
    print(f"random legal play via agent_iter/last/step, median of {args.repeats} x {args.seconds:g} s")
    print(format_rows(rows))
    by_name = {row["name"]: row for row in rows}
    raw = by_name["patchwork raw_env"]["moves_per_s"]
    wrapped = by_name["patchwork env()"]["ratio"]
    print(
        f"targets: raw_env >= {RAW_TARGET:,.0f} moves/s: {'met' if raw >= RAW_TARGET else 'NOT met'} ({raw:,.0f}); "
        f"env() >= connect_four_v3 env(): {'met' if wrapped >= 1 else 'NOT met'} (ratio {wrapped:.2f})"
    )


if __name__ == "__main__":
    main()
