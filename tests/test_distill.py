"""Distilling a teacher's choice of move kind (agents/distill.py) and the self-play warm start."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.distill import (
    GROUP_OF_ACTION,
    NUM_GROUPS,
    PLACEMENT_ONLY,
    distill,
    group_logits,
    group_target,
    legal_groups,
    sample_positions,
    student_positions,
    teacher_targets,
)
from patchwork_env.core import rules
from patchwork_env.core.state import GameState, new_game
from patchwork_env.envs import observation
from patchwork_env.players.checkpoint import read_checkpoint
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.greedy import GreedyAgent
from patchwork_env.players.mcts import MCTSAgent
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet, prior_for
from patchwork_env.players.registry import make_agent
from tools import render_results
from train import distill as distill_trainer
from train import exit_results
from train.cli import from_dict
from train.config import ConfigError, DistillConfig

PRIOR_NET = NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8, prior_scale=2.0)


@pytest.fixture(scope="module")
def positions() -> np.ndarray:
    states = sample_positions(300, seed=3)
    return states[legal_groups(states).sum(1) > 1]


def _finished_game() -> np.ndarray:
    state = new_game(0)
    while not state.is_terminal:
        legal = np.flatnonzero(state.legal_action_mask())
        state = state.step(int(legal[-1]))  # advance when it is legal (the highest id), else leather
    return state.array().copy()


def test_groups_follow_the_action_encoding() -> None:
    assert np.bincount(GROUP_OF_ACTION).tolist() == [648, 648, 648, 81, 1]
    assert [GROUP_OF_ACTION[a] for a in (0, 647, 648, 1296, 1943, 1944, 2024, 2025)] == [0, 0, 1, 2, 2, 3, 3, 4]


def test_sampled_positions_are_live_and_reproducible(positions: np.ndarray) -> None:
    states = sample_positions(300, seed=3)
    assert states.shape == (300, rules.STATE_LEN)
    assert np.array_equal(states, sample_positions(300, seed=3))
    assert not np.array_equal(states, sample_positions(300, seed=4))
    assert not any(rules.is_terminal(s) for s in states)
    assert len({s.tobytes() for s in states}) > 250  # 256 games side by side, then their next moves
    assert 50 < len(positions) < 300
    with pytest.raises(ValueError, match="need num >= 1"):
        sample_positions(0, seed=1)


def test_legal_groups_match_the_masks(positions: np.ndarray) -> None:
    groups = legal_groups(positions)
    for state, row in zip(positions[:40], groups[:40], strict=True):
        mask = np.zeros(rules.NUM_ACTIONS, dtype=np.bool_)
        rules.legal_mask_into(state, mask)
        assert row.tolist() == [bool(mask[g == GROUP_OF_ACTION].any()) for g in range(NUM_GROUPS)]


def test_teacher_targets_are_the_group_of_the_teachers_move(positions: np.ndarray) -> None:
    targets = teacher_targets(positions[:60], "greedy")
    masks = np.zeros((60, rules.NUM_ACTIONS), dtype=np.bool_)
    rules.legal_mask_batch(positions[:60], masks, np.zeros(60, dtype=np.int64))
    moves = GreedyAgent().act_batch(positions[:60], masks, np.random.default_rng(0))
    assert targets.tolist() == np.eye(NUM_GROUPS)[GROUP_OF_ACTION[moves]].tolist()  # no search: one-hot
    with pytest.raises(ValueError, match="unknown agent"):
        teacher_targets(positions[:2], "alphazero")
    with pytest.raises(ValueError, match=r"states must have shape \(N, 129\)"):
        teacher_targets(positions[:2, :50], "greedy")
    with pytest.raises(ValueError, match="states must have shape"):
        legal_groups(positions[0])
    finished = positions[:3].copy()
    finished[1] = _finished_game()
    with pytest.raises(ValueError, match=r"positions \[1\] are finished games"):
        teacher_targets(finished, "greedy")


def test_search_targets_are_the_root_visit_shares_per_group(positions: np.ndarray) -> None:
    seen: list[int] = []
    targets = teacher_targets(positions[:10], "mcts:sims=8", seed=5, progress=seen.append)
    assert sum(seen) == 10 and targets.shape == (10, NUM_GROUPS)
    np.testing.assert_allclose(targets.sum(1), 1.0)
    assert not (targets[~legal_groups(positions[:10])] > 0).any()
    assert ((targets > 0).sum(1) > 1).any()  # soft: the search visited more than one kind of move
    for index in (0, 7):  # the same search by hand: its visits, added up per group
        agent = MCTSAgent(sims=8)
        rng = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(index,)))
        move = agent.act(GameState._wrap(positions[index].copy()), rng)
        expected = np.zeros(NUM_GROUPS)
        for action, visits in agent.last_visits:
            expected[GROUP_OF_ACTION[action]] += visits / 8
        np.testing.assert_allclose(targets[index], expected)
        assert targets[index].argmax() == GROUP_OF_ACTION[move]


def test_the_compiled_az_teaches_with_its_policy_target(positions: np.ndarray) -> None:
    """az's default (the compiled search, no network) teaches its Gumbel root's policy target per
    kind of move (``last_policy``), not its root visits, which follow sequential halving's schedule:
    soft targets over the legal kinds."""
    targets = teacher_targets(positions[:10], "az:sims=40", workers=2)
    np.testing.assert_allclose(targets.sum(1), 1.0)
    assert not (targets[~legal_groups(positions[:10])] > 0).any()
    assert ((targets > 0).sum(1) > 1).any()
    agent = make_agent("az:sims=40")
    agent.act(GameState._wrap(positions[3].copy()), np.random.default_rng(0))
    policy = agent.last_policy  # type: ignore[attr-defined]
    expected = np.bincount(GROUP_OF_ACTION, weights=policy, minlength=NUM_GROUPS)
    np.testing.assert_allclose(targets[3], expected / expected.sum(), rtol=1e-6)
    visits = np.zeros(NUM_GROUPS)
    for action, n in agent.last_visits:  # type: ignore[attr-defined]
        visits[GROUP_OF_ACTION[action]] += n / 40
    assert not np.allclose(targets[3], visits)  # the visits are not what it teaches


def test_group_target_falls_back_to_visits_then_to_the_move() -> None:
    """``group_target``: a policy when there is one, else root visits (mcts), else the move's kind."""
    slot1, advance = int(np.flatnonzero(GROUP_OF_ACTION == 1)[0]), int(np.flatnonzero(GROUP_OF_ACTION == 4)[0])
    policy = np.zeros(len(GROUP_OF_ACTION))
    policy[[slot1, advance]] = [0.25, 0.75]
    np.testing.assert_allclose(group_target(slot1, policy), [0, 0.25, 0, 0, 0.75])
    np.testing.assert_allclose(group_target(slot1, None, [(slot1, 3), (advance, 1)]), [0, 0.75, 0, 0, 0.25])
    np.testing.assert_allclose(group_target(advance, np.zeros(len(GROUP_OF_ACTION)), []), [0, 0, 0, 0, 1])


