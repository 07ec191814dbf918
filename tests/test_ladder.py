"""The ladder (``patchwork_env.evaluation.ladder``): the rating fit, the shipped scale, rating an
agent (spec, object or callable) on a small scale built here, bounds beyond the scale, the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchwork_env.core.rules import ADVANCE
from patchwork_env.core.state import GameState
from patchwork_env.evaluation import ladder
from patchwork_env.evaluation.ladder import PANEL, build_scale, fit_rating, load_scale, rate, references
from patchwork_env.evaluation.stats import fit_elo
from patchwork_env.players.registry import make_agent
from tests.cli import error_lines, patchwork

SMALL_PANEL = ("random", "greedy:temp=3", "greedy")


@pytest.fixture(scope="module")
def small_scale() -> dict[str, Any]:
    """A three-rung ladder (random, a softened greedy, greedy) from the real round robin."""
    return build_scale(pairs=6, workers=1, panel=SMALL_PANEL, seed=7)


def test_fit_rating_recovers_the_rating_that_generated_the_results() -> None:
    truth = 250.0
    results = []
    for opponent in (0.0, 200.0, 400.0):
        p = 1.0 / (1.0 + 10 ** ((opponent - truth) / 400.0))
        results.append((opponent, round(100_000 * p), round(100_000 * (1 - p))))
    elo, se = fit_rating(results)
    assert elo == pytest.approx(truth, abs=1.0)
    assert 0 < se < 5  # 300,000 games
    assert fit_rating([(100.0, 7, 7)])[0] == pytest.approx(100.0)  # even against one opponent: its rating
    assert math.isfinite(fit_rating([(0.0, 20, 0)])[0])  # a sweep stays finite (the virtual draw)


V1_PANEL = ("random", "greedy", "mcts:sims=10", "mcts:sims=100", "mcts:sims=300", "mcts:sims=1000", "pretrained", "az")
V2_PANEL = PANEL[: PANEL.index("mcts:sims=1000") + 1]  # v3 is v2's rungs and two above them


def test_v3_is_v2_with_rungs_above_its_top() -> None:
    assert PANEL[len(V2_PANEL) :] == ("az:value=v3,sims=1000", "az:value=v3,sims=3000")
    assert [r["spec"] for r in load_scale(version="v2")["ratings"]] == list(V2_PANEL)


@pytest.mark.parametrize(("version", "panel"), [("v1", V1_PANEL), ("v2", V2_PANEL), ("v3", PANEL)])
def test_a_shipped_scale_is_the_round_robin_it_stores(version: str, panel: tuple[str, ...]) -> None:
    scale = load_scale(version=version)
    assert scale["ladder"] == version and scale["seed"] == ladder.LADDER_SEED
    assert sorted(r["spec"] for r in scale["ratings"]) == sorted(panel)
    for key in ("command", "commit", "date", "machine", "seeds"):
        assert scale[key], key
    names = list(panel)
    games = [(names.index(p["a"]), names.index(p["b"]), p["wins_a"], p["wins_b"]) for p in scale["pairs"]]
    assert len(games) == len(panel) * (len(panel) - 1) // 2  # every pair of rungs played
    if version == "v1":
        assert all(p["games"] == 2 * scale["pairs_per_matchup"] for p in scale["pairs"])
    refit = fit_elo(names, games, anchor=names.index("random"))
    for r in scale["ratings"]:
        assert refit[r["spec"]].elo == pytest.approx(r["elo"], abs=1e-6)
        assert r["ci95"][0] < r["elo"] < r["ci95"][1] or r["spec"] == "random"
    refs = references(scale)
    assert refs[0].spec == "random" and refs[0].elo == 0.0
    by_spec = {r.spec: r.elo for r in refs}
    assert by_spec["random"] < by_spec["greedy"] < by_spec["mcts:sims=1000"]


@pytest.mark.parametrize(("version", "panel"), [("v2", V2_PANEL), ("v3", PANEL)])
def test_a_version_meets_its_spacing_and_precision_when_refitted_from_its_own_games(
    version: str, panel: tuple[str, ...]
) -> None:
    """The issue's standard: neighbouring rungs at most 250 Elo apart, each difference known to
    +-50 Elo (95%), recomputed here from the stored games (not read from the file's summary)."""
    scale = load_scale(version=version)
    assert ladder.check_scale(scale, max_gap=250.0, precision=50.0) == []
    gaps = ladder.neighbours(scale)
    assert len(gaps) == len(panel) - 1
    for mine, stored in zip(gaps, scale["neighbours"], strict=True):  # the file's summary is its games' refit
        assert (mine["low"], mine["high"]) == (stored["low"], stored["high"])
        assert [mine["difference"], *mine["ci95"]] == pytest.approx([stored["difference"], *stored["ci95"]])
    assert scale["compute"]["games"] == sum(p["games"] for p in scale["pairs"]) and scale["compute"]["cpu_seconds"] > 0
    assert scale["command"].startswith("patchwork ladder --rebuild")


def test_check_scale_names_a_gap_too_wide_and_a_difference_too_vague(small_scale: dict[str, Any]) -> None:
    problems = ladder.check_scale(small_scale, max_gap=10.0, precision=1.0)
    assert any("Elo apart (at most 10)" in p for p in problems)
    assert any("(at most +-1)" in p for p in problems)
    assert ladder.check_scale(small_scale, max_gap=10_000.0, precision=10_000.0) == []


def test_every_rung_is_played_with_every_parameter_pinned() -> None:
    """A later change of a player's default or of the newest shipped network moves no rung: each
    rung of every version plays a spec that spells out all of its agent's parameters."""
    from patchwork_env.players.registry import parse_spec

    for rung in {*PANEL, *V1_PANEL}:
        entry, given = parse_spec(ladder.play_spec(rung))
        # unset on purpose: no rung has a time budget (and so no clock to read)
        missing = {p.name for p in entry.params} - set(given) - {"path", "time", "clock"}
        if entry.name == "az" and "net" in given:  # width is the compiled search's: a network search refuses it
            missing -= {"width"}
        compiled = entry.name == "az" and "net" not in given
        if compiled:  # the compiled search (no network): its model pinned instead
            missing -= {"net"}
            assert given["value"] == "v3", rung
        assert not missing, (rung, missing)
        if entry.name in ("az", "pretrained") and not compiled:
            assert given["net"] == "v1"


def test_a_ratings_interval_carries_the_references_uncertainty(small_scale: dict[str, Any]) -> None:
    result = rate("greedy:temp=1", scale=small_scale)
    own = result.ci95_games[1] - result.ci95_games[0]
    total = result.ci95[1] - result.ci95[0]
    assert total > own * 1.05  # the small scale's rungs are far from exact
    assert result.ci95[0] < result.elo < result.ci95[1]


def test_on_the_shipped_scale_greedy_lands_in_its_interval_and_a_weakened_greedy_below() -> None:
    """The issue's check on the real scale v1 (quick budget): greedy's rating lies inside greedy's
    stored interval; greedy that advances instead of buying on every other move rates below it."""
    stored = {r.spec: r for r in references(load_scale(version="v1"))}["greedy"]
    greedy_rating = rate("greedy", budget="quick", ladder="v1")
    assert round(greedy_rating.elo) == 431  # v1 never changes: the figure of its first release
    assert stored.low <= greedy_rating.elo <= stored.high
    greedy = make_agent("greedy")
    moves = [0]

    def advances_every_other_move(state: GameState) -> int:
        moves[0] += 1
        if moves[0] % 2 == 0 and state.is_legal(ADVANCE):
            return ADVANCE
        return int(greedy.act(state, np.random.default_rng(0)))

    weakened = rate(advances_every_other_move, budget="quick", ladder="v1")
    assert weakened.elo < greedy_rating.elo


def test_a_rating_is_deterministic_and_a_callable_can_be_rated(small_scale: dict[str, Any]) -> None:
    first = rate("greedy", scale=small_scale)
    assert rate("greedy", scale=small_scale) == first
    assert first.games == sum(row["games"] for row in first.per_opponent) > 0
    assert first.ci95[0] < first.elo < first.ci95[1]
    greedy = make_agent("greedy")

    def greedy_function(state: GameState) -> int:  # greedy with its ties broken the same way every time
        return int(greedy.act(state, np.random.default_rng(0)))

    by_callable = rate(greedy_function, scale=small_scale)
    assert rate(greedy_function, scale=small_scale) == by_callable
    assert by_callable.agent == "greedy_function" and by_callable.illegal_actions == 0
    assert first.ci95[0] < by_callable.elo < first.ci95[1]


def test_stronger_agents_rate_higher(small_scale: dict[str, Any]) -> None:
    soft = rate("greedy:temp=3", scale=small_scale)
    sharp = rate("greedy", scale=small_scale)
    assert soft.elo < sharp.elo


def test_beyond_the_scale_is_a_bound_not_a_number() -> None:
    above_scale = build_scale(pairs=4, workers=1, panel=("random", "greedy:temp=30"), seed=3)
    result = rate("greedy", scale=above_scale)
    assert result.scale == "above" and result.summary().startswith("above the scale: at least")
    below_scale = build_scale(pairs=4, workers=1, panel=("greedy:temp=0.5", "greedy"), seed=3)
    result = rate("random", scale=below_scale)
    assert result.scale == "below" and result.summary().startswith("below the scale: at most")


def test_a_fit_above_the_top_rung_whose_interval_reaches_it_is_a_number() -> None:
    """The quick ladder said az was "above the scale: at least 1495" after it won 10 of 20 against the
    top rung (1627): its fit, 1637, was above the rung, its interval was not. Beyond the scale means
    the whole interval is; here greedy won 13 of 20 against the top rung (fit 498 against 468)."""
    scale = build_scale(pairs=4, workers=1, panel=("random", "greedy:temp=8", "greedy:temp=0.5"), seed=3)
    result = rate("greedy", scale=scale)
    top = max(r["elo"] for r in scale["ratings"])
    assert result.elo > top > result.ci95[0] and result.scale == "on", (result.elo, result.ci95, top)


def test_illegal_actions_forfeit_and_are_counted(small_scale: dict[str, Any]) -> None:
    result = rate(lambda state: 0, scale=small_scale)  # action 0 is rarely legal
    assert result.illegal_actions > 0
    assert result.scale == "below"


def test_the_command_writes_a_rating_with_its_provenance(
    small_scale: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("patchwork_env.cli.ladder.load_scale", lambda **kw: small_scale)
    out = tmp_path / "rating.json"
    assert patchwork("ladder", "greedy", "--json", str(out), "--no-progress", "--name", "my greedy") == 0
    data = json.loads(out.read_text())
    for key in ("command", "commit", "date", "machine", "seeds", "agent", "elo", "ci95", "scale", "games"):
        assert key in data, key
    assert data["agent"] == "my greedy" and data["spec"] == "greedy" and data["budget"] == "quick"
    assert data["elo"] == pytest.approx(rate("greedy", scale=small_scale).elo)
    assert capsys.readouterr().out.startswith("my greedy: ")  # the agent's name, then its rating or bound


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["ladder", "nosuch"], "nosuch"),
        (["ladder"], "give the agent to rate"),
        (["ladder", "greedy", "--budget", "huge"], "huge"),
        (["ladder", "--rebuild", "x.json", "--pairs", "0"], "--pairs"),
        (["ladder", "greedy", "--name", ""], "--name"),
        (["ladder", "--table", "--name", "x"], "--name"),
        (["ladder", "--table", "greedy"], "SPEC do not go with it"),
        (["ladder", "greedy", "--pairs", "5"], "--pairs goes with --rebuild"),
        (["ladder", "greedy", "--precision", "20"], "--precision goes with --rebuild"),
        (["ladder", "greedy", "--ladder", "v9"], "v9"),
        (["ladder", "greedy", "--name", "   "], "--name"),
        (["ladder", "greedy", "--json", "/"], "is a folder"),
        (["ladder", "--rebuild", "/", "--pairs", "3"], "is a folder"),
        (["ladder", "--rebuild", "x.json", "--precision", "1"], "--precision"),
        (["ladder", "--table", "--budget", "standard"], "--budget do not go with it"),
        (["ladder", "--rebuild", "x.json", "--ladder", "v1"], "--ladder do not go with it"),
    ],
)
def test_ladder_errors_are_one_line(argv: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert patchwork(*argv) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0]


