"""agents.tree_loop (self-play of the compiled search, the fit of its value model and move-kind head)
and the command train.tree_loop (its run folder, history, resume and errors)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.tree_loop import Records, SelfPlay, fit, greedy_kind_logp, self_play
from agents.value_model import perceptron, to_value_model
from patchwork_env.core import rules
from patchwork_env.evaluation.backend import LocalBackend
from patchwork_env.players.heuristic import NUM_GROUPS
from patchwork_env.players.search_config import SearchConfig
from patchwork_env.players.value_model import ValueModel, load_value_model
from tests.cli import error_lines
from tools import render_results
from train import tree_loop, tree_loop_results
from train.run import claim_folder

CONFIG = SearchConfig(sims=8, expand=1, leaves=1)


@pytest.fixture(scope="module")
def model() -> ValueModel:
    return to_value_model(perceptron((16, 8), seed=4))


@pytest.fixture(scope="module")
def records(model: ValueModel) -> Records:
    return Records.concat(
        [self_play(SelfPlay(model, CONFIG, 20.0, 3), (0, 3)), self_play(SelfPlay(model, CONFIG, 20.0, 3), (3, 3))]
    )


def test_self_play_records_every_choice_with_its_targets_and_result(model: ValueModel, records: Records) -> None:
    n = len(records.states)
    assert n > 30 and records.targets.shape == (n, NUM_GROUPS) and set(np.unique(records.games)) == set(range(6))
    np.testing.assert_allclose(records.targets.sum(1), 1.0, rtol=1e-5)
    legal = np.isfinite(greedy_kind_logp(records.states, 20.0))
    assert (legal.sum(1) > 1).all()  # only decisions with a choice of kind
    assert not (records.targets[~legal] > 0).any()
    assert (np.abs(records.search_values) <= 1).all() and (np.abs(records.results) <= 1).all()
    for game in range(6):  # one result per game and seat: the two movers' results are opposite
        rows = records.games == game
        movers = np.array([rules.current_player(s) for s in records.states[rows]])
        assert len(set(records.results[rows][movers == 0])) == 1
        assert records.results[rows][movers == 0][0] == -records.results[rows][movers == 1][0]


def test_self_play_is_the_same_in_any_chunks_and_workers(model: ValueModel, records: Records) -> None:
    shared = SelfPlay(model, CONFIG, 20.0, 3)
    spread = Records.concat(list(LocalBackend(2).map(self_play, shared, [(0, 2), (2, 2), (4, 2)])))
    for name in ("states", "targets", "search_values", "results", "games"):
        np.testing.assert_array_equal(getattr(spread, name), getattr(records, name), err_msg=name)
    other = self_play(SelfPlay(model, CONFIG, 20.0, 4), (0, 3))
    assert not np.array_equal(other.states[:40], records.states[:40])


def test_the_fit_moves_the_prior_toward_the_search_and_keeps_held_out_games_apart(
    model: ValueModel, records: Records
) -> None:
    """Targets that always pick the last legal kind: the head learns them (held-out loss falls,
    agreement rises); the head then changes the compiled search's prior; held-out rows unused."""
    legal = np.isfinite(greedy_kind_logp(records.states, 20.0))
    last = legal.shape[1] - 1 - np.argmax(legal[:, ::-1], axis=1)
    targets = np.eye(NUM_GROUPS, dtype=np.float32)[last]
    taught = Records(records.states, targets, records.search_values, records.results, records.games)
    held_out = records.games == 5
    fitted, stats = fit(model, taught, held_out, 20.0, 0.5, epochs=30, lr=1e-3, seed=0, batch_size=64, head_lr=3e-2)
    assert len(stats) == 31 and fitted.has_head
    assert stats[-1].kind_loss < 0.5 * stats[0].kind_loss and stats[-1].kind_agreement > stats[0].kind_agreement
    assert stats[-1].kind_agreement > 0.9
    # the held-out rows take no part: other targets there give the same fit
    scrambled = Records(records.states, np.where(held_out[:, None], np.roll(targets, 1, 1), targets),
                        records.search_values, records.results, records.games)  # fmt: skip
    again, _ = fit(model, scrambled, held_out, 20.0, 0.5, epochs=30, lr=1e-3, seed=0, batch_size=64, head_lr=3e-2)
    assert fitted.wp is not None and again.wp is not None
    np.testing.assert_array_equal(fitted.wp, again.wp)
    with pytest.raises(ValueError, match="held-out rows"):
        fit(model, taught, np.zeros(len(targets), bool), 20.0, 0.5, 1, 1e-3, 0)


def run(tmp_path: Path, *argv: str) -> int:
    base = ["--games", "4", "--sims", "8", "--eval-pairs", "1", "--eval-opponents", "greedy", "--workers", "1"]
    return tree_loop.main([*base, *argv])


