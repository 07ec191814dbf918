"""patchwork_env.players.value_model (the compiled leaf-value model), its use by ``az`` (``value=``,
``prior=greedy``), agents.value_distill (the distillation) and the command train.value_distill."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.value_distill import fit_value_model, observations, perceptron, to_value_model
from agents.value_head import network_games, network_values, tree_targets, tree_value
from patchwork_env.core import rules
from patchwork_env.core.state import GameState
from patchwork_env.envs.observation import SCALAR_INDEX, SCALARS, SCALARS_SLICE
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.arena import deal, play_game
from patchwork_env.players.az_network import AZAgent, NetEvaluator
from patchwork_env.players.batched_search import SearchConfig
from patchwork_env.players.checkpoint import save_checkpoint
from patchwork_env.players.compiled_search import CompiledSearch
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, candidate_actions
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet
from patchwork_env.players.registry import make_agent
from patchwork_env.players.value_model import FORMAT, FORMAT_HEAD, ValueModel, ValueModelError, load_value_model
from tests.cli import error_lines
from train import value_distill as cli

TINY = NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8, prior_scale=2.0)


@pytest.fixture(scope="module")
def positions() -> np.ndarray:
    """Every decision of a few greedy-against-random games: openings, middle games, leather cells."""
    agents, rows = [make_agent("greedy"), make_agent("random")], []
    for g in range(3):
        state, rng = deal(g, 1), np.random.default_rng(g)
        while not state.is_terminal:
            rows.append(state.array())
            state = state.step(agents[(state.ply + g) % 2].act(state, rng))
    return np.stack(rows)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vm") / "model.npz"
    to_value_model(perceptron((16, 8), seed=2)).save(path)
    return path


def test_the_compiled_model_is_the_torch_perceptron(positions: np.ndarray) -> None:
    layers = perceptron((24, 12), seed=1)
    with torch.no_grad():
        for p in layers.parameters():  # biases too, and larger weights: every ReLU branch is taken
            p.add_(0.3 * torch.randn_like(p))
        want = layers(observations(positions))[0].numpy()
    got = to_value_model(layers).values(positions)
    assert got.dtype == np.float64 and got.shape == (len(positions),)
    assert np.abs(got - want).max() < 1e-5
    assert want.std() > 0.1  # values that differ: the comparison says something


def test_the_model_values_each_position_from_its_movers_seat(positions: np.ndarray) -> None:
    """A model reading only 'my buttons - your buttons' (two observation scalars) flips with the seat."""
    model = to_value_model(perceptron((2, 2), seed=0))
    me = SCALARS_SLICE.start + SCALAR_INDEX["buttons_me"]
    you = SCALARS_SLICE.start + SCALAR_INDEX["buttons_opp"]
    w1 = np.zeros_like(model.w1)
    w1[me, 0], w1[you, 0], w1[me, 1], w1[you, 1] = 1.0, -1.0, -1.0, 1.0
    w2 = np.eye(2, dtype=np.float32)
    w3 = np.array([[1.0], [-1.0]], dtype=np.float32)
    zero = np.zeros_like
    diff = ValueModel(w1, zero(model.b1), w2, zero(model.b2), w3, zero(model.b3))
    scale = SCALARS[SCALAR_INDEX["buttons_me"]].scale
    for row in positions[::7]:
        state = GameState(row)
        mover = state.current_player
        want = np.tanh((state.buttons[mover] - state.buttons[1 - mover]) / scale)
        assert diff.values(row[None])[0] == pytest.approx(want, abs=1e-6)


def test_save_and_load_round_trip(tmp_path: Path, positions: np.ndarray, model_file: Path) -> None:
    model = load_value_model(model_file)
    assert model.hidden == (16, 8)
    again = tmp_path / "again.npz"
    model.save(again)
    assert np.array_equal(load_value_model(again).values(positions), model.values(positions))


def test_bad_files_are_clear_errors(tmp_path: Path, model_file: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no value-model file"):
        load_value_model(tmp_path / "missing.npz")
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(ValueModelError, match=r"is not a value-model file: not an \.npz archive"):
        load_value_model(tmp_path / "text.npz")
    (tmp_path / "broken.npz").write_bytes(model_file.read_bytes()[:300])  # a truncated archive
    with pytest.raises(ValueModelError, match="is not a value-model file"):
        load_value_model(tmp_path / "broken.npz")
    arrays = dict(np.load(model_file))
    cases = {
        "stamp.npz": ({**arrays, "format": np.array("other/1")}, "its format is not"),
        "missing.npz": ({k: v for k, v in arrays.items() if k != "w3"}, "lacks the arrays w3"),
        "shape.npz": ({**arrays, "w2": np.zeros((16, 9), np.float32)}, r"b2 has shape \(8,\), need \(9,\)"),
        "nan.npz": ({**arrays, "b1": np.full(16, np.nan, np.float32)}, "b1 has a NaN"),
        "dtype.npz": ({**arrays, "b3": np.zeros(1, np.float64)}, "b3 must be a C-contiguous float32"),
    }
    for name, (data, message) in cases.items():
        np.savez(tmp_path / name, **data)
        with pytest.raises(ValueModelError, match=message):
            load_value_model(tmp_path / name)
    assert str(np.load(model_file)["format"]) == FORMAT


def test_a_value_model_with_bad_states_names_the_row(model_file: Path, positions: np.ndarray) -> None:
    bad = positions[:3].copy()
    bad[1, rules.PLY] = -5
    with pytest.raises(ValueError, match="row 1"):
        load_value_model(model_file).values(bad)


# --- az with a value model and the greedy prior ---------------------------------------------------
def test_the_evaluator_takes_every_leaf_value_from_the_model(model_file: Path, positions: np.ndarray) -> None:
    torch.manual_seed(0)
    model = load_value_model(model_file)
    rows = positions[[not rules.is_terminal(r) for r in positions]][::5]
    for fast in (True, False):
        ev = NetEvaluator(PatchworkNet(TINY), kinds=True, fast=fast, value_model=model)
        _, _, values = ev(rows)
        assert np.allclose(values, model.values(rows))
        assert np.allclose(ev.values(rows), model.values(rows))
    plain = NetEvaluator(PatchworkNet(TINY), kinds=True)
    assert not np.allclose(plain.values(rows), model.values(rows))


def test_the_greedy_prior_is_a_softmax_over_mcts_candidates(positions: np.ndarray) -> None:
    ev = NetEvaluator(PatchworkNet(TINY), prior="greedy", prior_temp=3.0)
    rows = positions[[not rules.is_terminal(r) for r in positions]][::4]
    legal, logp, _ = ev(rows)
    acts, scores = np.empty(rules.NUM_ACTIONS, np.int64), np.empty(rules.NUM_ACTIONS, np.float64)
    for i, row in enumerate(rows):
        n = candidate_actions(row, DEFAULT_WEIGHTS, 1, acts, scores)
        assert set(np.flatnonzero(legal[i])) == set(acts[:n].tolist())
        want = scores[:n] / 3.0 - np.log(np.exp(scores[:n] / 3.0).sum())
        assert np.allclose(logp[i, acts[:n]], want)
        assert np.isneginf(logp[i, ~legal[i]]).all()
    with pytest.raises(ValueError, match="prior in"):
        NetEvaluator(PatchworkNet(TINY), prior="uniform")
    with pytest.raises(ValueError, match="prior_temp > 0"):
        NetEvaluator(PatchworkNet(TINY), prior="greedy", prior_temp=0.0)


def test_az_plays_with_a_value_model_and_the_greedy_prior_and_pickles(model_file: Path) -> None:
    spec = f"az:value={model_file},rollouts=0,prior=greedy,ptemp=1.5,expand=4,sims=12"  # the Python tree
    agent = make_agent(spec)
    assert isinstance(agent, AZAgent) and agent.evaluator.value_model is not None
    final, moves, _ = play_game([agent, make_agent("random")], deal(4, 0), [np.random.default_rng(s) for s in (0, 1)])
    assert final.is_terminal and moves[0] > 10
    copy = pickle.loads(pickle.dumps(agent))  # the arena's workers get the agent this way
    assert copy.evaluator.prior == "greedy" and copy.evaluator.prior_temp == 1.5
    state, rng = deal(6, 0), np.random.default_rng(0)
    assert copy.act(state, np.random.default_rng(0)) == make_agent(spec).act(state, rng)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("az:value=no/such.npz", "no value-model file at no/such.npz"),
        ("az:prior=uniform", "parameter 'prior' must be one of network, greedy"),
        ("az:prior=greedy,ptemp=0", "ptemp"),
    ],
)
def test_bad_az_specs_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(AgentSpecError, match=message):
        make_agent(spec)


# --- the distillation and its command --------------------------------------------------------------
def test_the_fit_learns_the_networks_values() -> None:
    torch.manual_seed(5)
    net = PatchworkNet(TINY)
    states, results, games = network_games(net, 12, seed=3, margin_weight=0.2)
    targets = network_values(net, states).numpy()
    model, history = fit_value_model(states, targets, results, games, (32, 16), epochs=4, lr=3e-3, seed=1)
    assert len(history) == 5 and history[-1].val_mse < history[0].val_mse
    assert history[-1].val_explained_variance > history[0].val_explained_variance
    assert model.hidden == (32, 16)


def test_command_writes_a_model_az_reads_and_a_results_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(3)
    src = save_checkpoint(tmp_path / "net.pt", PatchworkNet(TINY))
    out, results = tmp_path / "model.npz", tmp_path / "fit.json"
    argv = ["--checkpoint", str(src), "--out", str(out), "--games", "6", "--epochs", "1", "--hidden1", "8"]
    assert cli.main([*argv, "--hidden2", "4", "--results", str(results)]) == 0
    printed = capsys.readouterr().out
    assert "held-out explained variance" in printed and str(out) in printed
    assert load_value_model(out).hidden == (8, 4)
    data = results_file.check(json.loads(results.read_text()))
    assert data["runs"][0]["cells"]["hidden"] == "8, 4" and "train.value_distill" in data["command"]
    agent = make_agent(f"az:path={src},value={out},rollouts=0,sims=6")
    assert deal(1, 0).is_legal(agent.act(deal(1, 0), np.random.default_rng(0)))


def test_tree_targets_are_the_compiled_searchs_values(model_file: Path, positions: np.ndarray) -> None:
    """The search's root value from the mover's side, the same with 1 or 2 workers; a single-candidate
    position (a leather cell) takes its successor's from the same side; the fit can start from a model."""
    model = load_value_model(model_file)
    rows = positions[[not rules.is_terminal(r) for r in positions]][::6]
    one = tree_targets(rows, model, 20, 20.0, 0.2)
    assert np.array_equal(one, tree_targets(rows, model, 20, 20.0, 0.2, workers=2))
    search = CompiledSearch(SearchConfig(sims=20, expand=1), model, 20.0, reuse=False)
    leather = next(r for r in positions if r[rules.PENDING])
    after = leather.copy()
    rules.step_into(after, search.run(leather).action)
    want = tree_value(search, after)
    assert tree_value(search, leather) == (
        want if rules.current_player(after) == rules.current_player(leather) else -want
    )
    k = next(i for i, r in enumerate(rows) if len(search.run(r).actions) > 1)
    assert one[k] == pytest.approx(search.run(rows[k]).root_value, abs=1e-6) and one[k] != pytest.approx(
        float(model.values(rows[k : k + 1])[0])
    )
    games = np.arange(len(rows)) % 5
    start, _ = fit_value_model(rows, one, one, games, (4, 4), epochs=1, lr=1e-9, seed=0, init=model)
    assert start.hidden == model.hidden and np.allclose(start.values(rows), model.values(rows), atol=1e-5)


