"""The research commands against damaged input (issue 63, item 5): run files that no run wrote
(``eval_history.json``, ``config.yaml``, ``data/records-*.npz``, checkpoints) are one ``error:`` line and
exit code 2 before any work; the arrays a resumed run reads are checked before compiled code does; a results
file keeps every run it is given, or refuses; a teacher's illegal move is one line naming it; Ctrl-C of a
trainer is one line and exit code 130, and a run stopped before its first checkpoint leaves nothing that
stops the same command."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from agents.alphazero import Records, RecordsError
from agents.distill import sample_positions, teacher_targets
from agents.value_distill import fit_value_model
from patchwork_env.evaluation.games import AgentError
from tests.cli import error_lines
from tests.test_loop import EVAL, TRAINERS
from train import alphazero, alphazero_results, exit_results, value_distill
from train import distill as distill_trainer
from train.alphazero import AlphaZero
from train.cli import exit_quietly_on_ctrl_c, parse_config, quiet_ctrl_c_while_loading
from train.config import AlphaZeroConfig, ConfigError


def _config_file(folder: Path, name: str, **extra: Any) -> str:
    """A YAML config of ``tests.test_loop``'s tiny ``name`` trainer (evaluated at every step)."""
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**EVAL, **TRAINERS[name][3], "eval_every": 1, **extra}))
    return str(path)


def _cli(name: str, config: str, folder: Path, *argv: str) -> int:
    main: Callable[[list[str]], int] = importlib.import_module(TRAINERS[name][0]).cli
    return main(["--config", config, "--run-dir", str(folder), *argv])


def _one_error(capsys: pytest.CaptureFixture[str], message: str) -> str:
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    return lines[0]


def _copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to, ignore=shutil.ignore_patterns(".lock"))
    return to


@pytest.fixture(scope="module")
def az_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of train.alphazero: 3 iterations, a model at each, the newest decision files kept."""
    folder = tmp_path_factory.mktemp("az") / "run"
    assert _cli("alphazero", _config_file(folder.parent, "alphazero"), folder) == 0
    return folder


@pytest.fixture(scope="module")
def distill_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of train.distill (round 0 and one DAgger round), evaluated against greedy."""
    folder = tmp_path_factory.mktemp("distill") / "run"
    config = _config_file(folder.parent, "distill", rounds=1, eval_opponents={"greedy": 1})
    assert _cli("distill", config, folder) == 0
    return folder


# --- decision files (agents.alphazero.Records) ------------------------------------------------------
def _rewrite(**changes: Callable[[dict[str, np.ndarray]], np.ndarray]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        with np.load(path) as data:
            arrays = dict(data)
        np.savez(path, **{**arrays, **{name: change(arrays) for name, change in changes.items()}})

    return damage


DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "not an archive": (lambda p: p.write_bytes(b"garbage" * 100), "not a decisions file"),
    "float states": (_rewrite(states=lambda d: d["states"] + 0.5), "states must be int64"),
    "garbage states": (_rewrite(states=lambda d: np.full_like(d["states"], 99999)), "invalid state array"),
    "actions out of range": (_rewrite(actions=lambda d: np.full_like(d["actions"], 9999)), "actions must be -1"),
    "a short column": (_rewrite(results=lambda d: d["results"][:-3]), "results must be float32 of shape"),
    "NaN values": (_rewrite(values=lambda d: d["values"] * np.nan), "values holds NaN or infinity"),
    "an infinite target": (_rewrite(targets=lambda d: d["targets"] + np.inf), "targets holds NaN or infinity"),
    "another width": (_rewrite(terms=lambda d: d["terms"][:, :5]), "terms must be float32 of shape"),
    "a missing column": (lambda p: _drop(p, "games"), "games is not a file"),
}


