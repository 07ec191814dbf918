"""The statistics of ``patchwork compare``: a sequential probability ratio test on game pairs.

The unit is the pair: one deal played twice, the seats swapped. Its score for agent A, the
candidate (``patchwork compare A B`` asks whether A is better than B, in the order chess engine
testers write ``new base``), is 0, 0.5, 1, 1.5 or 2 (a draw counts half; Patchwork has none, so its
pairs fall in 0, 1 and 2), and a run's results are the five counts of those scores, the pentanomial
model of Fishtest and fastchess. The pair, not the game, is the independent sample: the two games
of a deal share its luck, and counting them as two samples would misstate the variance (too wide an
interval when the seat decides).

The test (``llr``) is the generalized SPRT on logistic Elo that Fishtest runs: H0 "A is ``elo0``
stronger than B" against H1 "A is ``elo1`` stronger", where an Elo difference ``e`` means an
expected score per game of ``L(e) = 1 / (1 + 10 ** (-e / 400))``. For each hypothesis the pair
distribution of largest likelihood with that expected score is fitted to the observed one (M. Van
den Bergh, *Comments on normalized Elo*, proposition 1.1: ``p_i = phat_i / (1 + theta (a_i - s))``
with ``theta`` the root of ``sum phat_i (a_i - s) / (1 + theta (a_i - s)) = 0``), and the
log-likelihood ratio of the two fits is the statistic; it carries the pentanomial variance with it.
Empty cells count ``REGULARIZE`` pairs, as Fishtest's do, so that the fits exist from the first
pair. Wald's bounds: accept H1 ("A better") once the ratio reaches ``log((1 - beta) / alpha)``,
accept H0 ("not better") once it falls to ``log(beta / (1 - alpha))``. ``simulate`` plays the test
on simulated pairs (no games) to measure its error rates and its length.

The estimate (``estimate``) is the mean pair score with its standard error from the pentanomial
variance, turned into Elo, a 95% interval and the likelihood of superiority ``P(A > B)``
(``Phi(t)``), with one virtual pair half won and half lost by A added to the counts, as the arena's
Elo fit adds one virtual draw: a clean sweep stays finite and a run of split pairs keeps a width.
After a sequential stop the estimate leans a little toward the side that stopped the test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from patchwork_env.evaluation.stats import Z95

#: a pair's score for A, normalised to 0..1 (A's points in the pair / 2): the five pentanomial cells
PAIR_SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
CELLS = ("0", "0.5", "1", "1.5", "2")  # the same cells as A's points in the pair, as printed
REGULARIZE = 1e-3  # the count an empty cell gets in the test, as Fishtest's (keeps the fits defined)
VIRTUAL_PAIR = np.array([0.5, 0.0, 0.0, 0.0, 0.5])  # the estimate's prior: half a pair lost, half won
ELO0, ELO1, ALPHA, BETA = 0.0, 20.0, 0.05, 0.05  # the default test: is A at least a little stronger?
DEFAULT_MAX_PAIRS = 3000  # the default cap: at a true +10 Elo (the hardest case) 7% of runs reach it undecided
MAX_ELO = 1000.0  # the bounds of the test: a larger difference is settled by a handful of pairs anyway
SCORE_CLAMP = 1e-4  # an estimated score this close to 0 or 1 is reported at that distance (+-1600 Elo)

Counts = npt.NDArray[np.float64]


def elo_to_score(elo: float) -> float:
    """The expected score per game of a player ``elo`` logistic Elo stronger."""
    return float(1.0 / (1.0 + 10.0 ** (-elo / 400.0)))


def score_to_elo(score: float) -> float:
    """The logistic Elo difference of an expected score per game (clamped to ``SCORE_CLAMP``)."""
    s = min(max(score, SCORE_CLAMP), 1.0 - SCORE_CLAMP)
    return -400.0 * math.log10(1.0 / s - 1.0)


ELO_LIMIT = score_to_elo(1.0)  # the end of the estimate's scale (1600): a bound there is an open end


def bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's bounds of the log-likelihood ratio: below the first, H0; above the second, H1."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def check_parameters(elo0: float, elo1: float, alpha: float, beta: float) -> None:
    """``ValueError`` naming the first parameter of the test out of its range."""
    for name, value in (("elo0", elo0), ("elo1", elo1), ("alpha", alpha), ("beta", beta)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not -MAX_ELO <= elo0 < elo1 <= MAX_ELO:
        raise ValueError(f"need -{MAX_ELO:.0f} <= elo0 < elo1 <= {MAX_ELO:.0f} (Elo of A over B), got {elo0}, {elo1}")
    for name, value in (("alpha", alpha), ("beta", beta)):
        if not 0.0 < value <= 0.5:
            raise ValueError(f"{name} (an error rate) must be in (0, 0.5], got {value}")


def _theta(p: Counts, s: float) -> Counts:
    """The root ``theta`` of ``sum_i p_i d_i / (1 + theta d_i) = 0``, ``d = PAIR_SCORES - s``, for
    each row of ``p`` (the first axis holds the five cells, all positive; the others are runs or
    steps). The left side falls from +inf to -inf over ``(-1 / (1 - s), 1 / s)``: Newton's method,
    a step that would leave the bracket known so far replaced by bisection."""
    d = (PAIR_SCORES - s).tolist()
    lo = np.full(p.shape[1:], -1.0 / (1.0 - s))
    hi = np.full(p.shape[1:], 1.0 / s)
    theta = np.zeros(p.shape[1:])
    for _ in range(200):
        f = np.zeros_like(theta)
        slope = np.zeros_like(theta)
        for cell, di in zip(p, d, strict=True):  # five cells: sums over whole arrays, not a short last axis
            term = cell * di / (1.0 + theta * di)
            f += term
            slope -= term * di / (1.0 + theta * di)
        lo = np.where(f > 0, theta, lo)
        hi = np.where(f < 0, theta, hi)
        newton = theta - f / slope
        nxt = np.where((newton > lo) & (newton < hi), newton, 0.5 * (lo + hi))
        done = bool(np.all(np.abs(nxt - theta) <= 1e-12 * (1.0 + np.abs(theta))))
        theta = nxt
        if done:
            break
    return theta


def llr(counts: npt.ArrayLike, elo0: float, elo1: float) -> Counts:
    """The log-likelihood ratio of H1 (``elo1``) over H0 (``elo0``) for pentanomial ``counts``
    (the last axis: pairs in which A scored 0, 0.5, 1, 1.5, 2; any leading axes are independent
    runs or steps). 0 where no pair was played."""
    c = np.moveaxis(np.asarray(counts, dtype=np.float64), -1, 0)  # the cells first
    played = c.sum(axis=0)
    c = np.where(c > 0, c, REGULARIZE)
    p = c / c.sum(axis=0)
    s0, s1 = elo_to_score(elo0), elo_to_score(elo1)
    t0, t1 = _theta(p, s0), _theta(p, s1)
    total = np.zeros_like(t0)
    for cell, score in zip(p, PAIR_SCORES.tolist(), strict=True):
        total += cell * (np.log1p(t0 * (score - s0)) - np.log1p(t1 * (score - s1)))
    out: Counts = np.where(played > 0, c.sum(axis=0) * total, 0.0)
    return out


@dataclass(frozen=True)
class Estimate:
    """A's strength over B from the pairs: Elo with its 95% interval, the likelihood of
    superiority (the probability that A is the stronger), A's mean score per game."""

    elo: float
    ci95: tuple[float, float]
    los: float
    score: float


