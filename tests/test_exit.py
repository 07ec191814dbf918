"""Expert iteration (agents/exit.py) and its trainer (train/exit.py), on tiny networks and budgets."""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from agents.distill import NUM_GROUPS, legal_groups, sample_positions
from agents.exit import (
    SearchSettings,
    Window,
    exit_positions,
    fit,
    gate,
    group_targets,
    label_loss,
    search_labels,
    unsure,
)
from patchwork_env.core import rules
from patchwork_env.players.checkpoint import read_checkpoint, save_checkpoint
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet
from patchwork_env.players.search_config import SearchConfig
from tests.cli import error_lines
from tools import render_results
from train import exit as exit_trainer
from train import exit_results
from train.cli import from_dict
from train.config import ExItConfig

ROOT = Path(__file__).resolve().parent.parent
TINY = NetConfig(
    channels=8,
    blocks=1,
    hidden=16,
    head_features=4,
    head_hidden=8,
    prior_scale=2.0,
    group_scale=True,
    kind_weights=True,
)


def _settings(sims: int, **extra: Any) -> SearchSettings:
    """The expert's settings (the ``az`` agent's search) with ``sims`` simulations."""
    return SearchSettings(search=SearchConfig(sims=sims, expand=4), **extra)


def _net(seed: int = 0) -> PatchworkNet:
    torch.manual_seed(seed)
    return PatchworkNet(TINY).eval()


@pytest.fixture(scope="module")
def positions() -> np.ndarray:
    states = sample_positions(200, seed=5)
    return states[legal_groups(states).sum(1) > 1][:40]


def _masks(states: np.ndarray) -> np.ndarray:
    masks = np.zeros((len(states), rules.NUM_ACTIONS), dtype=np.bool_)
    rules.legal_mask_batch(np.ascontiguousarray(states), masks, np.zeros(len(states), dtype=np.int64))
    return masks


@pytest.mark.parametrize("target", ["policy", "visits"])
def test_labels_are_distributions_over_legal_actions(positions: np.ndarray, target: str) -> None:
    states = positions[:10]
    labels = search_labels(_net(), states, _settings(8, search_batch=4, target=target), seed=1)
    masks = _masks(states)
    assert labels.policies.shape == (10, rules.NUM_ACTIONS)
    assert (labels.policies >= 0).all()
    np.testing.assert_allclose(labels.policies.sum(1), 1.0, atol=1e-5)
    assert not labels.policies[~masks].any()  # no mass on an illegal action
    assert masks[np.arange(10), labels.actions].all()  # the search's moves are legal
    groups = group_targets(labels.policies)
    assert groups.shape == (10, NUM_GROUPS)
    np.testing.assert_allclose(groups.sum(1), 1.0, atol=1e-9)
    assert not groups[~legal_groups(states)].any()
    if target == "policy":  # the improved policy is soft: every legal kind keeps some mass
        assert ((groups > 0) == legal_groups(states)).all()
    again = search_labels(_net(), states, _settings(8, search_batch=4, target=target), seed=1)
    assert np.array_equal(labels.policies, again.policies) and np.array_equal(labels.actions, again.actions)


def test_labels_on_a_backend_equal_the_labels_in_this_process(positions: np.ndarray) -> None:
    """Each batch of ``search_batch`` positions a task (``label_batch``; the network and positions
    travel pickled, as to a Ray worker): the same labels, bit for bit, in the same order."""
    states, settings = positions[:11], _settings(6, search_batch=4)
    local = search_labels(_net(), states, settings, seed=3)
    backend = SequentialBackend()
    remote = search_labels(_net(), states, settings, seed=3, backend=backend)
    for key in ("policies", "actions", "root_values"):
        assert np.array_equal(getattr(local, key), getattr(remote, key)), key
    assert backend.items == [0, 4, 8]  # three batches (4 + 4 + 3 positions) as three work items


class SequentialBackend:
    """The backend protocol in this process; ``shared`` travels pickled, like to a worker."""

    def __init__(self) -> None:
        self.items: list[int] = []

    def map(self, fn: Any, shared: Any, items: list[int]) -> Any:
        self.items += items
        return (fn(pickle.loads(pickle.dumps(shared)), item) for item in items)


