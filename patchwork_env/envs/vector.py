"""The vector engine (``VectorGames``): N two-player games stepped together, each by whoever is to
move (self-play); no opponent, no rewards, no Gymnasium API: ``vector_env`` adds those.

The games run over the same compiled rules as ``GameState``.

All per-game data lives in preallocated arrays that are rewritten in place:

    states          (N, STATE_LEN) int64   the rule state of each game (layout in ``rules``)
    masks           (N, 2026) bool         legal mask of the player to move in each game
    counts          (N,) int64             number of legal actions (0 once a game is over)
    current_player  (N,) int64             who decides now in each game
    observations    (N, OBS_DIM) float32   each game from its acting seat (``observe()``, or
                                           ``step(..., observe=True)``)

Self-play: ``step(actions)`` applies one action per game, each by that game's player to move, in
one compiled call (``vector_kernels``) that also records the games that ended, deals new ones
(``auto_reset``) and rewrites masks and players to move. Illegal actions raise
``IllegalActionError`` naming the first offending game, and then no game has changed.

Seeds: each game owns two random streams (splitmix64 words seeded from
``numpy.random.SeedSequence(seed)``), one for its deals and one for ``sample_random``. Game ``i``'s
sequence of deals depends only on ``seed`` and ``i``: not on the batch size, the actions played, or
the other games. ``reset(seed)`` re-seeds; ``reset()`` deals the next games of the same streams.
(The deals are not those of ``new_game(seed)``; ``new_game(circle=g.circle, first_player=g.top)``
with ``g = games.game(i)`` rebuilds a dealt game for the single-game API.)

>>> games = VectorGames(4, seed=0)
>>> games.masks.shape, games.observations.shape
((4, 2026), (4, 1452))
>>> finished = 0
>>> for _ in range(200):
...     result = games.step(games.sample_random(), observe=True)
...     finished += int(result.done.sum())
>>> finished > 0, bool(games.counts.all())     # ended games were dealt again at once
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.actions import as_action_ids, is_integer
from patchwork_env.core.jit import compile_notice
from patchwork_env.core.state import GameState, IllegalActionError, reachable_array
from patchwork_env.envs import vector_kernels
from patchwork_env.envs.edge import check_seed
from patchwork_env.envs.observation import OBS_DIM

MAX_GAMES = 2**17  # games of one VectorGames: about 1.2 GB of states, masks and observations


@dataclass
class StepResult:
    """What one ``step`` of the batch produced (arrays of length N, reused between steps)."""

    done: npt.NDArray[np.bool_]  # the game ended on this step (it has been reset if auto_reset)
    winner: npt.NDArray[np.int64]  # winner of the game that ended, -1 elsewhere
    scores: npt.NDArray[np.int64]  # (N, 2) final scores of the game that ended, 0 elsewhere
    actor: npt.NDArray[np.int64]  # the seat that took the action in each game (-1: finished, no-op)
    plies: npt.NDArray[np.int64]  # decisions in the game that ended (leather placements included), 0 elsewhere


class VectorGames:
    """``num_games`` Patchwork games in one block of arrays.

    ``parallel=True`` spreads every batch call over the cores (row chunks on threads, see
    ``vector_threads``); the default stays on the calling thread. Serial and parallel give
    identical games.
    ``auto_reset=False``: a finished game keeps its final state (mask all False, ``counts`` 0) and
    ignores the actions passed for it until ``reset``.
    """

    def __init__(
        self,
        num_games: int,
        seed: int | None = None,
        *,
        leather_layout: str = "revised",
        auto_reset: bool = True,
        parallel: bool = False,
    ) -> None:
        if not is_integer(num_games) or not 1 <= num_games <= MAX_GAMES:
            raise ValueError(
                f"num_games must be an integer in 1..{MAX_GAMES:,} (each game holds about 9 kB of arrays), "
                f"got {num_games!r}"
            )
        rules.check_leather_layout(leather_layout)
        compile_notice("the vector engine's kernels", vector_kernels.selfplay_step, "5-20 s")
        n = int(num_games)
        self.num_games = n
        self.auto_reset = auto_reset
        self.leather_layout = leather_layout
        self.deal = vector_kernels.Deal(rules.LAYOUT_NAMES.index(leather_layout), rules.leather_mask(leather_layout))
        self._k = vector_kernels.kernels_for(parallel)
        # the kernels' arrays (``_arrays``); outside, read-only views of them that cannot be made
        # writable: a row the rules did not write would reach the compiled kernels unchecked
        arrays = vector_kernels.Batch(
            states=np.zeros((n, rules.STATE_LEN), dtype=np.int64),
            masks=np.zeros((n, rules.NUM_ACTIONS), dtype=np.bool_),
            counts=np.zeros(n, dtype=np.int64),
            cur=np.zeros(n, dtype=np.int64),
            obs=np.zeros((n, OBS_DIM), dtype=np.float32),
            deal_rng=np.zeros(n, dtype=np.uint64),
            play_rng=np.zeros(n, dtype=np.uint64),
        )
        self.states = read_only(arrays.states)
        self.masks = read_only(arrays.masks)
        self.counts = read_only(arrays.counts)
        self.current_player = read_only(arrays.cur)
        self.observations = read_only(arrays.obs)
        self._errors = np.zeros(n, dtype=np.int64)
        self._actions = np.zeros(n, dtype=np.int64)
        self._to_move = np.full(n, -1, dtype=np.int64)
        self._result = StepResult(
            done=np.zeros(n, dtype=np.bool_),
            winner=np.full(n, -1, dtype=np.int64),
            scores=np.zeros((n, 2), dtype=np.int64),
            actor=np.zeros(n, dtype=np.int64),
            plies=np.zeros(n, dtype=np.int64),
        )
        self._arrays = arrays  # the envs' own front-end (``vector_env``) steps these too
        res = self._result
        results = vector_kernels.SelfPlayResults(res.done, res.winner, res.scores, res.plies, res.actor, self._errors)
        # the drivers take plain tuples of these (``vector_kernels.Fields``): built once
        self._batch_fields = tuple(arrays)
        self._deal_fields = tuple(self.deal)
        self._results_fields = tuple(results)
        self.reset(seed)
        self._seeded = True

    @property
    def parallel(self) -> bool:
        return self._k.parallel

    # --- dealing ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        """New deals for every game. With a ``seed`` (or on construction) the per-game streams are
        re-seeded from it (``None`` at construction: fresh OS entropy); ``reset()`` later continues
        the current streams."""
        if seed is not None or not getattr(self, "_seeded", False):
            self.seed_streams(seed)
        self._k.deal_all(self._batch_fields, self._deal_fields)

    def seed_streams(self, seed: int | None) -> None:
        """Re-seed every game's deal and play streams from ``seed`` (no deal)."""
        words = vector_kernels.seed_streams(check_seed(seed), 2 * self.num_games)
        self._arrays.deal_rng[:] = words[: self.num_games]
        self._arrays.play_rng[:] = words[self.num_games :]

    @property
    def kernels(self) -> vector_kernels.Kernels:
        """The compiled batch kernels this batch uses (serial or parallel)."""
        return self._k

    def set_state(self, i: int, state: GameState | npt.ArrayLike) -> None:
        """Put a given position (a ``GameState``, or a raw state array, which must be a position
        the rules can reach: ``state.reachable_array``) into game ``i`` (for tests and search)."""
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < self.num_games:
            raise ValueError(f"game index must be an integer in 0..{self.num_games - 1}, got {i!r}")
        self._arrays.states[i] = state.array() if isinstance(state, GameState) else reachable_array(state)
        self._refresh_row(int(i))

    def set_states(self, states: npt.ArrayLike) -> None:
        """Put ``num_games`` positions into the games at once (raw rows, e.g. a snapshot of
        ``states``), each checked as ``set_state`` checks one; nothing changes if one is refused."""
        rows = np.asarray(states)
        if rows.shape != self.states.shape:
            raise ValueError(f"states must have shape {self.states.shape}, got {rows.shape}")
        checked = np.stack([reachable_array(row) for row in rows])
        self._arrays.states[:] = checked
        self._k.refresh(self._batch_fields, self._to_move, False)

    def snapshot(self) -> dict[str, npt.NDArray[Any]]:
        """Copies of what the games' future depends on: the positions and every game's deal and
        play streams (a trainer's checkpoint keeps them, so a resumed run plays on the same games)."""
        return {name: getattr(self._arrays, name).copy() for name in ("states", "deal_rng", "play_rng")}

    def restore(self, snapshot: dict[str, npt.NDArray[Any]]) -> None:
        """Put back what ``snapshot`` returned (of a batch of the same size); positions are checked
        as ``set_states`` checks them."""
        for name in ("deal_rng", "play_rng"):
            array = np.asarray(snapshot[name])
            if array.shape != (self.num_games,) or array.dtype != np.uint64:
                raise ValueError(
                    f"{name} must be {self.num_games} uint64 stream words, got {array.dtype} {array.shape}"
                )
        self.set_states(snapshot["states"])
        self._arrays.deal_rng[:] = snapshot["deal_rng"]
        self._arrays.play_rng[:] = snapshot["play_rng"]

    def game(self, i: int) -> GameState:
        """Game ``i`` (an integer in 0..num_games-1; no negative indices) as an (immutable) ``GameState``."""
        if not is_integer(i) or not 0 <= i < self.num_games:
            raise IndexError(f"game index must be an integer in 0..{self.num_games - 1}, got {i!r}")
        return GameState._wrap(self.states[i].copy())

    def _refresh_row(self, i: int) -> None:
        a = self._arrays
        a.counts[i] = rules.legal_mask_into(a.states[i], a.masks[i])
        a.cur[i] = rules.current_player(a.states[i])

    # --- stepping -----------------------------------------------------------------------------
    def step(self, actions: npt.ArrayLike, *, observe: bool = False) -> StepResult:
        """One action per game, by each game's player to move. Illegal actions raise
        ``IllegalActionError`` naming the first offending game, and no game is changed.
        ``observe=True`` also rewrites ``observations`` (each game from its new acting seat) in
        the same compiled call, which is cheaper than a separate ``observe()``."""
        acts = self._check_actions(actions)
        self._k.selfplay_step(
            self._batch_fields, acts, self._deal_fields, self.auto_reset, observe, self._results_fields
        )
        if self._errors.any():  # pragma: no cover - the mask check above makes this unreachable
            raise RuntimeError(f"rules rejected a masked-in action: errors {np.flatnonzero(self._errors)}")
        return self._result

    def _check_actions(self, actions: npt.ArrayLike) -> npt.NDArray[np.int64]:
        acts = as_action_ids(actions, self.num_games, allow_skip=not self.auto_reset)
        i = vector_kernels.first_illegal(self.masks, self.counts, acts, not self.auto_reset)
        if i >= 0:
            raise IllegalActionError(f"game {i}: {self._why_illegal(i, np.asarray(actions)[i])}")
        return acts

    def _why_illegal(self, i: int, action: Any) -> str:
        try:
            self.game(i).step(action)
        except IllegalActionError as exc:
            return str(exc)
        return f"action {action} is not legal"  # pragma: no cover

    def sample_random(self) -> npt.NDArray[np.int64]:
        """A uniformly random legal action for every game (-1 for a finished game), drawn from each
        game's own play stream. The returned array is reused by the next call."""
        self._k.random_actions(self.masks, self.counts, self._arrays.play_rng, self._actions)
        return self._actions

    def observe(self, seats: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.float32]:
        """Observations of every game from ``seats`` (default: each game's player to move)."""
        if seats is None:
            seats = self._to_move
        else:
            given = np.asarray(seats)
            if given.dtype.kind not in "iu" or given.shape != (self.num_games,) or not np.isin(given, (0, 1)).all():
                raise ValueError(f"seats must be {self.num_games} integers in {{0, 1}}, got {seats!r}")
            seats = given.astype(np.int64)
        self._k.observe(self._batch_fields, seats)
        return self.observations

    def nbytes_per_game(self) -> int:
        """Bytes of preallocated arrays per game (states, masks, observations and bookkeeping)."""
        arrays = [*self._arrays, self._errors, self._actions, self._to_move, *vars(self._result).values()]
        return int(sum(a.nbytes for a in arrays)) // self.num_games


def read_only(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A view of ``array`` that neither its holder nor numpy can make writable (its buffer is a
    read-only memoryview)."""
    view: npt.NDArray[Any] = np.asarray(memoryview(cast(Any, array)).toreadonly())
    return view
