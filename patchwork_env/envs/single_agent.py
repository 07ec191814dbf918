"""``SingleAgentEnv``: Patchwork as a one-player Gymnasium environment against a fixed opponent
that moves inside ``step``, so every transition the learner sees is its own (observation, reward,
the -1 of a loss the opponent sealed): the recipe for self-play with single-agent libraries.

>>> from patchwork_env import SingleAgentEnv
>>> env = SingleAgentEnv(opponent="random", seat=0)
>>> obs, info = env.reset(seed=1)
>>> obs.shape, info["action_mask"].shape, env.seat
((1452,), (2026,), 0)

``action_masks()`` is the legal mask for sb3-contrib's ``MaskablePPO``. Options and infos are
documented in ``docs/environments.md``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from patchwork_env.core import rules
from patchwork_env.core.actions import game_over
from patchwork_env.core.rules import NUM_ACTIONS
from patchwork_env.core.state import GameState, IllegalActionError, new_game
from patchwork_env.envs import edge
from patchwork_env.envs.agent import Opponent, resolve_opponent
from patchwork_env.envs.edge import ILLEGAL_ACTION_MODES, IllegalActionMode, RewardKind
from patchwork_env.envs.observation import OBS_DIM, observation_bounds, observe

__all__ = ["ILLEGAL_ACTION_MODES", "RESET_OPTIONS", "SingleAgentEnv", "resolve_opponent"]

RESET_OPTIONS = ("circle", "first_player", "seat")


class SingleAgentEnv(gymnasium.Env[npt.NDArray[np.float32], np.int64]):
    """Patchwork against a fixed opponent that moves inside ``step`` (see the module docs)."""

    metadata = {"render_modes": list(edge.RENDER_MODES), "render_fps": 2}  # noqa: RUF012 (Gymnasium's convention)

    def __init__(
        self,
        opponent: Opponent = "random",
        seat: int | None = None,
        reward: RewardKind = "win",
        leather_layout: str = "revised",
        illegal_action: IllegalActionMode = edge.DEFAULT_ILLEGAL_ACTION,
        render_mode: str | None = None,
    ) -> None:
        self.fixed_seat = edge.check_seat(seat)
        self.reward_kind = edge.check_reward_kind(reward)
        self.leather_layout = rules.check_leather_layout(leather_layout)
        self.illegal_action = edge.check_illegal_action(illegal_action)
        self.render_mode = edge.check_render_mode(render_mode)
        self.opponent = resolve_opponent(opponent)
        low, high = observation_bounds()
        self.observation_space = spaces.Box(low=low, high=high, shape=(OBS_DIM,), dtype=np.float32)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self._opponent_rng: np.random.Generator | None = None
        self._game: GameState | None = None
        self._seat = 0
        self._over = False

    # --- public state --------------------------------------------------------------------------
    @property
    def game_state(self) -> GameState:
        """The current position (after the opponent's replies)."""
        if self._game is None:
            raise RuntimeError("call reset() first")
        return self._game

    @property
    def seat(self) -> int:
        """The learner's seat (0 or 1) in the current episode."""
        return self._seat

    def set_opponent(self, opponent: Opponent) -> None:
        """Replace the opponent (takes effect at once; normally called between episodes)."""
        self.opponent = resolve_opponent(opponent)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Bool (2026,): the learner's legal actions now (all False once the game is over)."""
        if self._over:
            return np.zeros(NUM_ACTIONS, dtype=np.bool_)
        return self.game_state.legal_action_mask().copy()

    # --- the episode ---------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        seed = edge.check_seed(seed)
        super().reset(seed=seed)
        opts = edge.read_reset_options(options, RESET_OPTIONS)
        if seed is not None:
            self._opponent_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        elif self._opponent_rng is None:
            self._opponent_rng = np.random.default_rng(self.np_random.integers(2**63))
        seat = edge.check_seat(opts["seat"], "option 'seat'", allow_none=False) if "seat" in opts else self.fixed_seat
        self._seat = int(self.np_random.integers(2)) if seat is None else seat
        game = new_game(
            self.np_random,
            circle=opts.get("circle"),
            first_player=opts.get("first_player"),
            leather_layout=self.leather_layout,
        )
        self._game = self._opponent_moves(game)
        self._over = self._game.is_terminal
        if self.render_mode == "human":
            self.render()
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        game = self.game_state
        if self._over:
            raise game_over("the episode")
        try:
            game = game.step(action)
        except IllegalActionError as exc:
            reason = edge.on_illegal_action(self.illegal_action, exc)
            self._over = True
            info = self._info()
            info.update(illegal_action=True, reason=reason)
            return self._observation(), edge.ILLEGAL_ACTION_REWARD, True, False, info
        game = self._opponent_moves(game)
        self._game = game
        self._over = game.is_terminal
        reward = edge.final_rewards(game, self.reward_kind)[self._seat] if self._over else 0.0
        if self.render_mode == "human":
            self.render()
        return self._observation(), reward, self._over, False, self._info()

    def _opponent_moves(self, game: GameState) -> GameState:
        """Let the opponent play until the learner is to move or the game is over."""
        rng = self._opponent_rng
        assert rng is not None
        while not game.is_terminal and game.current_player != self._seat:
            action = self.opponent.act(game, rng)
            try:
                game = game.step(action)
            except IllegalActionError as exc:
                name = getattr(self.opponent, "name", type(self.opponent).__name__)
                raise IllegalActionError(f"the opponent {name!r} chose an illegal action: {exc}") from None
        return game

    def _observation(self) -> npt.NDArray[np.float32]:
        return observe(self.game_state, self._seat)

    def _info(self) -> dict[str, Any]:
        game = self.game_state
        mask = np.zeros(NUM_ACTIONS, dtype=np.int8) if self._over else game.legal_action_mask().astype(np.int8)
        info: dict[str, Any] = {"action_mask": mask, "seat": self._seat}
        if game.is_terminal:
            scores = game.scores()
            info.update(score=scores[self._seat], opponent_score=scores[1 - self._seat], won=game.winner == self._seat)
        return info

    # --- rendering -----------------------------------------------------------------------------
    def render(self) -> str | npt.NDArray[np.uint8] | None:  # type: ignore[override]
        if self._game is None:
            raise RuntimeError("call reset() before render()")
        return edge.render_mode_output(self._game, self.render_mode)
