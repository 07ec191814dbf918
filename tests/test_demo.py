"""``python -m train.demo``: a smoke run writes the whole run folder and the report; bad arguments
stop it before any training, with a message that says what is allowed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from patchwork_env import new_game
from patchwork_env.core.records import Player, read_records
from patchwork_env.players.registry import make_agent
from patchwork_env.replay import replay_html
from train import demo


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("demo") / "run"
    report = demo.main(["--smoke", "--run-dir", str(folder), "--pairs", "1", "--seed", "3"])
    return folder, report


def test_smoke_run_writes_the_run_folder(smoke_run: tuple[Path, Path]) -> None:
    folder, report = smoke_run
    assert report == folder / "report.md"
    for name in ("config.yaml", "checkpoints/final.pt", "checkpoints/latest.pt", "learning_curve.png",
                 "eval_history.json", "demo_eval.json", "elo.png", "report.md"):  # fmt: skip
        assert (folder / name).is_file(), f"missing {name}"
    assert list(folder.glob("events.out.tfevents.*")), "no TensorBoard log"
    assert "seed: 3" in (folder / "config.yaml").read_text()  # the trainer's option reached the trainer
    assert "final_eval_pairs: 0" in (folder / "config.yaml").read_text()


def test_smoke_evaluation_is_paired_against_both_baselines(smoke_run: tuple[Path, Path]) -> None:
    folder, _ = smoke_run
    data = json.loads((folder / "demo_eval.json").read_text())
    learner = data["agents"][0]
    assert learner == f"ppo:{folder / 'checkpoints' / 'final.pt'}"
    start = f"ppo:{folder / 'checkpoints' / 'start.pt'}"
    assert data["agents"][1] == start  # the network training began from, on the same deals
    pairs = {p["b"]: p for p in data["pairs"] if p["a"] == learner}
    assert set(pairs) == {start, "random", "greedy"}
    start_pairs = {p["b"]: p for p in data["pairs"] if p["a"] == start}
    assert set(start_pairs) == {"random", "greedy"}
    for p in [*pairs.values(), *start_pairs.values()]:
        assert p["games"] == 2
        assert p["wins_a"] + p["wins_b"] == 2
        assert 0.0 <= p["ci95_a"][0] <= p["win_rate_a"] <= p["ci95_a"][1] <= 1.0
    assert set(data["elo"]) == {learner, start, "random", "greedy"}


def test_report_has_the_table_paths_and_commands(smoke_run: tuple[Path, Path]) -> None:
    folder, report = smoke_run
    text = report.read_text()
    data = json.loads((folder / "demo_eval.json").read_text())
    for p in data["pairs"]:
        if p["a"] == data["agents"][0]:
            row = f"| `{p['b']}` | {p['games']} | {p['wins_a']} | {p['win_rate_a']:.1%} |"
            assert row in text
    start = {p["b"]: p for p in data["pairs"] if p["a"] == data["agents"][1]}
    end = {p["b"]: p for p in data["pairs"] if p["a"] == data["agents"][0]}
    for spec in ("random", "greedy"):  # the start and the end side by side
        assert f"| `{spec}` | {start[spec]['win_rate_a']:.1%} [" in text
        assert f"| {end[spec]['win_rate_a']:.1%} [{end[spec]['ci95_a'][0]:.1%}" in text
    checkpoint = folder / "checkpoints" / "final.pt"
    assert f"patchwork play --opponent ppo:{checkpoint}" in text
    assert f"python -m train.selfplay --resume {folder / 'checkpoints' / 'latest.pt'}" in text
    assert "\npython -m train.demo --smoke --pairs 1 --seed 3\n" in text  # run again: a new folder


def test_report_links_replays_of_the_games_against_greedy(smoke_run: tuple[Path, Path]) -> None:
    folder, report = smoke_run
    text = report.read_text()
    records = read_records(folder / "games" / "demo-vs-greedy.jsonl")
    assert len(records) == 2 and {r.meta["seat_a"] for r in records} == {0, 1}
    for rec in records:
        page = f"replay-vs-greedy-seat{rec.meta['seat_a']}.html"
        assert f"[{page}]({page})" in text
        assert (folder / page).read_text() == replay_html(rec)
        assert rec.players[1 - rec.meta["seat_a"]] == Player("greedy", "greedy")
    trainer_games = sorted((folder / "games").glob("eval-*.jsonl"))  # the trainer's periodic evaluations
    assert trainer_games and all(read_records(path) for path in trainer_games)
    assert "![learning curve](learning_curve.png)" in text


def test_the_checkpoint_is_an_agent(smoke_run: tuple[Path, Path]) -> None:
    folder, _ = smoke_run
    agent = make_agent(f"ppo:{folder / 'checkpoints' / 'final.pt'}")
    state = new_game(seed=0)
    assert state.is_legal(agent.act(state, np.random.default_rng(0)))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--pairs", "0"], "--pairs: must be >= 1"),
        (["--config", "configs/nope.yaml"], "no such file 'configs/nope.yaml'"),
        (["--opponents", "grredy"], "unknown agent 'grredy'"),
        (["--opponents", "random", "random"], "--opponents must be distinct"),
        (["--workers", "0"], "--workers must be >= 1"),
        (["--num-gmaes", "8"], "Unrecognized options: --num-gmaes"),
        (["--learning-rate", "-1"], "learning_rate must be > 0"),
        (["--eval-seed", "-1"], "--eval-seed must be >= 0"),
    ],
)
def test_bad_arguments_stop_before_training(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exc:
        demo.main([*argv, "--run-dir", str(tmp_path / "run")])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_an_existing_run_folder_is_not_overwritten(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("results of another run")
    with pytest.raises(SystemExit):
        demo.main(["--smoke", "--run-dir", str(tmp_path)])
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "old.txt").read_text() == "results of another run"
