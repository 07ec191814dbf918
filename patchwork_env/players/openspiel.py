"""Bots both ways between the project and OpenSpiel (the ``openspiel`` extra; the game is
``patchwork_env.envs.openspiel``'s ``python_patchwork``):

* ``AgentBot``: any of the project's agents (a spec such as ``"mcts:sims=400"`` or ``"az"``, an
  agent object or a function ``GameState -> action``) as a ``pyspiel.Bot``, so that OpenSpiel's
  ``evaluate_bots`` and anything else that takes bots plays it;
* ``OpenSpielMCTSAgent``: OpenSpiel's C++ ``MCTSBot`` with random rollouts
  (``pyspiel.RandomRolloutEvaluator``) as the project's ``Agent``, the ``openspiel-mcts`` spec, so
  that the arena and the ladder play it (``patchwork ladder openspiel-mcts:sims=400``).

    >>> import numpy as np, pyspiel
    >>> from patchwork_env.players.openspiel import AgentBot, OpenSpielMCTSAgent
    >>> from patchwork_env.envs.openspiel import GAME_NAME
    >>> game = pyspiel.load_game(GAME_NAME)
    >>> bots = [AgentBot("greedy"), OpenSpielMCTSAgent(sims=10).bot(game, seed=0)]
    >>> returns = pyspiel.evaluate_bots(game.new_initial_state(), bots, 0)
    >>> sorted(returns)
    [-1.0, 1.0]
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from patchwork_env.core.state import GameState
from patchwork_env.envs.agent import Agent, Opponent, resolve_opponent
from patchwork_env.envs.openspiel import GAME_NAME, game_state_of  # first: without OpenSpiel, its ImportError

import pyspiel  # isort: skip

__all__ = ["MAX_MEMORY_MB", "AgentBot", "OpenSpielMCTSAgent", "load_game"]

#: the tree size at which OpenSpiel's MCTSBot collects garbage (its ``max_memory_mb``)
MAX_MEMORY_MB = 1000
_MAX_INT = 2**31 - 1  # OpenSpiel's seeds and simulation counts are C++ ints


@functools.cache
def load_game(leather_layout: str = "revised") -> Any:
    """``python_patchwork`` with this leather layout (loaded once per process)."""
    return pyspiel.load_game(GAME_NAME, {"leather_layout": leather_layout})


class AgentBot(pyspiel.Bot):  # type: ignore[misc]
    """One of the project's agents as an OpenSpiel bot of ``python_patchwork``: ``step`` hands the
    engine's ``GameState`` to ``agent.act`` with the bot's own generator (seeded by ``seed``);
    ``restart_at`` resets an agent that keeps a tree between moves."""

    def __init__(self, agent: Opponent, seed: int | None = None) -> None:
        pyspiel.Bot.__init__(self)
        self.agent: Agent = resolve_opponent(agent)
        self.rng = np.random.default_rng(seed)

    def step(self, state: Any) -> int:
        return int(self.agent.act(game_state_of(state), self.rng))

    def restart_at(self, state: Any) -> None:
        reset = getattr(self.agent, "reset", None)
        if callable(reset):
            reset()

    def inform_action(self, state: Any, player_id: int, action: int) -> None:
        """Nothing to do: the agent reads the position it is given at its next move."""

    def provides_policy(self) -> bool:
        return False


class OpenSpielMCTSAgent:
    """OpenSpiel's MCTS (``pyspiel.MCTSBot``: UCT with ``c``, ``rollouts`` random rollouts per
    leaf, ``solve``: MCTS-Solver at proven nodes) as an ``Agent``: ``sims`` simulations a move
    (400 unless ``time`` is given), or ``time`` seconds (with ``sims`` too: whichever ends first).
    Each move searches a new tree from the position (as ``MCTSBot.step`` does), seeded from the
    arena's generator, so a seeded arena replays the same games; ``last_sims`` and ``last_visits``
    are the search's statistics, as the project's searches keep them."""

    def __init__(
        self,
        sims: int | None = None,
        time: float | None = None,
        rollouts: int = 1,
        c: float = 2.0,
        solve: bool = True,
    ) -> None:
        if sims is not None and sims < 1:
            raise ValueError(f"openspiel-mcts: sims must be >= 1, got {sims}")
        if time is not None and not time > 0:
            raise ValueError(f"openspiel-mcts: time must be > 0 seconds, got {time}")
        if rollouts < 1 or not c >= 0:
            raise ValueError(f"openspiel-mcts: need rollouts >= 1 and c >= 0, got rollouts={rollouts}, c={c}")
        self.sims = 400 if sims is None and time is None else sims
        self.time = time
        self.rollouts = int(rollouts)
        self.c = float(c)
        self.solve = bool(solve)
        budget = [f"sims={self.sims}"] if self.sims is not None else []
        budget += [f"time={self.time:g}"] if self.time is not None else []
        self.name = "openspiel-mcts:" + ",".join(budget)
        self.last_sims = 0
        self.last_visits: list[tuple[int, int]] = []

    def bot(self, game: Any, seed: int) -> Any:
        """OpenSpiel's ``MCTSBot`` with these settings, for ``game`` (a ``python_patchwork``). Play it
        through ``pyspiel.evaluate_bots`` or its ``mcts_search``: in OpenSpiel 2.0.2 its ``step``,
        called from Python on a game written in Python, crashes the interpreter (``docs/openspiel.md``)."""
        evaluator = pyspiel.RandomRolloutEvaluator(self.rollouts, seed)
        sims = _MAX_INT if self.sims is None else self.sims  # a time budget alone: the time ends the search
        wall = -1.0 if self.time is None else self.time  # OpenSpiel's "no limit"
        return pyspiel.MCTSBot(game, evaluator, self.c, sims, MAX_MEMORY_MB, self.solve, seed, False,
                               max_wall_clock_time=wall)  # fmt: skip

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        if state.is_terminal:
            raise ValueError(f"{self.name}: the game is over, there is no action to take")
        game = load_game(state.leather_layout)
        bot = self.bot(game, int(rng.integers(_MAX_INT)))
        root = bot.mcts_search(game.new_initial_state(state.to_notation()))
        self.last_sims = int(root.explore_count)
        self.last_visits = [(int(child.action), int(child.explore_count)) for child in root.children]
        return int(root.best_child().action)
