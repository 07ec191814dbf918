"""The trainers' Ray switches inside a network namespace of their own (``tests/test_ray_trainers.py``
starts ``unshare -n sh -c 'ip link set lo up && python tests/ray_trainer_checks.py OUT_DIR'``), with
token authentication on:

* ``python -m train.alphazero --config configs/alphazero_smoke.yaml --backend ray --chunk 1`` as
  a user runs it (the command starts its own local Ray runtime), on a machine where the last
  ``ray start`` recorded a cluster that is gone (``STALE_CLUSTER``: the command must not join it),
* on one local Ray runtime started here (``ray.init``, 2 CPUs): ``train.distill`` with
  ``--backend ray`` (``DISTILL_ARGS``), ``train.exit`` with ``--backend ray``
  (``EXIT_ARGS``), and one round of AlphaZero self-play (``agents.alphazero.self_play``, chunks of
  ``AZ_CHUNK`` games) on the Ray backend,
* ``ss -tn``: every TCP peer.

It writes ``OUT_DIR/report.json`` (and the runs, and the self-play records as ``records.npz``);
the test compares them with the local backend. Not a test module (pytest does not collect it).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
AZ_SMOKE = ROOT / "configs" / "alphazero_smoke.yaml"
AZ_CHUNK = 1  # one game per task
STALE_CLUSTER = "127.0.0.1:9"  # a recorded cluster nobody answers for (port 9: discard)
AZ_GAMES, AZ_SEED = 3, 21  # the direct self-play round: 3 chunks of 1 game
DISTILL_ARGS = [
    "--net.channels", "8", "--net.blocks", "1", "--net.hidden", "32", "--net.head-features", "4",
    "--net.head-hidden", "8", "--net.prior-scale", "2.0", "--final-eval-pairs", "0", "--no-progress",
    "--teacher", "mcts:sims=6", "--positions", "48", "--epochs", "2", "--workers", "1", "--seed", "4",
]  # fmt: skip
EXIT_ARGS = [
    "--net.channels", "8", "--net.blocks", "1", "--net.hidden", "16", "--net.head-features", "4",
    "--net.head-hidden", "8", "--net.prior-scale", "2.0", "--iterations", "2", "--positions-per-iteration", "24",
    "--position-stride", "1", "--search.sims", "4", "--search-batch", "8", "--window", "2", "--epochs", "1",
    "--batch-size", "16", "--gate-pairs", "1", "--eval-every", "0", "--final-eval-pairs", "0", "--no-progress",
    "--seed", "6",
]  # fmt: skip


def smoke_selfplay(seed: int = AZ_SEED) -> Any:
    """The self-play settings of alphazero_smoke.yaml's starting model, the same in every process."""
    from agents.alphazero import SelfPlay, init_model
    from train.cli import load_yaml
    from train.config import AlphaZeroConfig

    cfg = load_yaml(AlphaZeroConfig, AZ_SMOKE)
    model = init_model((cfg.hidden[0], cfg.hidden[1]), cfg.prior_temp, seed)
    return SelfPlay(model, cfg.search, cfg.fast_sims, cfg.full_share, cfg.opening, cfg.width, seed)


RECORD_FIELDS = ("states", "full", "actions", "targets", "terms", "values", "results", "games")


def peers() -> list[str]:
    """Peer addresses of every TCP connection in this namespace (``ss -tn``)."""
    out = subprocess.run(["ss", "-tnH"], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[4].rsplit(":", 1)[0] for line in out.splitlines() if line.strip()})


def main(out_dir: str) -> None:
    out = Path(out_dir)
    os.environ["RAY_AUTH_MODE"] = "token"  # authentication on; the token travels in the environment
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    report: dict[str, Any] = {}
    t0 = time.time()

    # the AlphaZero trainer's command line, as a user runs it (its own local Ray runtime), with a
    # dead cluster in Ray's record of the last `ray start` (a short temp dir: Ray's socket paths)
    ray_tmp = Path(tempfile.mkdtemp(prefix="rt"))
    (ray_tmp / "ray").mkdir()
    (ray_tmp / "ray" / "ray_current_cluster").write_text(STALE_CLUSTER)
    command = [sys.executable, "-m", "train.alphazero", "--config", str(AZ_SMOKE), "--run-dir", str(out / "az_ray")]
    try:
        proc = subprocess.run(
            [*command, "--backend", "ray", "--chunk", str(AZ_CHUNK)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "RAY_TMPDIR": str(ray_tmp)},
        )
    finally:  # a timed-out command leaves no Ray folder in /tmp either
        shutil.rmtree(ray_tmp, ignore_errors=True)
    report["az_cli"] = {"returncode": proc.returncode, "stderr_tail": proc.stderr[-3000:]}
    report["az_cli_seconds"] = time.time() - t0

    import ray

    from agents.alphazero import self_play
    from patchwork_env.evaluation.backend import RayBackend
    from train import distill
    from train import exit as exit_trainer
    from train.cli import parse_config
    from train.config import DistillConfig, ExItConfig

    mapped: list[str] = []  # the function of every RayBackend.map call: proof the work went to Ray
    original = RayBackend.map

    def spy(self: RayBackend, fn: Any, shared: Any, items: Any) -> Any:
        mapped.append(fn.__name__)
        return original(self, fn, shared, items)

    RayBackend.map = spy  # type: ignore[method-assign]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        backend = RayBackend()  # uses the runtime started above
        cfg, _ = parse_config(DistillConfig, [*DISTILL_ARGS, "--backend", "ray", "--run-dir", str(out / "distill_ray")])
        summary = distill.main(cfg)
        report["distill"] = {k: summary[k] for k in ("positions", "label_counts", "held_out_accuracy")}
        report["distill_mapped"] = list(mapped)
        cfg_exit, _ = parse_config(ExItConfig, [*EXIT_ARGS, "--backend", "ray", "--run-dir", str(out / "exit_ray")])
        exit_summary = exit_trainer.main(cfg_exit)
        report["exit"] = {k: exit_summary[k] for k in ("positions", "kept")}
        report["exit_mapped"] = mapped[len(report["distill_mapped"]) :]
        report["peers"] = peers()

        parts = list(backend.map(self_play, smoke_selfplay(), [(g, AZ_CHUNK) for g in range(AZ_GAMES)]))
        np.savez(out / "records.npz", **{k: np.concatenate([getattr(p, k) for p in parts]) for k in RECORD_FIELDS})
        report["selfplay_mapped"] = mapped[len(report["distill_mapped"]) + len(report["exit_mapped"]) :]
        report["peers"] = sorted(set(report["peers"]) | set(peers()))
    finally:
        ray.shutdown()
    report["seconds"] = time.time() - t0
    (out / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