def test_command_fits_to_the_searchs_values_from_a_model(
    tmp_path: Path, model_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch.manual_seed(4)
    src = save_checkpoint(tmp_path / "net.pt", PatchworkNet(TINY))
    out, results = tmp_path / "next.npz", tmp_path / "fit.json"
    argv = ["--checkpoint", str(src), "--out", str(out), "--games", "4", "--epochs", "1", "--target", "search"]
    assert cli.main([*argv, "--model", str(model_file), "--sims", "8", "--results", str(results)]) == 0
    assert "compiled search" in capsys.readouterr().out
    assert load_value_model(out).hidden == load_value_model(model_file).hidden  # the start's sizes
    data = results_file.check(json.loads(results.read_text()))
    cells = data["runs"][0]["cells"]
    assert "held-out explained variance of the search's values" in cells and {"network", "search"} <= set(cells)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--checkpoint", "a.pt", "--out", "x.npz", "--target", "search"], "error: --target search needs --model"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--model", "m.npz"], "error: --target search needs --model"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--ptemp", "0"], "error: --ptemp must be > 0, got 0.0"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--sims", "0"], "error: --sims must be in [1, 100000], got 0"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--workers", "0"], "error: --workers must be in [1, 256], got 0"),
        (["--checkpoint", "nope.pt", "--out", "x.npz"], "error: network checkpoint not found: nope.pt"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--games", "1"], "error: --games must be in [2, 100000]"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--hidden1", "0"], "error: --hidden1 must be in [1, 4096], got 0"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--hidden2", "5000"], "error: --hidden2 must be in [1, 4096]"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--epochs", "0"], "error: --epochs must be in [1, 1000], got 0"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--learning-rate", "nan"], "error: --learning-rate must be a"),
        (["--checkpoint", "a.pt", "--out", "no/such/dir/x.npz"], "error: --out: the folder"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--results", "no/dir/r.json"], "error: --results: the folder"),
        (["--checkpoint", "a.pt", "--out", "x.npz", "--seed", "-1"], "error: --seed must be in [0, "),
    ],
)
def test_cli_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    (err,) = error_lines(capsys.readouterr().err)
    assert err.startswith(message)


