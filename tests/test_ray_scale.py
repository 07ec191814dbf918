"""Scaling out on Ray (``patchwork_env.evaluation.backend``, ``agents.rllib_module``, ``train.rllib_selfplay``).

The cluster tests run ``tests/ray_cluster_checks.py`` once, inside a network namespace made here
(``unshare -n``, then ``ip link set lo up``): a simulated two-node cluster with token
authentication on, which can only talk over loopback. Its findings are compared with the local
backend in this process. Needs root (CI runs as root) and the ``scale`` extra.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the scale extra (ray[rllib]) is not installed")

from patchwork_env.core.state import new_game  # noqa: E402
from patchwork_env.evaluation.arena import round_robin  # noqa: E402
from patchwork_env.players.policy import load_network_agent  # noqa: E402
from tests import ray_cluster_checks as checks  # noqa: E402
from train.cli import load_yaml, parse_config  # noqa: E402
from train.config import ConfigError, RLlibConfig  # noqa: E402
from train.rllib_selfplay import LEARNER, SEATS, map_agent, opponent_ids  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = {"127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "::1"}


def _namespace_available() -> bool:
    if not (shutil.which("unshare") and shutil.which("ip")):
        return False
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def cluster_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not _namespace_available():
        pytest.skip("needs unshare -n and ip (util-linux, iproute2) and root, as in CI")
    out = tmp_path_factory.mktemp("ray_cluster") / "report.json"
    script = ROOT / "tests" / "ray_cluster_checks.py"
    command = f"ip link set lo up && exec {sys.executable} {script} {out}"
    # Ray's files (and its record of the last cluster started, which a killed test run would leave
    # for every later ray.init on the machine) in a folder of this run; short: Ray's socket paths
    ray_tmp = tempfile.mkdtemp(prefix="rt")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp}
    try:
        proc = subprocess.run(
            ["unshare", "-n", "sh", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=900, env=env
        )
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 0, f"cluster checks failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    report: dict[str, Any] = json.loads(out.read_text())
    report["dir"] = out.parent
    return report


def test_the_simulated_cluster_has_two_nodes_of_one_cpu(cluster_report: dict[str, Any]) -> None:
    assert cluster_report["nodes"] == [1.0, 1.0]


def test_arena_on_the_cluster_equals_the_local_backend(cluster_report: dict[str, Any]) -> None:
    local = round_robin(checks.ARENA_AGENTS, checks.ARENA_PAIRS, seed=checks.ARENA_SEED, workers=1)
    assert cluster_report["arena"] == json.loads(json.dumps(checks.arena_numbers(local)))
    assert all(p["games"] == 2 * checks.ARENA_PAIRS for p in cluster_report["arena"]["pairs"])


def test_a_killed_worker_costs_a_retry_not_the_run(cluster_report: dict[str, Any]) -> None:
    assert len(cluster_report["killed_pids"]) == 1, "no busy Ray worker was found to kill"
    local = round_robin(checks.KILL_AGENTS, checks.KILL_PAIRS, seed=checks.KILL_SEED, workers=1)
    assert cluster_report["killed_run"] == json.loads(json.dumps(checks.arena_numbers(local)))
    assert cluster_report["killed_run"]["pairs"][0]["games"] == 2 * checks.KILL_PAIRS


def test_mcts_labelling_on_the_cluster_equals_local_labelling(cluster_report: dict[str, Any]) -> None:
    from agents.distill import teacher_targets

    states = checks.label_positions()
    local = teacher_targets(states, checks.TEACHER, seed=checks.LABEL_SEED, workers=1)
    assert len(local) >= 10
    assert cluster_report["labels"] == local.tolist()


def test_token_authentication_stays_on(cluster_report: dict[str, Any]) -> None:
    refused = cluster_report["no_token"]
    assert not refused["joined"] and refused["returncode"] != 0, refused
    assert "token" in refused["stderr_tail"].lower(), refused  # refused for want of the token, not by chance


def test_cluster_traffic_stays_on_loopback(cluster_report: dict[str, Any]) -> None:
    assert cluster_report["peers"], "ss -tn saw no connection at all"
    assert set(cluster_report["peers"]) <= LOOPBACK, cluster_report["peers"]


def test_rllib_smoke_run_on_the_cluster_plays_only_legal_moves(cluster_report: dict[str, Any]) -> None:
    info = cluster_report["rllib"]
    assert info["iterations"] == 2 and info["learner_decisions"] > 0
    path = Path(info["run_folder"]) / "checkpoints" / "final.pt"
    assert path.is_file() and (path.parent / "rllib" / "rllib_checkpoint.json").is_file()
    agent = load_network_agent(str(path))
    rng = np.random.default_rng(0)
    for seed in range(2):
        state = new_game(np.random.default_rng(seed))
        while not state.is_terminal:
            action = agent.act(state, rng)
            assert state.legal_action_mask()[action], f"illegal action {action}"
            state = state.step(action)
    result = round_robin([f"ppo:{path}", "random"], 2, seed=0, workers=1)
    assert result.pairs[0].games == 4


def test_rllib_resumes_its_run_with_rllibs_own_state(cluster_report: dict[str, Any]) -> None:
    """``--resume latest.pt --iterations 3`` continues the two-iteration run in its folder: the
    algorithm's counters come back from ``checkpoints/rllib-latest`` and go on."""
    first, resumed = cluster_report["rllib"], cluster_report["rllib_resumed"]
    assert resumed["run_folder"] == first["run_folder"] and resumed["iterations"] == 3
    assert resumed["env_steps"] > first["env_steps"] and resumed["learner_decisions"] > first["learner_decisions"]


