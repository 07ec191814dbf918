"""Where a measurement comes from: the command, the code (commit or version), the date and the
machine. Every results file the project publishes (``results/*.json``) carries these fields, so a
figure can be reproduced and its page regenerated from data."""

from __future__ import annotations

import datetime
import importlib
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
#: the measurements' outputs, not code: a results file one command writes leaves the code as it was,
#: so the next measurement from the same checkout still names a clean commit
OUTPUTS = ("results",)
BUILD_INFO_MODULE = f"{__name__.split('.')[0]}._build_info"  # _build_info.py: setup.py writes it into the wheel


def commit() -> str:
    """The git commit of the code that runs: that of the checkout this package runs from (``+dirty``
    with uncommitted changes to tracked files outside ``OUTPUTS``), else the one the installed package was built from
    (``built_commit``), else ``UNKNOWN_COMMIT``. Never that of the folder the command runs in."""
    return checkout_commit() or built_commit() or UNKNOWN_COMMIT


def checkout_commit() -> str | None:
    """The commit of the git checkout whose top level holds this package, or None when it runs
    from anywhere else (an installed package, even one inside some other repository)."""
    package = Path(__file__).resolve().parents[1]  # .../patchwork_env
    git = ["git", "--no-optional-locks"]
    try:
        top = subprocess.run(
            [*git, "rev-parse", "--show-toplevel"], cwd=package, capture_output=True, text=True, timeout=10, check=True
        )
        if Path(top.stdout.strip()).resolve() != package.parent:
            return None  # installed into a folder that some other repository holds
        sha = subprocess.run(
            [*git, "rev-parse", "HEAD"], cwd=package, capture_output=True, text=True, timeout=10, check=True
        )
        dirty = subprocess.run(
            [
                *git,
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":(top)",
                *(f":(top,exclude){d}" for d in OUTPUTS),
            ],
            cwd=package,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def built_commit() -> str | None:
    """The commit an installed package was built from (``BUILD_INFO_MODULE``, which the build writes
    into the wheel), or None when the package has no such module (a checkout, or a build without git)."""
    try:
        info = importlib.import_module(BUILD_INFO_MODULE)
    except ImportError:
        return None
    value = getattr(info, "COMMIT", None)
    return value if isinstance(value, str) and value else None


def provenance(command: str, seeds: list[int] | None = None) -> dict[str, Any]:
    """The header of a results file: command, commit, version, UTC date, machine, seeds."""
    from patchwork_env.core.version import __version__

    return {
        "command": command,
        "commit": commit(),
        "version": __version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version()},
        "seeds": seeds or [],
    }