def test_unsure_positions_are_searched_again_with_more_simulations(positions: np.ndarray) -> None:
    states, settings = positions[:16], _settings(8, search_batch=4)
    first = search_labels(_net(), states, settings, seed=2)
    assert not first.searched_again.any()
    kinds = np.sort(group_targets(first.policies), axis=1)
    margin = float(np.median(kinds[:, -1] - kinds[:, -2]))  # about half the labels are unsure
    deeper = replace(settings, unsure_sims=40, unsure_margin=margin)
    labels = search_labels(_net(), states, deeper, seed=2)
    again = labels.searched_again
    assert np.array_equal(again, unsure(first.policies, margin)) and 0 < again.sum() < len(states)
    sure = ~again
    assert np.array_equal(labels.policies[sure], first.policies[sure])  # the sure labels are the first search's
    assert np.array_equal(labels.actions[sure], first.actions[sure])
    assert not np.array_equal(labels.policies[again], first.policies[again])
    np.testing.assert_allclose(labels.policies.sum(1), 1.0, atol=1e-5)
    assert not labels.policies[~_masks(states)].any()
    remote = search_labels(_net(), states, deeper, seed=2, backend=SequentialBackend())
    assert np.array_equal(remote.policies, labels.policies) and np.array_equal(remote.searched_again, again)


def test_bad_search_settings_fail() -> None:
    with pytest.raises(ValueError, match="target"):
        SearchSettings(target="best").search_config()
    with pytest.raises(ValueError, match=r"sims must be in \[1, 100000\], got 0"):
        SearchSettings(search=SearchConfig(sims=0)).search_config()
    with pytest.raises(ValueError, match=r"unsure_sims must be in \[101, 100000\], got 100"):
        SearchSettings(unsure_sims=100).search_config()


def test_positions_come_from_the_networks_games_and_offer_a_choice() -> None:
    net = _net()
    # 16 x as many decisions played: 128 games side by side reach their fourth move, where about a
    # quarter of the positions have a single legal kind of move
    states = exit_positions(net, 30, seed=3, greedy_share=0.5, stride=16)
    assert states.shape == (30, rules.STATE_LEN)
    assert (legal_groups(states).sum(1) > 1).all()
    first = exit_positions(net, 8, seed=3, greedy_share=0.5)
    assert np.array_equal(first, exit_positions(net, 8, seed=3, greedy_share=0.5))
    assert not np.array_equal(first, exit_positions(net, 8, seed=4, greedy_share=0.5))


def test_the_window_keeps_the_newest_iterations() -> None:
    window = Window(2)
    for k in range(3):
        window.add(np.full((k + 1, 1), k), np.zeros((k + 1, NUM_GROUPS)), np.zeros(k + 1, dtype=np.bool_))
    states, targets, held = window.arrays()
    assert states[:, 0].tolist() == [1, 1, 2, 2, 2] and targets.shape == (5, NUM_GROUPS) and held.shape == (5,)


def test_a_fit_lowers_the_loss_on_its_labels(positions: np.ndarray) -> None:
    net = _net()
    targets = group_targets(search_labels(net, positions, _settings(8, search_batch=20), seed=2).policies)
    held = np.zeros(len(positions), dtype=np.bool_)
    held[:4] = True
    window = Window(1)
    window.add(positions, targets, held)
    before, _ = label_loss(net, positions[~held], targets[~held])
    stats = fit(net, window, epochs=3, lr=3e-3, seed=0, batch_size=16)
    after, _ = label_loss(net, positions[~held], targets[~held])
    assert after < 0.9 * before
    assert len(stats) == 4 and np.isfinite(stats[-1].val_loss)


def test_the_gate_keeps_the_previous_network_when_the_new_one_loses() -> None:
    previous = _net()  # the untrained greedy prior: greedy's moves
    worse = _net()
    with torch.no_grad():  # the prior's weights negated: the untrained policy is anti-greedy
        worse.prior_weights.bias.copy_(-2 * worse.prior_base)
    lost = gate(worse, previous, pairs=3, seed=0)
    assert not lost.keep_new and lost.win_rate < 0.5 and lost.result.games == 6
    assert all(torch.equal(v, previous.state_dict()[k]) for k, v in worse.state_dict().items())  # weights restored
    worse = _net()
    with torch.no_grad():
        worse.prior_weights.bias.copy_(-2 * worse.prior_base)
    won = gate(previous, worse, pairs=3, seed=0)
    assert won.keep_new and won.win_rate > 0.5
    assert not torch.equal(previous.prior_weights.bias, worse.prior_weights.bias)  # the winner keeps its own


def _config(tmp_path: Path, **extra: object) -> ExItConfig:
    data: dict[str, object] = {
        "net": {"channels": 8, "blocks": 1, "hidden": 16, "head_features": 4, "head_hidden": 8, "prior_scale": 2.0},
        "run_dir": str(tmp_path),
        "progress": False,
        "iterations": 2,
        "positions_per_iteration": 24,
        "position_stride": 1,
        "search": {"sims": 4, "expand": 4},
        "search_batch": 8,
        "window": 2,
        "epochs": 1,
        "batch_size": 16,
        "gate_pairs": 1,
        "eval_every": 1,
        "checkpoint_every": 1,
        "eval_opponents": {"random": 1},
        "final_eval_pairs": 1,
        "final_eval_opponents": ["random"],
        **extra,
    }
    return from_dict(ExItConfig, data, "test")


