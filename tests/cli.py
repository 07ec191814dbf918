"""Run the ``patchwork`` command in-process, as the shell would: the exit code, whether the error
came from argparse (SystemExit) or from a command (a return value)."""

from __future__ import annotations

from patchwork_env.cli import main


def patchwork(*argv: str) -> int:
    try:
        return main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