def test_targets_do_not_depend_on_the_number_of_workers(positions: np.ndarray) -> None:
    one = teacher_targets(positions[:24], "mcts:sims=6", seed=9, workers=1)
    two = teacher_targets(positions[:24], "mcts:sims=6", seed=9, workers=2)
    assert one.tolist() == two.tolist()


def test_student_positions_come_from_the_networks_own_games() -> None:
    net = PatchworkNet(PRIOR_NET).eval()
    against_greedy = student_positions(200, seed=1, net=net, num_games=16)
    mirror = student_positions(200, seed=1, net=net, mirror=True, num_games=16)
    assert against_greedy.shape == mirror.shape == (200, rules.STATE_LEN)
    assert np.array_equal(against_greedy, student_positions(200, seed=1, net=net, num_games=16))
    assert not any(rules.is_terminal(s) for s in np.concatenate([against_greedy, mirror]))
    greedy_games = sample_positions(200, seed=1, temp=0.0, num_games=16)
    assert np.array_equal(against_greedy[:16], greedy_games[:16])  # the same deals ...
    assert not np.array_equal(against_greedy, greedy_games)  # ... but the network plays one seat
    assert not np.array_equal(mirror, against_greedy)
    with pytest.raises(ValueError, match="need num >= 1"):
        student_positions(0, seed=1, net=net)


def test_distillation_learns_the_move_kind_and_keeps_placements(positions: np.ndarray) -> None:
    torch.manual_seed(0)
    net = PatchworkNet(PRIOR_NET)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    # a teacher that advances whenever it may, else buys from the first slot it can
    legal = legal_groups(positions)
    target = np.where(legal[:, 4], 4, legal.argmax(1))
    history = distill(net, positions, target, epochs=8, lr=3e-3, seed=0)
    assert [h.epoch for h in history] == list(range(9))
    assert history[-1].val_accuracy > max(0.9, history[0].val_accuracy)
    assert history[-1].train_loss < history[1].train_loss
    after = net.state_dict()
    changed = {key for key, value in before.items() if not torch.equal(value, after[key])}
    assert not {key for key in changed if key.startswith(PLACEMENT_ONLY)}
    assert {"slot_logit.weight", "advance.2.weight", "embed.0.weight", "stem.weight"} <= changed
    assert any(key.startswith(PLACEMENT_ONLY) for key in before)  # the check above is not vacuous