def _without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _without_times(v) for k, v in value.items() if k not in ("seconds", "minutes", "positions_per_second")
        }
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def test_a_seeded_tiny_run_is_deterministic(tmp_path: Path) -> None:
    start = save_checkpoint(tmp_path / "start.pt", _net())  # every run starts from the same network
    runs = []
    for name in ("a", "b", "other-seed"):
        cfg = _config(tmp_path / name, seed=1 if name == "other-seed" else 0, init_checkpoint=str(start))
        summary = exit_trainer.main(cfg)
        folder = Path(summary["run_folder"])
        history = json.loads((folder / "exit_history.json").read_text())
        assert [row["iteration"] for row in history] == [0, 1, 2] and summary["iterations"] == 2
        for row in history[1:]:
            assert {"gate_win_rate", "kept_new", "held_out_loss_after", "new_labels_agreement", "eval"} <= row.keys()
        assert row["window_positions"] == 2 * row["positions"] == 48
        assert {"start.pt", "iter_1.pt", "iter_2.pt", "latest.pt", "final.pt"} <= {
            p.name for p in (folder / "checkpoints").iterdir()
        }
        runs.append((read_checkpoint(folder / "checkpoints" / "final.pt")["model"], _without_times(history)))
    (m1, h1), (m2, h2), (_, h3) = runs
    assert all(torch.equal(m1[k], m2[k]) for k in m1) and h1 == h2
    # another seed, other positions and labels (not only other evaluation deals)
    assert [{k: v for k, v in row.items() if k != "eval"} for row in h1[1:]] != [
        {k: v for k, v in row.items() if k != "eval"} for row in h3[1:]
    ]


def test_a_fresh_network_does_not_depend_on_the_threads_the_process_had(tmp_path: Path) -> None:
    """``train.run.preflight`` sets ``torch_threads`` before the network is built: the orthogonal
    initialisation's QR decomposition differs in its last bits between thread counts."""
    before = torch.get_num_threads()
    starts = []
    try:
        for threads in (2, 1):
            torch.set_num_threads(threads)
            net = {"channels": 8, "blocks": 1, "hidden": 32, "head_features": 4, "head_hidden": 8, "prior_scale": 2.0}
            summary = exit_trainer.main(_config(tmp_path / str(threads), net=net, iterations=1, final_eval_pairs=0))
            starts.append(read_checkpoint(Path(summary["start_checkpoint"]))["model"])
    finally:
        torch.set_num_threads(before)
    assert all(torch.equal(starts[0][k], starts[1][k]) for k in starts[0])


def test_the_search_with_the_network_is_evaluated_when_asked(tmp_path: Path) -> None:
    """``search_eval_opponents``: at each evaluation the az search with the current network plays
    them (its row in exit_history.json); none by default."""
    cfg = _config(tmp_path / "on", iterations=1, final_eval_pairs=0, search_eval_opponents={"random": 1},
                  search_eval_sims=3)  # fmt: skip
    history = json.loads((Path(exit_trainer.main(cfg)["run_folder"]) / "exit_history.json").read_text())
    r = history[1]["search_eval"]["random"]
    assert r["games"] == 2 and 0 <= r["wins"] <= 2 and len(r["ci95"]) == 2
    off = _config(tmp_path / "off", iterations=1, final_eval_pairs=0)
    assert (
        "search_eval"
        not in json.loads((Path(exit_trainer.main(off)["run_folder"]) / "exit_history.json").read_text())[1]
    )


