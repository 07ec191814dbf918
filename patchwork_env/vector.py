"""N games stepped together over the same compiled rules as ``GameState``.

All per-game data lives in preallocated arrays that are rewritten in place:

    states          (N, STATE_LEN) int64   the rule state of each game (layout in ``rules``)
    masks           (N, 2026) bool         legal mask of the player to move in each game
    current_player  (N,) int64             who decides now in each game
    observations    (N, OBS_DIM) float32   each game from its acting seat (``observe()``)

``step(actions)`` applies one action per game (every game's acting seat decides). Finished games
are reset at once when ``auto_reset`` is on, with a new deal from that game's own seed stream; the
result of the game that ended is reported in the returned ``StepResult``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from patchwork_env import rules as R
from patchwork_env.patches import NUM_PATCHES, STARTING_PATCH
from patchwork_env.state import GameState, IllegalActionError


@dataclass
class StepResult:
    """What one ``step`` of the batch produced (arrays of length N, reused between steps)."""

    done: npt.NDArray[np.bool_]  # the game ended on this step (it has been reset if auto_reset)
    winner: npt.NDArray[np.int64]  # winner of the game that ended, -1 elsewhere
    scores: npt.NDArray[np.int64]  # (N, 2) final scores of the game that ended, 0 elsewhere
    actor: npt.NDArray[np.int64]  # the seat that took the action in each game


class VectorGames:
    """``num_games`` Patchwork games in one block of arrays."""

    def __init__(
        self,
        num_games: int,
        seed: int | None = None,
        *,
        leather_layout: str = "revised",
        auto_reset: bool = True,
    ) -> None:
        if not isinstance(num_games, int) or num_games < 1:
            raise ValueError(f"num_games must be a positive integer, got {num_games!r}")
        if leather_layout not in R.LEATHER_LAYOUTS:
            raise ValueError(f"leather_layout must be one of {sorted(R.LEATHER_LAYOUTS)}, got {leather_layout!r}")
        self.num_games = num_games
        self.auto_reset = auto_reset
        self._layout = R.LAYOUT_NAMES.index(leather_layout)
        self._leather = R.leather_mask(leather_layout)
        self.states = np.zeros((num_games, R.STATE_LEN), dtype=np.int64)
        self.masks = np.zeros((num_games, R.NUM_ACTIONS), dtype=np.bool_)
        self.counts = np.zeros(num_games, dtype=np.int64)
        self.current_player = np.zeros(num_games, dtype=np.int64)
        self.observations = np.zeros((num_games, R.OBS_DIM), dtype=np.float32)
        self._errors = np.zeros(num_games, dtype=np.int64)
        self._result = StepResult(
            done=np.zeros(num_games, dtype=np.bool_),
            winner=np.full(num_games, -1, dtype=np.int64),
            scores=np.zeros((num_games, 2), dtype=np.int64),
            actor=np.zeros(num_games, dtype=np.int64),
        )
        self._rngs: list[np.random.Generator] = []
        self.reset(seed)

    # --- dealing ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        """New deals for every game; each game gets its own generator spawned from ``seed``."""
        children = np.random.SeedSequence(seed).spawn(self.num_games)
        self._rngs = [np.random.default_rng(c) for c in children]
        for i in range(self.num_games):
            self._deal(i)
        self._refresh()

    def _deal(self, i: int) -> None:
        rng = self._rngs[i]
        circle = np.append(rng.permutation(np.arange(1, NUM_PATCHES, dtype=np.int64)), STARTING_PATCH)
        R.new_state_into(self.states[i], circle, int(rng.integers(2)), self._layout, self._leather)

    def set_state(self, i: int, state: GameState) -> None:
        """Put a given position into game ``i`` (for tests and search)."""
        self.states[i] = state.array()
        self._refresh()

    def game(self, i: int) -> GameState:
        """Game ``i`` as an (immutable) ``GameState``."""
        return GameState._wrap(self.states[i].copy())

    def _refresh(self) -> None:
        R.legal_mask_batch(self.states, self.masks, self.counts)
        R.current_player_batch(self.states, self.current_player)

    # --- stepping -----------------------------------------------------------------------------
    def step(self, actions: npt.ArrayLike) -> StepResult:
        """One action per game, by each game's player to move. Illegal actions raise
        ``IllegalActionError`` naming the first offending game, and no game is changed."""
        acts = np.asarray(actions)
        if acts.shape != (self.num_games,) or not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(
                f"actions must be an integer array of shape ({self.num_games},), got {acts.dtype} {acts.shape}"
            )
        acts = acts.astype(np.int64, copy=False)
        in_range = (acts >= 0) & (acts < R.NUM_ACTIONS)
        legal = in_range & self.masks[np.arange(self.num_games), np.where(in_range, acts, 0)]
        if not legal.all():
            i = int(np.flatnonzero(~legal)[0])
            try:
                self.game(i).step(int(acts[i]))
            except IllegalActionError as exc:
                raise IllegalActionError(f"game {i}: {exc}") from None
            raise IllegalActionError(f"game {i}: action {int(acts[i])} is not legal")  # pragma: no cover
        res = self._result
        res.actor[:] = self.current_player
        R.step_batch(self.states, acts, self._errors)
        res.done[:] = False
        res.winner[:] = -1
        res.scores[:] = 0
        st = self.states
        ended = (st[:, R.POS] == R.FINAL_SPACE) & (st[:, R.POS + 1] == R.FINAL_SPACE) & (st[:, R.PENDING] == 0)
        for i in np.flatnonzero(ended).tolist():
            s = st[i]
            res.done[i] = True
            res.winner[i] = R.winner(s)
            res.scores[i] = (R.score(s, 0), R.score(s, 1))
            if self.auto_reset:
                self._deal(i)
        self._refresh()
        return res

    def observe(self, seats: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.float32]:
        """Observations of every game from ``seats`` (default: each game's player to move)."""
        R.observe_batch(self.states, self.current_player if seats is None else seats, self.observations)
        return self.observations
