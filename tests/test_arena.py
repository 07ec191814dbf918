"""Arena: paired seats, determinism for a seed whatever the worker count, the statistics, the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from patchwork_env.core.state import GameState
from patchwork_env.evaluation.arena import PairResult, deal, play_pairs, round_robin
from patchwork_env.evaluation.stats import ELO_SCALE, Z95, fit_elo, wilson_interval
from patchwork_env.players.random import RandomAgent
from tests.cli import patchwork


def without_times(result: PairResult) -> list[tuple[object, ...]]:
    return [
        (r.deal, r.seat_a, r.a_won, r.score_a, r.score_b, r.empty_a, r.empty_b, r.moves_a, r.moves_b)
        for r in result.records
    ]


def test_the_same_seed_gives_the_same_games_with_one_or_two_workers() -> None:
    one = play_pairs("greedy:temp=3", "mcts:sims=4", 3, seed=5, workers=1)
    two = play_pairs("greedy:temp=3", "mcts:sims=4", 3, seed=5, workers=2)
    assert without_times(one) == without_times(two)
    assert one.to_dict()["wins_a"] == two.to_dict()["wins_a"]
    other_seed = play_pairs("greedy:temp=3", "mcts:sims=4", 3, seed=6, workers=1)
    assert without_times(other_seed) != without_times(one)


class FirstStates:
    """A random player that remembers the first position it sees in each game (and, holding a
    lambda, cannot be pickled: the arena must play it in this process's own fork of it). It plays
    in a process of its own (``players.contained``): it writes them down in ``log``."""

    def __init__(self, name: str, log: Path) -> None:
        self.name = name
        self.log = log
        self._random = RandomAgent()
        self._unpicklable = lambda: None
        self._fresh = True

    @property
    def seen(self) -> list[GameState]:
        return [GameState.from_notation(line) for line in self.log.read_text().splitlines()]

    def reset(self) -> None:
        self._fresh = True

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        if self._fresh:
            with self.log.open("a") as f:
                f.write(state.to_notation() + "\n")
            self._fresh = False
        return self._random.act(state, rng)


def test_each_deal_is_played_twice_with_the_seats_swapped(tmp_path: Path) -> None:
    a, b = FirstStates("rec-a", tmp_path / "a.txt"), FirstStates("rec-b", tmp_path / "b.txt")
    result = play_pairs(a, b, 4, seed=9, workers=2)
    assert result.games == 8 and (result.a, result.b) == ("rec-a", "rec-b")
    assert [(r.deal, r.seat_a) for r in result.records] == [(d, s) for d in range(4) for s in (0, 1)]
    starts = [deal(9, d) for d in range(4)]
    assert len({s.circle for s in starts}) == 4  # four different deals
    for start in starts:
        # the agent in the starting seat sees the deal's first position: each agent once per deal
        assert sum(s == start for s in a.seen) == 1
        assert sum(s == start for s in b.seen) == 1
    assert result.wins_a + result.wins_b == 8
    assert result.deals_a_won_both + result.deals_split + result.deals_b_won_both == 4


def test_pair_numbers_add_up() -> None:
    r = play_pairs("greedy", "random", 3, seed=1, workers=1)
    d = r.to_dict()
    assert d["games"] == 6 and d["wins_a"] + d["wins_b"] == 6
    assert d["win_rate_a"] == pytest.approx(d["wins_a"] / 6)
    assert d["ci95_a"][0] <= d["win_rate_a"] <= d["ci95_a"][1]
    assert d["mean_margin_a"] == pytest.approx(d["mean_score_a"] - d["mean_score_b"])
    assert d["mean_time_per_move_a"] > 0 and "records" not in d
    assert d["wins_a_in_seat0"] == sum(rec.a_won for rec in r.records if rec.seat_a == 0)
    json.dumps(d)


def test_round_robin_pairs_and_ladder() -> None:
    t = round_robin(["greedy", "random", "greedy:temp=4"], 2, seed=3, workers=1)
    assert [(p.a, p.b) for p in t.pairs] == [
        ("greedy", "random"),
        ("greedy", "greedy:temp=4"),
        ("random", "greedy:temp=4"),
    ]
    assert t.anchor == "random" and t.elo["random"].elo == 0
    d = t.to_dict()
    assert set(d["elo"]) == {"greedy", "random", "greedy:temp=4"}
    assert set(d) >= {"pairs", "elo", "elo_ci95", "anchor"}
    assert d["elo"]["greedy"] > 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_pairs": 0}, "num_pairs"),
        ({"seed": -1}, "seed"),
        ({"workers": 0}, "workers"),
    ],
)
def test_bad_arena_arguments(kwargs: dict[str, int], message: str) -> None:
    args = {"num_pairs": 1, "seed": 0, "workers": 1} | kwargs
    with pytest.raises(ValueError, match=message):
        play_pairs("random", "random", num_pairs=args["num_pairs"], seed=args["seed"], workers=args["workers"])


def test_round_robin_rejects_duplicates_and_bad_specs() -> None:
    with pytest.raises(ValueError, match="distinct"):
        round_robin(["greedy", "greedy"], 1)
    with pytest.raises(ValueError, match="unknown agent"):
        round_robin(["greedy", "grady"], 1)


# --- statistics on known inputs ---------------------------------------------------------------------
def test_wilson_interval_contains_the_win_rate_exactly() -> None:
    # floating point once put 1.0 just above the upper bound of 10/10 (negative error bars in plots)
    for games in range(1, 301):
        for wins in range(games + 1):
            low, high = wilson_interval(wins, games)
            assert 0.0 <= low <= wins / games <= high <= 1.0


def test_wilson_interval_has_its_nominal_coverage() -> None:
    # the property that matters (and that clamping cannot fake): for a true rate q, the intervals of
    # the possible outcomes contain q with probability close to 95% (exact binomial sums)
    for games, q in [(50, 0.3), (100, 0.5), (200, 0.8), (400, 0.62)]:
        coverage = sum(
            math.comb(games, k) * q**k * (1 - q) ** (games - k)
            for k in range(games + 1)
            if wilson_interval(k, games)[0] <= q <= wilson_interval(k, games)[1]
        )
        assert 0.93 <= coverage <= 0.97, (games, q, coverage)


def test_wilson_interval_known_values() -> None:
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson_interval(81, 100) == pytest.approx((0.7222, 0.8749), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_elo_of_two_players_is_the_log_odds() -> None:
    r = fit_elo(["a", "b"], [(0, 1, 75, 25)], anchor=1, virtual_draws=0)
    assert r["b"].elo == 0
    assert r["a"].elo == pytest.approx(400 * math.log10(3), abs=1e-6)
    se = ELO_SCALE / math.sqrt(100 * 0.75 * 0.25)  # 1 / sqrt(Fisher information)
    assert r["a"].high - r["a"].elo == pytest.approx(Z95 * se, rel=1e-6)
    assert r["a"].elo - r["a"].low == pytest.approx(Z95 * se, rel=1e-6)


def test_elo_recovers_consistent_ratings() -> None:
    # odds 3:1, 3:1 and 9:1 are exactly a ladder of 0, -190.8, -381.7 below the top
    r = fit_elo(["a", "b", "c"], [(0, 1, 300, 100), (1, 2, 300, 100), (0, 2, 360, 40)], anchor=2, virtual_draws=0)
    step = 400 * math.log10(3)
    assert r["c"].elo == 0
    assert r["b"].elo == pytest.approx(step, abs=1e-6)
    assert r["a"].elo == pytest.approx(2 * step, abs=1e-6)
    assert r["a"].high - r["a"].low > r["b"].high - r["b"].low > 0


def test_a_perfect_score_stays_finite_with_the_virtual_draw() -> None:
    r = fit_elo(["strong", "weak"], [(0, 1, 10, 0)], anchor=1)
    assert r["strong"].elo == pytest.approx(400 * math.log10(10.5 / 0.5), abs=1e-6)
    with pytest.raises(ValueError, match="connect"):
        fit_elo(["a", "b", "c"], [(0, 1, 3, 1)], anchor=0)


# --- the CLI -------------------------------------------------------------------------------------------
def test_evaluate_cli_writes_json_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.json"
    png = tmp_path / "elo.png"
    code = patchwork("evaluate", "--agents", "greedy", "random", "--pairs", "2", "--seed", "2", "--workers", "1",
                     "--no-progress", "--json", str(out), "--plot", str(png))  # fmt: skip
    assert code == 0
    data = json.loads(out.read_text())
    pair = data["pairs"][0]
    for key in ("a", "b", "games", "wins_a", "wins_b", "win_rate_a", "ci95_a", "mean_margin_a"):
        assert key in pair
    assert pair["games"] == 4 and data["elo"]["random"] == 0
    assert png.stat().st_size > 1000
    assert "Elo" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agents", "greedy", "random", "--pairs", "0"], "--pairs: must be >= 1"),
        (["--agents", "greedy", "random", "--games", "4"], "unrecognized arguments: --games"),
        (["--agents", "greedy"], "at least two"),
        (["--agents", "greedy", "nobody"], "unknown agent"),
        (["--agents", "greedy", "greedy"], "distinct"),
        (["--agents", "greedy", "random", "--workers", "0"], "--workers"),
        (["--agents", "greedy", "random", "--plot", "x.gif"], ".png"),
    ],
)
def test_evaluate_cli_rejects_bad_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert patchwork("evaluate", *argv) == 2
    assert message in capsys.readouterr().err