def test_the_time_limit_stops_after_the_iteration_that_passes_it(tmp_path: Path) -> None:
    summary = exit_trainer.main(
        _config(tmp_path, iterations=5, time_limit_minutes=1e-6, checkpoint_minutes=[1e-6], final_eval_pairs=0)
    )
    assert summary["iterations"] == 1 and len(summary["kept"]) == 1
    assert {"minute-1e-06.pt", "iter_1.pt"} <= {p.name for p in (tmp_path / "checkpoints").iterdir()}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--search.sims", "0"], "search.sims must be in [1, 100000]"),
        (["--positions-per-iteration", "2147483647"], "positions_per_iteration must be in [2, 10000000]"),
        (["--window", "100000"], "window must be in [1, 1000]"),
        (["--positions-per-iteration", "100000", "--position-stride", "1000"], "decisions played per iteration"),
        (["--greedy-share", "1.5"], "greedy_share must be in [0, 1]"),
        (["--target", "best"], "target must be one of policy, visits"),
        (["--gate-threshold", "nan"], "gate_threshold must be a finite number"),
        (["--checkpoint-minutes", "-1"], "checkpoint_minutes must be at most 100 numbers"),
        (
            ["--init-checkpoint", "", "--net.prior-scale", "0", "--net.no-group-scale", "--net.no-kind-weights"],
            "needs net.prior_scale > 0",
        ),
        (["--init-checkpoint", "/no/such.pt"], "init_checkpoint"),
        (["--itarations", "3"], "did you mean --iterations?"),
        (["--backend", "dask"], "backend must be one of"),
        (["--address", "auto"], "address needs backend=ray"),
        (["--search-eval-opponents", "nosuch", "3"], "search_eval_opponents: unknown agent 'nosuch'"),
        (["--search-eval-opponents", "greedy", "0"], "search_eval_opponents['greedy'] must be in 1..1000000 pairs"),
        (["--unsure-sims", "50"], "unsure_sims must be in [101, 100000], got 50"),
        (["--unsure-sims", "400", "--unsure-margin", "0"], "unsure_margin must be > 0 and <= 1, got 0.0"),
    ],
)
def test_command_line_errors_are_one_line_and_write_nothing(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    code = exit_trainer.cli(["--config", str(ROOT / "configs" / "exit.yaml"), *argv, "--run-dir", str(run_dir)])
    err = capsys.readouterr().err
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert not run_dir.exists()


def test_exit_results_measure_finished_runs_on_the_same_fresh_deals(tmp_path: Path) -> None:
    """``python -m train.exit_results``: per run its start and final networks against greedy, the
    final one against pretrained, its minute checkpoints; the results file has the provenance, a
    row per seed, the mean and the raw counts, and the results page renders it."""
    runs = []
    for seed in (0, 1):
        cfg = _config(tmp_path / f"s{seed}", seed=seed, iterations=1, checkpoint_minutes=[1e-9], final_eval_pairs=0)
        runs.append(str(exit_trainer.main(cfg)["run_folder"]))
    out = tmp_path / "exit.json"
    assert exit_results.main([*runs, "--pairs", "2", "--curve-pairs", "1", "--results", str(out)]) == 0
    data = json.loads(out.read_text())
    for key in ("command", "commit", "date", "machine"):
        assert data[key], key
    assert data["kind"] == "training" and data["seeds"] == [0, 1] and [r["seed"] for r in data["runs"]] == [0, 1]
    assert "vs greedy at 1e-09 min" in data["columns"] and len(data["summary"]["mean"]) == len(data["columns"])
    for seed in ("0", "1"):
        raw = data["raw"][seed]
        for key in ("final_vs_greedy", "start_vs_greedy", "final_vs_pretrained"):
            assert raw[key]["games"] == 4 and raw[key]["wins"] + raw[key]["losses"] <= 4, key
        assert raw["curve_vs_greedy"]["1e-09"]["games"] == 2 and raw["iterations"] == 1
        assert raw["config"]["seed"] == int(seed) and raw["config"]["checkpoint_minutes"] == [1e-9]
    page = render_results.training("exit", data)
    assert any(line.startswith("| mean |") for line in page) and "![" in "".join(page)
    for seed in ("0", "1"):  # the curve: the start at minute 0, the mark, the end at the run's minutes
        raw = data["raw"][seed]
        points = render_results.mark_curves(data)["greedy"][seed]
        expected = [
            (0.0, raw["start_vs_greedy"]["win_rate"]),
            (1e-9, raw["curve_vs_greedy"]["1e-09"]["win_rate"]),
            (raw["minutes"], raw["final_vs_greedy"]["win_rate"]),  # minutes rounded: 0.0 in so short a run
        ]
        assert sorted((x, y) for x, y, _, _ in points) == sorted(expected)
        assert [x for x, *_ in points] == sorted(x for x, *_ in points)
    assert "<svg" in render_results.figure("exit", data)


def test_exit_results_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken"  # a run folder whose history is cut short and whose start does not load
    (broken / "checkpoints").mkdir(parents=True)
    (broken / "config.yaml").write_text("seed: 0\n")
    (broken / "exit_history.json").write_text('[{"minutes": 1.0}]')
    (broken / "checkpoints" / "start.pt").write_text("junk")
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "config.yaml").write_text("seed: 0\n")
    (cut / "exit_history.json").write_text("[{")
    for argv, message in (
        ([str(broken)], "start.pt is not a network checkpoint"),
        ([str(cut)], "is not a finished run of train.exit (config.yaml, exit_history.json: Expecting"),
        ([str(tmp_path)], "is not a run folder of train.exit"),
        ([str(tmp_path), "--pairs", "0"], "--pairs must be in [1, 10000], got 0"),
    ):
        with pytest.raises(SystemExit) as exc:
            exit_results.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and error_lines(err) == [error_lines(err)[0]] and message in err, err
