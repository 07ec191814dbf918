"""``GameState``: an immutable, hashable Patchwork position over the compiled rules.

>>> from patchwork_env import new_game, ADVANCE
>>> s = new_game(seed=0)
>>> s.current_player, s.positions, s.buttons
(1, (0, 0), (5, 5))
>>> t = s.step(ADVANCE)          # a pass: one space, one button
>>> t.positions, t.buttons, s.positions
((0, 1), (5, 6), (0, 0))
>>> t.current_player             # player 0 is behind now
0
"""

from __future__ import annotations

from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules, serialize
from patchwork_env.core.actions import (
    Action,
    GameOverError,
    IllegalActionError,
    as_action_id,
    as_player,
    decode_action,
)
from patchwork_env.core.bitboard import ORIENT_CANON, PL_OFFSET, PL_START, popcount, words_to_board
from patchwork_env.core.jit import compile_notice
from patchwork_env.core.patches import NUM_PATCHES, PATCHES, STARTING_PATCH
from patchwork_env.core.render import render_svg, render_text
from patchwork_env.core.validate import check_state_array, state_from_bytes

__all__ = ["GameState", "IllegalActionError", "new_game", "validate_circle"]

IntArray = npt.NDArray[np.int64]


_REASONS = {
    rules.E_GAME_OVER: "the game is over",
    rules.E_LEATHER_PENDING: "a leather patch is pending: only leather placements (1944..2024) are legal",
    rules.E_NO_LEATHER: "no leather patch is pending",
    rules.E_CELL_TAKEN: "that cell is already covered",
    rules.E_NO_SLOT: "no such market slot",
    rules.E_CANNOT_AFFORD: "cannot afford",
    rules.E_DUPLICATE: "duplicate orientation",
    rules.E_OFF_BOARD: "does not fit on the board there",
    rules.E_OVERLAP: "overlaps a patch already on the quilt",
    rules.E_OUT_OF_RANGE: "out of range",
}


