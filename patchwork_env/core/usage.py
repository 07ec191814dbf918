"""The error convention of every command line of the project (``patchwork``, ``python -m train.X``):
a bad option or input is one ``error: ...`` line on stderr and exit code 2, never a usage dump or
a traceback. Here, below the library's command line and the research code, so that both report
the same way. Light: standard library only.
"""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import NoReturn
from urllib.parse import unquote, urlparse


class UsageError(Exception):
    """A command-line error: printed as one ``error:`` line, exit code 2."""


def report(message: object) -> int:
    """Print the first line of ``message`` as ``error: ...`` on stderr, its install hint as this copy of
    the package installs it (``install_hint``); return the exit code, 2."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    line = _PUBLISHED_HINT.sub(lambda m: install_hint(m.group(1)), lines[0]) if lines else "invalid arguments"
    print(f"error: {line}", file=sys.stderr)
    return 2


def fail(message: object) -> NoReturn:
    """``report`` the error and exit with code 2."""
    raise SystemExit(report(message))


DISTRIBUTION = "patchwork-env"
_PUBLISHED_HINT = re.compile(r'pip install "patchwork-env\[([a-z0-9-]+)\]"')  # as the library's errors say it


def install_hint(extra: str) -> str:
    """The command that adds ``extra`` where this copy of the package comes from: from a checkout
    (editable, or on the path), ``pip install -e "/path/to/checkout[EXTRA]"``; installed from a
    wheel file or a folder, the same file or folder with the extra (pip's ``direct_url.json``,
    PEP 610), e.g. ``pip install "/path/to/patchwork_env-X-py3-none-any.whl[EXTRA]"``; from a
    package index, ``pip install "patchwork-env[EXTRA]"``."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "patchwork_env").is_dir():
        return f'pip install -e "{checkout}[{extra}]"'
    published = f'pip install "{DISTRIBUTION}[{extra}]"'
    try:
        origin = json.loads(metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or "null")
    except (metadata.PackageNotFoundError, ValueError):
        return published
    if not isinstance(origin, dict) or not str(origin.get("url", "")).startswith("file://"):
        return published  # from an index (no direct_url.json), or from a remote address
    path = unquote(urlparse(origin["url"]).path)
    editable = isinstance(origin.get("dir_info"), dict) and origin["dir_info"].get("editable")
    return f'pip install {"-e " if editable else ""}"{path}[{extra}]"'
