"""The statistics of ``patchwork compare`` (``patchwork_env.evaluation.sprt``), without games: the
test's log-likelihood ratio against a direct fit, its error rates over simulated runs, the estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from patchwork_env.evaluation import sprt
from patchwork_env.evaluation.sprt import bounds, elo_to_score, estimate, llr, pair_distribution, simulate


def _direct_llr(counts: list[float], elo0: float, elo1: float) -> float:
    """The same generalized log-likelihood ratio, by plain bisection on each fit's equation."""
    c = [x if x > 0 else sprt.REGULARIZE for x in counts]
    n = sum(c)
    p = [x / n for x in c]
    scores = [i / 4 for i in range(5)]

    def fit(s: float) -> list[float]:
        d = [a - s for a in scores]
        lo, hi = -1 / max(d), -1 / min(d)
        for _ in range(200):
            mid = (lo + hi) / 2
            if sum(pi * di / (1 + mid * di) for pi, di in zip(p, d, strict=True)) > 0:
                lo = mid
            else:
                hi = mid
        fitted = [pi / (1 + lo * di) for pi, di in zip(p, d, strict=True)]
        assert math.isclose(sum(f * a for f, a in zip(fitted, scores, strict=True)), s, abs_tol=1e-9)  # mean s
        return fitted

    p0, p1 = fit(elo_to_score(elo0)), fit(elo_to_score(elo1))
    return n * sum(pi * math.log(b / a) for pi, a, b in zip(p, p0, p1, strict=True))


@pytest.mark.parametrize(
    "counts",
    [[5, 0, 30, 0, 15], [40, 0, 200, 0, 60], [0, 0, 53, 0, 0], [0, 0, 0, 0, 53], [1, 0, 0, 0, 0], [3, 7, 20, 9, 4]],
)
@pytest.mark.parametrize(("elo0", "elo1"), [(0.0, 20.0), (-10.0, 5.0), (0.0, 200.0)])
def test_the_ratio_is_the_direct_fit_of_both_hypotheses(counts: list[float], elo0: float, elo1: float) -> None:
    assert float(llr(counts, elo0, elo1)) == pytest.approx(_direct_llr(counts, elo0, elo1), rel=1e-7, abs=1e-9)


def test_the_ratio_of_many_runs_at_once_is_each_runs_ratio() -> None:
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 40, size=(4, 3, 5))
    together = llr(counts, 0.0, 20.0)
    assert together.shape == (4, 3)
    for i, j in np.ndindex(4, 3):
        assert together[i, j] == pytest.approx(float(llr(counts[i, j], 0.0, 20.0)), rel=1e-9)
    assert float(llr([0, 0, 0, 0, 0], 0.0, 20.0)) == 0.0  # nothing played, no evidence


def test_the_ratio_grows_with_a_s_score_and_with_the_pairs() -> None:
    assert llr([10, 0, 20, 0, 10], 0, 20) < 0 < llr([5, 0, 20, 0, 15], 0, 20)
    assert llr([50, 0, 100, 0, 50], 0, 20) < llr([10, 0, 20, 0, 10], 0, 20)
    # a clean sweep is evidence of at most log(L(elo1) / L(elo0)) a pair: 53 pairs to accept H1
    per_pair = math.log(elo_to_score(20) / elo_to_score(0))
    assert float(llr([0, 0, 0, 0, 53], 0, 20)) == pytest.approx(53 * per_pair, rel=0.01)
    assert float(llr([0, 0, 0, 0, 52], 0, 20)) < bounds(0.05, 0.05)[1] < float(llr([0, 0, 0, 0, 53], 0, 20))


@pytest.mark.parametrize("split", [None, 0.6])  # independent games; the seat deciding 60% of deals (az vs mcts)
def test_over_simulated_runs_the_error_rates_hold(split: float | None) -> None:
    """At a true Elo of elo0 = 0 the test says "better" in at most alpha of the runs (+ binomial
    noise), at a true elo1 = 20 "not better" in at most beta, and both decide the right way in the
    other runs; the expected pairs to a decision lie where Wald's approximation puts them."""
    runs, alpha, beta = 1000, 0.05, 0.05
    noise = 3 * math.sqrt(alpha * (1 - alpha) / runs)
    at_h0 = simulate(pair_distribution(0.0, split), runs, max_pairs=8000, seed=1)
    at_h1 = simulate(pair_distribution(20.0, split), runs, max_pairs=8000, seed=2)
    assert at_h0.better <= alpha + noise and at_h0.not_better >= 1 - alpha - noise - at_h0.undecided
    assert at_h1.not_better <= beta + noise and at_h1.better >= 1 - beta - noise - at_h1.undecided
    assert at_h0.undecided < 0.005 and at_h1.undecided < 0.005
    # Wald: E[pairs] ~ ((1 - 2 beta) log((1 - beta) / alpha)) / drift, drift = (s1 - s0)^2 / (2 var)
    for sim, elo in ((at_h0, 0.0), (at_h1, 20.0)):
        probs = pair_distribution(elo, split)
        mean = float((probs * sprt.PAIR_SCORES).sum())
        var = float((probs * (sprt.PAIR_SCORES - mean) ** 2).sum())
        drift = (elo_to_score(20) - elo_to_score(0)) ** 2 / (2 * var)
        wald = 0.9 * math.log(19) / drift
        assert 0.8 * wald < sim.mean_pairs < 1.25 * wald, (sim.mean_pairs, wald)
    print(f"split {split}: mean pairs to a decision {at_h0.mean_pairs:.0f} at Elo 0, {at_h1.mean_pairs:.0f} at 20")


