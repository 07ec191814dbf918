"""Measuring strength (above the players, whom it plays): the arena (paired deals, both seats, Wilson
intervals, an Elo fit), the ladder, where games run (local processes or Ray) and the results files.
``play_pairs(a, b, num_pairs)`` plays two agents; ``round_robin(agents, num_pairs)`` plays every pair
and fits their Elo; ``compare(a, b)`` plays pairs until a sequential test says whether A is better
than B. The players themselves belong in ``patchwork_env.players``.

The names below load on first use (as ``patchwork_env``'s do), so that a light module of this
package (``backend``, whose ``BACKENDS`` the command lines and trainer configs read) loads neither
the engine nor numba.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchwork_env.core.lazy import lazy_exports

if TYPE_CHECKING:
    from patchwork_env.evaluation.arena import PairResult, TournamentResult, play_pairs, round_robin
    from patchwork_env.evaluation.compare import CompareResult, compare
    from patchwork_env.evaluation.stats import Rating, fit_elo, wilson_interval

_EXPORTS = {
    "patchwork_env.evaluation.arena": ("PairResult", "TournamentResult", "play_pairs", "round_robin"),
    "patchwork_env.evaluation.stats": ("Rating", "fit_elo", "wilson_interval"),
    "patchwork_env.evaluation.compare": ("CompareResult", "compare"),
}

__all__ = [
    "CompareResult",
    "PairResult",
    "Rating",
    "TournamentResult",
    "compare",
    "fit_elo",
    "play_pairs",
    "round_robin",
    "wilson_interval",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
