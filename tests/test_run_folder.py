"""A run folder belongs to one run (issue 39): a used folder is refused unless the run resumes it
or overwrites it, two runs at once cannot share one, the trainers' command lines read each option
one way, and Ctrl-C ends a trainer with its checkpoint line and exit code 130, no traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchwork_env.players.checkpoint import read_checkpoint
from tests.test_ppo import _tiny_config
from train import selfplay
from train.cli import from_dict, parse_config
from train.config import ConfigError, SelfPlayConfig
from train.run import Run

ROOT = Path(__file__).resolve().parent.parent


def test_a_used_run_folder_is_refused_and_overwrite_starts_afresh(tmp_path: Path) -> None:
    cfg = _tiny_config(tmp_path, total_updates=1, checkpoint_minutes=[1e-9])
    first = Path(selfplay.main(cfg)["run_folder"])
    old_minute = (first / "checkpoints" / "minute-1e-09.pt").read_bytes()
    with pytest.raises(ConfigError, match=r"holds another run .*--overwrite"):
        selfplay.main(cfg)
    again = Path(
        selfplay.main(_tiny_config(tmp_path, total_updates=1, checkpoint_minutes=[1e-9], overwrite=True, seed=5))[
            "run_folder"
        ]
    )
    assert again == first
    assert (first / "checkpoints" / "minute-1e-09.pt").read_bytes() != old_minute  # the new run's, not the old one's


def test_two_runs_cannot_write_one_folder_at_once(tmp_path: Path) -> None:
    cfg = _tiny_config(tmp_path)
    holder = Run(cfg, "t", "update")
    with pytest.raises(ConfigError, match="another run is writing"):
        Run(_tiny_config(tmp_path, overwrite=True), "t", "update")
    holder._lock.close()


def test_a_run_folder_under_a_file_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="cannot be made"):
        Run(_tiny_config(tmp_path, run_dir=str(tmp_path / "file" / "run")), "t", "update")


def test_options_are_read_one_way(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("seed: 1\n")
    b.write_text("seed: 2\n")
    with pytest.raises(ConfigError, match="--config is given twice"):
        parse_config(SelfPlayConfig, ["--config", str(a), "--config", str(b)])
    with pytest.raises(ConfigError, match="learning_rate must be a number, got True"):
        from_dict(SelfPlayConfig, {"learning_rate": True}, "test.yaml")


def test_resume_with_an_equals_sign_reads_the_checkpoint_as_with_a_space(tmp_path: Path) -> None:
    cfg = _tiny_config(tmp_path, total_updates=2, seed=3)
    folder = Path(selfplay.main(cfg)["run_folder"])
    latest = str(folder / "checkpoints" / "latest.pt")
    spaced, _ = parse_config(SelfPlayConfig, ["--resume", latest])
    equals, _ = parse_config(SelfPlayConfig, [f"--resume={latest}"])
    assert spaced == equals and spaced.seed == 3


def test_ctrl_c_ends_a_trainer_with_its_checkpoint_and_exit_code_130(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "train.selfplay", "--config", "configs/quick_scratch.yaml", "--run-dir",
         str(tmp_path / "run"), "--total-updates", "100000", "--eval-every", "0", "--final-eval-pairs", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a background job (CI, nohup) starts with SIGINT ignored, and Python keeps it so: as at a terminal
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while not (tmp_path / "run" / "config.yaml").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(8)  # into the updates
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    latest = tmp_path / "run" / "checkpoints" / "latest.pt"
    assert err.strip().splitlines()[-1].endswith(f"; resume with --resume {latest}") and "interrupted" not in out
    # and the command it names continues the run, one update further, in its folder
    done = read_checkpoint(latest)["trainer"]["loop"]["step"]
    resumed = subprocess.run(
        [sys.executable, "-m", "train.selfplay", "--resume", str(latest), "--total-updates", str(done + 1)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert read_checkpoint(latest)["trainer"]["loop"]["step"] == done + 1


@pytest.mark.parametrize(
    ("module", "argv", "message"),
    [
        ("train.baselines", ["--seeds", "0", "--minutes", "1", "--results", "{fifo}"], "is a FIFO"),
        ("train.baselines", ["--seeds", "0", "--minutes", "1", "--results", "{dir}"], "is a folder"),
        ("train.baselines", ["--seeds", "0", "--minutes", "1", "--eval-seed", "-1"], "--eval-seed"),
        ("train.demo", ["--seeds", "0", "-1"], "--seeds"),
        ("train.exit_results", ["{dir}", "{dir}"], "given twice"),
        ("train.sb3_newcomer", ["--minutes", "0"], "--minutes"),
        ("train.sb3_newcomer", ["--out", "{fifo}"], "is not a folder"),
    ],
)
def test_trainer_commands_check_their_inputs_before_any_work(
    module: str, argv: list[str], message: str, tmp_path: Path
) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = [a.format(fifo=fifo, dir=tmp_path) for a in argv]
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("checkpoint_minutes: [[1]]\n", "a value of the wrong type or shape"),
        ("seed: " + "[" * 5000 + "]" * 5000 + "\n", "nests its values too deep"),
    ],
)
def test_a_config_of_the_wrong_shape_is_one_error_line(yaml_text: str, message: str, tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text)
    proc = subprocess.run([sys.executable, "-m", "train.selfplay", "--config", str(config)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], lines


def test_a_runs_learning_curve_is_the_results_pages_plot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``learning_curve.png`` is drawn by the one plot of learning curves (``tools/render_results.
    curves_figure``, the results page's): a curve per opponent (and per player other than the run's
    own), each final evaluation a point of its own."""
    from tools import render_results
    from train import run

    plot = render_results.curves_figure
    assert run.curves_figure is plot  # one plot of learning curves, not a copy
    drawn = []
    monkeypatch.setattr(run, "curves_figure", lambda *a: drawn.append(a) or plot(*a))

    def row(minutes: float, rate: float, **more: object) -> dict[str, object]:
        return {"minutes": minutes, "update": 0, "opponent": "greedy", "final": False, "win_rate": rate,
                "ci_low": rate / 2, "ci_high": 1.0, **more}  # fmt: skip

    history = [row(0.0, 0.2), row(1.0, 0.4), row(1.0, 0.3, player="policy"), row(1.5, 0.5, final=True)]
    path = run.plot_learning_curve(history, "update", tmp_path / "curve.png", "a run")
    assert path is not None and path.read_bytes().startswith(b"\x89PNG")
    (curves, finals, title, _), *others = drawn
    assert not others and title == "a run"
    assert curves == {"greedy": {"run": [(0.0, 0.2, 0.1, 1.0), (1.0, 0.4, 0.2, 1.0)]},
                      "greedy (policy)": {"run": [(1.0, 0.3, 0.15, 1.0)]}}  # fmt: skip
    assert finals == {"greedy": (1.5, 0.5, 0.25, 1.0)}
    labels = {t.get_text() for t in plot(curves, finals).axes[0].get_legend().get_texts()}
    assert labels == {"vs greedy", "vs greedy, final (fresh deals)", "vs greedy (policy)"}
