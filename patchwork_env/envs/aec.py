"""Patchwork as a PettingZoo AEC environment: two agents, ``player_0`` and ``player_1``, whose turns
do not alternate (the player behind on the time track moves, so one agent may act several times in
a row); observations from the observer's seat with the legal-action mask; ``Discrete(2026)``.

    >>> from patchwork_env import env
    >>> e = env(reward="win")
    >>> e.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = e.last()
    >>> obs["observation"].shape, int(obs["action_mask"].sum()) > 0
    ((1452,), True)

``env()`` wraps ``raw_env`` as PettingZoo's classic environments are wrapped (illegal actions lose
the game by default; ``raw_env`` raises). The documentation page (observation table, actions,
rewards, options, illegal actions) is ``docs/environments.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from patchwork_env.core import rules
from patchwork_env.core.actions import as_action_id, game_over
from patchwork_env.core.rules import NUM_ACTIONS, legal_mask_into
from patchwork_env.core.state import GameState, IllegalActionError, new_game
from patchwork_env.envs import edge
from patchwork_env.envs.edge import REWARD_KINDS, SCORE_REWARD_SCALE, IllegalActionMode, RewardKind, final_rewards
from patchwork_env.envs.observation import OBS_DIM, observation_bounds, observe_into

__all__ = [
    "AGENTS",
    "RESET_OPTIONS",
    "REWARD_KINDS",
    "SCORE_REWARD_SCALE",
    "CheckActionWrapper",
    "env",
    "final_rewards",
    "raw_env",
]

AGENTS: tuple[str, str] = ("player_0", "player_1")
_SEAT = {"player_0": 0, "player_1": 1}
RESET_OPTIONS = ("circle", "first_player")

Observation = dict[str, npt.NDArray[Any]]


class CheckActionWrapper(wrappers.BaseWrapper):  # type: ignore[misc]
    """``AssertOutOfBoundsWrapper`` with the project's action check (``actions.as_action_id``):
    ``IllegalActionError`` (out of range) for anything but an integer in 0..2025, where the
    assertion would raise ``AssertionError``, ``OverflowError`` or accept ``True`` as action 1."""

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if action is None and (self.terminations[agent] or self.truncations[agent]):
            super().step(action)
        else:
            super().step(as_action_id(action))


class OrderEnforcing(wrappers.OrderEnforcingWrapper):  # type: ignore[misc]
    """PettingZoo's ``OrderEnforcingWrapper``, except that ``step``, ``render``, ``observe``,
    ``state`` and ``agent_iter`` before ``reset()`` are a ``RuntimeError`` saying so (as in the other
    front-ends; PettingZoo raises ``AssertionError``) and an action once every agent is done a
    ``GameOverError`` (PettingZoo warns and ignores it)."""

    def _check_reset(self, call: str) -> None:
        if not self._has_reset:
            raise RuntimeError(f"call reset() before {call}()")

    def step(self, action: Any) -> None:
        self._check_reset("step")
        if not self.agents and action is not None:
            raise game_over()
        super().step(action)

    def render(self) -> str | npt.NDArray[np.uint8] | None:
        self._check_reset("render")
        return super().render()  # type: ignore[no-any-return]

    def observe(self, agent: str) -> dict[str, npt.NDArray[Any]] | None:
        self._check_reset("observe")
        return super().observe(agent)  # type: ignore[no-any-return]

    def state(self) -> npt.NDArray[np.float32]:
        self._check_reset("state")
        return super().state()  # type: ignore[no-any-return]

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        self._check_reset("agent_iter")
        return super().agent_iter(max_iter)


def env(illegal_action: IllegalActionMode = edge.DEFAULT_ILLEGAL_ACTION, **kwargs: Any) -> AECEnv:
    """The Patchwork AEC environment wrapped like PettingZoo's classic environments
    (``illegal_action``: ``edge``'s table, and "Illegal actions" in ``docs/environments.md``)."""
    e: AECEnv = raw_env(illegal_action=illegal_action, **kwargs)
    e = CheckActionWrapper(e)
    e = OrderEnforcing(e)
    return e


def observation_space() -> spaces.Dict:
    """A new ``Dict`` space of one agent's observation (its table: ``docs/environments.md``,
    "Observation space"; the layout: ``observation``)."""
    low, high = observation_bounds()
    return spaces.Dict(
        {
            "observation": spaces.Box(low=low, high=high, shape=(OBS_DIM,), dtype=np.float32),
            "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8),
        }
    )


class raw_env(AECEnv):  # type: ignore[misc]
    """Patchwork as a PettingZoo AEC environment (documentation: ``docs/environments.md``, "The AEC
    environment"; this module's docstring shows its use)."""

    metadata = {  # noqa: RUF012 (PettingZoo's convention: a class attribute)
        "render_modes": list(edge.RENDER_MODES),
        "name": "patchwork_v0",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(
        self,
        leather_layout: str = "revised",
        reward: RewardKind = "win",
        render_mode: str | None = None,
        illegal_action: IllegalActionMode = "raise",
    ) -> None:
        super().__init__()
        self.illegal_action = edge.check_illegal_action(illegal_action)
        self.leather_layout = rules.check_leather_layout(leather_layout)
        self.reward_kind = edge.check_reward_kind(reward)
        self.render_mode = edge.check_render_mode(render_mode)
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        self.observation_spaces = {a: observation_space() for a in AGENTS}
        self.action_spaces: dict[str, spaces.Space[Any]] = {a: spaces.Discrete(NUM_ACTIONS) for a in AGENTS}
        low, high = observation_bounds()
        self.state_space = spaces.Box(low=low, high=high, shape=(OBS_DIM,), dtype=np.float32)
        self._rng = np.random.default_rng()
        self._game: GameState = new_game(self._rng, leather_layout=leather_layout)
        self._obs: list[Observation | None] = [None, None]
        self._over = False
        self._start(self._game)

    # --- spaces --------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Dict:
        return self.observation_spaces[agent]  # type: ignore[no-any-return]

    def action_space(self, agent: str) -> spaces.Space[Any]:  # Discrete(2026); generic only in gymnasium < 1.3
        return self.action_spaces[agent]

    # --- episodes ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new deal: see "Options" in the module documentation."""
        seed = edge.check_seed(seed)
        opts = edge.read_reset_options(options, RESET_OPTIONS)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        game = new_game(
            self._rng,
            circle=opts.get("circle"),
            first_player=opts.get("first_player"),
            leather_layout=self.leather_layout,
        )
        self._start(game)

    def set_state(self, state: GameState) -> None:
        """Start a new episode from ``state`` (an unfinished position; its own leather layout
        and turn order apply). Rewards, terminations and infos start afresh."""
        if not isinstance(state, GameState):
            raise TypeError(f"set_state takes a patchwork_env.GameState, got {type(state).__name__}")
        if state.is_terminal:
            raise ValueError("set_state needs an unfinished position: this game is already over")
        self._start(state)

    @property
    def game_state(self) -> GameState:
        """The current position (an immutable ``GameState``)."""
        return self._game

    def _start(self, game: GameState) -> None:
        self.agents = list(AGENTS)
        self.rewards = {a: 0.0 for a in AGENTS}
        self._cumulative_rewards = {a: 0.0 for a in AGENTS}
        self.terminations = {a: False for a in AGENTS}
        self.truncations = {a: False for a in AGENTS}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in AGENTS}
        self._skip_agent_selection = None
        self._set_game(game)

    def _set_game(self, game: GameState) -> None:
        self._game = game
        self._obs = [None, None]
        self._over = game.is_terminal
        if not self._over:
            self.agent_selection = AGENTS[game.current_player]

    # --- acting --------------------------------------------------------------------------------
    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:  # PettingZoo's dead step takes None only
                raise game_over()
            self._was_dead_step(action)
            return
        try:
            game = self._game.step(action)  # IllegalActionError if illegal or out of range
        except IllegalActionError as exc:
            self._forfeit(agent, edge.on_illegal_action(self.illegal_action, exc))
            return
        # PettingZoo's bookkeeping: the actor has now seen its reward; this step's rewards are
        # added to what each agent accumulates until it is selected (several moves in a row work).
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        self._set_game(game)
        if self._over:
            self._finish(game)
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _forfeit(self, agent: str, reason: str) -> None:
        """``illegal_action="lose"``: the offender's move ends the game, -1 for it and 0 for the other."""
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        self.rewards[agent] = edge.ILLEGAL_ACTION_REWARD
        self.terminations = {a: True for a in self.agents}
        self.infos[agent] = {"illegal_action": True}
        self._over = True
        self._accumulate_rewards()

    def _finish(self, game: GameState) -> None:
        r0, r1 = final_rewards(game, self.reward_kind)
        self.rewards[AGENTS[0]] = r0
        self.rewards[AGENTS[1]] = r1
        self.terminations = {a: True for a in self.agents}
        scores = game.scores()
        winner = int(game.winner or 0)
        for seat, a in enumerate(AGENTS):
            self.infos[a] = {"score": scores[seat], "opponent_score": scores[1 - seat], "winner": winner}

    def observe(self, agent: str) -> Observation:
        try:
            seat = _SEAT[agent]
        except KeyError:
            raise ValueError(f"unknown agent {agent!r}: agents are {AGENTS}") from None
        cached = self._obs[seat]
        if cached is None:  # built once per position and seat, straight from the compiled rules
            s = self._game.array()
            obs = np.empty(OBS_DIM, dtype=np.float32)
            observe_into(s, seat, obs)
            mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
            if not self._over and agent == self.agent_selection:
                legal_mask_into(s, mask)
            cached = {"observation": obs, "action_mask": mask}
            self._obs[seat] = cached
        return cached

    def state(self) -> npt.NDArray[np.float32]:
        """The global view: the observation from player_0's seat. The game is one of perfect
        information, so this holds everything; the exact position is ``game_state``."""
        out = np.empty(OBS_DIM, dtype=np.float32)
        observe_into(self._game.array(), 0, out)
        return out

    # --- rendering -----------------------------------------------------------------------------
    def render(self) -> str | npt.NDArray[np.uint8] | None:
        return edge.render_mode_output(self._game, self.render_mode)

    def close(self) -> None:
        """Nothing to release (no window is ever opened)."""

    # --- copying -------------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_obs"] = [None, None]  # caches are rebuilt on demand
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
