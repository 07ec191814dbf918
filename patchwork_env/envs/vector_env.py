"""The vector env (``PatchworkVectorEnv``): the Gymnasium face of the vector engine, ``num_envs``
single-agent games against an opponent as one ``gymnasium.vector.VectorEnv``.

It is the batched twin of ``SingleAgentEnv`` (the opponent's moves batched over the games;
autoreset in the same step), built on ``vector``'s games and ``vector_kernels``' drivers.

>>> import numpy as np
>>> from patchwork_env.envs.vector_env import PatchworkVectorEnv
>>> envs = PatchworkVectorEnv(8, opponent="random", seed=0)
>>> obs, infos = envs.reset(seed=0)
>>> obs.shape, envs.action_masks().shape, infos["action_mask"].shape
((8, 1452), (8, 2026), (8, 2026))
>>> rng = np.random.default_rng(0)
>>> actions = np.array([rng.choice(np.flatnonzero(m)) for m in envs.action_masks()])
>>> obs, rewards, terminated, truncated, infos = envs.step(actions)
>>> rewards.shape, terminated.dtype, bool(truncated.any())
((8,), dtype('bool'), False)

Options, autoreset and infos are documented in ``docs/environments.md``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from patchwork_env.core.actions import as_action_ids
from patchwork_env.core.rules import NUM_ACTIONS
from patchwork_env.core.state import GameState, IllegalActionError
from patchwork_env.envs import edge, vector_kernels
from patchwork_env.envs.agent import Agent, Opponent, is_random_spec, resolve_opponent
from patchwork_env.envs.edge import IllegalActionMode, RewardKind
from patchwork_env.envs.observation import OBS_DIM, observation_bounds
from patchwork_env.envs.vector import VectorGames

__all__ = ["RESET_OPTIONS", "PatchworkVectorEnv"]

RESET_OPTIONS = ("seat", "circle", "first_player")  # the last two are refused with a reason

ObsArray = npt.NDArray[np.float32]


class PatchworkVectorEnv(gymnasium.vector.VectorEnv[ObsArray, npt.NDArray[np.int64], npt.NDArray[Any]]):
    """``num_envs`` learners, each against a batched opponent (see the module docs)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        num_envs: int,
        opponent: Opponent = "random",
        seat: int | None = None,
        reward: RewardKind = "win",
        leather_layout: str = "revised",
        illegal_action: IllegalActionMode = edge.DEFAULT_ILLEGAL_ACTION,
        seed: int | None = None,
        copy: bool = True,
        parallel: bool = False,
    ) -> None:
        seat = edge.check_seat(seat)
        seed = edge.check_seed(seed)
        edge.check_reward_kind(reward)
        edge.check_illegal_action(illegal_action)
        self.games = VectorGames(num_envs, seed, leather_layout=leather_layout, auto_reset=False, parallel=parallel)
        n = self.games.num_games
        self.num_envs = n
        self.fixed_seat = seat
        self.reward_kind: str = reward
        self.illegal_action = illegal_action
        self.copy = copy
        self.render_mode = None
        low, high = observation_bounds()
        self.single_observation_space = spaces.Box(low=low, high=high, shape=(OBS_DIM,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self.set_opponent(opponent)
        self._opponent_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        self.seats = np.zeros(n, dtype=np.int64)
        self.observations = np.zeros((n, OBS_DIM), dtype=np.float32)
        self.final_observations = np.zeros((n, OBS_DIM), dtype=np.float32)
        self._rewards = np.zeros(n, dtype=np.float32)
        self._terminated = np.zeros(n, dtype=np.bool_)
        self._truncated = np.zeros(n, dtype=np.bool_)
        self._results = np.zeros((n, 5), dtype=np.int64)  # won, score, opponent score, seat, plies (kernels)
        self._errors = np.zeros(n, dtype=np.int64)
        self._opp_turn = np.zeros(n, dtype=np.bool_)
        self._illegal = np.zeros(n, dtype=np.bool_)
        self._mask_copy: npt.NDArray[np.bool_] | None = None
        self._started = False
        # the kernels' views: the games' arrays with this env's observations (from the learner's seat)
        # as plain tuples (``vector_kernels.Fields``), as the drivers take them
        self._batch = tuple(self.games._arrays._replace(obs=self.observations))  # the games' kernel arrays
        learners = vector_kernels.Learners(self.seats, self._rewards, self._terminated, self._results,
                                           self.final_observations, self._errors)  # fmt: skip
        self._learners = tuple(learners)
        self._deal = tuple(self.games.deal)

    # --- configuration -------------------------------------------------------------------------
    def set_opponent(self, opponent: Opponent) -> None:
        """Replace the opponent (takes effect at once; normally between rollouts)."""
        self._random_opponent = is_random_spec(opponent)
        self.opponent: Agent | None = None if self._random_opponent else resolve_opponent(opponent)

    @property
    def _seat_mode(self) -> int:
        return vector_kernels.RANDOM_SEAT if self.fixed_seat is None else self.fixed_seat

    # --- the Gymnasium API ---------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsArray, dict[str, Any]]:
        """A new episode in every game (``options``: see the module docs)."""
        seed = edge.check_seed(seed)
        super().reset(seed=seed)
        opts = edge.read_reset_options(options, RESET_OPTIONS)
        refused = sorted(k for k in ("circle", "first_player") if k in opts)
        if refused:
            raise ValueError(
                f"PatchworkVectorEnv.reset cannot take {refused}: each game deals from its own stream "
                "(only 'seat' is accepted)"
            )
        seat_mode = self._seat_mode
        if "seat" in opts:
            seat_mode = int(edge.check_seat(opts["seat"], "option 'seat'", allow_none=False))  # type: ignore[arg-type]
        g = self.games
        if seed is not None:
            g.seed_streams(seed)
            self._opponent_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        g.kernels.env_start(self._batch, self._learners, seat_mode, self._deal, self._random_opponent)
        if not self._random_opponent:
            self._opponent_moves()
            self._refresh_view()
        self._started = True
        self._illegal[:] = False
        self._mask_copy = None
        return self._obs(), self._infos(any_ended=False)

    def step(
        self, actions: npt.ArrayLike
    ) -> tuple[ObsArray, npt.NDArray[np.float32], npt.NDArray[np.bool_], npt.NDArray[np.bool_], dict[str, Any]]:
        if not self._started:
            raise RuntimeError("call reset() before step()")
        acts = self._check_actions(actions)
        g = self.games
        k = g.kernels
        rm = edge.REWARD_KINDS.index(self.reward_kind)
        if self._illegal.any():
            k.env_forfeit(self._batch, np.flatnonzero(self._illegal), self._learners, self._seat_mode, self._deal,
                          self._random_opponent)  # fmt: skip
        if self._random_opponent:
            k.env_step_random(self._batch, acts, self._learners, self._seat_mode, self._deal, rm)
        else:
            k.env_learner_step(g._arrays.states, acts, self._errors)
            self._opponent_moves()
            k.env_finish(self._batch, acts, self._learners, self._seat_mode, self._deal, rm)
            if self._terminated.any():
                self._opponent_moves()  # the opponent's opening moves in the new episodes
            self._refresh_view()
        if self._errors.any():  # pragma: no cover - actions were checked against the masks
            raise RuntimeError(f"rules rejected a masked-in action in games {np.flatnonzero(self._errors)}")
        ended = bool(self._terminated.any())
        self._mask_copy = None
        infos = self._infos(any_ended=ended)
        self._illegal[:] = False
        return self._obs(), self._rewards.copy(), self._terminated.copy(), self._truncated.copy(), infos

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Bool (num_envs, 2026): each learner's legal actions now (for sb3-contrib's MaskablePPO).
        With ``copy=True`` one copy is made per step and shared with ``infos["action_mask"]``."""
        if not self.copy:
            return self.games.masks
        if self._mask_copy is None:
            self._mask_copy = self.games.masks.copy()
        return self._mask_copy

    def game(self, i: int) -> GameState:
        """The current position of game ``i`` (after the opponent's replies)."""
        return self.games.game(i)

    # --- internals -----------------------------------------------------------------------------
    def _check_actions(self, actions: npt.ArrayLike) -> npt.NDArray[np.int64]:
        acts = as_action_ids(actions, self.num_envs)  # a copy: illegal actions are overwritten below
        g = self.games
        i = vector_kernels.first_illegal(g.masks, g.counts, acts, False)
        if i < 0:
            return acts
        edge.on_illegal_action(
            self.illegal_action, IllegalActionError(f"game {i}: {g._why_illegal(i, np.asarray(actions)[i])}")
        )
        in_range = (acts >= 0) & (acts < NUM_ACTIONS)
        legal = in_range & g.masks[np.arange(self.num_envs), np.where(in_range, acts, 0)]
        self._illegal[:] = ~legal
        acts[~legal] = -1  # the kernels skip these games: env_forfeit handles them
        return acts

    def _opponent_moves(self) -> None:
        """Rounds of opponent moves, batched over the games where the opponent is to move."""
        g = self.games
        k = g.kernels
        agent = self.opponent
        assert agent is not None
        batch = getattr(agent, "act_batch", None)
        while True:
            k.opponent_turns(g.states, self.seats, self._opp_turn)
            rows = np.flatnonzero(self._opp_turn)
            if rows.size == 0:
                return
            k.masks_rows(g.states, rows, g._arrays.masks, g._arrays.counts)
            if callable(batch):
                acts = np.asarray(batch(g.states[rows], g.masks[rows], self._opponent_rng))
            else:
                acts = np.array([agent.act(g.game(int(i)), self._opponent_rng) for i in rows])
            if acts.shape != rows.shape or not np.issubdtype(acts.dtype, np.integer):
                raise ValueError(f"the opponent returned {acts.dtype} {acts.shape} actions for {rows.size} games")
            acts = acts.astype(np.int64, copy=False)
            in_range = (acts >= 0) & (acts < NUM_ACTIONS)
            bad = ~(in_range & g.masks[rows, np.where(in_range, acts, 0)])
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                name = getattr(agent, "name", type(agent).__name__)
                reason = g._why_illegal(int(rows[j]), int(acts[j]))
                raise IllegalActionError(f"the opponent {name!r} chose an illegal action in game {rows[j]}: {reason}")
            k.step_rows(g._arrays.states, rows, acts, self._errors[: rows.size])

    def _refresh_view(self) -> None:
        g = self.games
        g.kernels.refresh(self._batch, self.seats, True)

    def _obs(self) -> ObsArray:
        return self.observations.copy() if self.copy else self.observations

    def _infos(self, any_ended: bool) -> dict[str, Any]:
        n = self.num_envs
        everywhere = np.ones(n, dtype=np.bool_)
        infos: dict[str, Any] = {
            "action_mask": self.action_masks().view(np.int8),
            "_action_mask": everywhere,
            "seat": self.seats.copy(),
            "_seat": everywhere,
        }
        if any_ended:
            ended = self._terminated.copy()
            final_obs = np.full(n, None, dtype=object)
            for i in np.flatnonzero(ended).tolist():
                final_obs[i] = self.final_observations[i].copy()
            res = self._results
            final_info = {
                "won": (res[:, 0] == 1) & ended,
                "score": np.where(ended, res[:, 1], 0),
                "opponent_score": np.where(ended, res[:, 2], 0),
                "seat": np.where(ended, res[:, 3], -1),
                "plies": np.where(ended, res[:, 4], 0),
                "illegal_action": self._illegal & ended,
            }
            for key in list(final_info):
                final_info[f"_{key}"] = ended
            infos.update(final_obs=final_obs, _final_obs=ended, final_info=final_info, _final_info=ended)
        return infos

    def close_extras(self, **kwargs: Any) -> None:
        self._started = False
