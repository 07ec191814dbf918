"""The error convention of every command line here: one ``error: ...`` line on stderr and exit
code 2, never a usage dump or a traceback (``Parser`` for argparse's own errors, ``fail`` for the
checks after parsing)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

# every seed a command line or config takes: every library seeded here accepts it (numpy's legacy
# np.random.seed, which SB3 calls, only takes < 2**32), with room for the offsets the trainers add
MAX_SEED = 2**31 - 1


def fail(message: object) -> NoReturn:
    """Print the first line of ``message`` as ``error: ...`` on stderr and exit with code 2."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    print(f"error: {lines[0] if lines else 'invalid arguments'}", file=sys.stderr)
    raise SystemExit(2)


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors follow ``fail`` (``--help`` still prints usage)."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see {self.prog} --help)")
