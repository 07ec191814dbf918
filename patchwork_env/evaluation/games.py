"""One game and one deal of the arena, and the rule every harness of the project plays them by
(``patchwork evaluate``, ``patchwork ladder``, ``round_robin``, ``play_pairs``, ``rate``):

- An answer that is not an action (anything but an integer in 0..2025: a string, a float, None)
  or an action the rules do not allow **forfeits the game**: the agent that gave it loses that
  game, whatever the score, and the run goes on. The game's record keeps who forfeited, in which
  game and at which move, what it played (the decoded action, or the value returned) and the
  engine's reason (``Forfeited``).
- An exception raised by an agent (in ``act`` or ``reset``; ``sys.exit`` too) **stops the run**:
  ``AgentError``, one line naming the agent, the game and the move. The games finished before it
  are kept (in the arena's journal, and in ``AgentError.finished``). Your own agents play in a
  process of their own (``patchwork_env.players.contained``), so that ``os._exit``, an abort or a
  segfault of theirs is the same one line (``exited``, ``crashed``), not the end of the run's
  process; a ``KeyboardInterrupt`` of an agent that plays here is taken for Ctrl-C.

Deal ``i`` of a run's seed (the circle of patches and the starting seat) comes from
``SeedSequence(seed, spawn_key=(i,))`` and is played twice, agent A in seat 0 then in seat 1:
games ``2 i`` and ``2 i + 1`` of the run. Moves are counted from 1 over both players' decisions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from patchwork_env.core.actions import action_to_str, as_action_id
from patchwork_env.core.state import GameState, IllegalActionError, new_game
from patchwork_env.envs.agent import Agent, NotAnAction
from patchwork_env.evaluation.workers import RunError
from patchwork_env.players.contained import failure

SHOWN = 80  # characters of a returned value that a forfeit's record keeps


@dataclass(frozen=True)
class Forfeited:
    """A game lost by an answer that is not a legal action: the agent (its name and seat), the game
    (its number in the run and its deal), the move (counted from 1 over both players' decisions),
    what it played (``action``: the action id, when the answer was one; ``played``: the decoded
    action, or the value returned) and the engine's reason."""

    agent: str
    seat: int
    deal: int
    game: int
    move: int
    action: int | None
    played: str
    reason: str

    def describe(self) -> str:
        """One line: ``my_agent.py:act lost game 5 (deal 2) at move 13 by playing 'advance': ...``."""
        return (
            f"{self.agent} lost game {self.game} (deal {self.deal}, seat {self.seat}) at move {self.move} by playing "
            f"{self.played}: {self.reason}"
        )


@dataclass(frozen=True)
class GameRecord:
    """One finished game, seen from agent A."""

    deal: int
    seat_a: int
    a_won: bool
    score_a: int
    score_b: int
    empty_a: int
    empty_b: int
    moves_a: int
    moves_b: int
    seconds_a: float
    seconds_b: float
    actions: tuple[int, ...] = field(default=(), repr=False)  # every decision, for game records
    a_illegal: bool = False  # A lost this game by an answer that is not a legal action
    b_illegal: bool = False  # B did
    forfeit: Forfeited | None = None  # then: who, where, what and why

    def __post_init__(self) -> None:
        if isinstance(self.forfeit, dict):  # read back from JSON (a journal)
            object.__setattr__(self, "forfeit", Forfeited(**self.forfeit))


class Forfeit(Exception):
    """``play_game``: the agent in the forfeiting seat played an illegal action (``forfeited``)."""

    def __init__(self, state: GameState, moves: list[int], seconds: list[float], reason: str) -> None:
        super().__init__(reason)
        self.state, self.moves, self.seconds = state, moves, seconds


class AgentError(RunError):
    """An agent raised (not an illegal action): the run stops, naming the agent, the game and the
    move. ``finished``: the games finished before it, one ``arena.PairResult`` per matchup that
    finished any (set by the arena)."""

    def __init__(self, message: str, agent: str = "", game: int = -1, move: int = 0) -> None:
        super().__init__(message)
        self.agent, self.game, self.move = agent, game, move
        self.finished: list[Any] = []


#: what an agent playing in this process may raise that stops the run with one line (a contained
#: agent's process tells all of it, as ``AgentFailure``); a KeyboardInterrupt here is Ctrl-C's
AGENT_ERRORS = (Exception, SystemExit, GeneratorExit)


class _Raised(Exception):
    """An agent's exception inside ``_play``, with where it happened."""

    def __init__(self, error: BaseException, seat: int, move: int) -> None:
        super().__init__(str(error))
        self.error, self.seat, self.move = error, seat, move


def _shown(value: object) -> str:
    text = repr(value)
    text = text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."
    return f"{text} (a {type(value).__name__})"


def _play(
    agents: Sequence[Agent],
    start: GameState,
    rngs: Sequence[np.random.Generator],
    actions: list[int] | None,
    deal_index: int = -1,
    game: int = -1,
) -> tuple[GameState, list[int], list[float], Forfeited | None]:
    """Play ``start`` to its end or to a forfeit: the final state, each seat's moves and seconds,
    and the forfeit (None for a game played out). An agent's exception raises ``_Raised``."""
    move = 0
    for seat, agent in enumerate(agents):
        reset = getattr(agent, "reset", None)
        if callable(reset):
            try:
                reset()
            except AGENT_ERRORS as exc:
                raise _Raised(exc, seat, move) from exc
    state = start
    moves = [0, 0]
    seconds = [0.0, 0.0]

    def lost(seat: int, action: int | None, played: str, reason: str) -> Forfeited:
        name = str(getattr(agents[seat], "name", type(agents[seat]).__name__))
        return Forfeited(name, seat, deal_index, game, move, action, played, reason)

    while not state.is_terminal:
        seat = state.current_player
        move += 1
        t0 = time.perf_counter()
        try:
            answer = agents[seat].act(state, rngs[seat])
        except NotAnAction as exc:  # a function's answer, checked by its wrapper
            return state, moves, seconds, lost(seat, None, _shown(exc.returned), str(exc))
        except IllegalActionError as exc:
            return state, moves, seconds, lost(seat, None, "(an IllegalActionError raised in act)", str(exc))
        except AGENT_ERRORS as exc:
            raise _Raised(exc, seat, move) from exc
        seconds[seat] += time.perf_counter() - t0
        moves[seat] += 1
        try:
            action = as_action_id(answer)
        except IllegalActionError as exc:
            return state, moves, seconds, lost(seat, None, _shown(answer), str(exc))
        try:
            state = state.step(action)
        except IllegalActionError as exc:
            return state, moves, seconds, lost(seat, action, f"{action_to_str(action)} (action {action})", str(exc))
        if actions is not None:
            actions.append(action)
    return state, moves, seconds, None


def play_game(
    agents: Sequence[Agent],
    start: GameState,
    rngs: Sequence[np.random.Generator],
    actions: list[int] | None = None,
    forfeit_seat: int | None = None,
) -> tuple[GameState, list[int], list[float]]:
    """Play ``start`` to the end, ``agents[seat]`` deciding for each seat; returns the final state,
    the moves and the seconds spent per seat (and appends every action to ``actions`` if given).
    For a harness of its own: an illegal action raises the engine's error (by the agent in
    ``forfeit_seat``, ``Forfeit``) and an agent's exception is raised as it is. The arena's rule
    (forfeits recorded, an exception an ``AgentError``) is ``play_deal``'s."""
    try:
        final, moves, seconds, forfeited = _play(agents, start, rngs, actions)
    except _Raised as raised:
        raise raised.error from None
    if forfeited is not None:
        if forfeited.seat == forfeit_seat:
            raise Forfeit(final, moves, seconds, forfeited.reason)
        raise IllegalActionError(forfeited.reason)
    return final, moves, seconds


def deal(seed: int, index: int) -> GameState:
    """The starting position of deal ``index`` of an arena run with ``seed``."""
    return new_game(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,))))


