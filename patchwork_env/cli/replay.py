"""``patchwork replay``: a recorded game as one self-contained HTML file (opens from disk, no server).

    patchwork evaluate --agents greedy random --pairs 2 --records games/
    patchwork replay games/greedy-vs-random.jsonl --game 1 -o game.html

``--game K`` picks the K-th game of the file (0-based; default 0). Without ``-o`` the page is
written beside the records as ``<records>-game<K>.html``. The format of a records file is
documented in ``patchwork_env.core.records``; the page in ``patchwork_env.replay``. A file that cannot
be read, a malformed record (naming the line, and the ply of an illegal action) or a game that
is not in the file is one ``error: ...`` line and exit status 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from patchwork_env.cli.common import UsageError
from patchwork_env.core.files import check_output_path
from patchwork_env.core.records import read_record
from patchwork_env.replay import write_replay


def run(args: argparse.Namespace) -> Path:
    if args.game < 0:
        raise UsageError(f"--game must be >= 0, got {args.game}")
    if not args.records.is_file():
        raise UsageError(f"no such records file: {args.records}")
    out: Path = args.output or args.records.with_name(f"{args.records.stem}-game{args.game}.html")
    if out.exists() and out.is_dir():
        raise UsageError(f"-o: {out} is a folder; give a file name such as {out / 'game.html'}")
    check_output_path(out, "-o")  # a FIFO, a device or a missing folder: refused before any work
    try:
        record = read_record(args.records, args.game)
        write_replay(out, record, args.title)
    except (ValueError, OSError) as exc:  # RecordError and UnicodeDecodeError are ValueErrors
        raise UsageError(f"{args.records}: {exc}") from None
    moves = len(record.actions)
    result = "" if record.winner is None else f", won by seat {record.winner} ({record.players[record.winner].name!r})"
    print(f"wrote {out} ({out.stat().st_size // 1024} kB): {moves} moves{result}; open it in a browser")
    return out