def test_the_command_lines_ladder_versions_are_the_ladders() -> None:
    """cli keeps the version names as a constant (its parser must not load the engine): the same."""
    from patchwork_env.cli import LADDER_VERSIONS

    assert LADDER_VERSIONS == ladder.VERSIONS and LADDER_VERSIONS[-1] == ladder.VERSION


def test_a_run_keeps_its_games_beside_its_output_unless_a_journal_is_named(tmp_path: Path) -> None:
    from patchwork_env.cli.evaluate import journal_path

    out = tmp_path / "v3.json"
    assert journal_path(None, out) == tmp_path / "v3.json.partial.jsonl"
    assert journal_path(tmp_path / "mine.jsonl", out) == tmp_path / "mine.jsonl"
    assert journal_path(None, None) is None


# --- a scale's contents, checked before any game (issue 63's fuzzer: tests/fuzz_faults.py) -----------
def _rung(k: int, **change: Any) -> Any:
    return lambda s: s["ratings"][k].update(change)


def _pair(k: int, **change: Any) -> Any:
    return lambda s: s["pairs"][k].update(change)


BAD_SCALES: list[tuple[str, Any, type[Exception], str]] = [
    ("no ratings", lambda s: s.update(ratings=[]), ValueError, "scale's ratings must hold at least two rungs"),
    ("one rung", lambda s: s.update(ratings=s["ratings"][:1], pairs=[]), ValueError, "it holds 1"),
    ("a rating without ci95", lambda s: s["ratings"][3].pop("ci95"), ValueError, "scale's ratings[3] must be a dict"),
    ("ladder None", lambda s: s.update(ladder=None), ValueError, "ladder must be one of v1, v2, v3, got NoneType"),
    ("ladder 5", lambda s: s.update(ladder=5), ValueError, "scale's ladder must be one of v1, v2, v3, got int 5"),
    ("ratings not a list", lambda s: s.update(ratings={"random": 0}), TypeError, "scale's ratings must be a list"),
    ("a rating not a dict", lambda s: s["ratings"].__setitem__(2, 5), TypeError, "scale's ratings[2] must be a dict"),
    ("a spec not a string", _rung(1, spec=5), TypeError, "scale's ratings[1]: spec must be an agent spec (a str)"),
    ("a spec of no agent", _rung(1, spec="x"), ValueError, "scale's ratings[1]: spec 'x' is not an agent: unknown"),
    ("a rung twice", lambda s: s["ratings"].append(s["ratings"][1]), ValueError, "is a rung already"),
    ("elo a string", _rung(2, elo="300"), TypeError, "elo must be a number, got str '300'"),
    ("elo NaN", _rung(2, elo=math.nan), ValueError, "elo must be within +-10000, got nan"),
    ("elo huge", _rung(2, elo=1e300), ValueError, "elo must be within +-10000, got 1e+300"),
    ("ci95 of one number", _rung(2, ci95=[1.0]), TypeError, "ci95 must be [low, high], two numbers"),
    ("ci95 a string", _rung(2, ci95="[0, 1]"), TypeError, "ci95 must be [low, high], two numbers"),
    ("ci95 not around elo", _rung(2, ci95=[-2.0, -1.0]), ValueError, "ci95 must be [low, high] around elo"),
    ("pairs None", lambda s: s.update(pairs=None), TypeError, "scale's pairs must be a list"),
    ("a pair without wins", lambda s: s["pairs"][0].pop("wins_b"), ValueError, "scale's pairs[0] must be a dict"),
    ("random renamed", _rung(0, spec="greedy:temp=99"), ValueError, "a must be the spec of a rung, got str 'random'"),
    ("a pair of one rung", _pair(0, b="random", a="random"), ValueError, "a and b must be two rungs"),
    ("wins a string", _pair(0, wins_a="x"), TypeError, "scale's pairs[0]: wins_a must be an integer, got str"),
    ("wins a bool", _pair(0, wins_a=True), TypeError, "scale's pairs[0]: wins_a must be an integer, got bool"),
    ("wins negative", _pair(0, wins_b=-1), ValueError, "scale's pairs[0]: wins_b must be in 0..1000000000, got -1"),
    ("seed a string", lambda s: s.update(seed="7"), TypeError, "scale's seed must be an integer >= 0"),
    ("seed negative", lambda s: s.update(seed=-1), ValueError, "scale's seed must be an integer >= 0 (the ladder's"),
]


