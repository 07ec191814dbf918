"""Fixtures that cost a build or an install, made once per test session and shared by the packaging
modules (each module built its own wheel and venvs before: minutes of CI apiece)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.venvs import PYTHON, ROOT, _installed, _pip, _venv


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # with .git: the build (setup.py) bakes the commit into the wheel
    shutil.copytree(ROOT, build / "src", ignore=shutil.ignore_patterns(".venv", "runs", "__pycache__", "*.egg-info"))
    subprocess.run([PYTHON, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(build / "src")], check=True, capture_output=True, text=True, timeout=300)  # fmt: skip
    (path,) = out.glob("patchwork_env-*.whl")
    return path


@pytest.fixture(scope="session")
def fresh_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a user gets from ``pip install patchwork-env``: a new venv with the wheel and its own
    dependencies from the package index, nothing borrowed from this environment (no path entry,
    no extras), and openai-agents (import name ``agents``) beside it without its dependencies."""
    env = _venv(tmp_path_factory.mktemp("fresh") / "venv")
    _installed(_pip(env, str(wheel)), "the wheel's dependencies")
    _installed(_pip(env, "--no-deps", "openai-agents"), "openai-agents")
    return env


@pytest.fixture(scope="session")
def extras_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the wheel and its ``torch``, ``sb3`` and ``plot`` extras (the pinned CPU torch
    first, as the README says), nothing borrowed from this environment."""
    env = _venv(tmp_path_factory.mktemp("extras") / "venv")
    _installed(_pip(env, "torch==2.13.0"), "torch")
    _installed(_pip(env, f"{wheel}[torch,sb3,plot]", "-c", str(ROOT / "constraints.txt")), "the extras")
    return env


@pytest.fixture(scope="session")
def openspiel_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the wheel and its ``openspiel`` extra (OpenSpiel from the package index),
    nothing borrowed from this environment."""
    if sys.version_info < (3, 11):
        pytest.skip("OpenSpiel ships wheels for Python >= 3.11 only")
    env = _venv(tmp_path_factory.mktemp("openspiel") / "venv")
    _installed(_pip(env, f"{wheel}[openspiel]"), "the openspiel extra")
    return env


@pytest.fixture(scope="session")
def notebook_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the wheel and its ``notebook`` extra (Jupyter), nothing borrowed from this
    environment: what ``pip install "patchwork-env[notebook]"`` gives."""
    env = _venv(tmp_path_factory.mktemp("notebook") / "venv")
    _installed(_pip(env, f"{wheel}[notebook]", "-c", str(ROOT / "constraints.txt")), "the notebook extra")
    return env
