"""agents.value_head and train.value_head: the network's games with their results, a value head
fitted to them with the policy untouched, and the command line."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.value_head import (
    ValueStats,
    fit_value,
    network_games,
    rollout_targets,
    search_targets,
    search_value,
)
from patchwork_env.core import rules
from patchwork_env.core.state import GameState
from patchwork_env.envs import observation
from patchwork_env.evaluation import results_file
from patchwork_env.players.az_network import PRETRAINED_PATH
from patchwork_env.players.batched_search import final_value
from patchwork_env.players.checkpoint import load_network, save_checkpoint
from patchwork_env.players.mcts import MCTSAgent
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet, prior_for
from patchwork_env.players.policy import load_network_agent
from tests.cli import error_lines
from train import value_head as cli

TINY = NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8, prior_scale=2.0)


@pytest.fixture(scope="module")
def net() -> PatchworkNet:
    torch.manual_seed(0)
    return PatchworkNet(TINY)


@pytest.fixture(scope="module")
def games(net: PatchworkNet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return network_games(net, 6, seed=3, margin_weight=0.2)


def test_every_decision_gets_its_games_result_from_the_movers_side(
    games: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    states, values, owners = games
    assert len(states) == len(values) == len(owners) > 6 * 20
    assert set(owners.tolist()) == set(range(6))
    assert not any(rules.is_terminal(s) for s in states)
    for g in range(6):
        rows = np.flatnonzero(owners == g)
        movers = np.array([rules.current_player(s) for s in states[rows]])
        assert set(movers.tolist()) == {0, 1}
        v0, v1 = values[rows][movers == 0], values[rows][movers == 1]
        assert np.all(v0 == v0[0]) and np.all(v1 == v1[0]) and v0[0] == -v1[0]  # one result, two sides
        assert abs(v0[0]) >= 0.8  # win or loss (0.8) plus the margin part (0.2 x clipped margin / 30)


def test_same_seed_same_games(net: PatchworkNet, games: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    states, values, owners = network_games(net, 6, seed=3, margin_weight=0.2)
    assert np.array_equal(states, games[0]) and np.array_equal(values, games[1]) and np.array_equal(owners, games[2])
    other = network_games(net, 6, seed=4, margin_weight=0.2)
    assert not np.array_equal(other[0][:50], states[:50])


def test_the_target_is_final_value_of_the_finished_game() -> None:
    """One game: its decisions are consecutive states; one legal move of the last one ends the game,
    and the stored value of that decision is ``final_value`` of the end from its mover's side."""
    torch.manual_seed(1)
    states, values, _ = network_games(PatchworkNet(TINY), 1, seed=5, margin_weight=0.5)
    for a, b in itertools.pairwise(states):
        assert b[rules.PLY] == a[rules.PLY] + 1
    last, mover = states[-1], int(rules.current_player(states[-1]))
    ends = []
    for action in np.flatnonzero(rules_mask(last)):
        trial = last.copy()
        rules.step_into(trial, int(action))
        if rules.is_terminal(trial):
            ends.append(final_value(trial, mover, 0.5))
    assert ends and any(np.isclose(v, values[-1]) for v in ends)


def rules_mask(state: np.ndarray) -> np.ndarray:
    mask = np.zeros((1, rules.NUM_ACTIONS), dtype=np.bool_)
    rules.legal_mask_batch(state[None, :].copy(), mask, np.zeros(1, dtype=np.int64))
    return mask[0]


def test_fit_changes_the_value_head_only_and_lowers_the_error(
    games: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    torch.manual_seed(2)
    net = PatchworkNet(TINY)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    states, values, owners = games
    history = fit_value(net, states, values, owners, epochs=30, lr=3e-3, seed=0, val_share=0.34)
    after = net.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith("value.") for k in changed)
    assert history[-1].train_mse < history[1].train_mse < history[0].train_mse
    masks = np.stack([rules_mask(s) for s in states[:20]])
    seats = np.array([rules.current_player(s) for s in states[:20]], dtype=np.int64)
    obs = np.empty((20, observation.OBS_DIM), dtype=np.float32)
    observation.observe_batch(np.ascontiguousarray(states[:20]), seats, obs)
    fresh = PatchworkNet(TINY)
    fresh.load_state_dict(before)
    args = (torch.from_numpy(obs), torch.from_numpy(masks), prior_for(net, states[:20], masks))
    with torch.no_grad():
        assert torch.equal(net(*args)[0], fresh(*args)[0])  # the policy is bit-identical
    with pytest.raises(ValueError, match="lr > 0"):
        fit_value(net, states, values, owners, epochs=1, lr=0.0)


