"""The observation: its layout, its normalisation, the compiled encoder and named views, in one place.

``observe_into`` (compiled, called by every front-end and the vector kernels) writes the one
observation of the project: a float32 vector of ``OBS_DIM`` entries seen from one seat ("me" =
the observer, "opp" = the other player). Every entry is ``quantity / divisor`` with the divisors
of the tables below (``SCALARS``, ``CIRCLE_SCALES``), which the encoder reads; adding a feature
means adding a row to a table and one line to the encoder, both here::

    index   0 .. 404     planes   (5, 9, 9)    cells, row-major per plane (see PLANE_NAMES)
          405 .. 428     scalars  (24,)        numbers of both players and the game (SCALARS)
          429 .. 1451    circle   (33, 31)     the whole circle in order from the neutral token,
                                               31 features per patch (CIRCLE_FEATURES)

Views work on one observation ``(OBS_DIM,)`` or a batch ``(..., OBS_DIM)`` and return numpy
views (no copy) when the input is contiguous:

>>> import numpy as np
>>> from patchwork_env import new_game
>>> from patchwork_env.envs.observation import observe, planes, vector, decode_scalars
>>> s = new_game(seed=0)
>>> obs = observe(s, s.current_player)
>>> planes(obs).shape, vector(obs).shape
((5, 9, 9), (1047,))
>>> decode_scalars(obs)["buttons_me"], decode_scalars(obs)["circle_size"]
(5.0, 33.0)

``observation_table()`` renders the layout as the Markdown table of the environment's
documentation page (``patchwork_env.envs.aec``); a test keeps the two identical. The views also slice
torch tensors (``patchwork_env.players.network`` uses them).
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.actions import as_player
from patchwork_env.core.bitboard import BOARD, CELLS, SHAPE5, SHAPE_BOX
from patchwork_env.core.jit import jit
from patchwork_env.core.patches import NUM_PATCHES
from patchwork_env.core.state import GameState
from patchwork_env.core.validate import check_state_rows

FloatArray = npt.NDArray[np.float32]
StateArray = npt.NDArray[np.int64]

# --- layout ----------------------------------------------------------------------------------
N_PLANES = 5  # own quilt, opponent quilt, cells each market slot's patch could cover
N_SCALARS = 24
CIRCLE_FEATURES = 6 + SHAPE_BOX * SHAPE_BOX  # present, cost, time, buttons, area, affordable, 5x5 shape
OBS_PLANES_END = N_PLANES * CELLS  # 405
OBS_SCALARS_END = OBS_PLANES_END + N_SCALARS  # 429
OBS_DIM = OBS_SCALARS_END + NUM_PATCHES * CIRCLE_FEATURES  # 1452
COVER_START = 2 * CELLS  # planes 2..4: what each market slot's patch could cover (rules.market_pass)
COVER_END = COVER_START + rules.MARKET_SIZE * CELLS
PLANES_SLICE = slice(0, OBS_PLANES_END)
SCALARS_SLICE = slice(OBS_PLANES_END, OBS_SCALARS_END)
CIRCLE_SLICE = slice(OBS_SCALARS_END, OBS_DIM)
VECTOR_SLICE = slice(OBS_PLANES_END, OBS_DIM)
MARKET_SLICE = slice(OBS_SCALARS_END, OBS_SCALARS_END + rules.MARKET_SIZE * CIRCLE_FEATURES)

PLANE_NAMES: tuple[str, ...] = ("quilt_me", "quilt_opp", "cover_slot0", "cover_slot1", "cover_slot2")
PLANE_DESCRIPTIONS: tuple[str, ...] = (
    "1 where my quilt is covered",
    "1 where the opponent's quilt is covered",
    "1 on each cell that slot 0's patch covers in some placement fitting my quilt",
    "same for slot 1",
    "same for slot 2",
)

# Upper bounds used for the observation space (derived from the rules, not observed):
MAX_BUTTONS = rules.MAX_BUTTONS
MAX_INCOME = rules.MAX_INCOME
MIN_SCORE = -2 * CELLS
_MARKS = len(rules.INCOME_MARKS)  # 9
_FAR = rules.FINAL_SPACE + 1  # to_leather when no leather patch is ahead
MAX_SCORE = MAX_BUTTONS + rules.BONUS_POINTS  # MAX_BUTTONS = 400


class Scalar(NamedTuple):
    """One scalar entry: ``value = game_quantity / scale``, game quantities in ``[low, high]``."""

    name: str
    scale: float
    low: float
    high: float
    description: str


def _pair(name: str, scale: float, low: float, high: float, description: str) -> tuple[Scalar, Scalar]:
    return (
        Scalar(f"{name}_me", scale, low, high, description.format(who="my")),
        Scalar(f"{name}_opp", scale, low, high, description.format(who="the opponent's")),
    )


SCALARS: tuple[Scalar, ...] = (
    *_pair("position", rules.FINAL_SPACE, 0, rules.FINAL_SPACE, "{who} time-track space"),
    *_pair("buttons", 50, 0, MAX_BUTTONS, "{who} buttons"),
    *_pair("income", 20, 0, MAX_INCOME, "{who} income (button icons on the quilt)"),
    *_pair("to_income", 6, 0, 6, "spaces from {who} token to the next income mark (0 if none left)"),
    *_pair("income_marks_left", _MARKS, 0, _MARKS, "income marks still ahead of {who} token"),
    # the game never gives less than 1 here, but the space starts at 0 so that an all-zero observation
    # (a wrapper's padding or delayed first observation, e.g. SuperSuit's delay_observations) is in it
    *_pair("to_leather", _FAR, 0, _FAR, "spaces from {who} token to the next leather patch (54 if none left)"),
    *_pair("empty_cells", CELLS, 0, CELLS, "empty cells on {who} quilt"),
    *_pair("first_to_53", 1, 0, 1, "1 if {who} token reached space 53 first (the tie-break)"),
    *_pair(
        "score", 50, MIN_SCORE, MAX_SCORE, "{who} score if the game ended now (buttons + 7 bonus - 2 per empty cell)"
    ),
    Scalar("bonus_unclaimed", 1, 0, 1, "1 while nobody holds the 7x7 bonus tile"),
    Scalar("bonus_me", 1, 0, 1, "1 if I hold the bonus tile"),
    Scalar("bonus_opp", 1, 0, 1, "1 if the opponent holds the bonus tile"),
    Scalar("to_move", 1, 0, 1, "1 if I decide now"),
    Scalar("must_place_leather", 1, 0, 1, "1 if I decide now and must place a leather patch"),
    Scalar("circle_size", NUM_PATCHES, 0, NUM_PATCHES, "patches left in the circle"),
)
SCALAR_INDEX: dict[str, int] = {s.name: i for i, s in enumerate(SCALARS)}

CIRCLE_FEATURE_NAMES: tuple[str, ...] = (
    "present",
    "cost",
    "time",
    "buttons",
    "area",
    "affordable",
    *(f"shape_r{r}c{c}" for r in range(5) for c in range(5)),
)
CIRCLE_SCALES: tuple[float, ...] = (1, 10, 6, 3, 8, 1, *([1] * SHAPE_BOX * SHAPE_BOX))
CIRCLE_DESCRIPTIONS: tuple[str, ...] = (
    "1 if a patch is at this circle position (positions 0..2 are the market)",
    "its cost in buttons",
    "its time (spaces the buyer moves)",
    "its button icons",
    "its cells",
    "1 if I can pay its cost now",
    "1 on its cells, as listed (orientation 0) in a 5x5 box, row-major",
)

if len(SCALARS) != N_SCALARS or len(CIRCLE_FEATURE_NAMES) != CIRCLE_FEATURES or len(PLANE_NAMES) != N_PLANES:
    raise ValueError("the observation tables no longer match the layout: update observation.py")

# the divisors as the encoder reads them (float64: quantities are divided in float64, then stored)
_SCALAR_SCALES = np.array([s.scale for s in SCALARS], dtype=np.float64)
_CIRCLE_SCALES = np.array(CIRCLE_SCALES, dtype=np.float64)
# index of each "me" scalar (its "opp" twin follows it) and of the game scalars, in SCALARS
_POSITION, _BUTTONS, _INCOME, _TO_INCOME, _MARKS_LEFT, _TO_LEATHER, _EMPTY, _FIRST53, _SCORE = (
    SCALAR_INDEX[f"{name}_me"]
    for name in (
        "position", "buttons", "income", "to_income", "income_marks_left", "to_leather", "empty_cells",
        "first_to_53", "score",
    )
)  # fmt: skip
_BONUS_UNCLAIMED, _BONUS_ME, _BONUS_OPP, _TO_MOVE, _MUST_PLACE, _CIRCLE_SIZE = (
    SCALAR_INDEX[name]
    for name in ("bonus_unclaimed", "bonus_me", "bonus_opp", "to_move", "must_place_leather", "circle_size")
)
_PRESENT, _COST, _TIME, _ICONS, _AREA, _AFFORDABLE, _SHAPE = range(7)  # offsets in a circle entry


# --- the encoder (compiled) ------------------------------------------------------------------
@jit
def _write_scalar(out: FloatArray, i: int, quantity: float) -> None:
    out[OBS_PLANES_END + i] = quantity / _SCALAR_SCALES[i]


@jit
def _observe_public(s: StateArray, me: int, out: FloatArray) -> None:
    """Everything of the observation but the market cover planes (which stay zero)."""
    you = 1 - me
    out[:] = 0.0
    rules.write_cells(s[rules.QUILT + 2 * me], s[rules.QUILT + 2 * me + 1], out, 0)
    rules.write_cells(s[rules.QUILT + 2 * you], s[rules.QUILT + 2 * you + 1], out, CELLS)
    for k, p in enumerate((me, you)):
        pos = s[rules.POS + p]
        marks_left = rules.income_marks_ahead(pos)
        _write_scalar(out, _POSITION + k, pos)
        _write_scalar(out, _BUTTONS + k, s[rules.BUTTONS + p])
        _write_scalar(out, _INCOME + k, s[rules.INCOME + p])
        _write_scalar(out, _TO_INCOME + k, rules.spaces_to_next_income(pos) if marks_left else 0)
        _write_scalar(out, _MARKS_LEFT + k, marks_left)
        _write_scalar(out, _TO_LEATHER + k, rules.spaces_to_next_leather(s, pos))
        _write_scalar(out, _EMPTY + k, rules.empty_cells(s, p))
        _write_scalar(out, _FIRST53 + k, 1.0 if s[rules.FIRST53] == p else 0.0)
        _write_scalar(out, _SCORE + k, rules.score(s, p))
    _write_scalar(out, _BONUS_UNCLAIMED, 1.0 if s[rules.BONUS] < 0 else 0.0)
    _write_scalar(out, _BONUS_ME, 1.0 if s[rules.BONUS] == me else 0.0)
    _write_scalar(out, _BONUS_OPP, 1.0 if s[rules.BONUS] == you else 0.0)
    to_move = (not rules.is_terminal(s)) and rules.current_player(s) == me
    _write_scalar(out, _TO_MOVE, 1.0 if to_move else 0.0)
    _write_scalar(out, _MUST_PLACE, 1.0 if to_move and s[rules.PENDING] else 0.0)
    n = s[rules.NCIRCLE]
    _write_scalar(out, _CIRCLE_SIZE, n)
    buttons = s[rules.BUTTONS + me]
    for k in range(n):
        patch = s[rules.CIRCLE + k]
        base = OBS_SCALARS_END + k * CIRCLE_FEATURES
        out[base + _PRESENT] = 1.0 / _CIRCLE_SCALES[_PRESENT]
        out[base + _COST] = rules.PATCH_COST[patch] / _CIRCLE_SCALES[_COST]
        out[base + _TIME] = rules.PATCH_TIME[patch] / _CIRCLE_SCALES[_TIME]
        out[base + _ICONS] = rules.PATCH_BUTTONS[patch] / _CIRCLE_SCALES[_ICONS]
        out[base + _AREA] = rules.PATCH_AREA[patch] / _CIRCLE_SCALES[_AREA]
        out[base + _AFFORDABLE] = (1.0 if rules.PATCH_COST[patch] <= buttons else 0.0) / _CIRCLE_SCALES[_AFFORDABLE]
        for j in range(SHAPE_BOX * SHAPE_BOX):
            out[base + _SHAPE + j] = SHAPE5[patch, j] / _CIRCLE_SCALES[_SHAPE + j]


@jit
def observe_into(s: StateArray, me: int, out: FloatArray) -> None:
    """Write the observation of seat ``me`` (own numbers first) into ``out`` (OBS_DIM,)."""
    _observe_public(s, me, out)
    rules.market_pass(s, me, np.empty(0, dtype=np.bool_), False, out[COVER_START:COVER_END], True)


@jit
def legal_mask_and_observe_into(s: StateArray, mask: npt.NDArray[Any], obs: FloatArray) -> int:
    """``rules.legal_mask_into`` and ``observe_into`` from the seat of the player to move, sharing
    one pass over the market placements; returns the number of legal actions."""
    mask[:] = 0
    player = rules.current_player(s)
    _observe_public(s, player, obs)
    cover = obs[COVER_START:COVER_END]
    if rules.is_terminal(s):
        rules.market_pass(s, player, mask, False, cover, True)
        return 0
    if s[rules.PENDING]:
        rules.market_pass(s, player, mask, False, cover, True)
        return rules.leather_placements(s, player, mask)
    mask[rules.ADVANCE] = 1
    return 1 + rules.market_pass(s, player, mask, True, cover, True)


@jit
def observe_batch(states: StateArray, seats: npt.NDArray[np.int64], out: FloatArray) -> None:
    for i in range(states.shape[0]):
        observe_into(states[i], seats[i], out[i])


def observe_movers(states: StateArray) -> npt.NDArray[np.float32]:
    """(B, OBS_DIM) observations of a batch of unfinished states (rows), each from the seat of the
    player to move there. The rows are checked first (``validate.check_state_rows``: a ValueError
    names the first invalid one; about 0.1 us per row, against ~1.5 us to observe it), since the
    compiled kernels below trust their input."""

    check_state_rows(states)
    states = np.ascontiguousarray(states, dtype=np.int64)
    seats = np.empty(len(states), dtype=np.int64)
    rules.current_player_batch(states, seats)
    out = np.empty((len(states), OBS_DIM), dtype=np.float32)
    observe_batch(states, seats, out)
    return out


def observation_bounds() -> tuple[FloatArray, FloatArray]:
    """``(low, high)`` float32 arrays of shape ``(OBS_DIM,)``: the bounds of every entry."""
    low = np.zeros(OBS_DIM, dtype=np.float32)
    high = np.ones(OBS_DIM, dtype=np.float32)
    for i, s in enumerate(SCALARS):
        low[SCALARS_SLICE.start + i] = np.float32(s.low / s.scale)
        high[SCALARS_SLICE.start + i] = np.float32(s.high / s.scale)
    return low, high


# --- views -----------------------------------------------------------------------------------
# The views take and return numpy arrays or torch tensors alike (``View``: the same type back).
View = TypeVar("View")


def _check(obs: Any) -> Any:
    if tuple(obs.shape[-1:]) != (OBS_DIM,):
        raise ValueError(f"an observation has shape (..., {OBS_DIM}), got {tuple(obs.shape)}")
    return obs


def planes(obs: View) -> View:
    """``(..., N_PLANES, 9, 9)``: the spatial part, for convolutional networks."""
    x = _check(obs)
    return cast(View, x[..., PLANES_SLICE].reshape(*x.shape[:-1], N_PLANES, BOARD, BOARD))


def scalars(obs: View) -> View:
    """``(..., N_SCALARS)``: the scalar entries, in the order of ``SCALARS``."""
    x = _check(obs)
    return cast(View, x[..., SCALARS_SLICE])


def circle(obs: View) -> View:
    """``(..., 33, CIRCLE_FEATURES)``: one row per circle position, clockwise from the token."""
    x = _check(obs)
    return cast(View, x[..., CIRCLE_SLICE].reshape(*x.shape[:-1], NUM_PATCHES, CIRCLE_FEATURES))


def vector(obs: View) -> View:
    """``(..., OBS_DIM - OBS_PLANES_END)``: everything but the planes (scalars then circle), for a dense branch
    beside a convolutional one. The whole ``obs`` is the flat vector view."""
    x = _check(obs)
    return cast(View, x[..., VECTOR_SLICE])


def market(obs: View) -> View:
    """``(..., MARKET_SIZE, CIRCLE_FEATURES)``: the circle entries of the three patches on offer."""
    x = _check(obs)
    return cast(View, x[..., MARKET_SLICE].reshape(*x.shape[:-1], rules.MARKET_SIZE, CIRCLE_FEATURES))


class ObservationViews(NamedTuple):
    planes: npt.NDArray[Any]
    scalars: npt.NDArray[Any]
    circle: npt.NDArray[Any]


def split(obs: npt.NDArray[Any]) -> ObservationViews:
    """The three named parts at once."""
    return ObservationViews(planes(obs), scalars(obs), circle(obs))


def decode_scalars(obs: npt.NDArray[Any]) -> dict[str, float]:
    """The scalars of one observation in game units (``value * scale``), by name."""
    if obs.shape != (OBS_DIM,):
        raise ValueError(f"decode_scalars takes one observation of shape ({OBS_DIM},), got {obs.shape}")
    values = scalars(obs)
    return {s.name: round(float(values[i]) * s.scale, 4) for i, s in enumerate(SCALARS)}


def observe(state: GameState, seat: int, out: FloatArray | None = None) -> FloatArray:
    """The observation of ``seat`` (0 or 1) in ``state``, written by ``observe_into``."""
    as_player(seat, "seat")
    if out is None:
        out = np.empty(OBS_DIM, dtype=np.float32)
    observe_into(state.array(), seat, out)
    return out


def observation_and_mask(state: GameState, seat: int | None = None) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """What the environments give an agent in ``state``: the observation from ``seat``'s side
    (default: the player to move), float32 ``(1452,)``, exactly as ``SingleAgentEnv`` and the AEC env
    return it, and the legal-action mask, bool ``(2026,)`` (all False unless ``seat`` is to move).
    Both are fresh writable arrays (``torch.from_numpy`` takes them as they are).

    >>> from patchwork_env import new_game, observation_and_mask
    >>> obs, mask = observation_and_mask(new_game(seed=0))
    >>> obs.shape, obs.dtype, mask.shape, int(mask.sum())
    ((1452,), dtype('float32'), (2026,), 705)
    """
    me = state.current_player if seat is None else seat
    if isinstance(me, bool) or not isinstance(me, int | np.integer) or me not in (0, 1):
        raise ValueError(f"seat must be 0, 1 or None (the player to move), got {seat!r}")
    obs = observe(state, int(me))
    mask = state.legal_action_mask().copy() if me == state.current_player else np.zeros(rules.NUM_ACTIONS, np.bool_)
    return obs, mask


# --- documentation ---------------------------------------------------------------------------
def _num(x: float) -> str:
    return f"{x:g}"


def observation_table() -> str:
    """The layout as a Markdown table, as printed in the env's documentation page.
    Each entry holds ``quantity / divisor``."""
    rows = ["| Index | Name | Quantity | Divisor |", "|---|---|---|---|"]
    for k, (name, text) in enumerate(zip(PLANE_NAMES, PLANE_DESCRIPTIONS, strict=True)):
        rows.append(f"| {k * CELLS}..{k * CELLS + CELLS - 1} | `{name}` (9x9) | {text} | 1 |")
    for i, s in enumerate(SCALARS):
        rows.append(f"| {SCALARS_SLICE.start + i} | `{s.name}` | {s.description} | {_num(s.scale)} |")
    c0 = CIRCLE_SLICE.start
    rows.append(
        f"| {c0}..{OBS_DIM - 1} | `circle` (33x{CIRCLE_FEATURES}) | circle position k (0 = next after the token) "
        f"at {c0} + {CIRCLE_FEATURES}k, all 0 past the end | |"
    )
    for j, text in enumerate(CIRCLE_DESCRIPTIONS):
        name = CIRCLE_FEATURE_NAMES[j] if j < 6 else "shape_r0c0..shape_r4c4"
        where = f"+{j}" if j < 6 else f"+6..+{CIRCLE_FEATURES - 1}"
        rows.append(f"| {where} | `{name}` | {text} | {_num(CIRCLE_SCALES[j])} |")
    return "\n".join(rows)
