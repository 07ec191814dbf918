"""Gumbel AlphaZero with the compiled search: the model's prior over whole moves (the compiled
kernels and the learner's torch mirror agree), a model without prior heads is the greedy prior
exactly, self-play records, the learner, and the commands train.alphazero, train.alphazero_results
and train.placements (their run folders, results files and errors)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.alphazero import (
    Learner,
    Records,
    SelfPlay,
    init_model,
    prior_logits,
    results_from,
    self_play,
    value_ceiling,
)
from agents.value_distill import ValueNet
from patchwork_env.core import rules
from patchwork_env.envs.observation import observe_movers
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.arena import deal
from patchwork_env.players.batched_search import SearchConfig
from patchwork_env.players.compiled_search import CompiledSearch
from patchwork_env.players.greedy import GreedyAgent
from patchwork_env.players.heuristic import (
    DEFAULT_WEIGHTS,
    NUM_FEATURES,
    NUM_GROUPS,
    action_terms,
    candidate_prior,
    model_candidates,
)
from patchwork_env.players.model_policy import ModelPolicy
from patchwork_env.players.registry import make_agent
from patchwork_env.players.value_model import FORMAT_POLICY, ValueModel, ValueModelError, load_value_model
from tests.cli import error_lines
from train import alphazero, alphazero_results, placements
from train.artefact import read_artefact
from train.cli import parse_config
from train.config import AlphaZeroConfig, ConfigError

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "alphazero_smoke.yaml"


@pytest.fixture(scope="module")
def positions() -> np.ndarray:
    """Every decision of two greedy-against-random games (openings, middle games, leather cells)."""
    agents, rows = [make_agent("greedy"), make_agent("random")], []
    for g in range(2):
        state, rng = deal(g, 3), np.random.default_rng(g)
        while not state.is_terminal:
            rows.append(state.array())
            state = state.step(agents[(state.ply + g) % 2].act(state, rng))
    return np.stack(rows)


def random_heads(model: ValueModel, seed: int) -> ValueModel:
    """``model`` with random move-kind and placement heads (every term weighted, both signs)."""
    rng = np.random.default_rng(seed)
    h2 = model.hidden[1]

    def draw(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.3, shape).astype(np.float32)

    return ValueModel(model.w1, model.b1, model.w2, model.b2, model.w3, model.b3,
                      draw(h2, NUM_GROUPS), draw(NUM_GROUPS), draw(h2, NUM_FEATURES), draw(NUM_FEATURES))  # fmt: skip


def test_a_model_without_prior_heads_is_the_greedy_prior_exactly(positions: np.ndarray) -> None:
    model = init_model((16, 8), 20.0, seed=0)
    _, bf = model.placement(20.0)
    acts, logp = np.empty(rules.NUM_ACTIONS, np.int64), np.empty(rules.NUM_ACTIONS)
    acts_g, logp_g = np.empty(rules.NUM_ACTIONS, np.int64), np.empty(rules.NUM_ACTIONS)
    scratch = np.empty(rules.NUM_ACTIONS)
    for row in positions[::3]:
        k = model_candidates(row, bf.astype(np.float64), np.zeros(NUM_GROUPS), 2, acts, scratch, logp)
        kg = candidate_prior(row, DEFAULT_WEIGHTS, 2, 20.0, acts_g, scratch, logp_g)
        assert k == kg and np.array_equal(acts[:k], acts_g[:k])
        np.testing.assert_allclose(logp[:k], logp_g[:k], atol=1e-5)  # bf is float32
    # its prior's best move is greedy's (the first of equals aside: compare values, not moves)
    policy, greedy, rng = ModelPolicy(model), GreedyAgent(), np.random.default_rng(0)
    from patchwork_env.core.state import GameState

    for row in positions[::5]:
        state = GameState(row)
        assert state.step(policy.act(state, rng)).buttons == state.step(greedy.act(state, rng)).buttons


def test_the_learners_prior_is_the_compiled_searchs_prior(positions: np.ndarray) -> None:
    """The torch mirror's logits over a node's candidates (kind logit + centered terms weighted by
    the placement head) give the same log-probabilities as the compiled ``model_candidates`` with
    the same weights: what the learner trains is what the search uses."""
    model = random_heads(init_model((16, 8), 20.0, seed=1), seed=2)
    net = ValueNet.of(model, 20.0)
    search = CompiledSearch(SearchConfig(sims=2), model, width=3, reuse=False)
    for row in positions[::4]:
        if rules.is_terminal(row):
            continue
        result = search.run(row.copy(), sims=1)
        k = len(result.actions)
        terms = np.zeros((k, NUM_FEATURES))
        action_terms(row, result.actions, k, terms)
        terms -= terms.mean(axis=0)
        with torch.no_grad():
            _, kind, weights = net(torch.from_numpy(observe_movers(row[None])))
            logits = prior_logits(kind, weights, torch.from_numpy(result.actions)[None],
                                  torch.from_numpy(terms.astype(np.float32))[None])  # fmt: skip
        logp = torch.log_softmax(logits, -1)[0].numpy()
        edges = search.edge_f[search.node_i[0, 1] : search.node_i[0, 1] + k, 1]  # the root's LOGIT column
        np.testing.assert_allclose(logp, edges, atol=2e-4)


def test_the_torch_mirror_reads_back_the_same_model(positions: np.ndarray) -> None:
    model = random_heads(init_model((16, 8), 20.0, seed=3), seed=4)
    back = ValueNet.of(model, 20.0).to_value_model(heads=True)
    for name in ("w1", "b1", "w2", "b2", "w3", "b3", "wp", "bp", "wf", "bf"):
        assert np.array_equal(getattr(back, name), getattr(model, name)), name
    np.testing.assert_allclose(back.values(positions), model.values(positions))


def test_a_policy_model_file_round_trips_and_a_half_head_is_refused(tmp_path: Path) -> None:
    model = random_heads(init_model((16, 8), 20.0, seed=5), seed=6)
    model.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as data:
        assert str(data["format"]) == FORMAT_POLICY
    back = load_value_model(tmp_path / "m.npz")
    assert back.has_placement and np.array_equal(back.wf, model.wf)
    with pytest.raises(ValueModelError, match="placement head needs both wf and bf"):
        ValueModel(model.w1, model.b1, model.w2, model.b2, model.w3, model.b3, model.wp, model.bp, model.wf, None)


def test_self_play_records_full_searches_targets_and_results() -> None:
    model = init_model((16, 8), 20.0, seed=0)
    shared = SelfPlay(model, SearchConfig(sims=8, considered=4), 4, 0.5, 2, 2, seed=3)
    records = self_play(shared, (0, 2))
    assert sorted(set(records.games.tolist())) == [0, 1] and len(records) > 40
    full = records.full
    assert 0 < full.sum() < len(records)
    np.testing.assert_allclose(records.targets[full].sum(1), 1.0, atol=1e-5)  # a distribution over candidates
    assert not records.targets[~full].any() and not records.terms[~full].any()  # fast searches teach values only
    assert ((records.actions >= 0) | (records.targets == 0)).all()
    np.testing.assert_allclose(records.terms[full].sum(1), 0.0, atol=1e-3)  # centered over each node's candidates
    assert set(np.sign(records.results).tolist()) == {-1.0, 1.0}  # one seat won, the other lost
    again = self_play(shared, (1, 1))  # game 1 alone: the same game
    assert np.array_equal(again.states, records.states[records.games == 1])


def test_games_continued_from_a_position_differ_only_by_the_searches_sampling() -> None:
    """``results_from``: without sampling (no full search, no opening) every continuation of a game's
    first position is that game, its result the record's for the mover (either seat); with every move
    sampled they differ. Without sampling the estimated ceiling of the explained variance is exactly 1."""
    model = init_model((16, 8), 20.0, seed=0)
    fixed = SelfPlay(model, SearchConfig(sims=8, considered=4), 4, 0.0, 0, 2, seed=3)
    records = self_play(fixed, (0, 4))
    firsts = [int(np.flatnonzero(records.games == g)[0]) for g in range(4)]
    assert {int(rules.current_player(records.states[r])) for r in firsts} == {0, 1}
    for r in firsts:
        again = results_from(fixed, records.states[r], 0, 3, key=r)
        assert again.tolist() == [float(np.sign(records.results[r]))] * 3, r
    sampled = dataclasses.replace(fixed, full_share=1.0)
    assert set(results_from(sampled, records.states[firsts[0]], 0, 8, key=0).tolist()) == {-1.0, 1.0}
    var = float(np.var(np.sign(records.results)))
    ceiling = value_ceiling(fixed, records, 5, 2, var)
    assert ceiling is not None and ceiling["ceiling"] == 1.0 and ceiling["positions"] == 5
    assert value_ceiling(fixed, records, 0, 2, var) is None


def test_the_learner_fits_a_batch(tmp_path: Path) -> None:
    model = init_model((16, 8), 20.0, seed=0)
    records = self_play(SelfPlay(model, SearchConfig(sims=8, considered=4), 4, 0.5, 2, 2, seed=1), (0, 2))
    learner = Learner(model, 20.0, 3e-3, 0.0, 0.25)
    before = learner.measure(records)
    for _ in range(60):
        learner.step(records, 1.0)
    after = learner.measure(records)
    assert after.value < before.value and after.policy < before.policy
    assert learner.model().has_placement
    records.save(str(tmp_path / "r.npz"))
    assert all(np.array_equal(getattr(Records.load(str(tmp_path / "r.npz")), f), getattr(records, f))
               for f in ("states", "full", "actions", "targets", "terms", "values", "results", "games"))  # fmt: skip


def _smoke(tmp_path: Path, name: str = "run", *extra: str) -> dict[str, object]:
    cfg, _ = parse_config(AlphaZeroConfig, ["--config", str(SMOKE), "--run-dir", str(tmp_path / name), *extra])
    return alphazero.main(cfg)


def test_a_smoke_run_writes_models_the_agents_play(tmp_path: Path) -> None:
    summary = _smoke(tmp_path)
    assert summary["iterations"] == 2 and summary["decisions"] > 0
    folder = tmp_path / "run"
    for k in (0, 1, 2):
        assert (folder / "checkpoints" / f"model-{k}.npz").is_file()
    history = json.loads((folder / "eval_history.json").read_text())
    assert {h.get("player", "") for h in history} == {"", "policy"}
    artefact, data = read_artefact(str(folder / "checkpoints" / "final.pt"))
    assert artefact.agent("a").act(deal(0, 0), np.random.default_rng(0)) in deal(0, 0).legal_actions()
    assert data["format"] == "patchwork-search-model"
    spec = f"az:value={folder / 'checkpoints' / 'final.npz'},sims=4"
    assert make_agent(spec).act(deal(0, 0), np.random.default_rng(0)) in deal(0, 0).legal_actions()
    assert len(list((folder / "data").glob("records-*.npz"))) == 2


def test_the_time_limit_ends_the_run_after_the_step_that_reaches_it(tmp_path: Path) -> None:
    summary = _smoke(tmp_path, "run", "--iterations", "50", "--time-limit-minutes", "0.0001")
    assert summary["iterations"] == 1 and summary["stopped_early"]


def test_config_errors_are_one_line_before_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [
        (["--hidden", "0", "8"], "hidden must be two sizes in 1..4096"),
        (["--search.sims", "0"], r"search\.sims must be in \[1, 100000\], got 0"),
        (["--init-checkpoint", "x.pt"], "init_checkpoint names a network"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_config(AlphaZeroConfig, ["--config", str(SMOKE), *argv])
    folder = tmp_path / "r"
    assert alphazero.cli(["--config", str(SMOKE), "--init", "nowhere.npz", "--run-dir", str(folder)]) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("error: init: 'nowhere.npz' is not scratch or a value model")
    assert not folder.exists()


def test_results_over_runs_and_their_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _smoke(tmp_path, "s0")
    _smoke(tmp_path, "s1", "--seed", "1")
    out = tmp_path / "az.json"
    runs = [str(tmp_path / "s0"), str(tmp_path / "s1")]
    argv = [*runs, "--pairs", "1", "--games", "1", "--ceiling-positions", "3", "--continuations", "2"]
    assert alphazero_results.main([*argv, "--results", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["raw"]["1"]["explained_variance_ceiling"]["positions"] == 3
    assert data["runs"][1]["cells"]["no value's EV passes"].endswith("(3 positions x 2 games)")
    assert data["kind"] == "training" and [r["seed"] for r in data["runs"]] == [0, 1]
    raw = data["raw"]["0"]
    assert raw["last"] == 2 and raw["third"] == 1 and raw["final_vs_third"]["games"] == 2
    assert set(raw["explained_variance"]) >= {"final model", "value model v1"}
    curves = results_file.curves(data)  # what the results page draws
    assert set(curves) == {"greedy", "random (prior alone)"} and set(curves["greedy"]) == {"0", "1"}
    assert curves["greedy"]["0"][0][0] == 0.0  # the start, at minute 0
    again = shutil.copytree(runs[0], tmp_path / "s0-again")  # another folder of seed 0's run
    for argv, message in [([runs[0], str(again)], "same seed"), ([runs[0], runs[0]], "given twice"),
                          ([str(tmp_path)], "not a run folder of train.alphazero"), ([], "give the run folders"),
                          ([runs[0], "--pairs", "0"], "pairs must be in"),
                          ([runs[0], "--ceiling-positions", "1"], "0 (none) or at least 2")]:  # fmt: skip
        with pytest.raises(SystemExit) as stop:
            alphazero_results.main(argv)
        lines = error_lines(capsys.readouterr().err)
        assert stop.value.code == 2 and len(lines) == 1 and message in lines[0], (argv, lines)


def test_greedy_places_every_patch_at_its_own_best_and_others_do_not(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    assert placements.main(["greedy", "random", "--pairs", "1", "--results", str(out)]) == 0
    raw = json.loads(out.read_text())["raw"]
    assert raw["greedy"]["purchases"] > 10 and raw["greedy"]["own_placements"] == 0
    assert raw["random"]["own_share"] > 0.5


def test_az_searches_a_trained_models_best_placements_and_pretrained_plays_it_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``az:value=FILE`` of a model with a placement head takes PLACEMENT_WIDTH candidates per kind
    (its prior's best), as ``az``'s default (network v3) does, greedy's prior one; ``width``
    overrides, and a search with a network refuses it. A shipped network that is a search model
    (``.npz``) is ``pretrained`` without torch: the prior's move, ModelPolicy's; ``az``'s torch
    network is never one."""
    from patchwork_env.players import registry, shipped
    from patchwork_env.players.errors import AgentSpecError
    from patchwork_env.players.search_config import PLACEMENT_WIDTH

    trained = random_heads(init_model((16, 8), 20.0, seed=5), seed=6)
    trained.save(tmp_path / "v9.npz")
    assert make_agent(f"az:value={tmp_path / 'v9.npz'},sims=4").width == PLACEMENT_WIDTH == 2
    assert make_agent("az:sims=4").width == PLACEMENT_WIDTH  # az's default model (v3) has a placement head
    assert make_agent("az:value=v1,sims=4").width == 1 and make_agent("az:sims=4,width=3").width == 3
    with pytest.raises(AgentSpecError, match="width=2 is the compiled search's setting"):
        make_agent("az:net=v1,width=2")
    monkeypatch.setitem(shipped.SHIPPED_NETWORKS, "v9", tmp_path / "v9.npz")
    agent = registry._pretrained("v9")
    assert isinstance(agent, ModelPolicy) and np.array_equal(agent.model.wf, trained.wf)
    state = deal(3, 0)
    alone = ModelPolicy(trained)
    assert agent.act(state, np.random.default_rng(0)) == alone.act(state, np.random.default_rng(0))
    by_path = make_agent(f"network:{tmp_path / 'v9.npz'}")  # any run's model file, alone
    assert isinstance(by_path, ModelPolicy) and by_path.act(state, np.random.default_rng(0)) == alone.act(
        state, np.random.default_rng(0)
    )
    with pytest.raises(ValueError, match="network v9 is a search model, not a torch network: az:value=v9"):
        shipped.network_path(net="v9", torch=True)