def with_head(model: ValueModel, seed: int) -> ValueModel:
    rng = np.random.default_rng(seed)
    wp = rng.normal(0, 0.5, (model.hidden[1], 5)).astype(np.float32)
    return dataclasses.replace(model, wp=wp, bp=rng.normal(0, 0.5, 5).astype(np.float32))


def test_a_head_saves_in_format_2_and_loads_back(tmp_path: Path, positions: np.ndarray, model_file: Path) -> None:
    headed = with_head(load_value_model(model_file), 1)
    headed.save(tmp_path / "head.npz")
    with np.load(tmp_path / "head.npz") as data:
        assert str(data["format"]) == FORMAT_HEAD and {"wp", "bp"} <= set(data.files)
    with np.load(model_file) as data:
        assert str(data["format"]) == FORMAT and "wp" not in data.files  # no head: the first format, as before
    again = load_value_model(tmp_path / "head.npz")
    plain = load_value_model(model_file)
    assert again.has_head and not plain.has_head
    for read, written in zip(again.head(), headed.head(), strict=True):
        np.testing.assert_array_equal(read, written)
    np.testing.assert_array_equal(again.values(positions), plain.values(positions))  # a head leaves the values
    arrays = dict(np.load(tmp_path / "head.npz"))
    for name, data, message in (
        ("nohead.npz", {k: v for k, v in arrays.items() if k != "bp"}, "lacks the arrays bp"),
        ("shape.npz", {**arrays, "wp": np.zeros((8, 4), np.float32)}, r"wp has shape \(8, 4\), need \(8, 5\)"),
    ):
        np.savez(tmp_path / name, **data)
        with pytest.raises(ValueModelError, match=message):
            load_value_model(tmp_path / name)
    with pytest.raises(ValueModelError, match="needs both wp and bp"):
        dataclasses.replace(headed, bp=None)


