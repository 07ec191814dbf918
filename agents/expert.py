"""The settings of expert iteration's expert (``SearchSettings``): the ``az`` search's own settings
(``SearchConfig``, the ``search:`` group) and how its labels are made. Declared once, bounds beside
each field, and light (no torch, no rules): ``agents.exit`` labels with them, and ``train.exit``'s
config (``train.config.ExItConfig``) derives from them, so that its ``--help`` reads them without
loading the search."""

from __future__ import annotations

from dataclasses import dataclass, field

from patchwork_env.core.bounds import bounded, field_bounds, field_problem, one_of, out_of_bounds
from patchwork_env.players.search_config import SearchConfig

TARGETS = ("policy", "visits")


@dataclass
class SearchSettings:
    """The expert: the ``az`` agent's search (``search``, with ``rollouts`` greedy rollouts per valued
    leaf), ``search_batch`` positions searched together, and what its label is (``TARGETS``).
    With ``unsure_sims`` (0: off), positions whose label's two largest kinds of move are within
    ``unsure_margin`` of each other are searched again with that many simulations."""

    search: SearchConfig = field(default_factory=lambda: SearchConfig(sims=100, expand=4))
    """The labelling search (the ``az`` agent's settings; ``search.sims`` simulations per position)."""
    rollouts: int = bounded(4, 1, 1000)
    """Greedy rollouts per valued leaf of the search (``az:rollouts``; the leaf value is theirs alone)."""
    target: str = one_of("policy", *TARGETS)
    """The label: ``policy``, the search's improved policy (Gumbel: softmax(logit + sigma(completed
    Q))), or ``visits``, its root visit shares."""
    search_batch: int = bounded(64, 1, 65_536)
    """Positions searched together (one forward pass per simulation step for all of them), in this
    process, or with ``backend=ray`` as one Ray task."""
    unsure_sims: int = bounded(0, 0, 100_000)
    """Positions whose label is unsure (its two largest kinds of move within ``unsure_margin``) are
    searched again with this many simulations (more than ``search.sims``), that label kept; 0: off."""
    unsure_margin: float = bounded(0.2, 0.0, 1.0)
    """With ``unsure_sims``: the gap between a label's two largest kinds of move below which it is unsure."""

    def search_config(self) -> SearchConfig:
        """The labelling search's settings, once every setting is checked: each within its bounds,
        and with ``unsure_sims`` more simulations than ``search.sims`` and an ``unsure_margin`` above
        0 (else a ``ValueError`` naming the first that is not)."""
        problem = field_problem(self)
        if problem:
            raise ValueError(problem)
        self.search.validate(prefix="search.")
        if self.unsure_sims:
            deeper = (self.search.sims + 1, field_bounds(SearchSettings, "unsure_sims")[1])
            for name, bounds, low_open in (("unsure_sims", deeper, False), ("unsure_margin", (0.0, 1.0), True)):
                value = getattr(self, name)
                problem = out_of_bounds(value, bounds, low_open=low_open)
                if problem:
                    raise ValueError(f"{name} {problem}, got {value!r}")
        return self.search
