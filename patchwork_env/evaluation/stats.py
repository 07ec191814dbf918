"""The statistics of the arena: Wilson score intervals for win rates and a maximum-likelihood Elo
ladder (Bradley-Terry) with confidence intervals from the Fisher information.

Win rates. For ``w`` wins in ``n`` games the Wilson score interval at z = 1.96 is used instead of
the normal approximation ``p +- z sqrt(p (1 - p) / n)``, which collapses to a zero-width interval
at 0% or 100% (common here: greedy against random) and leaves [0, 1] for small ``n``.

Elo. Player ``i`` beats ``j`` with probability ``1 / (1 + 10 ** ((r_j - r_i) / 400))``. The ratings
maximise the likelihood of all games played, with the anchor fixed at 0 (``random`` in the arena).
A perfect score (say 100-0) has no finite maximum, so every pair that played also gets one
virtual drawn game (half a win each way), the prior of BayesElo-style ladders: it keeps ratings
finite and barely moves them once a pair has more than a few dozen games. The 95% interval of
each rating is ``r +- 1.96 * se``, with ``se`` from the inverse of the observed Fisher information
(the negative Hessian of the log-likelihood) with the anchor held fixed: it is the uncertainty of
the rating *relative to the anchor*.

One fit serves both uses (``fit_strengths``): the arena's and the ladder-building round robins,
which fit every player but the anchor (``fit_elo``), and a rating on the ladder, which fits one
agent against rungs held at their ratings (``ladder.fit_rating``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
ELO_SCALE = 400.0 / math.log(10.0)  # Elo points per unit of natural log-odds
VIRTUAL_DRAWS = 1.0
MAX_STEP = 2.0  # the largest Newton step of the fit, in natural log-odds (about 350 Elo)


def wilson_interval(wins: float, games: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a win rate (``(0, 1)`` when no game was played)."""
    if games < 0 or wins < 0 or wins > games:
        raise ValueError(f"need 0 <= wins <= games, got wins={wins}, games={games}")
    if games == 0:
        return 0.0, 1.0
    p = wins / games
    denom = 1.0 + z * z / games
    centre = (p + z * z / (2 * games)) / denom
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / denom
    # mathematically low <= p <= high; clamping keeps that true in floating point (p = 0 or 1)
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def format_win_rate(rate: float, ci95: tuple[float, float]) -> str:
    """A win rate and its interval as every command of the project prints it: ``90.0% [59.6, 98.2]``."""
    return f"{100 * rate:.1f}% [{100 * ci95[0]:.1f}, {100 * ci95[1]:.1f}]"


@dataclass(frozen=True)
class Rating:
    """An Elo rating relative to the anchor, with its 95% interval."""

    elo: float
    low: float
    high: float


def fit_elo(
    names: Sequence[str],
    results: Sequence[tuple[int, int, float, float]],
    anchor: int = 0,
    virtual_draws: float = VIRTUAL_DRAWS,
) -> dict[str, Rating]:
    """Maximum-likelihood Elo ratings. ``results`` holds ``(i, j, wins_i, wins_j)`` per pair of
    players (indices into ``names``); ``anchor`` is fixed at 0. Raises ValueError when some
    player is not connected to the anchor by games."""
    elo, cov = fit_elo_covariance(names, results, anchor, virtual_draws)
    half = Z95 * np.sqrt(np.diag(cov))
    return {
        names[i]: Rating(float(elo[i]), float(elo[i] - half[i]), float(elo[i] + half[i])) for i in range(len(names))
    }


def fit_elo_covariance(
    names: Sequence[str],
    results: Sequence[tuple[int, int, float, float]],
    anchor: int = 0,
    virtual_draws: float = VIRTUAL_DRAWS,
) -> tuple[np.ndarray, np.ndarray]:
    """``fit_elo``'s ratings as an array (Elo, anchor = 0) and their covariance matrix (Elo
    squared; the anchor's row and column are 0): the variance of a difference ``r_i - r_j`` is
    ``cov[i, i] + cov[j, j] - 2 cov[i, j]``."""
    k = len(names)
    if not 0 <= anchor < k:
        raise ValueError(f"anchor must index one of the {k} players, got {anchor}")
    wins = np.zeros((k, k))
    for i, j, wi, wj in results:
        if i == j or not (0 <= i < k and 0 <= j < k):
            raise ValueError(f"a result must name two different players among {k}, got ({i}, {j})")
        wins[i, j] += wi
        wins[j, i] += wj
        if wi + wj > 0:
            wins[i, j] += virtual_draws / 2
            wins[j, i] += virtual_draws / 2
    _check_connected(names, wins + wins.T, anchor)
    theta, cov, _ = fit_strengths(wins, np.zeros(k), [i for i in range(k) if i != anchor])
    return theta * ELO_SCALE, cov * ELO_SCALE**2


def fit_strengths(
    wins: np.ndarray, start: np.ndarray, free: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The maximum-likelihood Bradley-Terry strengths (natural log-odds) of the players ``free``,
    every other player held at its ``start``: ``wins[i, j]`` counts i's wins over j, virtual draws
    included. Newton's method on the concave log-likelihood, each step at most ``MAX_STEP`` long.

    Returns the strengths, their covariance (the inverse of the observed Fisher information over
    the free players; 0 in the rows and columns of the held ones) and the Fisher information of
    each pair at the optimum, ``games * p * (1 - p)``."""
    games = wins + wins.T
    free = list(free)
    theta = np.array(start, dtype=np.float64)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j]: i beats j
        grad = (wins - games * p).sum(axis=1)
        info = games * p * (1 - p)  # Fisher information, off-diagonal with a minus sign
        hess = np.diag(info.sum(axis=1)) - info
        step = np.linalg.solve(hess[np.ix_(free, free)], grad[free])
        size = float(np.max(np.abs(step)))
        theta[free] += step * min(1.0, MAX_STEP / size) if size > 0 else step
        if size < 1e-10:
            break
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    info = games * p * (1 - p)
    hess = np.diag(info.sum(axis=1)) - info
    cov = np.zeros((len(theta), len(theta)))
    cov[np.ix_(free, free)] = np.linalg.inv(hess[np.ix_(free, free)])
    return theta, cov, info


def _check_connected(names: Sequence[str], games: np.ndarray, anchor: int) -> None:
    seen = {anchor}
    todo = [anchor]
    while todo:
        i = todo.pop()
        for j in np.flatnonzero(games[i] > 0).tolist():
            if j not in seen:
                seen.add(j)
                todo.append(j)
    missing = [names[i] for i in range(len(names)) if i not in seen]
    if missing:
        raise ValueError(f"no games connect {missing} to the anchor {names[anchor]!r}: their Elo is undefined")
