"""``train.loop``: every trainer stops on Ctrl-C with a resumable checkpoint, and ``--resume``
continues it to the end state of an uninterrupted run (the same final network, bit for bit, where
the algorithm is deterministic; the same counters where the games in progress are dealt anew); every
trainer stops at its time limit after the step that reaches it."""

from __future__ import annotations

import dataclasses
import importlib
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch

from train.artefact import read_artefact
from train.cli import from_dict
from train.config import (
    AlphaZeroConfig,
    CommonConfig,
    DistillConfig,
    ExItConfig,
    RLlibConfig,
    SB3Config,
    SelfPlayConfig,
)
from train.loop import Trainer

TINY = {"channels": 8, "blocks": 1, "hidden": 16, "head_features": 4, "head_hidden": 8}
PRIOR = {**TINY, "prior_scale": 2.0}
EVAL = {"progress": False, "eval_every": 2, "checkpoint_every": 1, "eval_opponents": {"random": 1},
        "final_eval_pairs": 1, "final_eval_opponents": ["random"]}  # fmt: skip

# trainer module, its Trainer class, config class, a tiny config of 3 steps, exact on resume
TRAINERS: dict[str, tuple[str, str, type[CommonConfig], dict[str, Any], bool]] = {
    "selfplay": ("train.selfplay", "SelfPlay", SelfPlayConfig, {
        "net": TINY, "num_games": 8, "rollout_steps": 24, "total_updates": 3, "num_minibatches": 2,
        "epochs": 1, "snapshot_every": 1, "pool_size": 1, "greedy_weight": 0.5, "latest_prob": 0.3}, True),
    "alphazero": ("train.alphazero", "AlphaZero", AlphaZeroConfig, {
        "iterations": 3, "games_per_iteration": 2, "search": {"sims": 4, "considered": 4}, "fast_sims": 2,
        "hidden": [8, 4], "batch_size": 16, "window": 100, "eval_sims": 2, "policy_eval_opponents": {},
        "chunk": 1}, True),
    "exit": ("train.exit", "ExIt", ExItConfig, {
        "net": PRIOR, "iterations": 3, "positions_per_iteration": 24, "position_stride": 1,
        "search": {"sims": 4, "expand": 4}, "search_batch": 8, "window": 2, "epochs": 1, "batch_size": 16,
        "gate_pairs": 1}, True),
    "distill": ("train.distill", "Distill", DistillConfig, {
        "net": {**PRIOR, "group_scale": True, "kind_weights": True}, "teacher": "greedy", "positions": 60,
        "dagger_positions": 30, "rounds": 2, "epochs": 1, "workers": 1}, True),
    "sb3": ("train.sb3_maskable", "MaskablePPOTrainer", SB3Config, {
        "net": TINY, "n_envs": 4, "n_steps": 16, "batch_size": 32, "epochs": 1, "total_timesteps": 192,
        "snapshot_every": 1}, False),
    "rllib": ("train.rllib_selfplay", "RLlibSelfPlay", RLlibConfig, {  # a local Ray runtime: about 10 s a run
        "net": TINY, "num_env_runners": 0, "num_envs_per_env_runner": 1, "train_batch_size": 64,
        "minibatch_size": 32, "epochs": 1, "iterations": 3, "pool_size": 1, "snapshot_every": 1}, False),
}  # fmt: skip
NEEDS = {"sb3": "sb3_contrib", "rllib": "ray"}  # the optional extra a trainer needs


def _trainer(name: str) -> tuple[str, str, type[CommonConfig], dict[str, Any], bool]:
    """``TRAINERS[name]``; a trainer whose extra is not installed is skipped."""
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    return TRAINERS[name]


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
    module, cls_name, cls, _, exact = _trainer(name)
    whole = _run(name, tmp_path / "whole") if exact else {}  # the end state to reach, where it is exact

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
    history = read_checkpoint(latest)["trainer"]["loop"]["history"]
    assert resumed[tmp_unit(history[0]) + "s"] == 3
    assert [h[tmp_unit(h)] for h in history if not h["final"]] == [0, 2, 3]  # the start, eval_every, the last
    if exact:
        a = read_checkpoint(tmp_path / "whole" / "checkpoints" / "final.pt")["model"]
        b = read_checkpoint(tmp_path / "stopped" / "checkpoints" / "final.pt")["model"]
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
        assert _without_seconds(resumed["final_eval"]) == _without_seconds(whole["final_eval"])
    elif name == "sb3":
        assert resumed["timesteps"] == 192  # SB3's own counter came back and went on
    else:  # RLlib's counters came back from its own checkpoint and went on
        assert resumed["env_steps"] >= 3 * 64 and resumed["games"] > 0


