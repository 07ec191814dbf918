"""The installable library: the wheel's one top-level name, a fresh environment next to another
package named ``agents``, the optional torch extra, the layer contract, and cold starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.cli import error_lines

ROOT = Path(__file__).resolve().parent.parent
PYTHON = Path(sys.executable)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    shutil.copytree(
        ROOT, build / "src", ignore=shutil.ignore_patterns(".venv", ".git", "runs", "__pycache__", "*.egg-info")
    )
    subprocess.run([PYTHON, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(build / "src")], check=True, capture_output=True, text=True, timeout=300)  # fmt: skip
    (path,) = out.glob("patchwork_env-*.whl")
    return path


def test_the_wheel_installs_one_top_level_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"patchwork_env"}
    assert "patchwork_env/players/pretrained-v1.pt" in names and "patchwork_env/data/patches.json" in names
    assert "patchwork_env/data/ladder-v1.json" in names  # the ladder's scale ships with the package
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "patchwork = patchwork_env.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.fixture(scope="module")
def fresh_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the wheel and openai-agents (import name ``agents``), both without their
    dependencies; the dependencies (numpy, numba, gymnasium, pettingzoo, torch) come from this
    environment's site-packages, as a path entry after the venv's own."""
    env = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    install = [PYTHON, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps"]
    proc = subprocess.run([*install, str(wheel), "openai-agents"], capture_output=True, text=True, timeout=300)
    if proc.returncode and "openai-agents" in proc.stderr and not os.environ.get("CI"):
        pytest.skip(f"openai-agents could not be installed (no registry?): {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    (site / "zz-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return env


def _run(env: Path, *argv: str, torch: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """A command of the fresh venv, run outside the repository (without torch if ``torch=False``)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if not torch:  # a package named torch that is not there: import torch fails as without the extra
        blocker = env / "no-torch"
        (blocker / "torch").mkdir(parents=True, exist_ok=True)
        (blocker / "torch" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torch'\")\n")
        environ["PYTHONPATH"] = str(blocker)
    return subprocess.run(list(argv), cwd=cwd or env, env=environ, capture_output=True, text=True, timeout=300)


def test_next_to_openai_agents_the_env_plays_and_agents_stays_theirs(fresh_env: Path) -> None:
    code = (
        "import importlib.util, patchwork_env, numpy as np\n"
        "origin = importlib.util.find_spec('agents').origin  # openai-agents (its deps are not installed)\n"
        f"assert origin.startswith({str(fresh_env)!r}) and 'openai' in open(origin).read(), origin\n"
        "env = patchwork_env.SingleAgentEnv(opponent='greedy')\n"
        "obs, info = env.reset(seed=0)\n"
        "done = False\n"
        "while not done:\n"
        "    obs, r, done, _, info = env.step(int(np.flatnonzero(info['action_mask'])[0]))\n"
        "print('played', r)\n"
    )
    proc = _run(fresh_env, str(fresh_env / "bin" / "python"), "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert "played" in proc.stdout


def test_the_patchwork_command_evaluates_in_the_fresh_env(fresh_env: Path) -> None:
    proc = _run(fresh_env, str(fresh_env / "bin" / "patchwork"), "evaluate", "--agents", "greedy", "random",
                "--pairs", "2", "--workers", "1", "--no-progress")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "greedy" in proc.stdout and "Elo" in proc.stdout


def test_the_ladder_scale_ships_in_the_wheel(fresh_env: Path) -> None:
    proc = _run(fresh_env, str(fresh_env / "bin" / "patchwork"), "ladder", "--table")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Patchwork ladder v1") and "mcts:sims=1000" in proc.stdout


def test_pretrained_ships_in_the_wheel_and_plays(fresh_env: Path) -> None:
    code = (
        "from patchwork_env.players import make_agent; import patchwork_env as p, numpy as np\n"
        "a = make_agent('pretrained'); s = p.new_game(seed=1)\n"
        "assert s.is_legal(a.act(s, np.random.default_rng(0)))\n"
    )
    proc = _run(fresh_env, str(fresh_env / "bin" / "python"), "-c", code)
    assert proc.returncode == 0, proc.stderr


def test_without_torch_a_network_agent_is_one_clear_error(fresh_env: Path) -> None:
    code = (
        "from patchwork_env import SingleAgentEnv\n"
        "from patchwork_env.players import MissingExtraError\n"
        "SingleAgentEnv(opponent='greedy')  # no torch needed\n"
        "try:\n"
        "    SingleAgentEnv(opponent='pretrained')\n"
        "except MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    proc = _run(fresh_env, str(fresh_env / "bin" / "python"), "-c", code, torch=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == 'pretrained needs PyTorch, which is not installed: pip install "patchwork-env[torch]"'
    for argv in (["play", "--opponent", "pretrained"], ["evaluate", "--agents", "az", "greedy"]):
        proc = _run(fresh_env, str(fresh_env / "bin" / "patchwork"), *argv, torch=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert error_lines(proc.stderr) == [
            f"error: {'pretrained' if argv[0] == 'play' else 'az'} needs PyTorch, which is not installed: "
            'pip install "patchwork-env[torch]"'
        ]


def test_the_layer_contract_fails_when_the_core_imports_an_env_module(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "patchwork_env", tmp_path / "patchwork_env", ignore=shutil.ignore_patterns("__pycache__"))
    lint = [str(PYTHON.parent / "lint-imports"), "--config", str(ROOT / ".importlinter")]
    kept = subprocess.run(lint, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert kept.returncode == 0, kept.stdout
    rules = tmp_path / "patchwork_env" / "core" / "rules.py"
    rules.write_text(rules.read_text() + "\nfrom patchwork_env.envs import observation  # noqa\n")
    broken = subprocess.run(lint, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert broken.returncode != 0
    assert "patchwork_env: each layer imports only the layers below it BROKEN" in broken.stdout
    assert "patchwork_env.core.rules -> patchwork_env.envs.observation" in broken.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "patchwork_env.cli", "--help"],
        ["-m", "patchwork_env.cli", "evaluate", "--help"],
        ["-m", "patchwork_env.cli", "play", "--help"],
        ["-m", "train.selfplay", "--help"],
        ["-m", "train.distill", "--help"],
        ["-m", "train.alphazero", "--help"],
        ["-m", "train.sb3_maskable", "--help"],
        ["-m", "train.rllib_selfplay", "--help"],
        ["-m", "train.value_head", "--help"],
    ],
)
def test_help_loads_neither_torch_nor_numba(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time")}
    assert "usage" in proc.stdout.lower()
    assert not {"torch", "numba"} & loaded