def test_the_compiled_search_adds_the_head_to_the_greedy_prior(positions: np.ndarray, model_file: Path) -> None:
    """Each root edge's prior logit moves by its kind's head logit (a head that only likes advancing
    raises advance's logit by its bias against every other edge's); a zero head is the greedy prior,
    visit for visit."""
    model = load_value_model(model_file)
    config = SearchConfig(sims=32, expand=1, leaves=1)
    zeros = dataclasses.replace(model, wp=np.zeros((8, 5), np.float32), bp=np.zeros(5, np.float32))
    advance = dataclasses.replace(zeros, bp=np.array([0, 0, 0, 0, 3], np.float32))
    compared = 0
    for row in positions[::5]:
        plain = CompiledSearch(config, model, 20.0, reuse=False)
        base = plain.run(row)
        same = CompiledSearch(config, zeros, 20.0, reuse=False).run(row)
        assert same.visits.tolist() == base.visits.tolist() and same.action == base.action
        biased = CompiledSearch(config, advance, 20.0, reuse=False)
        moved = biased.run(row)
        is_advance = base.actions == rules.ADVANCE
        if is_advance.all() or not is_advance.any():
            continue
        k = len(base.actions)  # the root's edges come first in the arrays
        shift = biased.edge_f[:k, 1] - plain.edge_f[:k, 1]  # column 1: the prior's logit
        np.testing.assert_allclose(shift[is_advance] - shift[~is_advance], 3.0, atol=1e-9)
        assert moved.policy[rules.ADVANCE] > base.policy[rules.ADVANCE]
        compared += 1
    assert compared >= 3