# --- without a cluster --------------------------------------------------------------------------
class SequentialBackend:
    """The backend protocol in this process: ``shared`` and the items travel pickled, like to a worker."""

    def map(self, fn: Any, shared: Any, items: Any) -> Any:
        return (fn(pickle.loads(pickle.dumps(shared)), pickle.loads(pickle.dumps(item))) for item in items)


def test_arena_backend_hook_gives_the_local_results() -> None:
    specs = ["greedy", "random"]
    via_backend = round_robin(specs, 3, seed=2, backend=SequentialBackend())
    local = round_robin(specs, 3, seed=2, workers=1)
    assert checks.arena_numbers(via_backend) == checks.arena_numbers(local)


def test_arena_backend_needs_agents_that_travel() -> None:
    class Unpicklable:
        name = "local-only"

        def __init__(self) -> None:
            self.lock = threading.Lock()

        def act(self, state: Any, rng: Any) -> int:
            return 2025

    with pytest.raises(ValueError, match="spec string or picklable"):
        round_robin([Unpicklable(), "random"], 1, backend=SequentialBackend())  # type: ignore[list-item]


def test_both_seats_of_a_game_see_the_same_draw() -> None:
    cfg = RLlibConfig()
    opponents, weights = opponent_ids(cfg)
    kinds = set()
    for k in range(300):
        episode = SimpleNamespace(id_=f"episode-{k}")
        seats = [map_agent(s, episode, latest_prob=0.4, opponents=opponents, weights=weights) for s in SEATS]
        assert seats == [map_agent(s, episode, latest_prob=0.4, opponents=opponents, weights=weights) for s in SEATS]
        assert LEARNER in seats
        kinds.add(tuple(sorted(seats)))
    drawn = {m for pair in kinds for m in pair}
    assert drawn == {LEARNER, *opponents}  # every opponent and self-play occur


def test_opponent_weights_follow_the_config() -> None:
    ids, weights = opponent_ids(RLlibConfig(random_weight=0.0, greedy_weight=0.4, snapshot_weight=0.6, pool_size=3))
    assert ids == ["greedy", "snapshot_0", "snapshot_1", "snapshot_2"]
    assert weights == pytest.approx([0.4, 0.2, 0.2, 0.2])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--reward", "margin"], "reward must be one of win, score"),
        (["--minibatch-size", "5000"], "minibatch_size (5000) must be at most train_batch_size"),
        (["--num-env-runners", "-1"], "num_env_runners must be in [0, "),
    ],
)
def test_rllib_config_rejects_bad_values(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(RLlibConfig, ["--config", str(ROOT / "configs" / "rllib.yaml"), *argv])


def test_shipped_rllib_configs_load() -> None:
    for name in ("rllib.yaml", "rllib_smoke.yaml", "rllib_prior.yaml"):
        load_yaml(RLlibConfig, ROOT / "configs" / name).validate()


def test_module_weights_and_project_checkpoints_convert_both_ways(tmp_path: Path) -> None:
    from agents.rllib_module import net_state_dict
    from patchwork_env.players.checkpoint import save_checkpoint
    from patchwork_env.players.net_config import NetConfig
    from patchwork_env.players.network import PatchworkNet
    from train.rllib_selfplay import initial_net, module_state

    cfg = RLlibConfig(net=NetConfig(channels=8, hidden=16, head_features=4, head_hidden=8))
    net = PatchworkNet(cfg.net)
    back = net_state_dict(module_state(net))
    assert back.keys() == net.state_dict().keys()
    assert all(bool((back[k] == v).all()) for k, v in net.state_dict().items())
    path = save_checkpoint(tmp_path / "start.pt", net)
    cfg.init_checkpoint = str(path)
    assert all(bool((initial_net(cfg).state_dict()[k] == v).all()) for k, v in net.state_dict().items())
    other = save_checkpoint(tmp_path / "other.pt", PatchworkNet(NetConfig(channels=4)))
    cfg.init_checkpoint = str(other)
    with pytest.raises(ConfigError, match="holds the network"):
        initial_net(cfg)


def test_evaluate_rejects_an_address_without_the_ray_backend(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli import patchwork

    assert patchwork("evaluate", "--agents", "greedy", "random", "--address", "auto") == 2
    assert "--address needs --backend ray" in capsys.readouterr().err