def estimate(counts: npt.ArrayLike) -> Estimate:
    """The estimate of one run's pentanomial ``counts`` (module docstring); NaN without pairs."""
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != (5,) or np.any(c < 0):
        raise ValueError(f"pentanomial counts are five non-negative numbers, got {c.tolist()}")
    if c.sum() == 0:
        return Estimate(math.nan, (math.nan, math.nan), math.nan, math.nan)
    c = c + VIRTUAL_PAIR
    n = float(c.sum())
    mean = float((c * PAIR_SCORES).sum() / n)
    se = math.sqrt(float((c * (PAIR_SCORES - mean) ** 2).sum()) / n / n)
    los = 0.5 * (1.0 + math.erf((mean - 0.5) / se / math.sqrt(2.0)))
    ci = (score_to_elo(mean - Z95 * se), score_to_elo(mean + Z95 * se))
    return Estimate(score_to_elo(mean) + 0.0, ci, los, mean)


def pair_distribution(elo: float, split: float | None = None) -> Counts:
    """The probabilities of A's pair scores when A is ``elo`` stronger, without draws: a share
    ``split`` of the pairs split 1-1 (default: as two independent games would, ``2 s (1 - s)``),
    the rest won or lost by A in both games so that A's expected score per game is ``L(elo)``."""
    s = elo_to_score(elo)
    if split is None:
        split = 2.0 * s * (1.0 - s)
    both, neither = s - split / 2.0, 1.0 - s - split / 2.0
    if not 0.0 <= split <= 1.0 or both < -1e-12 or neither < -1e-12:
        raise ValueError(f"no pair distribution has an expected score {s:.3f} and split pairs {split}")
    return np.array([max(neither, 0.0), 0.0, split, 0.0, max(both, 0.0)])


