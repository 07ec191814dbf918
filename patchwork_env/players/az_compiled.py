"""``az`` without a network (the registry's default ``az``): the agent around the compiled search
(``patchwork_env.players.compiled_search``, the algorithm), no torch. ``make_tree_agent`` reads an
``az:...`` spec's settings when ``network_free`` says they need no network; the agent with a network
is ``patchwork_env.players.az_network``'s."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from patchwork_env.core.state import GameState
from patchwork_env.players.batched_search import FIRST_PLAN, GREEDY_PRIOR_TEMP, TREE_SIMS, SearchConfig, TimeBudget
from patchwork_env.players.compiled_search import CompiledSearch
from patchwork_env.players.search_config import PLACEMENT_WIDTH
from patchwork_env.players.shipped import value_model_path
from patchwork_env.players.value_model import ValueModel, load_value_model


class TreeAgent:
    """``az`` with the compiled search (``CompiledSearch``): no network, so no torch. ``sims``
    simulations per move or a ``time`` budget (``batched_search.TimeBudget``, as ``AZAgent``'s);
    ``reuse`` keeps the played move's subtree; ``last_visits`` are the root's visits, as ``mcts``'s,
    and ``last_policy`` the search's policy target (a distillation teacher's target, ``agents.distill``)."""

    def __init__(
        self,
        config: SearchConfig,
        value_model: ValueModel,
        prior_temp: float = GREEDY_PRIOR_TEMP,
        time: float | None = None,
        reuse: bool = True,
        name: str = "az",
        width: int = 1,
    ) -> None:
        self.config = config
        self.value_model = value_model
        self.prior_temp = prior_temp
        self.time = time
        self.reuse = reuse
        self.name = name
        self.width = width
        self.budget = TimeBudget(config.sims, time)
        self.search = CompiledSearch(config, value_model, prior_temp, width=width, reuse=reuse)
        self.last_visits: list[tuple[int, int]] = []
        self.last_policy: npt.NDArray[np.float32] | None = None

    @property
    def last_sims(self) -> int:
        """Simulations run for the last decision, as ``mcts``'s (``search_stats.search_stats``)."""
        return self.search.last_sims

    def reset(self) -> None:
        """Forget the kept subtree (the arena calls this before each game)."""
        self.search.reset()

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        """The search's move (``rng`` is not drawn from: the search has no noise)."""
        if state.is_terminal:
            raise ValueError(f"{self.name}: the game is over, there is no action to take")
        sims, deadline = self.budget.plan()
        result = self.search.run(state.array(), sims, deadline)
        self.budget.measure(self.search.last_sims, self.search.last_sim_seconds)
        self.last_visits = list(zip(result.actions.tolist(), result.visits.tolist(), strict=True))
        self.last_policy = result.policy
        return result.action

    # pickled for the arena's worker processes: the settings, not the tree
    def __getstate__(self) -> dict[str, Any]:
        keys = ("config", "value_model", "prior_temp", "time", "reuse", "name", "width")
        return {key: getattr(self, key) for key in keys}

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.__init__(**data)  # type: ignore[misc]


def network_free(value: object, prior: str, rollouts: int, expand: int, leaves: int) -> bool:
    """Whether ``az``'s settings need no network, so that the compiled search (``TreeAgent``) runs
    them: a value model's leaves (``value``: its file, None for none), the greedy prior, no
    rollouts, ``expand=1`` and ``leaves=1``."""
    return value is not None and prior == "greedy" and rollouts == 0 and expand == 1 and leaves == 1


def make_tree_agent(
    value: str,
    sims: int | None = None,
    time: float | None = None,
    reuse: bool = True,
    ptemp: float = GREEDY_PRIOR_TEMP,
    width: int | None = None,
    **search: Any,
) -> TreeAgent:
    """``az`` with network-free settings (``network_free``): the value model ``value`` (a shipped
    version or a file, ``shipped.value_model_path``) and a ``SearchConfig`` of ``search``; ``sims``
    unless given: ``TREE_SIMS``, or with ``time`` the first move's plan ``FIRST_PLAN``; ``width``
    candidates per kind of move unless given: ``PLACEMENT_WIDTH`` for a model with a placement
    head (its prior ranks placements), else 1 (greedy's best placement of each patch)."""
    path = value_model_path(value)
    if path is None:
        raise ValueError("the compiled search needs a value model (value=...)")
    model = load_value_model(path)
    if sims is None:
        sims = TREE_SIMS if time is None else FIRST_PLAN
    if width is None:
        width = PLACEMENT_WIDTH if model.has_placement else 1
    config = SearchConfig(sims=sims, **search)
    config.validate()
    return TreeAgent(config, model, ptemp, time=time, reuse=reuse, width=width)
