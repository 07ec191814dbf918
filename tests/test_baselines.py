"""``python -m train.baselines``: a run per seed, its minute checkpoints evaluated, the results file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.test_ppo import TINY_NET
from train import baselines

TINY = {
    "selfplay": {"net": TINY_NET, "num_games": 8, "rollout_steps": 24, "num_minibatches": 2},
    "sb3_maskable": {"net": TINY_NET, "n_envs": 4, "n_steps": 16, "batch_size": 32, "epochs": 1},
}
FOLDER = {"selfplay": "ppo-scratch", "sb3_maskable": "sb3-maskable"}


@pytest.mark.parametrize("trainer", ["selfplay", "sb3_maskable"])
def test_the_baselines_write_a_results_file_with_raw_counts(trainer: str, tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY[trainer]))
    out = tmp_path / "scratch.json"
    argv = ["--trainer", trainer, "--seeds", "3", "--minutes", "1e-9", "2e-9", "--pairs", "2", "--config", str(config)]
    assert baselines.main([*argv, "--runs", str(tmp_path / "runs"), "--results", str(out)]) == 0
    data = json.loads(out.read_text())
    for key in ("command", "commit", "date", "machine", "seeds"):
        assert data[key], key
    assert data["kind"] == "training" and data["seeds"] == [3]
    assert "minutes of the run's CPU time" in data["description"]
    assert data["description"].startswith(f"`python -m train.{trainer} --config {config}`")
    folder = tmp_path / "runs" / f"{FOLDER[trainer]}-s3"
    run_config = yaml.safe_load((folder / "config.yaml").read_text())
    assert run_config["clock"] == "process" and run_config["time_limit_minutes"] == 2e-9
    assert data["columns"] == [
        f"{what} {m} min" for m in ("1e-09", "2e-09") for what in ("decisions by", "vs random at", "vs greedy at")
    ]
    raw = data["raw"]["3"]
    for mark in ("1e-09", "2e-09"):
        for spec in ("random", "greedy"):
            r = raw[mark][spec]
            assert r["games"] == 4 and r["wins"] + r["losses"] <= 4 and 0 <= r["win_rate"] <= 1
    assert (folder / "checkpoints" / "minute-1e-09.pt").is_file()
    # both marks pass at the run's one step: the learner's decisions of its one rollout, as its summary counts them
    summary = json.loads((folder / "final_eval.json").read_text())
    counted = {"selfplay": summary.get("learner_decisions"), "sb3_maskable": summary.get("timesteps")}[trainer]
    for mark in ("1e-09", "2e-09"):
        trained = data["trained"]["3"][mark]
        assert trained == json.loads((folder / "checkpoints" / f"minute-{mark}.json").read_text())
        assert trained["steps"] == 1 and trained["minutes"] > 0
        assert trained["decisions"] == counted > 0, (trained, counted)
    assert data["runs"][0]["cells"]["decisions by 1e-09 min"] == f"{trained['decisions'] / 1e6:.2f}M"


def test_a_mark_out_of_range_is_an_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        baselines.main(["--minutes", "0"])
    assert exc.value.code == 2 and capsys.readouterr().err.startswith("error: --minutes must be > 0 and <= 10000")


def test_seeds_run_at_once_give_each_seed_its_own_run(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({"net": TINY_NET, "num_games": 8, "rollout_steps": 24, "num_minibatches": 2}))
    out = tmp_path / "scratch.json"
    argv = ["--seeds", "1", "2", "--jobs", "2", "--minutes", "1e-9", "--pairs", "1", "--config", str(config)]
    assert baselines.main([*argv, "--runs", str(tmp_path / "runs"), "--results", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["seeds"] == [1, 2] and sorted(data["raw"]) == ["1", "2"]
    for seed in (1, 2):
        assert data["raw"][str(seed)]["1e-09"]["greedy"]["games"] == 2
        assert yaml.safe_load((tmp_path / "runs" / f"ppo-scratch-s{seed}" / "config.yaml").read_text())["seed"] == seed


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        ("0", "error: --jobs must be in [1, 256], got 0"),
        ("3", "error: --jobs must be in 1..2 (the number of seeds), got 3"),
    ],
)
def test_more_jobs_than_seeds_is_an_error_line(jobs: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        baselines.main(["--seeds", "0", "1", "--jobs", jobs])
    assert exc.value.code == 2 and capsys.readouterr().err.startswith(expected)


def test_a_repeated_seed_is_an_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:  # two runs would share one folder
        baselines.main(["--seeds", "0", "0", "--jobs", "2"])
    assert exc.value.code == 2 and capsys.readouterr().err.startswith("error: --seeds must be distinct")


def test_a_missing_config_is_an_error_line_before_any_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        baselines.main(["--trainer", "sb3_maskable", "--config", str(tmp_path / "no.yaml"), "--runs", str(tmp_path)])
    assert exc.value.code == 2 and capsys.readouterr().err.startswith("error: --config: no such file")
    assert list(tmp_path.iterdir()) == []


def test_each_trainer_has_its_own_default_config() -> None:
    for trainer, expected in (("selfplay", "configs/selfplay_scratch.yaml"), ("sb3_maskable", "configs/sb3.yaml")):
        assert baselines.config_of(baselines.BaselinesArgs(trainer=trainer)) == expected  # type: ignore[arg-type]
        assert Path(expected).is_file()


def test_a_used_run_folder_is_an_error_line_before_any_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY["selfplay"]))
    used = tmp_path / "runs" / "ppo-scratch-s2"
    used.mkdir(parents=True)
    (used / "config.yaml").write_text("seed: 2\n")
    argv = [
        "--seeds",
        "1",
        "2",
        "--jobs",
        "2",
        "--minutes",
        "1e-9",
        "--config",
        str(config),
        "--runs",
        str(tmp_path / "runs"),
    ]
    with pytest.raises(SystemExit) as exc:  # seed 1 would have trained first, then seed 2 failed
        baselines.main(argv)
    assert exc.value.code == 2 and capsys.readouterr().err.startswith(f"error: --runs: {used} holds another run")
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["ppo-scratch-s2"]


def test_a_config_of_the_other_trainer_is_an_error_line_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "selfplay.yaml"
    config.write_text(yaml.safe_dump(TINY["selfplay"]))
    argv = ["--trainer", "sb3_maskable", "--config", str(config), "--runs", str(tmp_path / "runs")]
    with pytest.raises(SystemExit) as exc:
        baselines.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith(f"error: --config {config} for --trainer sb3_maskable:"), err
    assert "num_games" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_the_trainer_choices_are_the_table_of_trainers() -> None:
    import typing

    choices = typing.get_args(typing.get_type_hints(baselines.BaselinesArgs)["trainer"])
    assert set(choices) == set(baselines.TRAINERS)


def test_runs_under_a_file_is_one_error_line_before_any_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY["selfplay"]))
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    argv = ["--seeds", "0", "--minutes", "1e-9", "--config", str(config), "--runs", str(afile)]
    with pytest.raises(SystemExit) as exc:
        baselines.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: --runs: {afile / 'ppo-scratch-s0'} cannot be made (a file lies on its path)"), err
    assert afile.read_text() == "not a folder"


def test_a_mark_without_its_record_is_an_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A minute checkpoint whose ``minute-<m>.json`` is gone (not a folder the loop wrote) stops with
    one line naming the file, before any game."""
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "minute-10.pt").write_bytes(b"")
    args = baselines.BaselinesArgs(minutes=(10.0,))
    with pytest.raises(SystemExit) as exc:
        baselines.evaluate_marks(args, tmp_path)
    err, record = capsys.readouterr().err, tmp_path / "checkpoints" / "minute-10.json"
    assert exc.value.code == 2 and err.startswith(f"error: {record} is missing") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "cannot read {record}:"),
        ("[1, 2]", "{record} must hold a JSON object"),
        ("\udcff", "cannot read {record}:"),
    ],
)
def test_a_later_mark_with_a_bad_record_stops_before_any_game(
    text: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every mark's ``minute-<m>.json`` is read before the first game: one unreadable record (not JSON, not
    an object, not UTF-8) is one line naming it, and no checkpoint has been played."""
    import patchwork_env.evaluation.arena as arena

    def no_games(*args: object, **kwargs: object) -> None:
        raise AssertionError("a game was played before every mark was read")

    monkeypatch.setattr(arena, "play_pairs", no_games)
    marks = tmp_path / "checkpoints"
    marks.mkdir()
    for m in (10, 20):
        (marks / f"minute-{m}.pt").write_bytes(b"")
    (marks / "minute-10.json").write_text(json.dumps({"minutes": 10, "steps": 3}))
    (marks / "minute-20.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(SystemExit) as exc:
        baselines.evaluate_marks(baselines.BaselinesArgs(minutes=(10.0, 20.0)), tmp_path)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: " + says.format(record=marks / "minute-20.json")), err