@pytest.mark.parametrize("name", list(TRAINERS))
def test_every_trainer_stops_after_the_step_that_reaches_its_time_limit(name: str, tmp_path: Path) -> None:
    """The time limit is the loop's, for every trainer: the run ends after its first step here (a limit
    of 1e-9 minutes), with ``stopped_early``, a resumable checkpoint of that step and the final evaluation;
    the minute mark passed on the way keeps its network and what was trained by then."""
    _trainer(name)
    summary = _run(name, tmp_path, time_limit_minutes=1e-9, checkpoint_minutes=[1e-9])
    saved = read_checkpoint(tmp_path / "checkpoints" / "latest.pt")["trainer"]
    unit = tmp_unit(saved["loop"]["history"][0])
    assert summary["stopped_early"] is True and summary[unit + "s"] == 1 and saved["loop"]["step"] == 1
    assert summary["final_eval"]["random"]["games"] == 2  # the final evaluation still ran
    read_checkpoint(tmp_path / "checkpoints" / "minute-1e-09.pt")
    trained = json.loads((tmp_path / "checkpoints" / "minute-1e-09.json").read_text())
    assert trained["steps"] == 1 and trained["unit"] == unit and trained["minutes"] >= 1e-9
    counted = {"selfplay": summary.get("learner_decisions"), "sb3": summary.get("timesteps")}.get(name)
    assert trained["decisions"] == counted and (counted is None or counted > 0), (trained, counted)


