"""``python -m train.demo``: a smoke run writes the run folder and a report with the start and the end
side by side on the same deals and head to head; bad arguments stop it before any training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from patchwork_env import new_game
from patchwork_env.core.records import Player, read_records
from patchwork_env.evaluation.stats import format_win_rate
from patchwork_env.players.registry import make_agent
from patchwork_env.replay import replay_html
from tests.cli import error_lines
from train import demo


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("demo") / "run"
    report = demo.main(["--smoke", "--run-dir", str(folder), "--pairs", "1", "--seed", "3"])
    return folder, report


def test_smoke_run_writes_the_run_folder(smoke_run: tuple[Path, Path]) -> None:
    folder, report = smoke_run
    assert report == folder / "report.md"
    for name in ("config.yaml", "checkpoints/final.pt", "checkpoints/start.pt", "learning_curve.png",
                 "eval_history.json", "demo_eval.json", "elo.png", "report.md"):  # fmt: skip
        assert (folder / name).is_file(), f"missing {name}"
    assert list(folder.glob("events.out.tfevents.*")), "no TensorBoard log"
    assert "seed: 3" in (folder / "config.yaml").read_text()  # the trainer's option reached the trainer
    assert "channels: 8" in (folder / "config.yaml").read_text()  # --smoke's own network


def test_the_start_and_the_end_play_the_same_deals_and_each_other(smoke_run: tuple[Path, Path]) -> None:
    folder, _ = smoke_run
    data = json.loads((folder / "demo_eval.json").read_text())
    for key in ("command", "commit", "date", "machine", "seeds"):
        assert key in data  # a results file: it says how it was measured
    end, start = (f"network:{folder / 'checkpoints' / n}" for n in ("final.pt", "start.pt"))
    assert data["end_vs_start"]["a"] == end and data["end_vs_start"]["b"] == start
    for spec in ("random", "greedy"):
        e, s = data[f"end_vs_{spec}"], data[f"start_vs_{spec}"]
        assert (e["a"], e["b"], s["a"], s["b"]) == (end, spec, start, spec)
        assert e["games"] == s["games"] == 2 and e["seed"] == s["seed"] == data["eval_seed"]


def test_report_shows_start_end_head_to_head_and_commands(smoke_run: tuple[Path, Path]) -> None:
    folder, report = smoke_run
    text = report.read_text()
    data = json.loads((folder / "demo_eval.json").read_text())
    head = data["end_vs_start"]
    assert f"| its start, head to head | | **{format_win_rate(head['win_rate_a'], tuple(head['ci95_a']))}** |" in text
    for spec in ("random", "greedy"):
        s, e = data[f"start_vs_{spec}"], data[f"end_vs_{spec}"]
        row = (f"| `{spec}` | {format_win_rate(s['win_rate_a'], tuple(s['ci95_a']))} "
               f"| {format_win_rate(e['win_rate_a'], tuple(e['ci95_a']))} |")  # fmt: skip
        assert row in text
    assert len(text.splitlines()) <= 20  # issue 64: a report a newcomer reads in a minute
    assert "`mcts:sims=4`'s choice of move kind" in text  # the smoke run's teacher, as the config says
    checkpoint = folder / "checkpoints" / "final.pt"
    assert f"patchwork play --opponent network:{checkpoint}" in text
    assert f"patchwork ladder network:{checkpoint}" in text
    assert "ppo:" not in text  # the spec's old name: the report names checkpoints as network:PATH
    assert "[Learning curve](learning_curve.png)" in text and (folder / "learning_curve.png").is_file()


def test_report_links_replays_of_the_games_against_greedy(smoke_run: tuple[Path, Path]) -> None:
    folder, report = smoke_run
    text = report.read_text()
    records = read_records(folder / "games" / "demo-vs-greedy.jsonl")
    assert len(records) == 2 and {r.meta["seat_a"] for r in records} == {0, 1}
    for rec in records:
        page = f"replay-vs-greedy-seat{rec.meta['seat_a']}.html"
        assert f"[seat {rec.meta['seat_a']}]({page})" in text
        assert (folder / page).read_text() == replay_html(rec)
        assert rec.players[1 - rec.meta["seat_a"]] == Player("greedy", "greedy")


def test_the_checkpoint_is_an_agent(smoke_run: tuple[Path, Path]) -> None:
    folder, _ = smoke_run
    agent = make_agent(f"network:{folder / 'checkpoints' / 'final.pt'}")
    state = new_game(seed=0)
    assert state.is_legal(agent.act(state, np.random.default_rng(0)))


def test_several_seeds_write_one_results_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the runs' folders go to runs/ under the working directory
    out = tmp_path / "demo.json"
    demo.main(["--smoke", "--pairs", "1", "--seeds", "4", "5", "--results", str(out)])
    data = json.loads(out.read_text())
    assert data["kind"] == "training" and data["seeds"] == [4, 5] and [r["seed"] for r in data["runs"]] == [4, 5]
    assert set(data["summary"]) == {"mean", "min"} and len(data["headline"]) == 2
    assert all(raw["end_vs_start"]["games"] == 2 for raw in data["raw"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--pairs", "0"], "--pairs must be in [1, 1000000], got 0"),
        (["--config", "configs/nope.yaml"], "no such file 'configs/nope.yaml'"),
        (["--opponents", "grredy"], "unknown agent 'grredy'"),
        (["--opponents", "random", "random"], "--opponents must be distinct"),
        (["--opponents", "network:x.pt"], "'network:x.pt' is a checkpoint"),
        (["--opponents", "ppo:x.pt"], "'ppo:x.pt' is a checkpoint"),
        (["--workers", "0"], "--workers must be in [1, 256], got 0"),
        (["--num-gmaes", "8"], "Unrecognized options: --num-gmaes"),
        (["--learning-rate", "-1"], "learning_rate must be > 0"),
        (["--eval-seed", "-1"], "--eval-seed must be in [0, 4294967295], got -1"),
        (["--seeds", "x"], "--seeds"),
        (["--smoke", "yes"], "Unrecognized options: yes"),
        (["--results", "x.json"], "--results needs --seeds"),
    ],
)
def test_bad_arguments_stop_before_training(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exc:
        demo.main([*argv, "--run-dir", str(tmp_path / "run")])
    assert exc.value.code == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert line.startswith("error: ") and message in line
    assert not (tmp_path / "run").exists()


def test_an_existing_run_folder_is_not_overwritten(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("results of another run")
    with pytest.raises(SystemExit):
        demo.main(["--smoke", "--run-dir", str(tmp_path)])
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "old.txt").read_text() == "results of another run"
