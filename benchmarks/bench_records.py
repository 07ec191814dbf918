"""Game records and the replay page: writing a 100-game records file, reading it back (every game
replayed through the engine), and building + writing the replay page of one game.

    python -m benchmarks.bench_records [--seconds 1] [--repeats 5]

Target (issue 14): the file and the page each in well under a second (1,000 ms is the ceiling).
The games are random-vs-random: longer than games between good players, so a pessimistic case.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import Case, Counts, Row, format_table, rate, row, run_cases, timed
from patchwork_env import new_game
from patchwork_env.core.records import Player, Record, read_records, record_game, write_records
from patchwork_env.replay import write_replay

GAMES = 100
TARGET_MS = 1000.0


def random_records(count: int, seed: int = 0) -> list[Record]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        start = state = new_game(seed + k)
        actions = []
        while not state.is_terminal:
            legal = state.legal_actions()
            actions.append(int(legal[int(rng.random() * len(legal))]))
            state = state.step(actions[-1])
        out.append(record_game(start, actions, (Player("random", "random"), Player("random", "random"))))
    return out


def cases(folder: Path) -> list[Case]:
    records = random_records(GAMES)
    path = folder / "games.jsonl"
    page = folder / "game.html"
    write_records(path, records)

    def write() -> Counts:
        write_records(path, records)
        return {"files": 1}

    def read() -> Counts:
        read_records(path)
        return {"files": 1}

    def replay() -> Counts:
        write_replay(page, records[0])
        return {"pages": 1, "bytes": page.stat().st_size, "plies": len(records[0].actions)}

    return [
        Case("records write", lambda s: timed(write, s)),
        Case("records read", lambda s: timed(read, s)),
        Case("replay page", lambda s: timed(replay, s)),
    ]


def rows(runs: dict[str, list[Counts]]) -> list[Row]:
    page = runs["replay page"]
    size_kb = page[0]["bytes"] / page[0]["pages"] / 1024
    plies = page[0]["plies"] / page[0]["pages"]
    return [
        row(f"records: write {GAMES} games (JSON Lines)", 1000 / rate(runs["records write"], "files"), "ms",
            higher_is_better=False, target=TARGET_MS),
        row(f"records: read {GAMES} games (each replayed and checked)", 1000 / rate(runs["records read"], "files"),
            "ms", higher_is_better=False),
        row("replay page of one game (build + write HTML)", 1000 / rate(page, "pages"), "ms",
            higher_is_better=False, target=TARGET_MS, note=f"{size_kb:.0f} kB for {plies:.0f} moves"),
    ]  # fmt: skip


def measure(seconds: float, repeats: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-records-") as tmp:
        return rows(run_cases(cases(Path(tmp)), seconds, repeats))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_records", description=__doc__)
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per case per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (medians reported)")
    args = parser.parse_args()
    print(format_table(measure(args.seconds, args.repeats)))


if __name__ == "__main__":
    main()
