"""Run the ``patchwork`` command in-process, as the shell would: the exit code, whether the error
came from argparse (SystemExit) or from a command (a return value)."""

from __future__ import annotations

from patchwork_env.cli import main


def patchwork(*argv: str) -> int:
    try:
        return main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)


def error_lines(stderr: str) -> list[str]:
    """The non-empty lines of ``stderr`` other than the one-off compile notices of a first run
    (``compiling the rules kernels (first run only, ...)``, ``patchwork_env.core.jit``)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith(("compiling ", "compiled "))]
