"""Expert iteration (agents/exit.py) and its trainer (train/exit.py), on tiny budgets."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.distill import NUM_GROUPS, legal_groups, sample_positions
from agents.exit import SearchSettings, exit_positions, fit, gate, group_targets, label_loss, search_labels
from agents.network import NetConfig, PatchworkNet
from patchwork_env import rules
from train import exit as exit_trainer
from train.config import ConfigError, describe, field_docs, from_dict, load_config

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
TINY_KEYS = TINY.to_dict()


def _net(seed: int = 0, config: NetConfig = TINY) -> PatchworkNet:
    torch.manual_seed(seed)
    return PatchworkNet(config).eval()


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
    labels = search_labels(_net(), states, SearchSettings(sims=8, batch=4, target=target), seed=1)
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
    assert ((groups > 0).sum(1) >= 2).all() or target == "visits"  # the improved policy is soft
    # a function of the seed (and the batch size)
    again = search_labels(_net(), states, SearchSettings(sims=8, batch=4, target=target), seed=1)
    assert np.array_equal(labels.policies, again.policies) and np.array_equal(labels.actions, again.actions)


def test_bad_search_settings_fail() -> None:
    with pytest.raises(ValueError, match="target"):
        SearchSettings(target="best").validate()
    with pytest.raises(ValueError, match=">= 1"):
        SearchSettings(sims=0).validate()


def test_positions_come_from_the_networks_games_and_offer_a_choice() -> None:
    net = _net()
    states = exit_positions(net, 30, seed=3, greedy_share=0.5, stride=2)
    assert states.shape == (30, rules.STATE_LEN)
    assert (legal_groups(states).sum(1) > 1).all()
    assert not any(rules.is_terminal(s) for s in states)
    assert np.array_equal(states, exit_positions(net, 30, seed=3, greedy_share=0.5, stride=2))
    assert not np.array_equal(states, exit_positions(net, 30, seed=4, greedy_share=0.5, stride=2))


def test_one_fit_on_a_tiny_budget_fits_the_labels_better(positions: np.ndarray) -> None:
    net = _net()
    labels = search_labels(net, positions, SearchSettings(sims=8, batch=20), seed=2)
    targets = group_targets(labels.policies)
    held = np.zeros(len(positions), dtype=np.bool_)
    held[:4] = True
    trained = ~held
    before, _ = label_loss(net, positions[trained], targets[trained])
    stats = fit(net, positions, targets, held, epochs=3, lr=3e-3, seed=0, batch_size=16)
    after, _ = label_loss(net, positions[trained], targets[trained])
    assert after < before
    assert len(stats) == 4 and np.isfinite(stats[-1].val_loss)


def test_the_gate_keeps_the_old_network_when_the_new_one_loses() -> None:
    greedy_like = _net()  # the untrained greedy prior: greedy's moves
    arbitrary = _net(config=NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8))  # no prior
    lost = gate(arbitrary, greedy_like, pairs=3, seed=0)
    assert not lost.keep_new and lost.win_rate < 0.5
    won = gate(greedy_like, arbitrary, pairs=3, seed=0)
    assert won.keep_new and won.win_rate > 0.5
    assert won.result.games == 6


def _tiny_config(tmp: Path, **extra: object) -> exit_trainer.ExItConfig:
    data: dict[str, object] = {
        **TINY_KEYS,
        "init_checkpoint": "",
        "progress": False,
        "iterations": 2,
        "positions_per_iteration": 24,
        "position_stride": 1,
        "sims": 4,
        "search_batch": 8,
        "window": 2,
        "epochs": 1,
        "batch_size": 16,
        "gate_pairs": 1,
        "eval_opponents": {"random": 1},
        "final_eval_pairs": 1,
        "final_eval_opponents": ["random"],
        "runs_dir": str(tmp),
        **extra,
    }
    return from_dict(exit_trainer.ExItConfig, data)


def test_a_rejected_fit_restores_the_old_weights(tmp_path: Path) -> None:
    cfg = _tiny_config(tmp_path, gate_threshold=1.0)  # no win rate is above 1: the gate always rejects
    net = _net()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    row = exit_trainer.iterate(cfg, net, exit_trainer.Window(2), 1)
    assert row["kept_new"] is False
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert row["positions"] == 24 and row["window_positions"] == 24


def _without_times(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    def clean(value: object) -> object:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if "second" not in k and k != "minutes"}
        return value

    return [clean(r) for r in rows]  # type: ignore[misc]


def test_a_seeded_tiny_run_is_deterministic(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        summary = exit_trainer.main(_tiny_config(tmp_path), run_dir=str(tmp_path / name))
        folder = Path(summary["run_dir"])
        model = torch.load(folder / "checkpoints" / "final.pt", weights_only=True)["model"]
        history = json.loads((folder / "exit_history.json").read_text())
        for row in history[1:]:
            assert {"gate_win_rate", "kept_new", "held_out_loss_after", "positions_per_second", "eval"} <= row.keys()
        runs.append((model, _without_times(history), summary["final_eval"]))
    (m1, h1, f1), (m2, h2, f2) = runs
    assert m1.keys() == m2.keys() and all(torch.equal(m1[k], m2[k]) for k in m1)
    assert h1 == h2 and len(h1) == 3  # iteration 0 (the start's evaluation), then 2 iterations
    assert f1["random"]["win_rate"] == f2["random"]["win_rate"]
    other = exit_trainer.main(_tiny_config(tmp_path, seed=1), run_dir=str(tmp_path / "c"))
    model = torch.load(Path(other["run_dir"]) / "checkpoints" / "final.pt", weights_only=True)["model"]
    assert any(not torch.equal(m1[k], model[k]) for k in m1)  # another seed, another run


def test_the_shipped_config_loads_and_bad_values_fail(tmp_path: Path) -> None:
    cfg = load_config(ROOT / "configs" / "exit.yaml", exit_trainer.ExItConfig)
    assert cfg.init_checkpoint and Path(cfg.init_checkpoint).is_file()
    with pytest.raises(ConfigError, match="target"):
        _tiny_config(tmp_path, target="best")
    with pytest.raises(ConfigError, match="greedy_share"):
        _tiny_config(tmp_path, greedy_share=1.5)
    with pytest.raises(ConfigError, match="init_checkpoint"):
        _tiny_config(tmp_path, init_checkpoint=str(tmp_path / "missing.pt"))


def test_every_key_has_a_docstring_and_the_help_names_the_unit() -> None:
    cls = exit_trainer.ExItConfig
    docs = field_docs(cls)
    assert not [f.name for f in dataclasses.fields(cls) if not docs.get(f.name)]
    assert "count iterations" in describe(cls)