@dataclass(frozen=True)
class Simulation:
    """What ``simulate`` measured: the share of runs that accepted H1 ("better"), H0 ("not
    better") or reached the cap undecided, and the pairs each run played."""

    runs: int
    better: float
    not_better: float
    undecided: float
    pairs: npt.NDArray[np.int64]

    @property
    def mean_pairs(self) -> float:
        return float(self.pairs.mean())


def simulate(
    distribution: npt.ArrayLike,
    runs: int,
    max_pairs: int,
    elo0: float = ELO0,
    elo1: float = ELO1,
    alpha: float = ALPHA,
    beta: float = BETA,
    seed: int = 0,
    block: int = 128,
) -> Simulation:
    """``runs`` tests on pairs drawn from ``distribution`` (five probabilities of A's pair scores,
    ``pair_distribution``), each checked after every pair as ``compare`` checks it and stopped at
    a decision or after ``max_pairs``. Vectorised: every running test advances ``block`` pairs at
    a time, and each stops at the first pair of the block that crosses a bound."""
    check_parameters(elo0, elo1, alpha, beta)
    probs = np.asarray(distribution, dtype=np.float64)
    if probs.shape != (5,) or np.any(probs < 0) or not math.isclose(float(probs.sum()), 1.0, abs_tol=1e-9):
        raise ValueError(f"a pair distribution is five probabilities summing to 1, got {probs.tolist()}")
    lower, upper = bounds(alpha, beta)
    rng = np.random.default_rng(seed)
    counts = np.zeros((runs, 5))
    outcome = np.zeros(runs, dtype=np.int64)  # +1 H1, -1 H0, 0 undecided
    pairs = np.full(runs, max_pairs, dtype=np.int64)
    active = np.arange(runs)
    played = 0
    cumulative = np.cumsum(probs)
    while active.size and played < max_pairs:
        steps = min(block, max_pairs - played)
        cells = np.minimum(np.searchsorted(cumulative, rng.random((active.size, steps)), side="right"), 4)
        path = counts[active, None, :] + np.cumsum(np.eye(5)[cells], axis=1)  # (active, steps, 5)
        ratio = llr(path, elo0, elo1)
        crossed = (ratio >= upper) | (ratio <= lower)
        stops = crossed.any(axis=1)
        first = np.argmax(crossed, axis=1)
        stopped = active[stops]
        outcome[stopped] = np.where(ratio[stops, first[stops]] >= upper, 1, -1)
        pairs[stopped] = played + first[stops] + 1
        counts[active] = path[:, -1, :]
        active = active[~stops]
        played += steps
    return Simulation(
        runs,
        better=float(np.mean(outcome == 1)),
        not_better=float(np.mean(outcome == -1)),
        undecided=float(np.mean(outcome == 0)),
        pairs=pairs,
    )
