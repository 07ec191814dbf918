"""
# Patchwork

A two-player AEC environment of Uwe Rosenberg's *Patchwork* over the project's rules engine
(`docs/rules.md`), written in the style of PettingZoo's classic environments.

| Import             | `from patchwork_env import env` (or `pettingzoo.make("aec", "patchwork/Patchwork-v0")`) |
|--------------------|------------------------------------------------------------------------------------------|
| Actions            | Discrete                                                                                 |
| Parallel API       | Through `pettingzoo.utils.conversions.turn_based_aec_to_parallel`                        |
| Manual Control     | No                                                                                       |
| Agents             | `agents= ['player_0', 'player_1']`                                                       |
| Agents             | 2                                                                                        |
| Action Shape       | (1,)                                                                                     |
| Action Values      | Discrete(2026)                                                                           |
| Observation Shape  | `{"observation": (1452,), "action_mask": (2026,)}`                                       |
| Observation Values | `observation`: float32 in [-3.24, 8.14] (mostly [0, 1]); `action_mask`: int8 0/1        |
| Reward             | `"win"`: +1 / -1 at the end; `"score"`: final margin / 100, clipped to [-1, 1]           |
| State              | `state()`: float32 (1452,), the observation from player_0's seat                         |

Each player sews patches bought from a circle onto a 9x9 quilt, paying buttons and time. Turn
order is NOT alternating: the player whose time token is further behind moves (on a shared space,
the one who arrived last), so one agent may act several times in a row, and an agent that crosses
a leather patch on the time track stays selected to place it. `agent_selection` always comes from
the game state (`GameState.current_player`). The game ends when both tokens reach space 53; the
higher score wins (buttons + 7 for the 7x7 bonus tile - 2 per empty cell), ties go to the player
who reached 53 first. There are no draws.

### Observation space

`observe(agent)` returns `{"observation": float32 (1452,), "action_mask": int8 (2026,)}`. The
observation is from the observer's seat ("me" first, then "opp") and holds everything public: both
quilts, positions, buttons, income, distances to the next income mark and leather patch, the bonus
tile, whether a leather patch is pending, and the whole circle in order with each patch's numbers
and shape. `patchwork_env.envs.observation` names these parts and gives views (`planes(obs)` is a
(5, 9, 9) stack for convolutional nets, `vector(obs)` the rest). Every entry is
`quantity / divisor`:

| Index | Name | Quantity | Divisor |
|---|---|---|---|
| 0..80 | `quilt_me` (9x9) | 1 where my quilt is covered | 1 |
| 81..161 | `quilt_opp` (9x9) | 1 where the opponent's quilt is covered | 1 |
| 162..242 | `cover_slot0` (9x9) | 1 on each cell that slot 0's patch covers in some placement fitting my quilt | 1 |
| 243..323 | `cover_slot1` (9x9) | same for slot 1 | 1 |
| 324..404 | `cover_slot2` (9x9) | same for slot 2 | 1 |
| 405 | `position_me` | my time-track space | 53 |
| 406 | `position_opp` | the opponent's time-track space | 53 |
| 407 | `buttons_me` | my buttons | 50 |
| 408 | `buttons_opp` | the opponent's buttons | 50 |
| 409 | `income_me` | my income (button icons on the quilt) | 20 |
| 410 | `income_opp` | the opponent's income (button icons on the quilt) | 20 |
| 411 | `to_income_me` | spaces from my token to the next income mark (0 if none left) | 6 |
| 412 | `to_income_opp` | spaces from the opponent's token to the next income mark (0 if none left) | 6 |
| 413 | `income_marks_left_me` | income marks still ahead of my token | 9 |
| 414 | `income_marks_left_opp` | income marks still ahead of the opponent's token | 9 |
| 415 | `to_leather_me` | spaces from my token to the next leather patch (54 if none left) | 54 |
| 416 | `to_leather_opp` | spaces from the opponent's token to the next leather patch (54 if none left) | 54 |
| 417 | `empty_cells_me` | empty cells on my quilt | 81 |
| 418 | `empty_cells_opp` | empty cells on the opponent's quilt | 81 |
| 419 | `first_to_53_me` | 1 if my token reached space 53 first (the tie-break) | 1 |
| 420 | `first_to_53_opp` | 1 if the opponent's token reached space 53 first (the tie-break) | 1 |
| 421 | `score_me` | my score if the game ended now (buttons + 7 bonus - 2 per empty cell) | 50 |
| 422 | `score_opp` | the opponent's score if the game ended now (buttons + 7 bonus - 2 per empty cell) | 50 |
| 423 | `bonus_unclaimed` | 1 while nobody holds the 7x7 bonus tile | 1 |
| 424 | `bonus_me` | 1 if I hold the bonus tile | 1 |
| 425 | `bonus_opp` | 1 if the opponent holds the bonus tile | 1 |
| 426 | `to_move` | 1 if I decide now | 1 |
| 427 | `must_place_leather` | 1 if I decide now and must place a leather patch | 1 |
| 428 | `circle_size` | patches left in the circle | 33 |
| 429..1451 | `circle` (33x31) | circle position k (0 = next after the token) at 429 + 31k, all 0 past the end | |
| +0 | `present` | 1 if a patch is at this circle position (positions 0..2 are the market) | 1 |
| +1 | `cost` | its cost in buttons | 10 |
| +2 | `time` | its time (spaces the buyer moves) | 6 |
| +3 | `buttons` | its button icons | 3 |
| +4 | `area` | its cells | 8 |
| +5 | `affordable` | 1 if I can pay its cost now | 1 |
| +6..+30 | `shape_r0c0..shape_r4c4` | 1 on its cells, as listed (orientation 0) in a 5x5 box, row-major | 1 |

The space's bounds follow from the rules (at most 400 buttons, income 38, scores -162..407), so
every reachable observation lies inside it. Repeated `observe` calls in the same position return
the same arrays: copy them before changing them in place.

#### Legal actions mask

`action_mask` is 1 exactly on the legal actions of the agent to move, and all zeros for the other
agent and after the game ended. The acting agent's mask is never empty ("advance" is always legal
below space 53, and a pending leather patch always has a free cell).

### Action space

`Discrete(2026)`, laid out so that `logits[:2025].reshape(25, 9, 9)` is one plane per decision:

| Actions | Meaning |
|---|---|
| 0..1943 | buy: `(slot * 8 + orientation) * 81 + row * 9 + col` |
| 1944..2024 | place the pending leather patch on cell `row * 9 + col` |
| 2025 | advance to the space in front of the opponent, taking one button per space |

For a buy, `slot` 0..2 is the market position (0 = next after the neutral token), `(row, col)`
the top-left cell of the oriented shape's bounding box, and `orientation = 4 * mirror + k`: the
patch as listed, mirrored left-right if `mirror`, then turned `k` quarter turns clockwise. When
several orientations give the same cells, only the lowest is ever legal (no duplicate actions).

`patchwork_env.decode_action`, `action_to_str` and `parse_action` translate ids and the notation
`"buy s1 o4 r5c3"`, `"leather r0c0"`, `"advance"`.

### Rewards

Rewards are given only when the game ends, in the step that ends it, to both agents at once:

| `reward=` | Winner | Loser |
|---|---|---|
| `"win"` (default) | +1 | -1 |
| `"score"` | `clip((own - other) / 100, -1, 1)` | the negative |

With `"score"` equal scores give 0 to both (the tie-break still names a winner in `infos`).
A reward earned while an agent waits accumulates until `last()` reports it to that agent
(PettingZoo's `_cumulative_rewards` bookkeeping). At the end, `infos[agent]` holds `score`,
`opponent_score` and `winner`, the winning seat (0 for `player_0`, 1 for `player_1`): every info
value is a number, so libraries that store infos in numeric buffers (Tianshou) can keep them.

### Illegal actions

`illegal_action="lose"` (the default of `env()` and of every front-end): a masked-out action ends
the game with -1 for the offender and 0 for the other agent, and `infos[offender]` holds
`illegal_action: True`; `illegal_action="raise"` (the default of `raw_env`, the rules layer)
raises `patchwork_env.IllegalActionError` (a `ValueError` whose message says why) and changes
nothing. `env()` wraps `raw_env` like the classic environments (`CheckActionWrapper` in the place
of AssertOutOfBoundsWrapper, then OrderEnforcingWrapper; the illegal-action policy is the env's
own, `edge.on_illegal_action`, where the classic envs use TerminateIllegalWrapper). Anything that is
not an integer in 0..2025 (bools, floats, integers of any size out of range) raises
`IllegalActionError` ("out of range") in both, before the rules see it. An action for an agent whose
game is over raises `patchwork_env.core.actions.GameOverError` (an `IllegalActionError`);
PettingZoo's dead step `step(None)` is the only step left then. These edges are decided once for
every front-end in `patchwork_env.envs.edge`.

### Options

Constructor (`env(...)`, `raw_env(...)`, `pettingzoo.make(...)`): `leather_layout="revised"` (leather
patches on 26, 32, 38, 44, 50) or `"original"` (20, 26, 32, 44, 50); `reward="win"` or `"score"`;
`render_mode=None`, `"ansi"` (returns the text drawing), `"human"` (prints it after every step) or
`"rgb_array"` (uint8 H x W x 3: both quilts, the time track, the market).

`reset(seed=None, options=None)`: a seed re-creates the environment's generator, from which the
circle and the starting player are drawn; `reset()` without a seed continues that generator.
`options` may fix the deal: `{"circle": [33 patch ids clockwise from the neutral token, ending
with 0], "first_player": 0 or 1}`. Bad values raise `ValueError`; an unknown key only warns (in
every front-end), because PettingZoo's own `api_test` resets with `options={"options": 1}`.

### The game underneath

`game_state` is the current `patchwork_env.GameState` (immutable); `set_state(state)` starts an
episode from any unfinished position (for search, tests and curricula). `copy.deepcopy` and
`pickle` keep the whole game, the generator and the bookkeeping, so a copy continues exactly
like the original.

For single-agent libraries (SB3 and the like) use `patchwork_env.SingleAgentEnv`, in which a
fixed opponent moves inside `step`; for many games at once, `patchwork_env.envs.vector.VectorGames`.

### Version history

* v0: Initial release (patchwork_env 0.1.0)
* v0, changes after patchwork_env 0.1.0: `infos[agent]["winner"]` is the winning seat (0 or 1), no longer the
  agent's name; the `to_leather` entries' lower bound is 0 (was 1/54), so an all-zero observation is
  in the space; out-of-range actions raise `IllegalActionError` in `env()` too (was `AssertionError`)
* v0, changes after patchwork_env 0.1.0 (the edge policy): one edge policy for all front-ends
  (`patchwork_env.envs.edge`). Here: an action sent to a finished game raises `GameOverError` (was
  PettingZoo's "only None" ValueError; still a `ValueError`); `env(illegal_action=...)` is new.
  Elsewhere: `SingleAgentEnv` warns on unknown reset options (it raised); `PatchworkVectorEnv`
  defaults to `illegal_action="lose"` (it raised) and accepts reset options like the others.
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
    """PettingZoo's ``OrderEnforcingWrapper``, except that a step before ``reset()`` is a
    ``RuntimeError`` (as in the other front-ends; PettingZoo raises ``AssertionError``) and an
    action once every agent is done a ``GameOverError`` (PettingZoo warns and ignores it)."""

    def step(self, action: Any) -> None:
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        if not self.agents and action is not None:
            raise game_over()
        super().step(action)


def env(illegal_action: IllegalActionMode = edge.DEFAULT_ILLEGAL_ACTION, **kwargs: Any) -> AECEnv:
    """The Patchwork AEC environment wrapped like PettingZoo's classic environments (see "Illegal
    actions" for ``illegal_action``)."""
    e: AECEnv = raw_env(illegal_action=illegal_action, **kwargs)
    e = CheckActionWrapper(e)
    e = OrderEnforcing(e)
    return e


def observation_space() -> spaces.Dict:
    """A new ``Dict`` space of one agent's observation (see the table above)."""
    low, high = observation_bounds()
    return spaces.Dict(
        {
            "observation": spaces.Box(low=low, high=high, shape=(OBS_DIM,), dtype=np.float32),
            "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8),
        }
    )


class raw_env(AECEnv):  # type: ignore[misc]
    """Patchwork as a PettingZoo AEC environment (documentation: this module's docstring)."""

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