def test_the_loop_writes_its_iterations_and_resumes_where_it_stopped(tmp_path: Path) -> None:
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert run(tmp_path, "--run-dir", str(straight), "--iterations", "3") == 0
    history = json.loads((straight / "history.json").read_text())
    assert [row["iteration"] for row in history] == [0, 1, 2, 3]
    assert all(row["eval"]["greedy"]["games"] == 2 for row in history)
    assert all(len(row["fit"]) == 4 and row["decisions"] > 0 for row in history[1:])
    assert [h["minutes"] for h in history] == sorted(h["minutes"] for h in history)
    assert (
        not load_value_model(straight / "model-0.npz").has_head and load_value_model(straight / "model-3.npz").has_head
    )
    assert run(tmp_path, "--run-dir", str(resumed), "--iterations", "2") == 0
    assert run(tmp_path, "--run-dir", str(resumed), "--resume", "--iterations", "3") == 0
    assert [row["iteration"] for row in json.loads((resumed / "history.json").read_text())] == [0, 1, 2, 3]
    a, b = load_value_model(straight / "model-3.npz"), load_value_model(resumed / "model-3.npz")
    for name in ("w1", "w3", "wp", "bp"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--iterations", "0"], "--iterations must be in [1, 1000]"),
        (["--q-weight", "2"], "--q-weight must be in [0, 1]"),
        (["--init", "nope.npz"], "--init: no value-model file at nope.npz"),
        (["--init", "none"], "--init must name a value model"),
        (["--eval-opponents", "mcts:simz=3"], "mcts"),
    ],
)
def test_bad_input_is_one_error_line_and_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, "--run-dir", str(tmp_path / "run"), *argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(error_lines(err)) == 1 and message in err, err
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_a_run_folder_belongs_to_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "notes.txt").write_text("mine")
    for argv, message in (
        (["--run-dir", str(tmp_path / "used")], "holds another run"),
        (["--run-dir", str(tmp_path / "used"), "--resume"], "is not a run folder of train.tree_loop"),
    ):
        with pytest.raises(SystemExit) as exc:
            run(tmp_path, *argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and len(error_lines(err)) == 1 and message in err, err
    assert sorted(p.name for p in (tmp_path / "used").iterdir()) == ["notes.txt"]


def test_results_over_seeds_give_the_curves_and_the_last_thirds_slope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = []
    for seed in (0, 1):
        folders.append(tmp_path / f"s{seed}")
        assert run(tmp_path, "--run-dir", str(folders[-1]), "--iterations", "3", "--seed", str(seed)) == 0
    out = tmp_path / "loop.json"
    assert tree_loop_results.main([*map(str, folders), "--results", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["kind"] == "training" and data["seeds"] == [0, 1]
    for seed, folder in zip(("0", "1"), folders, strict=True):
        history = json.loads((folder / "history.json").read_text())
        rates = [row["eval"]["greedy"]["win_rate"] for row in history]
        cells = next(r["cells"] for r in data["runs"] if str(r["seed"]) == seed)
        slope = tree_loop_results.last_third_slope(rates)
        assert cells["slope of the last third vs greedy"] == f"{100 * slope:+.1f} points per iteration"
        points = render_results.mark_curves(data)["greedy"][seed]
        assert [round(y, 6) for _, y, _, _ in points] == [round(r, 6) for r in rates]
    assert tree_loop_results.last_third_slope([0.1, 0.2, 0.3, 0.5, 0.6, 0.7]) == pytest.approx(0.1)
    assert tree_loop_results.last_third_slope([0.5, 0.9, 0.8, 0.7]) == pytest.approx(-0.1)
    with pytest.raises(SystemExit) as exc:
        tree_loop_results.main([str(folders[0]), str(folders[0])])
    assert exc.value.code == 2 and "the same seed" in capsys.readouterr().err
    settings = json.loads((folders[1] / "settings.json").read_text())
    del settings["seed"]
    (folders[1] / "settings.json").write_text(json.dumps(settings))
    with pytest.raises(SystemExit) as exc:
        tree_loop_results.main([str(folders[0]), str(folders[1])])
    assert exc.value.code == 2 and "settings.json lacks seed" in capsys.readouterr().err


def test_a_run_folder_name_the_agent_spec_cannot_hold_is_refused_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The models are played as ``az:value=<run-dir>/model-k.npz``: a comma in the folder would break
    the spec after the work; refused before anything is made."""
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, "--run-dir", str(tmp_path / "a,b"))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(error_lines(err)) == 1 and "--run-dir may hold letters" in err, err
    assert not (tmp_path / "a,b").exists()


def test_a_resume_finds_a_corrupt_model_or_a_folder_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "run"
    assert run(tmp_path, "--run-dir", str(folder), "--iterations", "1") == 0
    capsys.readouterr()
    lock = claim_folder(folder, resumed=True, overwrite=False)  # another run writing it now
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, "--run-dir", str(folder), "--resume", "--iterations", "2")
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(error_lines(err)) == 1 and "another run is writing" in err, err
    lock.close()
    with pytest.raises(SystemExit) as exc:  # the recipe is the run's own: a changed one is refused
        tree_loop.main(["--run-dir", str(folder), "--resume", "--iterations", "2", "--sims", "16", "--window", "5"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(error_lines(err)) == 1 and "--sims, --window cannot change" in err, err
    (folder / "model-1.npz").write_text("not a model")
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, "--run-dir", str(folder), "--resume", "--iterations", "2")
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(error_lines(err)) == 1 and "--resume:" in err and "model-1.npz" in err, err
    assert json.loads((folder / "history.json").read_text())[-1]["iteration"] == 1  # nothing written
