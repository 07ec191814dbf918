"""Where a measurement comes from: the command, the code (commit or version), the date and the
machine. Every results file the project publishes (``results/*.json``) carries these fields, so a
figure can be reproduced and its page regenerated from data."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    """The CPU's model name (Linux ``/proc/cpuinfo``; else the platform's processor string)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


UNKNOWN_COMMIT = "unknown (an installed package, not a git checkout)"


def commit() -> str:
    """The git commit of the checkout this package runs from (``+dirty`` with uncommitted changes
    to tracked files), or ``UNKNOWN_COMMIT`` when it runs from an installed package: the commit is
    the package's own, never that of the folder the command runs in."""
    package = Path(__file__).resolve().parents[1]  # .../patchwork_env
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=package, capture_output=True, text=True, timeout=10, check=True
        )
        if Path(top.stdout.strip()).resolve() != package.parent:
            return UNKNOWN_COMMIT  # installed into a folder that some other repository holds
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=package, capture_output=True, text=True, timeout=10, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=package,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN_COMMIT
    return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def provenance(command: str, seeds: list[int] | None = None) -> dict[str, Any]:
    """The header of a results file: command, commit, version, UTC date, machine, seeds."""
    from patchwork_env import __version__

    return {
        "command": command,
        "commit": commit(),
        "version": __version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version()},
        "seeds": seeds or [],
    }
