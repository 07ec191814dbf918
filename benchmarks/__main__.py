"""``python -m benchmarks [--quick] [--json PATH]``: the speed table of the README."""

from __future__ import annotations

import argparse
import os
import platform
import time

from benchmarks import format_table, run_benchmarks, write_json


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a few seconds in all (CI, notebooks)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument("--seconds", type=float, help="seconds per case per repeat (default 1, quick 0.05)")
    parser.add_argument("--repeats", type=int, help="repeats, medians reported (default 5, quick 3)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = run_benchmarks(args.quick, args.seconds, args.repeats)
    elapsed = time.perf_counter() - start
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {load:.1f}; "
          f"{'quick' if args.quick else 'full'} run in {elapsed:.0f} s; medians; ratio = times better than "
          "connect four (PettingZoo connect_four_v3) measured in the same run")  # fmt: skip
    print(format_table(rows))
    if args.json:
        write_json(args.json, rows, "python -m benchmarks", argv, args.quick)


if __name__ == "__main__":
    main()
