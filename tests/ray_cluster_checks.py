"""Runs inside a network namespace of its own (``tests/test_ray_scale.py`` starts it with
``unshare -n sh -c 'ip link set lo up && python tests/ray_cluster_checks.py OUT.json'``):
a simulated two-node Ray cluster (``ray.cluster_utils.Cluster``, two nodes of one CPU) with token
authentication on, then on it

* an arena round robin on the Ray backend,
* MCTS labelling (``agents.distill.teacher_targets``) on the Ray backend,
* a round robin while one Ray worker process running a game is killed (SIGKILL),
* a driver without the cluster's token trying to join (must be refused),
* a two-iteration ``configs/rllib_smoke.yaml`` run,
* ``ss -tn`` during the run: every TCP peer.

It writes what it saw to OUT.json; the test compares it with the local backend. Not a test module
itself (pytest does not collect it): it needs the namespace.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ARENA_AGENTS = ["greedy", "random", "mcts:sims=8"]
ARENA_PAIRS = 3
ARENA_SEED = 11
KILL_AGENTS = ["mcts:sims=40", "greedy"]
KILL_PAIRS = 4
KILL_SEED = 5
TEACHER = "mcts:sims=10"
LABEL_SEED = 3


def label_positions() -> Any:
    """Positions with a choice of move kind, for the labelling check (the same in every process)."""
    from agents.distill import legal_groups, sample_positions

    states = sample_positions(40, seed=LABEL_SEED)
    return states[legal_groups(states).sum(1) > 1]


def arena_numbers(result: Any) -> dict[str, Any]:
    """The parts of a round robin's JSON that must not depend on where games ran (no timings)."""
    d = result.to_dict()
    pairs = [{k: v for k, v in p.items() if "time_per_move" not in k} for p in d["pairs"]]
    return {"pairs": pairs, "elo": d["elo"], "elo_ci95": d["elo_ci95"]}


def peers() -> list[str]:
    """Peer addresses of every TCP connection in this namespace (``ss -tn``)."""
    out = subprocess.run(["ss", "-tnH"], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[4].rsplit(":", 1)[0] for line in out.splitlines() if line.strip()})


def kill_one_busy_worker(stop: threading.Event, killed: list[int]) -> None:
    """SIGKILL the first Ray worker process of THIS cluster (a descendant of this process) that is
    running a task (its process title is ``ray::_call``, the backend's task function)."""
    import psutil

    me = psutil.Process()
    while not stop.is_set() and not killed:
        for proc in me.children(recursive=True):
            try:
                title = " ".join(proc.cmdline())
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            if title.startswith("ray::_call"):
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(proc.pid)
                return
        time.sleep(0.05)


def refused_without_token(address: str) -> dict[str, Any]:
    """A driver with no token (and another HOME, so no ~/.ray/auth_token) tries to join."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["HOME"] = "/nonexistent-home-for-ray-auth-check"
    code = f"import ray; ray.init(address={address!r}); print('JOINED')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    return {"returncode": proc.returncode, "joined": "JOINED" in proc.stdout, "stderr_tail": proc.stderr[-600:]}


def main(out_path: str) -> None:
    # token authentication on, as `ray start --head` has it by default in ray 2.60; the token travels
    # to the nodes through the environment (RAY_AUTH_TOKEN), not through the user's ~/.ray
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    import ray
    from ray.cluster_utils import Cluster

    from agents.distill import teacher_targets
    from patchwork_env.evaluation.arena import round_robin
    from patchwork_env.evaluation.backend import RayBackend
    from train.cli import parse_config
    from train.config import RLlibConfig
    from train.rllib_selfplay import main as rllib_main

    report: dict[str, Any] = {"peers": []}
    t0 = time.time()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        report["nodes"] = [n["Resources"].get("CPU", 0) for n in ray.nodes() if n["Alive"]]
        report["address"] = cluster.address
        report["startup_seconds"] = time.time() - t0
        backend = RayBackend()  # joins the driver's cluster

        report["arena"] = arena_numbers(round_robin(ARENA_AGENTS, ARENA_PAIRS, seed=ARENA_SEED, backend=backend))
        report["peers"] += peers()

        stop, killed = threading.Event(), []  # type: ignore[var-annotated]
        killer = threading.Thread(target=kill_one_busy_worker, args=(stop, killed))
        killer.start()
        try:
            faulty = round_robin(KILL_AGENTS, KILL_PAIRS, seed=KILL_SEED, backend=backend)
        finally:
            stop.set()
            killer.join()
        report["killed_pids"] = killed
        report["killed_run"] = arena_numbers(faulty)
        report["peers"] += peers()

        report["labels"] = teacher_targets(label_positions(), TEACHER, seed=LABEL_SEED, backend=backend).tolist()

        report["no_token"] = refused_without_token(cluster.address)

        run_dir = Path(out_path).parent / "rllib_smoke"
        smoke = Path(__file__).parents[1] / "configs" / "rllib_smoke.yaml"
        argv = ["--config", str(smoke), "--run-dir", str(run_dir), "--address", cluster.address]
        cfg, name = parse_config(RLlibConfig, argv)
        summary = rllib_main(cfg, name)
        report["rllib"] = {k: summary[k] for k in ("run_folder", "iterations", "env_steps", "learner_decisions")}
        latest = str(run_dir / "checkpoints" / "latest.pt")  # --resume: one iteration more, RLlib's state restored
        cfg, name = parse_config(
            RLlibConfig,
            [
                "--resume",
                latest,
                "--iterations",
                "3",
                "--eval-every",
                "0",
                "--final-eval-pairs",
                "0",
                "--address",
                cluster.address,
            ],
        )
        summary = rllib_main(cfg, name)
        report["rllib_resumed"] = {
            k: summary[k] for k in ("run_folder", "iterations", "env_steps", "learner_decisions")
        }
        report["peers"] += peers()
    finally:
        ray.shutdown()
        cluster.shutdown()
    report["peers"] = sorted(set(report["peers"]))
    report["seconds"] = time.time() - t0
    Path(out_path).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