def read_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint of any trainer (a network's or a search model's), checked."""
    return read_artefact(str(path))[1]


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


class _Counting(Trainer):
    """A trainer whose steps only count, to watch the loop's schedule."""

    def __init__(self, run: Any, fail_at: int = 0) -> None:
        from patchwork_env.players.net_config import NetConfig
        from patchwork_env.players.network import PatchworkNet

        super().__init__(run)
        self.net = PatchworkNet(NetConfig(channels=4, blocks=1, hidden=8, head_features=2, head_hidden=4))
        self.start = self.net
        self.steps: list[int] = []
        self.evaluated: list[int] = []
        self.closed = 0
        self.fail_at = fail_at

    def step(self, step: int) -> None:
        if step == self.fail_at:
            raise KeyboardInterrupt
        self.steps.append(step)

    def evaluate(self, step: int) -> None:
        self.evaluated.append(step)

    def state_dict(self) -> dict[str, Any]:
        return {"steps": list(self.steps)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.steps = list(state["steps"])

    def close(self) -> None:
        self.closed += 1


def test_the_loop_evaluates_at_the_start_every_eval_every_and_at_the_last_step_and_always_closes(
    tmp_path: Path,
) -> None:
    from train.loop import run_loop
    from train.run import Run

    cfg = from_dict(SelfPlayConfig, {"run_dir": str(tmp_path / "a"), "eval_every": 3, "checkpoint_every": 100,
                                     "final_eval_pairs": 0, "progress": False}, "test")  # fmt: skip
    trainer = _Counting(Run(cfg, "t", "update"))
    summary = run_loop(trainer.run, trainer, 7, None)
    assert trainer.steps == [1, 2, 3, 4, 5, 6, 7] and trainer.evaluated == [0, 3, 6, 7] and trainer.closed == 1
    assert summary["updates"] == 7 and summary["stopped_early"] is False
    assert read_checkpoint(tmp_path / "a" / "checkpoints" / "latest.pt")["trainer"]["loop"]["step"] == 7

    none = dataclasses.replace(cfg, run_dir=str(tmp_path / "b"), eval_every=0)
    quiet = _Counting(Run(none, "t", "update"))
    run_loop(quiet.run, quiet, 2, None)
    assert quiet.evaluated == []  # eval_every 0: no periodic evaluation, not even at the end

    stopped = _Counting(Run(dataclasses.replace(cfg, run_dir=str(tmp_path / "c")), "t", "update"), fail_at=4)
    with pytest.raises(KeyboardInterrupt):
        run_loop(stopped.run, stopped, 7, None)
    assert stopped.closed == 1  # the progress bars close on Ctrl-C too
    saved = read_checkpoint(tmp_path / "c" / "checkpoints" / "latest.pt")["trainer"]
    assert saved["loop"]["step"] == 3 and saved["state"]["steps"] == [1, 2, 3]  # the whole steps only


def test_the_time_limit_stops_after_the_step_that_reaches_it(tmp_path: Path) -> None:
    from train.loop import run_loop
    from train.run import Run

    cfg = from_dict(SelfPlayConfig, {"run_dir": str(tmp_path), "eval_every": 0, "final_eval_pairs": 0,
                                     "progress": False, "time_limit_minutes": 1e-9}, "test")  # fmt: skip
    trainer = _Counting(Run(cfg, "t", "update"))
    summary = run_loop(trainer.run, trainer, 5, None)
    assert trainer.steps == [1] and summary["stopped_early"] is True


def test_an_alphazero_run_killed_between_a_step_and_its_checkpoint_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step moves the window (its oldest decision files leave it); the process dies before the
    checkpoint that records that (here in the evaluation after step 2; a kill has no Ctrl-C
    checkpoint). ``latest.pt`` still lists step 1's window, whose files must still be there."""
    from train.alphazero import AlphaZero

    whole = _run("alphazero", tmp_path / "whole", window=1)  # each step's decisions push out the last's
    evaluate = AlphaZero.evaluate

    def killed(self: AlphaZero, n: int) -> None:
        if n == 2:
            raise SystemExit("killed")
        evaluate(self, n)

    monkeypatch.setattr(AlphaZero, "evaluate", killed)
    with pytest.raises(SystemExit):
        _run("alphazero", tmp_path / "killed", window=1)
    monkeypatch.setattr(AlphaZero, "evaluate", evaluate)
    latest = tmp_path / "killed" / "checkpoints" / "latest.pt"
    saved = read_checkpoint(latest)["trainer"]
    assert saved["loop"]["step"] == 1 and saved["state"]["window"] == [1]
    assert sorted(p.name for p in (tmp_path / "killed" / "data").iterdir()) == ["records-1.npz", "records-2.npz"]
    resumed = importlib.import_module("train.alphazero").main(
        from_dict(AlphaZeroConfig, {**saved["config"], "resume": str(latest), "run_dir": ""}, "test")
    )
    assert resumed["iterations"] == whole["iterations"] == 3
    a = read_checkpoint(tmp_path / "whole" / "checkpoints" / "final.pt")["model"]
    b = read_checkpoint(tmp_path / "killed" / "checkpoints" / "final.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    # what left the window leaves the folder once a checkpoint no longer lists it
    window = read_checkpoint(latest)["trainer"]["state"]["window"]
    assert window == [3] and sorted(p.name for p in (tmp_path / "killed" / "data").iterdir()) == [
        f"records-{k}.npz" for k in window
    ]


def test_a_checkpoint_whose_zip_directory_asks_too_much_is_refused_before_torch_loads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--resume`` reads a checkpoint with ``read_artefact``, which tries it as a search model with
    ``torch.load`` first: the zip directory is checked before (``archive.check_torch_file``), as
    ``read_checkpoint`` does, so a record announcing more than the limits never reaches torch."""
    from patchwork_env.players.checkpoint import ZIP_LIMITS
    from patchwork_env.players.errors import CheckpointError
    from tests.fuzz_faults import lie_about_size

    path = tmp_path / "latest.pt"
    torch.save({"format": "x", "weights": torch.zeros(4)}, path)
    raw = path.read_bytes()
    for name in zipfile.ZipFile(path).namelist()[:2]:  # two records announcing 3 GiB each: over the total
        raw = lie_about_size(raw, name, 3 * 2**30, "unpacked")
    assert ZIP_LIMITS.total_bytes < 2 * 3 * 2**30
    path.write_bytes(raw)

    loads: list[object] = []
    monkeypatch.setattr(torch, "load", lambda *args, **kwargs: loads.append(args))
    with pytest.raises(CheckpointError, match="refused before loading"):
        read_artefact(str(path))
    assert loads == []  # torch never saw it