@pytest.mark.parametrize(("edit", "error", "said"), [pytest.param(e, x, m, id=w) for w, e, x, m in BAD_SCALES])
def test_a_scale_whose_contents_rate_cannot_use_is_refused_before_any_game(
    edit: Any, error: type[Exception], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It used to be a KeyError mid-way (ratings=[]: 'random'; a rating without ci95: 'ci95'), or
    rated without a word (ladder None or 5)."""
    scale = json.loads(json.dumps(load_scale(version="v2")))
    edit(scale)

    def no_game(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a game was played")

    monkeypatch.setattr(ladder, "play_matchups", no_game)
    with pytest.raises(error) as info:
        rate("random", scale=scale, workers=1)
    assert type(info.value) is error and said in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("version", ladder.VERSIONS)
def test_the_shipped_scales_pass_the_check_of_a_scale_given_to_rate(version: str) -> None:
    scale = load_scale(version=version)
    assert ladder._check_scale(scale, version) is scale


@pytest.mark.parametrize(
    ("raises", "said"),
    [
        ("raise GeneratorExit", "GeneratorExit"),
        ("raise SystemExit", "SystemExit"),
        ("raise ValueError('bad agent')", "ValueError: bad agent"),
        ("raise ValueError('\\n  first\\nsecond')", "ValueError: first"),
    ],
)
def test_an_agent_file_that_raises_as_it_is_imported_is_named_with_its_exception_and_no_empty_message(
    raises: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``importing it raised GeneratorExit: `` used to end in ": " (an exception without a message),
    or a message's blank first line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "imp.py").write_text(f"{raises}\n\ndef act(state):\n    return 0\n")
    assert patchwork("ladder", "imp.py:act", "--no-progress", "--workers", "1") == 2
    assert error_lines(capsys.readouterr().err) == [f"error: imp.py: importing it raised {said}"]


def test_an_agent_that_sweeps_its_probe_climbs_to_the_rungs_above_before_the_nearest() -> None:
    """A strong agent won all of its probe games against greedy, which put its estimate about 500 Elo
    above greedy whatever its strength: on v3 az then met rungs 400-800 Elo below it. While it sweeps,
    it now probes the rung above nearest its estimate (``MAX_PROBES`` in all), and every probe's games
    count in its fit."""
    panel = ("random", "greedy:temp=2", "greedy", "mcts:sims=10", "mcts:sims=50")
    scale = build_scale(pairs=2, workers=1, panel=panel, seed=7)
    spaced = dict(zip(panel, (0.0, 300.0, 600.0, 1400.0, 1800.0), strict=True))  # as far apart as v3's top
    scale["ratings"] = [{**r, "elo": spaced[r["spec"]], "ci95": [spaced[r["spec"]] - 1, spaced[r["spec"]] + 1]}
                        for r in scale["ratings"]]  # fmt: skip
    strong = rate("mcts:sims=200", budget="quick", scale=scale, workers=1)
    opponents = {row["opponent"]: row["games"] for row in strong.per_opponent}
    # greedy swept (4 of 4), then mcts:sims=10 probed and swept, then mcts:sims=50: the nearest 3 are
    # the top rungs; the estimate of the first probe alone (about 980) would have taken greedy:temp=2
    assert "mcts:sims=50" in opponents and "greedy:temp=2" not in opponents, opponents
    assert strong.games == sum(opponents.values()) == 3 * 2 * 10  # the probes' deals are their rungs' first
    weak = rate("random", budget="quick", scale=scale, workers=1)  # no sweep: one probe, as before
    assert weak.per_opponent[0]["opponent"] == "random" and weak.games == 3 * 2 * 10


def test_a_rating_beyond_every_rung_it_met_meets_the_next_rung_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick ladder rated az "above the scale" without playing the top rung: its estimate was
    above all three rungs nearest its probes. A fit beyond every rung met now plays the next rung
    out (here, one probe only: the three nearest are the softened greedies it beats 18-19 of 20)."""
    panel = ("random", "greedy:temp=30", "greedy:temp=10", "greedy:temp=3", "greedy:temp=1")
    scale = build_scale(pairs=2, workers=1, panel=panel, seed=7, precision=10_000.0)
    spaced = dict(zip(panel, (0.0, 100.0, 200.0, 300.0, 1500.0), strict=True))
    scale["ratings"] = [{**r, "elo": spaced[r["spec"]], "ci95": [spaced[r["spec"]] - 1, spaced[r["spec"]] + 1]}
                        for r in scale["ratings"]]  # fmt: skip
    monkeypatch.setattr(ladder, "MAX_PROBES", 1)
    result = rate("greedy", budget="quick", scale=scale, workers=1)
    opponents = {row["opponent"]: row["games"] for row in result.per_opponent}
    assert opponents == {"greedy:temp=30": 20, "greedy:temp=10": 20, "greedy:temp=3": 20, "greedy:temp=1": 20}
    assert result.scale == "on" and 300 < result.elo < 1500 + 400