def test_a_simulation_stops_each_run_at_its_first_crossing() -> None:
    """The vectorised blocks stop a run where a pair-by-pair loop would."""
    probs = pair_distribution(60.0)
    sim = simulate(probs, 3, max_pairs=400, seed=5, block=7)
    lower, upper = bounds(0.05, 0.05)
    rng = np.random.default_rng(5)
    cumulative = np.cumsum(probs)
    counts = np.zeros((3, 5))
    stopped = [0, 0, 0]
    for step in range(400):  # the same draws, in the same order, one pair at a time
        if step % 7 == 0:
            draws = rng.random((sum(s == 0 for s in stopped), min(7, 400 - step)))
            row = 0
            rows = {}
            for run in range(3):
                if stopped[run] == 0:
                    rows[run], row = row, row + 1
        for run in range(3):
            if stopped[run] == 0:
                cell = min(int(np.searchsorted(cumulative, draws[rows[run], step % 7], side="right")), 4)
                counts[run, cell] += 1
                ratio = float(llr(counts[run], 0.0, 20.0))
                if ratio >= upper or ratio <= lower:
                    stopped[run] = step + 1
    assert sim.pairs.tolist() == [s or 400 for s in stopped]


def test_the_estimate_is_a_s_elo_over_b_with_an_interval_that_never_collapses() -> None:
    even = estimate([10, 0, 20, 0, 10])
    assert even.elo == 0.0 and even.los == pytest.approx(0.5) and even.ci95[0] < 0 < even.ci95[1]
    ahead = estimate([5, 0, 20, 0, 15])
    assert ahead.elo == pytest.approx(86.5, abs=0.1)  # a mean of (10 + 15.5) / 41 with the virtual pair
    assert ahead.los > 0.95 and ahead.ci95[0] < 86.5 < ahead.ci95[1]
    behind = estimate([15, 0, 20, 0, 5])
    assert behind.elo == pytest.approx(-ahead.elo) and behind.los == pytest.approx(1 - ahead.los)
    sweep = estimate([0, 0, 0, 0, 53])  # the virtual pair keeps it finite
    assert 500 < sweep.elo < 1000 and 400 < sweep.ci95[0] < sweep.elo and sweep.los > 0.999
    split = estimate([0, 0, 30, 0, 0])  # every pair split: still a width
    assert split.elo == 0 and 20 < split.ci95[1] < 60
    assert math.isnan(estimate([0, 0, 0, 0, 0]).elo)
    with pytest.raises(ValueError, match="five non-negative"):
        estimate([1, 2, 3])


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((20.0, 0.0, 0.05, 0.05), "elo0 < elo1"),
        ((0.0, 2000.0, 0.05, 0.05), "elo0 < elo1"),
        ((0.0, 20.0, 0.0, 0.05), "alpha"),
        ((0.0, 20.0, 0.05, 0.6), "beta"),
        ((0.0, math.inf, 0.05, 0.05), "elo1 must be a finite number"),
        ((0.0, 20.0, "0.05", 0.05), "alpha must be a finite number"),
    ],
)
def test_parameters_out_of_range_are_refused(args: tuple[object, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sprt.check_parameters(*args)  # type: ignore[arg-type]


def test_a_pair_distribution_has_the_score_it_is_made_for() -> None:
    for elo in (-100.0, 0.0, 35.0):
        for split in (None, 0.2, 0.6):
            probs = pair_distribution(elo, split)
            assert probs.sum() == pytest.approx(1.0) and (probs >= 0).all()
            assert float((probs * sprt.PAIR_SCORES).sum()) == pytest.approx(elo_to_score(elo))
    with pytest.raises(ValueError, match="no pair distribution"):
        pair_distribution(600.0, 0.9)
