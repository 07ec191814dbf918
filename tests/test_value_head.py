"""agents.value_head and train.value_head: the network's games with their results, a value head
fitted to them with the policy untouched, and the command line."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.value_head import fit_value_head, network_games
from patchwork_env.core import rules
from patchwork_env.envs import observation
from patchwork_env.players.az_search import final_value
from patchwork_env.players.checkpoint import save_checkpoint
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet, prior_for
from patchwork_env.players.policy import load_ppo_agent
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
    history = fit_value_head(net, states, values, owners, epochs=30, lr=3e-3, seed=0, val_share=0.34)
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
        fit_value_head(net, states, values, owners, epochs=1, lr=0.0)


def test_command_writes_a_network_with_the_same_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(3)
    src = save_checkpoint(tmp_path / "in.pt", PatchworkNet(TINY))
    out = tmp_path / "out.pt"
    assert cli.main(["--checkpoint", str(src), "--out", str(out), "--games", "5", "--epochs", "2", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert "5 games" in printed and "held-out explained variance" in printed and str(out) in printed
    a, b = load_ppo_agent(str(src)).net.state_dict(), load_ppo_agent(str(out)).net.state_dict()
    changed = {k for k in a if not torch.equal(a[k], b[k])}
    assert changed and all(k.startswith("value.") for k in changed)  # the value head moved, nothing else


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--checkpoint", "nope.pt", "--out", "x.pt"], "error: network checkpoint not found: nope.pt"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--games", "0"], "error: --games must be >= 2"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--epochs", "0"], "error: --epochs must be >= 1, got 0"),
        (
            ["--checkpoint", "a.pt", "--out", "x.pt", "--learning-rate", "-1"],
            "error: --learning-rate must be a finite number > 0, got -1.0",
        ),
        (
            ["--checkpoint", "a.pt", "--out", "x.pt", "--learning-rate", "inf"],
            "error: --learning-rate must be a finite number > 0, got inf",
        ),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--games", "1"], "error: --games must be >= 2"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--games", "x"], "error: Error parsing --games"),
        (["--checkpoint", "a.pt", "--out", "x.pt", "--margin-weight", "2"], "error: --margin-weight must be in [0, 1]"),
        (["--out", "x.pt"], "error: missing required option: --checkpoint"),
    ],
)
def test_cli_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    (err,) = error_lines(capsys.readouterr().err)
    assert err.startswith(message)


def test_cli_unwritable_out_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(4)
    src = save_checkpoint(tmp_path / "in.pt", PatchworkNet(TINY))
    (tmp_path / "a_file").write_text("x")
    out = tmp_path / "a_file" / "out.pt"
    with pytest.raises(SystemExit) as exc:
        cli.main(["--checkpoint", str(src), "--out", str(out), "--games", "2", "--epochs", "1"])
    assert exc.value.code == 2
    (err,) = error_lines(capsys.readouterr().err)
    assert err.startswith(f"error: cannot write --out {out}")