def _drop(path: Path, name: str) -> None:
    with np.load(path) as data:
        np.savez(path, **{k: v for k, v in data.items() if k != name})


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_decisions_file_is_refused_before_compiled_code_reads_it(
    damage: str, az_run: Path, tmp_path: Path
) -> None:
    path = tmp_path / "records-1.npz"
    shutil.copy(az_run / "data" / "records-2.npz", path)
    assert len(Records.load(str(path), width=2)) > 0  # as the run wrote it
    change, message = DAMAGES[damage]
    change(path)
    with pytest.raises(RecordsError, match=message):
        Records.load(str(path), width=2)


@pytest.mark.parametrize("damage", ["not an archive", "garbage states", "a short column"])
def test_a_resume_over_a_damaged_decisions_file_is_one_error_line(
    damage: str, az_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(az_run, tmp_path / "run")
    DAMAGES[damage][0](run / "data" / "records-2.npz")
    latest = run / "checkpoints" / "latest.pt"
    assert alphazero.cli(["--resume", str(latest), "--run-dir", str(run), "--iterations", "4"]) == 2
    line = _one_error(capsys, f"cannot resume {latest}: {run / 'data' / 'records-2.npz'} is not a decisions file")
    assert DAMAGES[damage][1] in line
    assert not (run / "checkpoints" / "model-4.npz").exists()  # no iteration ran


def test_a_checkpoint_whose_trainer_state_is_damaged_is_one_error_line(
    az_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(az_run, tmp_path / "run")
    latest = run / "checkpoints" / "latest.pt"
    checkpoint = torch.load(latest, weights_only=False)
    del checkpoint["trainer"]["state"]["decisions"]
    torch.save(checkpoint, latest)
    assert alphazero.cli(["--resume", str(latest), "--run-dir", str(run), "--iterations", "4"]) == 2
    _one_error(capsys, f"cannot resume {latest}: its trainer state has no 'decisions'")


# --- train.alphazero_results -------------------------------------------------------------------------
def _edit_json(name: str, edit: Callable[[Any], None]) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        data = json.loads((run / name).read_text())
        edit(data)
        (run / name).write_text(json.dumps(data))

    return damage


def _edit_yaml(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        data = yaml.safe_load((run / "config.yaml").read_text())
        edit(data)
        (run / "config.yaml").write_text(yaml.safe_dump(data))

    return damage


RUN_DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "a row without minutes": (_edit_json("eval_history.json", lambda h: h[2].pop("minutes")), "row 2 has minutes None"),
    "a row without ci_low": (_edit_json("eval_history.json", lambda h: h[0].pop("ci_low")), "row 0 has ci_low None"),
    "a string win rate": (
        _edit_json("eval_history.json", lambda h: h[0].update(win_rate="0.5")),
        "row 0 has win_rate '0.5', not a number",
    ),
    "a NaN minute": (_edit_json("eval_history.json", lambda h: h[1].update(minutes=float("nan"))), "not a number"),
    "not a list": (_edit_json("eval_history.json", lambda h: h.clear()), "must hold a list of rows"),
    "a null seed": (_edit_yaml(lambda c: c.update(seed=None)), 'wrong value type for field "seed"'),
    "a string width": (_edit_yaml(lambda c: c.update(width="2")), 'field "width"'),
    "a corrupt model": (lambda run: (run / "checkpoints" / "model-3.npz").write_text("junk"), "model-3.npz"),
}


@pytest.mark.parametrize("damage", RUN_DAMAGES)
def test_alphazero_results_refuse_damaged_run_files_before_any_game(
    damage: str, az_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _copy(az_run, tmp_path / "run")
    change, message = RUN_DAMAGES[damage]
    change(run)
    monkeypatch.setattr(alphazero_results, "measure", lambda *a: pytest.fail("a game was played"))
    with pytest.raises(SystemExit) as stop:
        alphazero_results.main([str(run), "--pairs", "1", "--games", "1"])
    assert stop.value.code == 2
    line = _one_error(capsys, f"{run} is not a run folder of train.alphazero")
    assert message in line, line


# --- train.exit_results over train.distill's runs ----------------------------------------------------
def test_exit_results_refuse_two_runs_of_one_seed(
    distill_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A results file keys its runs by seed: two folders of one seed would drop one run's counts."""
    twin = _copy(distill_run, tmp_path / "twin")
    with pytest.raises(SystemExit) as stop:
        exit_results.main([str(distill_run), str(twin), "--pairs", "1", "--results", str(tmp_path / "r.json")])
    assert stop.value.code == 2 and not (tmp_path / "r.json").exists()
    _one_error(capsys, f"{distill_run} and {twin} are runs of the same seed (0)")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_edit_json("eval_history.json", lambda h: h[1].update(win_rate="high")), "row 1 has win_rate 'high'"),
        (_edit_json("eval_history.json", lambda h: h[1].pop("games")), "row 1 has games None, not an integer"),
        (_edit_yaml(lambda c: c.update(seed=None)), 'wrong value type for field "seed"'),
        (_edit_yaml(lambda c: c.update(rounds="one")), 'field "rounds"'),
    ],
)
def test_exit_results_refuse_damaged_run_files_before_any_game(
    damage: Callable[[Path], None], message: str, distill_run: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    run = _copy(distill_run, tmp_path / "run")
    damage(run)
    monkeypatch.setattr(exit_results, "measure", lambda *a: pytest.fail("a game was played"))
    with pytest.raises(SystemExit) as stop:
        exit_results.main([str(run), "--pairs", "1"])
    assert stop.value.code == 2
    line = _one_error(capsys, f"{run} is not a finished run of train.distill")
    assert message in line, line


def test_a_resume_over_damaged_labels_is_one_error_line(
    distill_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Distillation's labels come back from ``latest.pt``: checked before the compiled rules read them."""
    for name, change, message in [
        ("nan", lambda s: s.update(targets=s["targets"] * float("nan")), "must be finite"),
        ("short", lambda s: s.update(held_out=s["held_out"][:-1]), "held_out must be"),
        ("garbage", lambda s: s.update(states=torch.full_like(s["states"], 99999)), "invalid state array"),
    ]:
        run = _copy(distill_run, tmp_path / name)
        latest = run / "checkpoints" / "latest.pt"
        checkpoint = torch.load(latest, weights_only=False)
        change(checkpoint["trainer"]["state"])
        torch.save(checkpoint, latest)
        assert distill_trainer.cli(["--resume", str(latest), "--run-dir", str(run), "--rounds", "2"]) == 2
        line = _one_error(capsys, f"cannot resume {latest}:")
        assert message in line, line


# --- a teacher's illegal move ------------------------------------------------------------------------
def _illegal_teacher(folder: Path) -> str:
    path = folder / "bad_teacher.py"
    path.write_text(
        "def act(state):\n    legal = set(state.legal_actions().tolist())\n"
        "    return next(a for a in range(2026) if a not in legal)\n"
    )
    return f"{path}:act"


def test_a_teacher_that_plays_an_illegal_move_is_one_error_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    teacher = _illegal_teacher(tmp_path)
    with pytest.raises(AgentError, match=rf"the teacher {teacher} played no legal move in labelled position 0: action"):
        teacher_targets(sample_positions(4, seed=0), teacher)
    config = _config_file(tmp_path, "distill", teacher=teacher, eval_opponents={})
    assert _cli("distill", config, tmp_path / "run") == 2
    line = _one_error(capsys, f"the teacher {teacher} played no legal move")
    assert "action " in line  # the move, as the engine names it


# --- Ctrl-C ------------------------------------------------------------------------------------------
def _interrupt_at(step: int, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    original = getattr(AlphaZero, method)

    def interrupted(self: AlphaZero, n: int) -> None:
        if n == step:
            raise KeyboardInterrupt
        original(self, n)

    monkeypatch.setattr(AlphaZero, method, interrupted)


def test_ctrl_c_in_the_first_evaluation_leaves_nothing_that_stops_the_same_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, folder = _config_file(tmp_path, "alphazero", iterations=1), tmp_path / "run"
    with monkeypatch.context() as patch:
        _interrupt_at(0, "evaluate", patch)
        assert _cli("alphazero", config, folder) == 130
    assert error_lines(capsys.readouterr().err) == [
        f"interrupted before the first checkpoint (nothing to resume; the run's files are removed): the same "
        f"command starts it again in {folder}"
    ]
    assert not folder.exists()  # nothing else was in it
    assert _cli("alphazero", config, folder) == 0  # the same command: a run from the start
    assert json.loads((folder / "final_eval.json").read_text())["iterations"] == 1


def test_a_resume_of_a_run_killed_before_its_first_checkpoint_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed outright (SIGKILL) in its first evaluation cleans nothing up: ``--resume`` says why
    there is nothing to resume and what starts the run again."""
    folder = tmp_path / "run"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "config.yaml").write_text("seed: 0\n")
    latest = folder / "checkpoints" / "latest.pt"
    assert alphazero.cli(["--resume", str(latest)]) == 2
    _one_error(capsys, f"{latest} does not exist: the run in {folder} was stopped before its first checkpoint")


def test_ctrl_c_during_training_is_one_line_with_the_command_that_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, folder = _config_file(tmp_path, "alphazero"), tmp_path / "run"
    with monkeypatch.context() as patch:
        _interrupt_at(2, "step", patch)
        assert _cli("alphazero", config, folder) == 130
    out, err = capsys.readouterr()
    latest = folder / "checkpoints" / "latest.pt"
    assert error_lines(err) == [f"interrupted after 1 iteration; resume with --resume {latest}"]
    assert "interrupted" not in out
    assert alphazero.cli(["--resume", str(latest)]) == 0


def test_ctrl_c_while_a_command_loads_is_one_line_and_the_work_gets_keyboard_interrupt_back(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``python -m train.X`` parses, then imports torch (seconds): Ctrl-C there is one line and exit code 130
    (``SystemExit``, no import's traceback); the work then gets Python's ``KeyboardInterrupt`` back (the loop
    checkpoints on it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        quiet_ctrl_c_while_loading()
        with pytest.raises(SystemExit) as stop:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)
            except KeyboardInterrupt:
                pytest.fail("Ctrl-C while loading raised KeyboardInterrupt: an import's traceback")
        assert stop.value.code == 130 and error_lines(capsys.readouterr().err) == ["interrupted"]

        def work() -> None:
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)

        quiet_ctrl_c_while_loading()
        assert exit_quietly_on_ctrl_c(work) == 130
        assert error_lines(capsys.readouterr().err) == ["interrupted"]
    finally:
        signal.signal(signal.SIGINT, previous)


# --- names the file system refuses, NaN targets ------------------------------------------------------
def test_a_path_name_the_file_system_refuses_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = tmp_path / ("a" * 300)
    with pytest.raises(ConfigError, match="run_dir: a folder name is at most 255 characters, got 300"):
        parse_config(AlphaZeroConfig, ["--run-dir", str(long)])
    assert alphazero.cli(["--run-dir", str(long)]) == 2
    _one_error(capsys, "at most 255 characters")
    assert alphazero.cli(["--resume", f"{long}/checkpoints/latest.pt"]) == 2
    _one_error(capsys, "File name too long")
    with pytest.raises(SystemExit) as stop:
        value_distill.main(["--checkpoint", f"{long}.pt", "--out", str(tmp_path / "v.npz"), "--games", "2"])
    assert stop.value.code == 2
    _one_error(capsys, "File name too long")


def test_a_value_fit_refuses_targets_that_are_not_finite() -> None:
    states = sample_positions(8, seed=0)
    good, games = np.zeros(8, np.float32), np.arange(8) // 2
    with pytest.raises(ValueError, match="targets hold NaN or infinity"):
        fit_value_model(states, good * np.nan, good, games, (4, 4), 1, 1e-3)
    with pytest.raises(ValueError, match=r"results must hold one entry per state \(8\)"):
        fit_value_model(states, good, good[:7], games, (4, 4), 1, 1e-3)