class GameState:
    """A position. ``step`` returns a new state; nothing ever changes an existing one.

    Writing an agent: ``legal_actions()`` / ``legal_action_mask()`` are the moves of the player to
    move (``current_player``); ``patchwork_env.observation_and_mask(state, seat)`` gives the
    environments' observation of the state from a seat and its legal mask, as a learner sees them.
    """

    __slots__ = ("_mask", "_s")
    _s: IntArray
    _mask: npt.NDArray[np.bool_] | None

    def __init__(self, array: IntArray) -> None:
        """A position from a raw state array (layout in ``rules``), copied and checked by
        ``reachable_array``: a ValueError names the first bad field or relation."""
        arr = reachable_array(array)
        arr.setflags(write=False)
        self._s = arr
        self._mask = None

    @classmethod
    def _wrap(cls, arr: IntArray) -> GameState:
        """Adopt ``arr`` without a copy (the caller hands over ownership)."""
        obj = object.__new__(cls)
        arr.setflags(write=False)  # half the time of ``arr.flags.writeable = False`` (no flags object)
        obj._s = arr
        obj._mask = None
        return obj

    # --- the rules -------------------------------------------------------------------------
    def step(self, action: SupportsIndex) -> GameState:
        """The state after ``action``; raises ``IllegalActionError`` (a ValueError) if illegal."""
        a = action  # an in-range int needs no conversion: as_action_id's first test, inlined (hot path)
        if type(a) is not int or not 0 <= a < rules.NUM_ACTIONS:
            a = as_action_id(action)  # IllegalActionError for anything but an integer in 0..2025
        new = self._s.copy()
        err = rules.step_into(new, a)
        if err:
            raise (GameOverError if err == rules.E_GAME_OVER else IllegalActionError)(self._explain(a, err))
        return GameState._wrap(new)

    def legal_action_mask(self) -> npt.NDArray[np.bool_]:
        """Read-only bool array (2026,): True where the action is legal (all False at the end)."""
        mask = self._mask
        if mask is None:
            mask = np.empty(rules.NUM_ACTIONS, dtype=np.bool_)
            rules.legal_mask_into(self._s, mask)
            mask.flags.writeable = False
            self._mask = mask
        return mask

    def legal_actions(self) -> npt.NDArray[np.int64]:
        return np.flatnonzero(self.legal_action_mask())

    def is_legal(self, action: SupportsIndex) -> bool:
        try:
            a = as_action_id(action)
        except IllegalActionError:
            return False
        return bool(self.legal_action_mask()[a])

    def scores(self) -> tuple[int, int]:
        """Buttons + 7 for the bonus tile - 2 per empty cell, for both players (any time)."""
        return int(rules.score(self._s, 0)), int(rules.score(self._s, 1))

    @property
    def winner(self) -> int | None:
        w = int(rules.winner(self._s))
        return None if w < 0 else w

    # --- public fields -------------------------------------------------------------------------
    @property
    def current_player(self) -> int:
        return int(rules.current_player(self._s))

    @property
    def is_terminal(self) -> bool:
        return bool(rules.is_terminal(self._s))

    @property
    def positions(self) -> tuple[int, int]:
        s = self._s
        return int(s[rules.POS]), int(s[rules.POS + 1])

    @property
    def buttons(self) -> tuple[int, int]:
        s = self._s
        return int(s[rules.BUTTONS]), int(s[rules.BUTTONS + 1])

    @property
    def income(self) -> tuple[int, int]:
        s = self._s
        return int(s[rules.INCOME]), int(s[rules.INCOME + 1])

    def board(self, player: int) -> npt.NDArray[np.bool_]:
        """(9, 9) bool array, True where ``player``'s quilt is covered."""
        _check_player(player)
        return words_to_board(int(self._s[2 * player]), int(self._s[2 * player + 1]))

    def empty_cells(self, player: int) -> int:
        _check_player(player)
        return 81 - popcount(int(self._s[2 * player]), int(self._s[2 * player + 1]))

    @property
    def circle(self) -> tuple[int, ...]:
        n = int(self._s[rules.NCIRCLE])
        return tuple(int(x) for x in self._s[rules.CIRCLE : rules.CIRCLE + n])

    @property
    def market(self) -> tuple[int, ...]:
        return self.circle[: rules.MARKET_SIZE]

    @property
    def bonus_owner(self) -> int | None:
        b = int(self._s[rules.BONUS])
        return None if b < 0 else b

    @property
    def pending_leather(self) -> bool:
        return bool(self._s[rules.PENDING])

    @property
    def leather_layout(self) -> str:
        return rules.LAYOUT_NAMES[int(self._s[rules.LAYOUT])]

    @property
    def leather_remaining(self) -> tuple[int, ...]:
        bits = int(self._s[rules.LEATHER])
        return tuple(x for x in range(rules.FINAL_SPACE + 1) if (bits >> x) & 1)

    @property
    def top(self) -> int:
        """The player who moved last: on top when both tokens share a space."""
        return int(self._s[rules.TOP])

    @property
    def first_to_finish(self) -> int | None:
        f = int(self._s[rules.FIRST53])
        return None if f < 0 else f

    @property
    def ply(self) -> int:
        return int(self._s[rules.PLY])

    def placements(self, player: int) -> list[tuple[int, int, int, int]]:
        """What lies on ``player``'s quilt, in order: (patch, orientation, row, col); the
        leather patches as (-1, 0, row, col)."""
        _check_player(player)
        out = []
        n = int(self._s[rules.NPLACED + player])
        for entry in self._s[rules.LOG + player * rules.MAX_PLACED : rules.LOG + player * rules.MAX_PLACED + n]:
            e = int(entry)
            if e >= rules.LEATHER_PLACEMENT:
                out.append((-1, 0, *divmod(e - rules.LEATHER_PLACEMENT, 9)))
            else:
                patch = _placement_patch(e)
                o, cell = divmod(int(PL_OFFSET[e]), 81)
                out.append((patch, o, *divmod(cell, 9)))
        return out

    def array(self) -> IntArray:
        """The state array the compiled rules work on (layout in ``rules``): a read-only view that
        cannot be made writable (a state's array is shared by everything derived from it)."""
        return self._s.view()

    # --- identity, copying, serialisation ----------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, GameState) and bool(np.array_equal(self._s, other._s))

    def __hash__(self) -> int:
        return hash(self._s.tobytes())

    def __copy__(self) -> GameState:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> GameState:
        return self

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        return (_from_bytes, (self._s.tobytes(),))

    def to_dict(self) -> dict[str, Any]:
        return serialize.state_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameState:
        """The position a dict describes, if the rules can reach it (else a ValueError saying why)."""
        return cls._wrap(serialize.array_from_dict(data))

    def to_notation(self) -> str:
        return serialize.to_notation(self)

    @classmethod
    def from_notation(cls, text: str) -> GameState:
        """The position a notation line describes (checked as ``from_dict`` checks a dict). The line
        must be exactly what ``to_notation`` writes (ASCII digits, single spaces, no signs, no
        leading zeros), so that one position has one notation; a ValueError shows where it differs.
        Its letters are upper case (``R``/``O``, the leather layout; ``L``, a leather patch) and are
        read so: notation is case-sensitive."""
        lower = next((i for i, ch in enumerate(text) if ch.islower()), None) if isinstance(text, str) else None
        if lower is not None:
            raise ValueError(
                f"notation is case-sensitive, its letters upper case (R or O: the leather layout, L: a leather patch): "
                f"at character {lower} got {text[lower]!r}"
            )
        state = cls._wrap(serialize.array_from_notation(text))
        canonical = state.to_notation()
        if text != canonical:
            at = next((i for i, (a, b) in enumerate(zip(text, canonical, strict=False)) if a != b), None)
            at = min(len(text), len(canonical)) if at is None else at
            got, want = text[at : at + 1] or "the end", canonical[at : at + 1] or "the end"
            raise ValueError(
                f"notation must be written as to_notation writes it: at character {at} got {got!r}, expected "
                f"{want!r} (canonical: {canonical!r})"
            )
        return state

    def __str__(self) -> str:
        return render_text(self)

    def __repr__(self) -> str:
        return f"GameState.from_notation({self.to_notation()!r})"

    def _repr_svg_(self) -> str:
        return render_svg(self)

    # --- errors ------------------------------------------------------------------------------
    def _explain(self, action: int, err: int) -> str:
        if err == rules.E_OUT_OF_RANGE:
            return f"action {action} is out of range: actions are 0..{rules.NUM_ACTIONS - 1}"
        d = decode_action(action)
        where = _describe(d)
        reason = _REASONS.get(err, f"error {err}")
        if d.kind == "buy" and err in (rules.E_CANNOT_AFFORD, rules.E_DUPLICATE, rules.E_OFF_BOARD, rules.E_OVERLAP):
            assert d.slot is not None and d.orientation is not None
            patch = self.circle[d.slot]
            p = PATCHES[patch]
            if err == rules.E_CANNOT_AFFORD:
                reason = f"cannot afford patch {patch} (cost {p.cost}, player has {self.buttons[self.current_player]})"
            elif err == rules.E_DUPLICATE:
                canon = int(ORIENT_CANON[patch, d.orientation])
                reason = f"duplicate orientation: patch {patch} in orientation {d.orientation} is orientation {canon}"
            elif err == rules.E_OFF_BOARD:
                reason = f"patch {patch} does not fit there (it would leave the board)"
            else:
                reason = f"patch {patch} overlaps a patch already on the quilt"
        elif d.kind == "buy" and err == rules.E_NO_SLOT:
            reason = f"no such market slot: {len(self.market)} patches are on offer"
        return f"action {action} ({where}): {reason}"


