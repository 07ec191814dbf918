"""``train.sweep``: Optuna trials of short from-scratch self-play runs, a study that continues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from train import sweep


def test_a_sweep_writes_its_trials_and_a_second_call_continues_the_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny_space = {**sweep.SPACE, "net.channels": [8], "net.blocks": (1, 1, "int"), "num_games": [8],
                  "rollout_steps": [8], "epochs": (1, 1, "int"), "num_minibatches": [2]}  # fmt: skip
    monkeypatch.setattr(sweep, "SPACE", tiny_space)
    out = tmp_path / "sweep"
    base = tmp_path / "base.yaml"
    base.write_text(
        "net: {channels: 8, blocks: 1, head_features: 4}\nnum_games: 8\nrollout_steps: 8\nnum_minibatches: 2\n"
        "epochs: 1\ntotal_updates: 50\n"
    )
    tiny = ["--minutes", "0.01", "--pairs", "1", "--out", str(out), "--base", str(base)]
    assert sweep.main(["--trials", "1", *tiny]) == 0
    first = json.loads((out / "sweep.json").read_text())
    assert [t["trial"] for t in first["trials"]] == [0]  # the base config first
    assert first["trials"][0]["params"]["net.channels"] == 8 and first["trials"][0]["games"] == 2
    results = tmp_path / "sweep-results.json"
    assert sweep.main(["--trials", "1", *tiny, "--results", str(results)]) == 0
    second = json.loads((out / "sweep.json").read_text())
    published = json.loads(results.read_text())  # a results file of the study (kind checked on write)
    assert published["kind"] == "training" and [r["seed"] for r in published["runs"]] == [
        f"trial {r['trial']}" for r in second["trials"]
    ]
    assert published["raw"]["trial 0"]["games"] == 2 and published["seeds"] == [0]
    assert sorted(t["trial"] for t in second["trials"]) == [0, 1]
    lo, hi = second["trials"][0]["ci95"]
    assert 0 <= lo <= second["trials"][0]["win_rate_vs_greedy"] <= hi <= 1


def test_bad_options_are_one_error_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing_base = ["--base", str(tmp_path / "none.yaml"), "--out", str(tmp_path / "study")]
    for argv in (["--trials", "-1"], ["--trails", "3"], ["--out", str(tmp_path / "f" / "x")], missing_base):
        if argv[0] == "--out":
            (tmp_path / "f").write_text("a file")
        with pytest.raises(SystemExit) as info:
            sweep.main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: "), err
    assert not (tmp_path / "study").exists()  # a bad --base is refused before the study folder is made
