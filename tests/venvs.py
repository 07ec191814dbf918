"""Fresh virtual environments for the packaging tests: what a user gets from the built wheel, with
nothing borrowed from this environment (``tests/conftest.py`` builds them once per session)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON = Path(sys.executable)


def _venv(path: Path) -> Path:
    subprocess.run([PYTHON, "-m", "venv", str(path)], check=True, timeout=300)
    return path


def _pip(env: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}
    return subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", *args],
                          capture_output=True, text=True, timeout=900, env=environ)  # fmt: skip


def _installed(proc: subprocess.CompletedProcess[str], what: str) -> None:
    if proc.returncode and not os.environ.get("CI") and "No matching distribution" in proc.stderr:
        pytest.skip(f"{what} could not be installed (no package index?): {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]


def _run(env: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """A command of the venv ``env``, run outside the repository."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(list(argv), cwd=cwd or env, env=environ, capture_output=True, text=True, timeout=600)