def _describe(d: Action) -> str:
    if d.kind == "buy":
        return f"slot {d.slot}, orientation {d.orientation}, row {d.row}, col {d.col}"
    if d.kind == "leather":
        return f"leather at row {d.row}, col {d.col}"
    return "advance"


def _check_player(player: int) -> None:
    as_player(player, "player")


def _placement_patch(row: int) -> int:
    return int(np.searchsorted(PL_START, np.int64(row), side="right")) - 1


def _from_bytes(data: bytes) -> GameState:
    return GameState._wrap(reachable_array(state_from_bytes(data)))


def reachable_array(array: Any) -> IntArray:
    """A copy of a raw state array from outside, if it is a state the rules can reach: first every
    field's range (``validate.check_state_array``, which keeps the compiled rules in bounds), then
    the relations of reachability that ``from_dict`` checks (``serialize``: the leather track, the
    circle, buttons, income and ply against the placements), by rebuilding the array from its dict.
    Every public entry point of a raw array calls it (``GameState(array)``, unpickling,
    ``VectorGames.set_state``); a ValueError says what is wrong."""
    arr = check_state_array(array)
    try:
        rebuilt = serialize.array_from_dict(serialize.state_to_dict(GameState._wrap(arr.copy())))
    except ValueError as exc:
        raise ValueError(f"not a position the rules can reach: {exc}") from None
    if not np.array_equal(rebuilt, arr):
        fields = [rules.field_name(int(i)) for i in np.flatnonzero(rebuilt != arr)]
        raise ValueError(f"not a position the rules can reach: {', '.join(dict.fromkeys(fields))} "
                         "disagree with the placements")  # fmt: skip
    return arr