def test_command_writes_a_network_with_the_same_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(3)
    src = save_checkpoint(tmp_path / "in.pt", PatchworkNet(TINY))
    out = tmp_path / "out.pt"
    assert cli.main(["--checkpoint", str(src), "--out", str(out), "--games", "5", "--epochs", "2", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert "5 games" in printed and "held-out explained variance" in printed and str(out) in printed
    a, b = load_network_agent(str(src)).net.state_dict(), load_network_agent(str(out)).net.state_dict()
    changed = {k for k in a if not torch.equal(a[k], b[k])}
    assert changed and all(k.startswith("value.") for k in changed)  # the value head moved, nothing else


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--checkpoint", "nope.pt", "--out", "x.pt"], "error: network checkpoint not found: nope.pt"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--games", "0"], "error: --games must be in [2, 100000], got 0"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--epochs", "0"], "error: --epochs must be in [1, 1000], got 0"),
        (
            ["--checkpoint", "a.pt", "--out", "x.pt", "--learning-rate", "-1"],
            "error: --learning-rate must be > 0, got -1.0",
        ),
        (
            ["--checkpoint", "a.pt", "--out", "x.pt", "--learning-rate", "inf"],
            "error: --learning-rate must be a finite number, got inf",
        ),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--games", "1"], "error: --games must be in [2, 100000]"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--games", "2000000000"], "error: --games must be in [2, 100000]"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--games", "x"], "error: Error parsing --games"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--margin-weight", "2"], "error: --margin-weight must be in [0, 1]"),
        (["--out", "x.pt"], "error: missing required option: --checkpoint"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--bogus", "1"], "error: Unrecognized options: --bogus 1"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--keep", "0"], "error: --keep must be > 0 and <= 1, got 0.0"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--rollouts", "0"], "error: --rollouts must be in [1, 1000], got 0"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--rollouts", "5000"], "error: --rollouts must be in [1, 1000]"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--workers", "0"], "error: --workers must be in [1, 256], got 0"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--sims", "0"], "error: --sims must be in [1, 100000], got 0"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--sims", "1000000"], "error: --sims must be in [1, 100000]"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--kl-weight", "-1"], "error: --kl-weight must be >= 0, got -1.0"),
        (
            ["--checkpoint", "a.pt", "--out", "x.pt", "--target", "nope"],
            "error: invalid choice 'nope' for argument '--target'",
        ),
        (
            ["--checkpoint", "a.pt", "--out", "x.pt", "--results", "no/such/dir/r.json"],
            "error: --results: the folder ",
        ),
    ],
)
def test_cli_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    (err,) = error_lines(capsys.readouterr().err)
    assert err.startswith(message)


def test_the_rollouts_bound_is_azs() -> None:
    """``--rollouts`` is bounded as az's ``rollouts`` (declared apart: az loads torch, ``--help`` does not)."""
    from patchwork_env.core.bounds import field_bounds
    from patchwork_env.players.az_network import MAX_ROLLOUTS

    assert field_bounds(cli.ValueHeadArgs, "rollouts") == (1, MAX_ROLLOUTS)


def test_cli_unwritable_out_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(4)
    src = save_checkpoint(tmp_path / "in.pt", PatchworkNet(TINY))
    (tmp_path / "a_file").write_text("x")
    out = tmp_path / "a_file" / "out.pt"
    with pytest.raises(SystemExit) as exc:
        cli.main(["--checkpoint", str(src), "--out", str(out), "--games", "2", "--epochs", "1"])
    assert exc.value.code == 2
    (err,) = error_lines(capsys.readouterr().err)
    assert err == f"error: --out: cannot use {out} (Not a directory)"  # before any game is played
    assert capsys.readouterr().out == ""


