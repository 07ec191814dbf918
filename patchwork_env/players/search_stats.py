"""What a search agent tells about its last decision, under one name for every search: ``mcts``,
``az`` (the compiled search and the network's) and ``openspiel-mcts`` each keep ``last_sims``, the
simulations the last decision ran, and ``last_visits``, the (root action, visits) pairs of its
root; ``search_stats(agent)`` reads both from any agent.

    >>> import numpy as np
    >>> from patchwork_env import make_agent, new_game, search_stats
    >>> agent = make_agent("mcts:sims=20")
    >>> action = agent.act(new_game(seed=0), np.random.default_rng(0))
    >>> stats = search_stats(agent)
    >>> stats.sims, sum(visits for _, visits in stats.visits), action in dict(stats.visits)
    (20, 20, True)
    >>> search_stats(make_agent("greedy")) is None     # no search
    True
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["SearchStats", "search_stats"]


class SearchStats(NamedTuple):
    """The last decision of a search agent."""

    #: simulations the decision ran (0 when a single candidate needed no search)
    sims: int
    #: (root action, visits) of every root candidate the search kept
    visits: tuple[tuple[int, int], ...]


def search_stats(agent: Any) -> SearchStats | None:
    """``agent``'s last decision (``last_sims``, ``last_visits``), or None for an agent that does
    not search."""
    sims, visits = getattr(agent, "last_sims", None), getattr(agent, "last_visits", None)
    if sims is None or visits is None:
        return None
    return SearchStats(int(sims), tuple((int(a), int(n)) for a, n in visits))