def test_group_logits_are_the_log_mass_of_each_group(positions: np.ndarray) -> None:
    net = PatchworkNet(PRIOR_NET).eval()
    states = positions[:16]
    masks = np.zeros((16, rules.NUM_ACTIONS), dtype=np.bool_)
    rules.legal_mask_batch(states, masks, np.zeros(16, dtype=np.int64))
    seats = np.empty(16, dtype=np.int64)
    rules.current_player_batch(states, seats)
    obs = np.empty((16, observation.OBS_DIM), dtype=np.float32)
    observation.observe_batch(states, seats, obs)
    with torch.no_grad():
        logits, _ = net(torch.from_numpy(obs), torch.from_numpy(masks), prior_for(net, states, masks))
    mass = torch.softmax(group_logits(logits), 1).numpy()
    probs = torch.softmax(logits, 1).numpy()
    expected = np.stack([probs[:, g == GROUP_OF_ACTION].sum(1) for g in range(NUM_GROUPS)], axis=1)
    np.testing.assert_allclose(mass, expected, atol=1e-5)


def test_distillation_fits_soft_targets_with_a_learned_kind_scale(positions: np.ndarray) -> None:
    legal = legal_groups(positions)
    target = np.zeros((len(positions), NUM_GROUPS))  # 70% the first legal kind, 30% the last
    target[np.arange(len(positions)), legal.argmax(1)] += 0.7
    target[np.arange(len(positions)), NUM_GROUPS - 1 - legal[:, ::-1].argmax(1)] += 0.3
    entropy = -(0.7 * np.log(0.7) + 0.3 * np.log(0.3))  # the lowest loss these targets allow
    final = {}
    for group_scale in (True, False):
        torch.manual_seed(0)
        net = PatchworkNet(dataclasses.replace(PRIOR_NET, group_scale=group_scale))
        history = distill(net, positions, target, epochs=10, lr=3e-3, seed=0)
        final[group_scale] = history[-1]
    # measured: 1.08 and 0.90 with the scale; 6.07 and 0.31 without (the prior's full scale at the
    # level of move kinds, score points x prior_scale, cannot be undone by the residual)
    assert final[True].val_loss < entropy + 0.6 and final[True].val_accuracy > 0.85
    assert final[False].val_loss > 3 * final[True].val_loss and final[False].val_accuracy < 0.6


def test_distill_rejects_bad_targets(positions: np.ndarray) -> None:
    net = PatchworkNet(PRIOR_NET)
    with pytest.raises(ValueError, match="differ in length"):
        distill(net, positions[:5], np.zeros(4, dtype=np.int64), epochs=1, lr=1e-3)
    with pytest.raises(ValueError, match=r"group labels must be integers in \[0, 5\)"):
        distill(net, positions[:5], np.full(5, 7), epochs=1, lr=1e-3)
    with pytest.raises(ValueError, match=r"\(N, 5\) distributions, got shape \(5, 4\)"):
        distill(net, positions[:5], np.full((5, 4), 0.25), epochs=1, lr=1e-3)
    with pytest.raises(ValueError, match="sum to 1"):
        distill(net, positions[:5], np.full((5, 5), 0.5), epochs=1, lr=1e-3)
    illegal = np.where(legal_groups(positions[:20])[:, 3], 4, 3)  # leather where it is not pending
    with pytest.raises(ValueError, match="no legal action"):
        distill(net, positions[:20], illegal, epochs=1, lr=1e-3)


def _config(tmp_path: Path, **extra: object) -> DistillConfig:
    data: dict[str, object] = {
        "net": {"channels": 8, "blocks": 1, "hidden": 16, "head_features": 4, "head_hidden": 8, "prior_scale": 2.0},
        "run_dir": str(tmp_path / "distill"),
        "eval_opponents": {"random": 1},
        "final_eval_pairs": 1,
        "final_eval_opponents": ["random"],
        "progress": False,
        "teacher": "greedy",
        "positions": 200,
        "epochs": 1,
        "workers": 1,
    }
    data.update(extra)
    return from_dict(DistillConfig, data, "test")