def agent_rng(seed: int, index: int, game: int, seat: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, game + 1, seat)))


def play_deal(agent_a: Agent, agent_b: Agent, seed: int, index: int, forfeit: bool = True) -> list[GameRecord]:
    """Both games of deal ``index``: A in seat 0 (game ``2 index``), then A in seat 1 (game
    ``2 index + 1``), by the rule of the module docstring: a forfeit loses that game (``a_illegal``
    / ``b_illegal``, ``forfeit``), an exception is an ``AgentError``. (``forfeit`` is kept for old
    callers: every harness forfeits both agents' illegal actions now.)"""
    start = deal(seed, index)
    out = []
    for game, seat_a in enumerate((0, 1)):
        seated = [agent_a, agent_b] if seat_a == 0 else [agent_b, agent_a]
        rngs = [agent_rng(seed, index, game, seat) for seat in (0, 1)]
        actions: list[int] = []
        number = 2 * index + game
        try:
            final, moves, seconds, forfeited = _play(seated, start, rngs, actions, index, number)
        except _Raised as raised:
            name = str(getattr(seated[raised.seat], "name", type(seated[raised.seat]).__name__))
            when = f"at move {raised.move}" if raised.move else "before its first move (reset)"
            verb, detail = failure(raised.error)
            raise AgentError(
                f"{name} {verb} on game {number} (deal {index}, seat {raised.seat}) {when}: {detail}",
                name,
                number,
                raised.move,
            ) from raised.error
        scores = final.scores()
        sb = 1 - seat_a
        a_illegal = forfeited is not None and forfeited.seat == seat_a
        b_illegal = forfeited is not None and forfeited.seat == sb
        out.append(
            GameRecord(
                deal=index,
                seat_a=seat_a,
                a_won=b_illegal or (final.winner == seat_a and not a_illegal),
                score_a=scores[seat_a],
                score_b=scores[sb],
                empty_a=final.empty_cells(seat_a),
                empty_b=final.empty_cells(sb),
                moves_a=moves[seat_a],
                moves_b=moves[sb],
                seconds_a=seconds[seat_a],
                seconds_b=seconds[sb],
                actions=tuple(actions),
                a_illegal=a_illegal,
                b_illegal=b_illegal,
                forfeit=forfeited,
            )
        )
    return out


def warm_up(agent: Agent) -> None:
    """One move that no game keeps, so that no game's time per move includes loading or compiling
    (the first move of a fresh install's process compiles kernels for seconds), then ``reset``. An
    illegal answer here is left to the games, which forfeit it; any other exception (in ``act`` or
    ``reset``) is an ``AgentError`` naming the agent, before any game."""
    name = str(getattr(agent, "name", type(agent).__name__))
    try:
        agent.act(new_game(0), np.random.default_rng(0))
    except IllegalActionError:
        pass
    except AGENT_ERRORS as exc:
        verb, detail = failure(exc)
        raise AgentError(f"{name} {verb} on a test move, before any game: {detail}", name) from exc
    reset = getattr(agent, "reset", None)
    if callable(reset):
        try:
            reset()
        except AGENT_ERRORS as exc:
            verb, detail = failure(exc)
            raise AgentError(f"{name} {verb} in reset() after a test move, before any game: {detail}", name) from exc
