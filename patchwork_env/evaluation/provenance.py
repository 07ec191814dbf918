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


def commit() -> str | None:
    """The git commit of the working directory's checkout (``+dirty`` with uncommitted changes to
    tracked files), or None outside a checkout."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
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