def test_distill_trains_and_evaluates_the_start_and_each_round(tmp_path: Path) -> None:
    summary = distill_trainer.main(_config(tmp_path))
    assert summary["teacher"] == "greedy" and 0 < summary["positions"] <= 200
    assert sum(summary["label_counts"]) == summary["positions"] and [len(a) for a in summary["held_out_accuracy"]] == [
        2
    ]
    folder = Path(summary["run_folder"])
    history = json.loads((folder / "eval_history.json").read_text())
    assert [(h["round"], h["final"]) for h in history] == [(0, False), (1, False), (1, True)]
    assert set(summary["final_start_eval"]) == {"random"}  # the start, on the final deals
    start = read_checkpoint(folder / "checkpoints" / "start.pt")
    final = read_checkpoint(folder / "checkpoints" / "final.pt")
    assert start["net_config"]["prior_scale"] == 2.0
    assert any(not torch.equal(start["model"][k], final["model"][k]) for k in start["model"])


def test_dagger_rounds_add_the_networks_own_positions(tmp_path: Path) -> None:
    quiet = {"eval_opponents": {}, "final_eval_pairs": 0}
    one = distill_trainer.main(_config(tmp_path / "once", **quiet))
    two = distill_trainer.main(_config(tmp_path / "twice", rounds=1, dagger_positions=100, **quiet))
    assert one["rounds"] == 1 and two["rounds"] == 2  # rounds trained: the first, then the DAgger rounds
    assert one["positions"] < two["positions"] <= one["positions"] + 100
    assert [len(a) for a in two["held_out_accuracy"]] == [2, 2]


def test_distill_config_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"needs net\.prior_scale > 0"):
        _config(tmp_path, net={"prior_scale": 0.0, "group_scale": False, "kind_weights": False}).validate()
    with pytest.raises(ConfigError, match=r"positions must be in \[2, "):
        _config(tmp_path, positions=1).validate()
    with pytest.raises(ConfigError, match="learning_rate must be > 0"):
        _config(tmp_path, learning_rate=0.0).validate()
    with pytest.raises(ConfigError, match=r"rounds must be in \[0, "):
        _config(tmp_path, rounds=-1).validate()
    with pytest.raises(AgentSpecError, match="mcts"):  # the run builds its teacher before it writes anything
        distill_trainer.main(_config(tmp_path, teacher="mcts:simz=3"))
    assert not (tmp_path / "distill").exists()


def test_exit_results_measure_distillation_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m train.exit_results`` on runs of train.distill: start and final networks against
    greedy, the final one against the first shipped network on the same deals, the run's rounds,
    and its curve from its own evaluations (no minute checkpoints); runs of two trainers refused."""
    runs = []
    for seed in (0, 1):
        cfg = _config(tmp_path / f"s{seed}", seed=seed, eval_opponents={"greedy": 1}, final_eval_pairs=0)
        runs.append(str(distill_trainer.main(cfg)["run_folder"]))
    out = tmp_path / "distill.json"
    assert exit_results.main([*runs, "--pairs", "1", "--results", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["kind"] == "training" and data["seeds"] == [0, 1] and data["title"].startswith("Distillation")
    assert "rounds" in data["columns"] and not any(c.endswith(" min") for c in data["columns"])
    for seed, run in zip(("0", "1"), runs, strict=True):
        raw = data["raw"][seed]
        assert raw["iterations"] == 1 and raw["kept"] is None and raw["config"]["teacher"] == "greedy"
        for key in ("final_vs_greedy", "start_vs_greedy", "final_vs_pretrained"):
            assert raw[key]["games"] == 2, key
        history = json.loads((Path(run) / "eval_history.json").read_text())
        after = [h for h in history if h["round"] == 1 and not h["final"]]
        assert [(r["games"], r["win_rate"]) for r in raw["curve_vs_greedy"].values()] == [
            (after[0]["games"], after[0]["win_rate"])
        ]
    assert set(render_results.mark_curves(data)) == {"greedy"}
    assert len(data["summary"]["sd"]) == len(data["columns"])
    (tmp_path / "exit" / "checkpoints").mkdir(parents=True)
    (tmp_path / "exit" / "exit_history.json").write_text("[]")
    with pytest.raises(SystemExit) as exc:
        exit_results.main([runs[0], str(tmp_path / "exit")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "of different trainers (train.distill, train.exit)" in err, err