def new_game(
    seed: int | np.random.Generator | None = None,
    *,
    circle: list[int] | tuple[int, ...] | npt.NDArray[np.integer[Any]] | None = None,
    first_player: int | None = None,
    leather_layout: str = "revised",
) -> GameState:
    """A new game. The circle (33 patch ids clockwise from the neutral token, ending with the 1x2
    patch 0) and the first player are drawn from ``numpy.random.default_rng(seed)`` unless given:
    first the circle (a permutation of 1..32, then 0), then the first player."""
    rules.check_leather_layout(leather_layout)
    compile_notice("the rules kernels", rules.step_into, "2-10 s")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if circle is None:
        order = rng.permutation(np.arange(1, NUM_PATCHES, dtype=np.int64))
        arr = np.append(order, STARTING_PATCH).astype(np.int64)
    else:
        arr = validate_circle(circle)
    if first_player is None:
        first_player = int(rng.integers(2))
    else:
        first_player = as_player(first_player, "first_player")
    s = np.zeros(rules.STATE_LEN, dtype=np.int64)
    rules.new_state_into(
        s, arr, int(first_player), rules.LAYOUT_NAMES.index(leather_layout), rules.leather_mask(leather_layout)
    )
    return GameState._wrap(s)


def validate_circle(circle: Any) -> npt.NDArray[np.int64]:
    """A starting circle as an int64 array, or a ValueError saying what is wrong with it. Patch ids
    are integers (Python or numpy; not bools, floats or strings)."""
    if isinstance(circle, str | bytes) or not hasattr(circle, "__len__"):
        raise ValueError(f"circle must be a sequence of 33 integer patch ids, got {circle!r}")
    bad = [x for x in circle if isinstance(x, bool | np.bool_) or not isinstance(x, int | np.integer)]
    if bad:
        raise ValueError(f"circle must hold integer patch ids, got {bad[0]!r} ({type(bad[0]).__name__})")
    values = [int(x) for x in circle]
    if len(values) != NUM_PATCHES or sorted(values) != list(range(NUM_PATCHES)):
        raise ValueError(f"circle must hold each patch id 0..32 exactly once, got {values}")
    if values[-1] != STARTING_PATCH:
        raise ValueError(
            f"circle must end with the 1x2 patch (id {STARTING_PATCH}): the neutral token starts "
            f"just clockwise of it; got {values[-1]} last"
        )
    return np.array(values, dtype=np.int64)