def test_rollout_targets_are_the_rollouts_mean_whatever_the_workers(
    games: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """The targets are ``az``'s leaf value (the rollouts' mean of ``final_value``), seeded per chunk:
    the same with 1 or 2 processes, other with another seed, and they agree with the games' results
    in sign far more often than not (a target seen from the wrong seat would not)."""
    states, results, _ = games
    rows = states[::3]
    one = rollout_targets(rows, 8, 0.2, seed=5)
    assert one.shape == (len(rows),) and one.dtype == np.float32 and np.all(np.abs(one) <= 1.0)
    assert np.array_equal(rollout_targets(rows, 8, 0.2, seed=5, workers=2), one)
    assert not np.array_equal(rollout_targets(rows, 8, 0.2, seed=6), one)
    late = rows[:, rules.PLY] > np.median(rows[:, rules.PLY])  # late positions: the result is mostly decided
    assert np.mean(np.sign(one[late]) == np.sign(results[::3][late])) > 0.75
    with pytest.raises(ValueError, match="rollouts >= 1"):
        rollout_targets(rows, 0, 0.2, seed=5)


def test_fit_value_with_the_trunk_trains_it_and_the_kl_weight_holds_the_policy() -> None:
    """On the shipped network (a peaked policy, which a trunk's change can move): the trunk and the
    value head are trained, the policy-only parameters are not, the error falls, and the KL weight
    keeps the policy nearer the start (held-out KL) at the same error."""
    start = load_network(PRETRAINED_PATH)
    states, values, owners = network_games(start, 6, seed=3, margin_weight=0.2)

    def fit(kl_weight: float) -> list[ValueStats]:
        net = load_network(PRETRAINED_PATH)
        history = fit_value(
            net, states, values, owners, 3, 1e-3, seed=0, trunk=True, kl_weight=kl_weight, batch_size=32
        )
        new = net.state_dict()
        changed = {k for k, v in start.state_dict().items() if not torch.equal(v, new[k])}
        assert any(k.startswith("value.") for k in changed) and any(k.startswith("blocks.") for k in changed)
        assert not any(k.startswith(("advance.", "place_", "slot_", "leather.")) for k in changed)
        return history

    held, free = fit(10.0), fit(0.0)
    assert held[-1].train_mse < 0.6 * held[0].train_mse and free[-1].train_mse < 0.6 * free[0].train_mse
    assert held[0].val_policy_kl == 0.0 and free[-1].val_policy_kl > 2 * held[-1].val_policy_kl > 0
    with pytest.raises(ValueError, match="kl_weight >= 0"):
        fit_value(start, states, values, owners, epochs=1, lr=1e-3, trunk=True, kl_weight=-1.0)


@pytest.mark.parametrize(
    ("target", "labels"),
    [(["rollouts", "--rollouts", "2"], "2 greedy rollouts each"), (["search", "--sims", "4"], "mcts:sims=4 each")],
)
def test_command_with_label_targets_writes_its_results_file(tmp_path: Path, target: list[str], labels: str) -> None:
    torch.manual_seed(3)
    src = save_checkpoint(tmp_path / "in.pt", PatchworkNet(TINY))
    out, results = tmp_path / "out.pt", tmp_path / "fit.json"
    argv = ["--checkpoint", str(src), "--out", str(out), "--games", "4", "--keep", "0.5", "--epochs", "1"]
    argv += ["--target", *target, "--fit", "net", "--results", str(results)]
    assert cli.main(argv) == 0
    data = results_file.check(json.loads(results.read_text()))
    assert data["kind"] == "training" and data["command"].startswith("python -m train.value_head")
    assert [h["epoch"] for h in data["raw"]["history"]] == [0, 1] and data["runs"][0]["seed"] == 0
    assert set(data["columns"]) == set(data["runs"][0]["cells"])  # what the results page renders
    assert data["raw"]["args"]["target"] == target[0] and data["raw"]["args"]["fit"] == "net"
    assert f"({labels})" in data["description"]


def test_a_keep_that_leaves_one_game_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(5)
    src = save_checkpoint(tmp_path / "in.pt", PatchworkNet(TINY))
    with pytest.raises(SystemExit) as exc:
        cli.main(["--checkpoint", str(src), "--out", str(tmp_path / "o.pt"), "--games", "2", "--keep", "0.001"])
    assert exc.value.code == 2
    (err,) = error_lines(capsys.readouterr().err)
    assert err.startswith("error: --keep 0.001 kept positions of ") and "needs two or more" in err
    assert not (tmp_path / "o.pt").exists()


def test_search_targets_are_the_searched_value_whatever_the_workers(
    games: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """An mcts search's value of each position from its mover's side (``2 x last_value - 1``),
    seeded per chunk: the same with 1 or 2 processes, and in late positions of the same sign as the
    game's result far more often than not (a value seen from the wrong seat would not be)."""
    states, results, _ = games
    rows = states[::3]
    one = search_targets(rows, 16, seed=5)
    assert one.shape == (len(rows),) and one.dtype == np.float32 and np.all(np.abs(one) <= 1.0)
    assert np.array_equal(search_targets(rows, 16, seed=5, workers=2), one)
    late = rows[:, rules.PLY] > np.median(rows[:, rules.PLY])
    assert np.mean(np.sign(one[late]) == np.sign(results[::3][late])) > 0.75
    with pytest.raises(ValueError, match="sims >= 1"):
        search_targets(rows, 0, seed=5)


def test_a_single_candidate_position_takes_its_successors_searched_value() -> None:
    """A pending leather patch (one candidate: mcts runs no simulation and draws nothing) is valued
    by the position its only move leads to, from the same player's side; a searched position by
    ``2 x last_value - 1``."""
    s = GameState(network_games(PatchworkNet(TINY), 2, seed=1, margin_weight=0.2)[0][0])
    while not s.pending_leather:
        s = s.step(rules.ADVANCE)
    agent = MCTSAgent(sims=40, reuse=False)
    after = s.step(agent.act(s, np.random.default_rng(9)))
    assert agent.last_value is None
    agent.act(after, np.random.default_rng(3))
    assert agent.last_value is not None  # the successor is searched
    direct = search_value(MCTSAgent(sims=40, reuse=False), after.array(), np.random.default_rng(3))
    assert direct == pytest.approx(2 * agent.last_value - 1)
    value = search_value(MCTSAgent(sims=40, reuse=False), s.array(), np.random.default_rng(3))
    assert value == pytest.approx(direct if after.current_player == s.current_player else -direct)
