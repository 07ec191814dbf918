"""``train.loop``: every trainer stops on Ctrl-C with a resumable checkpoint, and ``--resume``
continues it to the end state of an uninterrupted run (the same final network, bit for bit, where
the algorithm is deterministic; the same counters where the games in progress are dealt anew)."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

import pytest
import torch

from patchwork_env.players.checkpoint import read_checkpoint
from train.cli import from_dict
from train.config import AlphaZeroConfig, CommonConfig, DistillConfig, ExItConfig, SB3Config, SelfPlayConfig
from train.loop import Trainer

TINY = {"channels": 8, "blocks": 1, "hidden": 16, "head_features": 4, "head_hidden": 8}
PRIOR = {**TINY, "prior_scale": 2.0}
EVAL = {"progress": False, "eval_every": 2, "checkpoint_every": 1, "eval_opponents": {"random": 1},
        "final_eval_pairs": 1, "final_eval_opponents": ["random"]}  # fmt: skip

# trainer module, its Trainer class, config class, a tiny config of 3 steps, exact on resume
TRAINERS: dict[str, tuple[str, str, type[CommonConfig], dict[str, Any], bool]] = {
    "selfplay": ("train.selfplay", "SelfPlay", SelfPlayConfig, {
        "net": TINY, "num_games": 8, "rollout_steps": 24, "total_updates": 3, "num_minibatches": 2,
        "update_epochs": 1, "snapshot_every": 1, "pool_size": 1, "greedy_weight": 0.5, "latest_prob": 0.3}, True),
    "alphazero": ("train.alphazero", "AlphaZero", AlphaZeroConfig, {
        "net": PRIOR, "iterations": 3, "games_per_iteration": 2, "sims": 4, "considered": 4,
        "train_placements": False, "temp_plies": 4, "buffer_size": 1000, "batch_size": 16,
        "updates_per_iteration": 2, "warmup_games": 2, "warmup_steps": 2,
        "max_grad_norm": 0.01}, True),  # always clipped: the clip must see only what it trains
    "exit": ("train.exit", "ExIt", ExItConfig, {
        "net": PRIOR, "iterations": 3, "positions_per_iteration": 24, "position_stride": 1, "sims": 4,
        "search_batch": 8, "window": 2, "epochs": 1, "batch_size": 16, "gate_pairs": 1}, True),
    "distill": ("train.distill", "Distill", DistillConfig, {
        "net": {**PRIOR, "group_scale": True, "kind_weights": True}, "teacher": "greedy", "positions": 60,
        "dagger_positions": 30, "rounds": 2, "epochs": 1, "workers": 1}, True),
    "sb3": ("train.sb3_maskable", "MaskablePPOTrainer", SB3Config, {
        "net": TINY, "n_envs": 4, "n_steps": 16, "batch_size": 32, "n_epochs": 1, "total_timesteps": 192,
        "snapshot_every": 64}, False),
}  # fmt: skip


def _run(name: str, folder: Path, **extra: Any) -> dict[str, Any]:
    module, _, cls, settings, _ = TRAINERS[name]
    cfg = from_dict(cls, {**EVAL, **settings, "run_dir": str(folder), **extra}, "test")
    result: dict[str, Any] = importlib.import_module(module).main(cfg)
    return result


def _without_seconds(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {spec: {k: v for k, v in r.items() if k != "seconds"} for spec, r in results.items()}


@pytest.mark.parametrize("name", list(TRAINERS))
def test_a_trainer_stopped_by_ctrl_c_resumes_to_the_end_of_an_uninterrupted_run(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, cls_name, cls, _, exact = TRAINERS[name]
    whole = _run(name, tmp_path / "whole")

    trainer: type[Trainer] = getattr(importlib.import_module(module), cls_name)
    step = trainer.step

    def interrupted(self: Trainer, n: int) -> None:
        if n == 2:  # Ctrl-C at the start of the second step, after the first step's checkpoint
            raise KeyboardInterrupt
        step(self, n)

    monkeypatch.setattr(trainer, "step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run(name, tmp_path / "stopped")
    monkeypatch.setattr(trainer, "step", step)
    latest = tmp_path / "stopped" / "checkpoints" / "latest.pt"
    saved = read_checkpoint(latest)["trainer"]
    assert saved["loop"]["step"] == 1 and [h["final"] for h in saved["loop"]["history"]] == [False]

    config = {**saved["config"], "resume": str(latest), "run_dir": ""}
    resumed = importlib.import_module(module).main(from_dict(cls, config, "test"))
    assert resumed["run_folder"] == str(tmp_path / "stopped")  # its own folder
    steps = next(k for k in whole if k.endswith("s") and isinstance(whole[k], int) and k != "games")
    assert resumed[steps] == whole[steps] == 3
    history = read_checkpoint(latest)["trainer"]["loop"]["history"]
    assert [h[tmp_unit(h)] for h in history if not h["final"]] == [0, 2, 3]  # the start, eval_every, the last
    if exact:
        a = read_checkpoint(tmp_path / "whole" / "checkpoints" / "final.pt")["model"]
        b = read_checkpoint(tmp_path / "stopped" / "checkpoints" / "final.pt")["model"]
        assert all(torch.equal(a[k], b[k]) for k in a)
        assert _without_seconds(resumed["final_eval"]) == _without_seconds(whole["final_eval"])
    else:
        assert resumed["timesteps"] == whole["timesteps"] == 192


def tmp_unit(row: dict[str, Any]) -> str:
    """The step key of a history row (``update``, ``iteration``, ``round``)."""
    return next(k for k in ("update", "iteration", "round") if k in row)


def test_a_checkpoint_without_the_loops_state_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    from patchwork_env.players.checkpoint import save_checkpoint
    from patchwork_env.players.net_config import NetConfig
    from patchwork_env.players.network import PatchworkNet
    from train.config import ConfigError
    from train.selfplay import main

    old = save_checkpoint(tmp_path / "old.pt", PatchworkNet(NetConfig(**TINY)), {"optimizer": {}, "update": 3})
    cfg = from_dict(SelfPlayConfig, {**TRAINERS["selfplay"][3], **EVAL, "resume": str(old)}, "test")
    with pytest.raises(ConfigError, match="no trainer state this version can resume"):
        main(dataclasses.replace(cfg, run_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()
