"""The trainers' Ray switch, the config field ``backend``: ``train.distill``'s teacher labelling,
``train.exit``'s search labelling and ``train.alphazero``'s self-play (chunks of ``chunk`` games,
``agents.alphazero.self_play``).

The Ray runs happen once, in ``tests/ray_trainer_checks.py`` inside a network namespace made here
(``unshare -n`` + ``ip link set lo up``, as ``tests/test_ray_scale.py`` does: loopback only, token
authentication on); this process repeats them on the local backend and compares. The other tests
need no Ray runtime.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("ray", reason="the scale extra (ray[rllib]) is not installed")

from agents.alphazero import Records, self_play
from tests import ray_trainer_checks as checks
from tests.cli import error_lines
from tests.test_loop import read_checkpoint
from tests.test_ray_scale import LOOPBACK, SequentialBackend, _namespace_available
from train import alphazero, distill
from train import exit as exit_trainer
from train.cli import load_yaml, parse_config
from train.config import AlphaZeroConfig, ConfigError, DistillConfig, ExItConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ray_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not _namespace_available():
        pytest.skip("needs unshare -n and ip (util-linux, iproute2) and root, as in CI")
    out = tmp_path_factory.mktemp("ray_trainers")
    script = ROOT / "tests" / "ray_trainer_checks.py"
    command = f"ip link set lo up && exec {sys.executable} {script} {out}"
    env = {**os.environ, "HOME": str(out)}  # Ray may write ~/.ray: not the user's
    proc = subprocess.run(
        ["unshare", "-n", "sh", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env
    )
    assert proc.returncode == 0, f"trainer checks failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    report["dir"] = out
    return report


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return dict(read_checkpoint(path)["model"])


def _same_weights(a: Path, b: Path) -> bool:
    wa, wb = _weights(a), _weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def _same_records(a: Records, b: Records) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in checks.RECORD_FIELDS)


# --- Ray in a namespace against the local backend -------------------------------------------------
def test_expert_iteration_labels_on_ray_equal_local_labels(ray_runs: dict[str, Any], tmp_path: Path) -> None:
    cfg, _ = parse_config(ExItConfig, [*checks.EXIT_ARGS, "--run-dir", str(tmp_path / "exit_local")])
    local = exit_trainer.main(cfg)  # backend local
    assert ray_runs["exit_mapped"] == ["label_batch", "label_batch"]  # each iteration's labelling on Ray
    assert ray_runs["exit"] == {"positions": local["positions"], "kept": local["kept"]} and local["positions"] == 48
    # the same labels, fits and gates: the same network, bit for bit
    ray_net = ray_runs["dir"] / "exit_ray" / "checkpoints" / "final.pt"
    assert _same_weights(ray_net, tmp_path / "exit_local" / "checkpoints" / "final.pt")
    history = [
        json.loads((d / "exit_history.json").read_text())
        for d in (ray_runs["dir"] / "exit_ray", tmp_path / "exit_local")
    ]
    for key in ("new_labels_agreement", "held_out_loss_after", "label_counts", "gate_win_rate"):
        assert [row[key] for row in history[0][1:]] == [row[key] for row in history[1][1:]], key


def test_distillation_labels_on_ray_equal_local_labels(ray_runs: dict[str, Any], tmp_path: Path) -> None:
    cfg, _ = parse_config(DistillConfig, [*checks.DISTILL_ARGS, "--run-dir", str(tmp_path / "distill_local")])
    local = distill.main(cfg)  # backend local
    assert ray_runs["distill_mapped"] == ["_label_chunk"]  # the labelling ran as Ray tasks
    assert local["positions"] >= 10 and ray_runs["distill"]["positions"] == local["positions"]
    assert ray_runs["distill"]["label_counts"] == local["label_counts"]
    assert ray_runs["distill"]["held_out_accuracy"] == local["held_out_accuracy"]
    # trained on the same labels: the same distilled network, bit for bit
    ray_net = ray_runs["dir"] / "distill_ray" / "checkpoints" / "final.pt"
    assert _same_weights(ray_net, tmp_path / "distill_local" / "checkpoints" / "final.pt")


def test_alphazero_selfplay_records_on_ray_equal_local(ray_runs: dict[str, Any]) -> None:
    local = self_play(checks.smoke_selfplay(), (0, checks.AZ_GAMES))
    with np.load(ray_runs["dir"] / "records.npz") as data:
        remote = Records(*(data[k] for k in checks.RECORD_FIELDS))
    assert ray_runs["selfplay_mapped"] == ["self_play"]  # the games ran as Ray tasks
    assert len(local) > 3 * 10  # whole games
    assert _same_records(remote, local)


def test_alphazero_command_on_ray_trains_the_model_local_training_does(
    ray_runs: dict[str, Any], tmp_path: Path
) -> None:
    assert ray_runs["az_cli"]["returncode"] == 0, ray_runs["az_cli"]["stderr_tail"]
    argv = ["--config", str(checks.AZ_SMOKE), "--chunk", str(checks.AZ_CHUNK)]
    cfg, _ = parse_config(AlphaZeroConfig, [*argv, "--run-dir", str(tmp_path / "az_local")])
    alphazero.main(cfg)
    remote = ray_runs["dir"] / "az_ray" / "checkpoints"
    for name in ("start.pt", "final.pt"):
        assert _same_weights(remote / name, tmp_path / "az_local" / "checkpoints" / name), name


def test_trainer_ray_traffic_stays_on_loopback(ray_runs: dict[str, Any]) -> None:
    assert ray_runs["peers"], "ss -tn saw no connection at all"
    assert set(ray_runs["peers"]) <= LOOPBACK, ray_runs["peers"]


# --- chunks and the backend protocol, without Ray --------------------------------------------------
def test_chunks_play_the_same_games_whoever_plays_them() -> None:
    shared = checks.smoke_selfplay()
    whole = self_play(shared, (0, 3))
    parts = list(SequentialBackend().map(self_play, shared, [(0, 2), (2, 1)]))  # pickled, as to a Ray worker
    assert _same_records(Records.concat(parts, shared.width), whole)
    assert sorted(set(whole.games.tolist())) == [0, 1, 2]


# --- configs and command lines ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cls", "argv", "message"),
    [
        (AlphaZeroConfig, ["--backend", "cloud"], "backend must be one of local, ray, got 'cloud'"),
        (DistillConfig, ["--backend", "Ray"], "backend must be one of local, ray, got 'Ray'"),
        (AlphaZeroConfig, ["--chunk", "0"], r"chunk must be in \[1, "),
        (AlphaZeroConfig, ["--address", "auto"], "address needs backend=ray"),
        (DistillConfig, ["--address", "auto"], "address needs backend=ray"),
    ],
)
def test_bad_backend_settings_are_config_errors(cls: Any, argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(cls, ["--config", str(checks.AZ_SMOKE)] * (cls is AlphaZeroConfig) + argv)


def test_the_ray_backend_without_ray_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    code = distill.cli([*checks.DISTILL_ARGS, "--backend", "ray", "--run-dir", str(tmp_path / "d")])
    assert code == 2
    assert _error_lines(capsys.readouterr().err) == [
        f'error: the Ray backend needs Ray, which is not installed: pip install -e "{ROOT}[ray]"'  # from this checkout
    ]
    assert not (tmp_path / "d").exists()


def test_shipped_configs_keep_the_local_backend() -> None:
    assert load_yaml(DistillConfig, ROOT / "configs" / "dagger.yaml").backend == "local"
    az = load_yaml(AlphaZeroConfig, ROOT / "configs" / "alphazero.yaml")
    assert az.backend == "local"


def _error_lines(err: str) -> list[str]:
    return error_lines(err)


def test_an_unreachable_cluster_fails_before_the_run_folder_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--config", str(checks.AZ_SMOKE), "--run-dir", str(tmp_path / "az"), "--address", "127.0.0.1:1"]
    assert alphazero.cli([*argv, "--backend", "ray", "--chunk", "1"]) == 2
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("error: nothing answers at 127.0.0.1:1"), lines
    assert not (tmp_path / "az").exists()


def test_bad_backend_on_the_command_line_exits_2_with_one_error_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "train.alphazero", "--config", str(checks.AZ_SMOKE), "--backend", "cluster"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert _error_lines(proc.stderr) == ["error: backend must be one of local, ray, got 'cluster'"]
