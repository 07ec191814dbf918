"""The set-up of a checkout (``make demo``, ``make test``): the pinned torch comes from a local build or
PyTorch's CPU index, never PyPI's CUDA build, unless asked (``tools/torch_index.py``); ``make demo``
installs the ``demo`` extra alone, ``make test`` the rest on top."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from tools import torch_index
from tools.torch_index import CPU_INDEX, TORCH, pip_options

ROOT = Path(__file__).resolve().parent.parent


def _never() -> bool:
    raise AssertionError("asked whether torch is local where it does not matter")


@pytest.mark.parametrize(
    ("choice", "system", "local", "expected"),
    [
        ("auto", "Linux", False, ["--index-url", CPU_INDEX]),  # PyPI would give the CUDA build
        ("auto", "Linux", True, []),  # a local build (find-links) or torch installed: no index at all
        ("auto", "Darwin", False, []),  # PyPI's macOS torch is the CPU build
        ("auto", "Windows", False, []),
        ("pypi", "Linux", False, []),
        ("https://download.pytorch.org/whl/cu128", "Linux", True, ["--index-url", "https://download.pytorch.org/whl/cu128"]),
    ],
)  # fmt: skip
def test_auto_takes_the_cpu_build_wherever_pypi_would_give_cuda(
    choice: str, system: str, local: bool, expected: list[str]
) -> None:
    asked = (lambda: local) if choice == "auto" and system == "Linux" else _never
    assert pip_options(choice, system, asked) == expected


@pytest.mark.parametrize("bad", ["", "cpu", "cuda", "download.pytorch.org/whl/cpu", "https://", "--index-url"])
def test_a_bad_torch_index_is_one_error_line_and_exit_2(bad: str) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "torch_index.py"), bad], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: TORCH_INDEX must be auto, pypi or an index URL (http:// or https://), got {bad!r}\n"


def test_the_pin_is_the_constraints_pin() -> None:
    assert (ROOT / "constraints.txt").read_text().count(TORCH) == 1


def test_on_this_machine_auto_keeps_pips_choice_and_pip_picks_a_cpu_build(tmp_path: Path) -> None:
    """What pip actually picks with auto's options, by a dry run in a new venv (nothing downloaded):
    a CPU build, never PyPI's CUDA build."""
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=300)
    python = str(env / "bin" / "python")
    if not torch_index.found_without_index(python):
        pytest.skip("no local torch build here: auto would ask PyTorch's CPU index (not reachable from every machine)")
    proc = subprocess.run([python, str(ROOT / "tools" / "torch_index.py")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.split() == [], proc.stderr
    report = tmp_path / "report.json"
    proc = subprocess.run([python, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps", "--report", str(report),
                           TORCH, *proc.stdout.split()], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (chosen,) = json.loads(report.read_text())["install"]
    assert chosen["metadata"]["version"] == "2.13.0+cpu", chosen["download_info"]["url"]


def _make_dry_run(target: str, tmp_path: Path) -> str:
    if shutil.which("make") is None:
        pytest.skip("no make")
    venv = tmp_path / "venv"  # a venv that does not exist: make -n prints every step of the set-up
    proc = subprocess.run(["make", "-n", "-B", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_demo_installs_the_demo_extra_and_nothing_else(tmp_path: Path) -> None:
    steps = _make_dry_run("demo", tmp_path)
    installs = re.findall(r'pip install --quiet -e "\.\[([a-z,]+)\]"', steps)
    assert installs == ["demo"], steps
    torch_line = next(line for line in steps.splitlines() if "torch==2.13.0" in line)
    # where torch comes from is decided first; an invalid TORCH_INDEX stops make before pip runs
    assert "tools/torch_index.py auto" in torch_line and ") && " in torch_line, torch_line
    assert steps.index("torch==2.13.0") < steps.index('".[demo]"') < steps.index("-m train.demo")


def test_make_test_installs_the_rest_on_top_of_the_demo(tmp_path: Path) -> None:
    steps = _make_dry_run("setup", tmp_path)
    installs = re.findall(r'pip install --quiet -e "\.\[([a-z,]+)\]"', steps)
    assert installs[0] == "demo" and len(installs) == 2, steps
    extras = set(installs[1].split(","))
    assert {"train", "dev", "interop", "scale"} <= extras, extras


def test_the_train_extra_holds_the_demo_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "patchwork-env[demo]" in extras["train"]
    demo = " ".join(extras["demo"])
    for heavy in ("stable-baselines3", "optuna", "ray", "torchrl", "selenium", "pygame", "mkdocs"):
        assert heavy not in demo, heavy
