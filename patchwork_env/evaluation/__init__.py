"""Measuring strength (above the players, whom it plays): the arena (paired deals, both seats, Wilson
intervals, an Elo fit), the ladder, where games run (local processes or Ray) and the results files.
``play_pairs(a, b, num_pairs)`` plays two agents; ``round_robin(agents, num_pairs)`` plays every pair
and fits their Elo. The players themselves belong in ``patchwork_env.players``.

The names below load on first use (as ``patchwork_env``'s do), so that a light module of this
package (``backend``, whose ``BACKENDS`` the command lines and trainer configs read) loads neither
the engine nor numba.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchwork_env.evaluation.arena import PairResult, TournamentResult, play_pairs, round_robin
    from patchwork_env.evaluation.stats import Rating, fit_elo, wilson_interval

_EXPORTS = {
    "patchwork_env.evaluation.arena": ("PairResult", "TournamentResult", "play_pairs", "round_robin"),
    "patchwork_env.evaluation.stats": ("Rating", "fit_elo", "wilson_interval"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = ["PairResult", "Rating", "TournamentResult", "fit_elo", "play_pairs", "round_robin", "wilson_interval"]


def __getattr__(name: str) -> Any:
    """The public names, imported from their module on first use."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'patchwork_env.evaluation' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))
