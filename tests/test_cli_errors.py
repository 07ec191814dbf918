"""Every bad argument, spec or config value of a command line is one ``error: ...`` line on stderr
and exit code 2 (never a traceback), found before anything is written; agent specs are built, not
only parsed, and reject NaN and inf."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from patchwork_env.cli import main as patchwork
from patchwork_env.cli.common import MAX_ARENA_SEED, MAX_SEED
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.registry import make_agent
from tests.cli import error_lines
from train import alphazero, distill, rllib_selfplay, sb3_maskable, selfplay
from train import exit as exit_trainer
from train.cli import parse_config
from train.config import ConfigError, SelfPlayConfig

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def empty_checkpoint(tmp_path: Path) -> Path:
    p = tmp_path / "empty.pt"
    p.write_bytes(b"")
    return p


def _exit_code(main: Callable[[list[str]], Any], argv: list[str]) -> int:
    try:
        result = main(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 1
    return int(result) if isinstance(result, int) else 0


def _assert_one_error_line(capsys: pytest.CaptureFixture[str], code: int, *needles: str) -> str:
    err = capsys.readouterr().err
    lines = error_lines(err)
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# --- agent specs --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("mcts:c=nan", "finite"),
        ("mcts:time=inf", "finite"),
        ("greedy:temp=inf", "finite"),
        ("greedy:temp=-inf", "finite"),
        ("mcts:sims=-1", r"'sims' must be in \[1, 100000\]"),
        ("ppo:/no/such/file.pt", "not found"),
    ],
)
def test_specs_that_cannot_be_built(spec: str, match: str) -> None:
    with pytest.raises(AgentSpecError, match=match):
        make_agent(spec)


def test_an_empty_checkpoint_is_a_spec_error(empty_checkpoint: Path) -> None:
    with pytest.raises(AgentSpecError, match="is not a network checkpoint"):
        make_agent(f"ppo:{empty_checkpoint}")


# --- configs ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--learning-rate", "nan"], "learning_rate must be a finite number"),
        (["--ent-coef", "inf"], "ent_coef must be a finite number"),
        (["--gamma", "-inf"], "gamma must be a finite number"),
        (["--ent-coef", "1e400"], "ent_coef must be a finite number"),
        (["--seed", str(MAX_SEED + 1)], "seed must be"),
        (["--seed", "-1"], "seed must be in"),
        (["--num-games", "100000000000"], "num_games must be in"),
        (["--eval-opponents.greedy", "x"], "Error parsing --eval-opponents.greedy"),
    ],
)
def test_config_values_are_checked_at_load(argv: list[str], match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        parse_config(SelfPlayConfig, argv)
    assert "\n" not in str(info.value)


def test_the_largest_seed_is_accepted_and_torch_takes_it() -> None:
    import numpy as np
    import torch

    from train.seeds import Stream, stream_seed

    cfg, _ = parse_config(SelfPlayConfig, ["--seed", str(MAX_SEED)])
    for stream in Stream:
        seed = stream_seed(cfg.seed, stream, 10**6)
        torch.manual_seed(seed)
        np.random.RandomState(seed)  # the legacy seeding SB3 uses takes < 2**32
    assert math.isfinite(cfg.learning_rate)


# --- command lines ------------------------------------------------------------------------------
EVALUATE_BAD = [
    ["--agents", "greedy"],
    ["--agents", "greedy", "mcts:sims=-1"],
    ["--agents", "greedy", "ppo:/no/such.pt"],
    ["--agents", "random", "greedy:temp=inf"],
    ["--agents", "random", "mcts:c=nan"],
    ["--agents", "random", "bogus"],
    ["--agents", "random", "greedy", "--games", "4"],
    ["--agents", "random", "greedy", "--pairs", "x"],
    ["--agents", "random", "greedy", "--pairs", "0"],
    ["--agents", "random", "greedy", "--seed", "-1"],
    ["--agents", "random", "greedy", "--seed", str(MAX_ARENA_SEED + 1)],
    ["--agents", "random", "greedy", "--workers", "0"],
    ["--agents", "random", "greedy", "--json", "/no/such/dir/x.json"],
    ["--agents", "random", "greedy", "--plot", "elo.txt"],
    ["--bogus"],
]


@pytest.mark.parametrize("argv", EVALUATE_BAD)
def test_evaluate_errors_are_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    _assert_one_error_line(capsys, _exit_code(patchwork, ["evaluate", *argv]))


def test_evaluate_rejects_an_empty_checkpoint(empty_checkpoint: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _exit_code(patchwork, ["evaluate", "--agents", "random", f"ppo:{empty_checkpoint}"])
    _assert_one_error_line(capsys, code, "is not a network checkpoint")


PLAY_BAD = [
    ["--opponent", "mcts:sims=-1"],
    ["--opponent", "greedy:temp=inf"],
    ["--opponent", "ppo:/no/such.pt"],
    ["--opponent", "nope"],
    ["--seat", "3"],
    ["--seed", "-5"],
    ["--layout", "x"],
]


@pytest.mark.parametrize("argv", PLAY_BAD)
def test_play_errors_are_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    _assert_one_error_line(capsys, _exit_code(patchwork, ["play", *argv]))


TRAINER_BAD = [
    ["--seed", "-1"],
    ["--torch-threads", "nan"],
    ["--config", "/no/such.yaml"],
    ["--bogus"],
    ["--final-eval-opponents", "mcts:sims=0"],
    ["--final-eval-opponents", "pretrained", "--final-eval-pairs", "1", "--torch-threads", "0"],
]


TRAINERS = [selfplay.cli, distill.cli, sb3_maskable.cli, alphazero.cli, exit_trainer.cli, rllib_selfplay.cli]


@pytest.mark.parametrize("argv", TRAINER_BAD)
@pytest.mark.parametrize("trainer", TRAINERS)
def test_trainer_errors_are_one_line_and_write_nothing(
    trainer: Callable[[list[str]], int], argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    _assert_one_error_line(capsys, _exit_code(trainer, [*argv, "--run-dir", str(run_dir)]))
    assert not run_dir.exists()


def test_a_resume_without_trainer_state_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from patchwork_env.players.checkpoint import save_checkpoint
    from patchwork_env.players.net_config import NetConfig
    from patchwork_env.players.network import PatchworkNet

    path = save_checkpoint(tmp_path / "net.pt", PatchworkNet(NetConfig(channels=4, blocks=1)))
    code = _exit_code(selfplay.cli, ["--resume", str(path), "--run-dir", str(tmp_path / "run")])
    _assert_one_error_line(capsys, code, "no trainer state")
    assert not (tmp_path / "run").exists()


def test_selfplay_resume_from_an_empty_checkpoint(empty_checkpoint: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _assert_one_error_line(
        capsys, _exit_code(selfplay.cli, ["--resume", str(empty_checkpoint)]), "not a network checkpoint"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--agents", "random", "mcts:sims=-1"],
        ["play", "--opponent", "greedy:temp=nan"],
        ["play", "--opponent", "pretrained", "--seed", "x"],
    ],
)
def test_a_real_process_exits_2_without_a_traceback(argv: list[str]) -> None:
    patchwork_command = Path(sys.executable).parent / "patchwork"
    proc = subprocess.run([str(patchwork_command), *argv], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert error_lines(proc.stderr) == proc.stderr.splitlines()[-1:] and proc.stderr.splitlines()[-1].startswith(
        "error: "
    )


@pytest.mark.parametrize("argv", [["evaluate", "--list"], ["ladder", "--table"]])
def test_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    """``patchwork evaluate --list | head -0``: the reader is gone before the first write."""
    patchwork_command = Path(sys.executable).parent / "patchwork"
    proc = subprocess.Popen([str(patchwork_command), *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the process has started writing: every write meets a closed pipe
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert stderr == ""


@pytest.mark.parametrize("trainer", [selfplay.cli, distill.cli, sb3_maskable.cli, alphazero.cli, exit_trainer.cli])
def test_a_run_dir_that_is_a_file_is_one_error_line(
    trainer: Callable[[list[str]], int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    _assert_one_error_line(capsys, _exit_code(trainer, ["--run-dir", str(a_file)]), "not a folder")
    assert a_file.read_text() == "not a folder"


def test_an_unreadable_init_checkpoint_fails_at_load(empty_checkpoint: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    run_dir = tmp_path / "run"
    argv = ["--config", str(ROOT / "configs" / "quick.yaml"), "--init-checkpoint", str(empty_checkpoint)]
    code = _exit_code(selfplay.cli, [*argv, "--run-dir", str(run_dir)])
    _assert_one_error_line(capsys, code, "init_checkpoint", "not a network checkpoint")
    assert not run_dir.exists()


@pytest.mark.parametrize("argv", [["--threads", "0"], ["--threads", "two"], ["--repeats", "0"]])
def test_bench_trainer_errors_are_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import bench_trainer

    _assert_one_error_line(capsys, _exit_code(bench_trainer.main, argv), ">= 1")
