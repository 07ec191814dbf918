"""Patchwork as an OpenSpiel game (the ``openspiel`` extra): ``python_patchwork``, registered with
``pyspiel`` when this module is imported. A thin shell over the rules, as the AEC env is: every
move is ``GameState.step``, every legal action ``GameState.legal_actions``, every observation
``observation.observe``; its documentation page (game type, bounds, the deal, turns, observation,
structs, serialization) is ``docs/openspiel.md``.

    >>> import pyspiel
    >>> import patchwork_env.openspiel
    >>> game = pyspiel.load_game("python_patchwork")
    >>> state = game.new_initial_state()
    >>> state.is_chance_node(), len(state.chance_outcomes())      # the deal: patch by patch
    (True, 32)

In OpenSpiel's shape (``open_spiel/python/games/tic_tac_toe.py``, ``kuhn_poker.py``): ``GAME_TYPE``
and ``OPENSPIEL_GAME_INFO`` declared up front from the engine's bounds (``game_info.GAME_INFO``),
a game (``PatchworkGame``) that makes the states (``PatchworkState``), and an observer
(``PatchworkObserver``) with one flat tensor and named views into it. The deal is explicit chance
nodes, the 32 patches of the circle one at a time and then the first player: ``new_game(seed)``'s
distribution. The player to move is the engine's: the player behind on the time track, possibly
several times in a row; nothing assumes that turns alternate. A state made from a struct or a
notation line has no history before it (as OpenSpiel's structs go): use it to search or play on
from a position, not to replay how it arose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

try:
    import pyspiel
    from open_spiel.python.observation import IIGObserverForPublicInfoGame
except ImportError:
    raise ImportError(
        'patchwork_env.openspiel needs OpenSpiel, which is not installed: pip install "patchwork-env[openspiel]"',
        name="pyspiel",
    ) from None

from patchwork_env.core.actions import action_to_str, parse_action
from patchwork_env.core.patches import NUM_PATCHES, STARTING_PATCH
from patchwork_env.core.rules import LAYOUT_NAMES, check_leather_layout
from patchwork_env.core.state import GameState, new_game
from patchwork_env.envs.edge import REWARD_KINDS, check_reward_kind, final_rewards
from patchwork_env.envs.game_info import GAME_INFO
from patchwork_env.envs.observation import OBS_DIM, observe, split

__all__ = [
    "DEAL_SIZE",
    "GAME_NAME",
    "GAME_TYPE",
    "OPENSPIEL_GAME_INFO",
    "PatchworkGame",
    "PatchworkObserver",
    "PatchworkState",
    "game_state_of",
]

GAME_NAME = "python_patchwork"
#: patches dealt at random; the 1x2 patch (``STARTING_PATCH``) always ends the circle
DEAL_SIZE = NUM_PATCHES - 1
_PATCHES_DEALT = frozenset(range(NUM_PATCHES)) - {STARTING_PATCH}
_DEFAULTS: dict[str, str] = {"reward": REWARD_KINDS[0], "leather_layout": LAYOUT_NAMES[0]}

GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Patchwork (patchwork_env)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=GAME_INFO.num_players,
    min_num_players=GAME_INFO.num_players,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=dict(_DEFAULTS),
)
OPENSPIEL_GAME_INFO = pyspiel.GameInfo(
    num_distinct_actions=GAME_INFO.num_distinct_actions,
    max_chance_outcomes=NUM_PATCHES,  # a patch id (and 0 / 1 for the first player)
    num_players=GAME_INFO.num_players,
    min_utility=GAME_INFO.min_utility,
    max_utility=GAME_INFO.max_utility,
    utility_sum=GAME_INFO.utility_sum,
    max_game_length=GAME_INFO.max_game_length,
)


class PatchworkGame(pyspiel.Game):  # type: ignore[misc]
    """``python_patchwork``: ``pyspiel.load_game("python_patchwork(reward=score)")`` or
    ``PatchworkGame({"reward": "score"})``; a bad parameter is a ValueError naming it."""

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        given = dict(params or {})
        unknown = sorted(set(given) - set(_DEFAULTS))
        if unknown:
            raise ValueError(f"{GAME_NAME} has no parameter {unknown[0]!r} (it takes {', '.join(_DEFAULTS)})")
        values = {**_DEFAULTS, **given}
        self.reward = check_reward_kind(values["reward"])
        self.leather_layout = check_leather_layout(values["leather_layout"])
        super().__init__(GAME_TYPE, OPENSPIEL_GAME_INFO, values)

    def new_initial_state(self, state: Any = None) -> PatchworkState:
        """A new game before the deal; or the position ``state`` describes: a notation line, a
        struct (``PatchworkState.to_struct()``) or its dict."""
        return PatchworkState(self, state)

    def max_chance_nodes_in_history(self) -> int:
        return DEAL_SIZE + 1

    def make_py_observer(self, iig_obs_type: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        """The observation (tensor and notation) for OpenSpiel's default observation; the history
        for its information state (perfect recall)."""
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return PatchworkObserver(params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


class PatchworkState(pyspiel.State):  # type: ignore[misc]
    """A game in OpenSpiel: the patches ``deal`` drawn so far, then (once dealt) ``game_state``,
    the engine's ``GameState``, which every move steps."""

    def __init__(self, game: PatchworkGame, state: Any = None) -> None:
        super().__init__(game)
        self.reward: str = game.reward
        self.leather_layout: str = game.leather_layout
        self.deal: tuple[int, ...] = ()
        self.game_state: GameState | None = None
        if state is not None:
            self._read(state)

    # --- OpenSpiel's API --------------------------------------------------------------------
    def current_player(self) -> int:
        position = self.game_state
        if position is None:
            return int(pyspiel.PlayerId.CHANCE)
        if position.is_terminal:
            return int(pyspiel.PlayerId.TERMINAL)
        return position.current_player

    def _legal_actions(self, player: int) -> list[int]:
        assert self.game_state is not None  # OpenSpiel asks chance and terminal nodes itself
        actions: list[int] = self.game_state.legal_actions().tolist()
        return actions

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The next patch of the circle, uniform over those not dealt yet; then the first player."""
        if self.game_state is not None:
            raise ValueError("the deal is over: chance_outcomes exist only while dealing")
        if len(self.deal) == DEAL_SIZE:
            return [(0, 0.5), (1, 0.5)]
        left = sorted(_PATCHES_DEALT - set(self.deal))
        return [(patch, 1.0 / len(left)) for patch in left]

    def _apply_action(self, action: int) -> None:
        if self.game_state is not None:
            self.game_state = self.game_state.step(action)
            return
        outcome = int(action)
        if outcome not in dict(self.chance_outcomes()):
            raise ValueError(f"chance outcome {outcome} is not possible here: {self._deal_choices()}")
        if len(self.deal) < DEAL_SIZE:
            self.deal = (*self.deal, outcome)
        else:
            circle = [*self.deal, STARTING_PATCH]
            self.game_state = new_game(circle=circle, first_player=outcome, leather_layout=self.leather_layout)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal patch {action}" if len(self.deal) < DEAL_SIZE else f"player {action} starts"
        return action_to_str(action)

    def is_terminal(self) -> bool:
        return self.game_state is not None and self.game_state.is_terminal

    def returns(self) -> list[float]:
        """The final rewards (the game's ``reward`` parameter), 0 for both before the end."""
        if self.game_state is None or not self.game_state.is_terminal:
            return [0.0, 0.0]
        return list(final_rewards(self.game_state, self.reward))

    def __str__(self) -> str:
        if self.game_state is None:
            return _deal_string(self.deal)
        return str(self.game_state)

    # --- structs: OpenSpiel's SpielStruct API ------------------------------------------------
    def _to_struct(self) -> dict[str, Any]:
        if self.game_state is None:
            return {"deal": list(self.deal)}
        return {"notation": self.game_state.to_notation()}

    def _to_observation_struct(self, player: int) -> dict[str, Any]:
        return self._to_struct()  # perfect information: everyone sees the whole state

    def _action_to_struct(self, player: int, action: int) -> dict[str, Any]:
        if player == pyspiel.PlayerId.CHANCE:
            return {"first_player": action} if len(self.deal) == DEAL_SIZE else {"patch": action}
        return {"action": action_to_str(action)}

    def _struct_to_actions(self, struct: Mapping[str, Any]) -> list[int]:
        """The action of an action struct: ``{"action": notation}`` (``parse_action``), or while
        dealing ``{"patch": id}`` / ``{"first_player": 0 or 1}``."""
        if set(struct) == {"action"} and isinstance(struct["action"], str):
            return [parse_action(struct["action"])]
        if len(struct) == 1 and set(struct) <= {"patch", "first_player"}:
            (value,) = struct.values()
            if isinstance(value, int) and not isinstance(value, bool):
                return [value]
        raise ValueError(
            f"a {GAME_NAME} action struct is {{'action': 'buy s1 o4 r5c3'}} (a move), {{'patch': id}} or "
            f"{{'first_player': 0 or 1}} (the deal); got {dict(struct)}"
        )

    def _read(self, state: Any) -> None:
        """Set this (fresh) state to what ``state`` describes, checked by the engine."""
        if isinstance(state, pyspiel.StateStruct):
            state = state.to_dict()
        if isinstance(state, str):
            state = {"notation": state}
        if not isinstance(state, Mapping) or set(state) not in ({"notation"}, {"deal"}):
            got = sorted(state) if isinstance(state, Mapping) else type(state).__name__
            raise ValueError(
                f"a {GAME_NAME} state is a notation line, {{'notation': line}} (a dealt game, "
                f"GameState.to_notation()) or {{'deal': [patch ids]}} (the deal so far); got {got}"
            )
        if "deal" in state:
            self.deal = _check_deal(state["deal"])
            return
        notation = state["notation"]
        if not isinstance(notation, str):
            raise ValueError(f"'notation' must be a string (GameState.to_notation()), got {type(notation).__name__}")
        game_state = GameState.from_notation(notation)
        if game_state.leather_layout != self.leather_layout:
            raise ValueError(
                f"the notation's leather layout is {game_state.leather_layout!r}, this game's is "
                f"{self.leather_layout!r}: load {GAME_NAME}(leather_layout={game_state.leather_layout})"
            )
        self.game_state = game_state

    def _deal_choices(self) -> str:
        if len(self.deal) == DEAL_SIZE:
            return "the first player is 0 or 1"
        return f"the patches not dealt yet are {sorted(_PATCHES_DEALT - set(self.deal))}"


class PatchworkObserver:
    """OpenSpiel's observer (``open_spiel.python.observation``): ``tensor``, the project's
    observation of the state from ``player``'s seat (zeros while dealing), with ``dict`` its named
    views (``planes``, ``scalars``, ``circle``: in order, they tile the tensor); ``string_from``,
    the state's notation (the deal so far while dealing)."""

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        if params:
            raise ValueError(f"the {GAME_NAME} observation takes no parameters, got {dict(params)}")
        self.tensor = np.zeros(OBS_DIM, dtype=np.float32)
        views = split(self.tensor)
        self.dict = {"planes": views.planes, "scalars": views.scalars, "circle": views.circle}

    def set_from(self, state: PatchworkState, player: int) -> None:
        if state.game_state is None:
            self.tensor.fill(0.0)
        else:
            observe(state.game_state, player, out=self.tensor)

    def string_from(self, state: PatchworkState, player: int) -> str:
        if state.game_state is None:
            return _deal_string(state.deal)
        return state.game_state.to_notation()


def game_state_of(state: Any) -> GameState:
    """The engine's ``GameState`` of a dealt ``python_patchwork`` state (a ValueError otherwise)."""
    if not isinstance(state, PatchworkState):
        raise ValueError(f"not a state of {GAME_NAME}: got {type(state).__name__}")
    if state.game_state is None:
        raise ValueError("the game is being dealt: there is no position yet")
    return state.game_state


def _check_deal(deal: Any) -> tuple[int, ...]:
    """The patches of a deal in progress, each dealt once (the 1x2 patch never), else a ValueError."""
    integers = isinstance(deal, list | tuple) and all(
        isinstance(p, int | np.integer) and not isinstance(p, bool) for p in deal
    )
    patches = tuple(int(p) for p in deal) if integers else ()
    if not integers or len(set(patches)) != len(patches) or not set(patches) <= _PATCHES_DEALT:
        raise ValueError(
            f"'deal' must be a list of distinct patch ids 1..{NUM_PATCHES - 1} (the 1x2 patch {STARTING_PATCH} "
            f"is never dealt: it ends the circle), got {deal!r}"
        )
    return patches


def _deal_string(deal: tuple[int, ...]) -> str:
    return f"deal {len(deal)}/{DEAL_SIZE}: " + (" ".join(map(str, deal)) or "-")


pyspiel.register_game(GAME_TYPE, PatchworkGame)
