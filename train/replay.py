"""Write the replay of a recorded game as one self-contained HTML file (opens from disk, no server).

    python -m train.evaluate --agents greedy random --pairs 2 --records games/
    python -m train.replay games/greedy-vs-random.jsonl --game 1 -o game.html

``--game K`` picks the K-th game of the file (0-based; default 0). Without ``-o`` the page is
written beside the records as ``<records>-game<K>.html``. The format of a records file is
documented in ``patchwork_env.records``; the page in ``patchwork_env.replay``. A file that cannot
be read, a malformed record (naming the line, and the ply of an illegal action) or a game that
is not in the file is one ``error: ...`` line and exit status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from patchwork_env.records import read_record
from patchwork_env.replay import write_replay
from train.cli import Parser


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m train.replay",
        description="Write the replay of one recorded game as a self-contained HTML page.",
    )
    p.add_argument("records", type=Path, help="a records file (JSON Lines, one game per line)")
    p.add_argument("--game", type=int, default=0, metavar="K", help="which game of the file, from 0 (default 0)")
    p.add_argument("-o", "--output", type=Path, default=None, help="the HTML file (default <records>-game<K>.html)")
    p.add_argument("--title", default=None, help="the page's title (default: the players)")
    return p


def main(argv: Sequence[str] | None = None) -> Path:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.game < 0:
        parser.error(f"--game must be >= 0, got {args.game}")
    if not args.records.is_file():
        parser.error(f"no such records file: {args.records}")
    out: Path = args.output or args.records.with_name(f"{args.records.stem}-game{args.game}.html")
    if out.exists() and out.is_dir():
        parser.error(f"-o: {out} is a folder; give a file name such as {out / 'game.html'}")
    if not out.resolve().parent.is_dir():
        parser.error(f"-o: the folder {out.resolve().parent} does not exist")
    try:
        record = read_record(args.records, args.game)
        write_replay(out, record, args.title)
    except (ValueError, OSError) as exc:  # RecordError and UnicodeDecodeError are ValueErrors
        parser.error(f"{args.records}: {exc}")
    moves = len(record.actions)
    result = "" if record.winner is None else f", won by seat {record.winner} ({record.players[record.winner].name!r})"
    print(f"wrote {out} ({out.stat().st_size // 1024} kB): {moves} moves{result}; open it in a browser")
    return out


if __name__ == "__main__":
    main()
