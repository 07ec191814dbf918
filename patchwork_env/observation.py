"""The observation vector: its documented layout and named views into it.

``rules.observe_into`` writes the one observation of the project: a float32 vector of ``OBS_DIM``
entries seen from one seat ("me" = the observer, "opp" = the other player). This module does not
compute anything of its own; it names the parts of that vector and slices them::

    index   0 .. 404     planes   (5, 9, 9)    cells, row-major per plane (see PLANE_NAMES)
          405 .. 428     scalars  (24,)        numbers of both players and the game (SCALARS)
          429 .. 1451    circle   (33, 31)     the whole circle in order from the neutral token,
                                               31 features per patch (CIRCLE_FEATURES)

Views work on one observation ``(OBS_DIM,)`` or a batch ``(..., OBS_DIM)`` and return numpy
views (no copy) when the input is contiguous:

>>> import numpy as np
>>> from patchwork_env import new_game
>>> from patchwork_env.observation import observe, planes, vector, decode_scalars
>>> s = new_game(seed=0)
>>> obs = observe(s, s.current_player)
>>> planes(obs).shape, vector(obs).shape
((5, 9, 9), (1047,))
>>> decode_scalars(obs)["buttons_me"], decode_scalars(obs)["circle_size"]
(5.0, 33.0)

``observation_table()`` renders the layout as the Markdown table of the environment's
documentation page (``patchwork_env.aec``); a test keeps the two identical.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from patchwork_env import rules as R
from patchwork_env.patches import NUM_PATCHES

if TYPE_CHECKING:
    from patchwork_env.state import GameState

FloatArray = npt.NDArray[np.float32]

OBS_DIM = R.OBS_DIM
N_PLANES = R.N_PLANES
N_SCALARS = R.N_SCALARS
CIRCLE_FEATURES = R.CIRCLE_FEATURES
PLANES_SLICE = slice(0, R.OBS_PLANES_END)
SCALARS_SLICE = slice(R.OBS_PLANES_END, R.OBS_SCALARS_END)
CIRCLE_SLICE = slice(R.OBS_SCALARS_END, R.OBS_DIM)
VECTOR_SLICE = slice(R.OBS_PLANES_END, R.OBS_DIM)

PLANE_NAMES: tuple[str, ...] = ("quilt_me", "quilt_opp", "cover_slot0", "cover_slot1", "cover_slot2")
PLANE_DESCRIPTIONS: tuple[str, ...] = (
    "1 where my quilt is covered",
    "1 where the opponent's quilt is covered",
    "1 on each cell that slot 0's patch covers in some placement fitting my quilt",
    "same for slot 1",
    "same for slot 2",
)

# Upper bounds used for the observation space (derived from the rules, not observed):
MAX_BUTTONS = R.STARTING_BUTTONS + R.FINAL_SPACE + len(R.INCOME_MARKS) * int(R.PATCH_BUTTONS.sum())  # 400
MAX_INCOME = int(R.PATCH_BUTTONS.sum())  # 38
MIN_SCORE = -2 * 81
MAX_SCORE = MAX_BUTTONS + R.BONUS_POINTS


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
    *_pair("position", R.FINAL_SPACE, 0, R.FINAL_SPACE, "{who} time-track space"),
    *_pair("buttons", 50, 0, MAX_BUTTONS, "{who} buttons"),
    *_pair("income", 20, 0, MAX_INCOME, "{who} income (button icons on the quilt)"),
    *_pair("to_income", 6, 0, 6, "spaces from {who} token to the next income mark (0 if none left)"),
    *_pair("income_marks_left", 9, 0, 9, "income marks still ahead of {who} token"),
    # the game never gives less than 1 here, but the space starts at 0 so that an all-zero observation
    # (a wrapper's padding or delayed first observation, e.g. SuperSuit's delay_observations) is in it
    *_pair("to_leather", 54, 0, 54, "spaces from {who} token to the next leather patch (54 if none left)"),
    *_pair("empty_cells", 81, 0, 81, "empty cells on {who} quilt"),
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
CIRCLE_SCALES: tuple[float, ...] = (1, 10, 6, 3, 8, 1, *([1] * 25))
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
    raise ValueError("the observation layout here no longer matches rules.observe_into: update observation.py")


def observation_bounds() -> tuple[FloatArray, FloatArray]:
    """``(low, high)`` float32 arrays of shape ``(OBS_DIM,)``: the bounds of every entry."""
    low = np.zeros(OBS_DIM, dtype=np.float32)
    high = np.ones(OBS_DIM, dtype=np.float32)
    for i, s in enumerate(SCALARS):
        low[SCALARS_SLICE.start + i] = np.float32(s.low / s.scale)
        high[SCALARS_SLICE.start + i] = np.float32(s.high / s.scale)
    return low, high


# --- views -----------------------------------------------------------------------------------
def _check(obs: npt.NDArray[Any]) -> None:
    if obs.shape[-1:] != (OBS_DIM,):
        raise ValueError(f"an observation has shape (..., {OBS_DIM}), got {obs.shape}")


def planes(obs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``(..., N_PLANES, 9, 9)``: the spatial part, for convolutional networks."""
    _check(obs)
    return obs[..., PLANES_SLICE].reshape(*obs.shape[:-1], N_PLANES, 9, 9)


def scalars(obs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``(..., N_SCALARS)``: the scalar entries, in the order of ``SCALARS``."""
    _check(obs)
    return obs[..., SCALARS_SLICE]


def circle(obs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``(..., 33, CIRCLE_FEATURES)``: one row per circle position, clockwise from the token."""
    _check(obs)
    return obs[..., CIRCLE_SLICE].reshape(*obs.shape[:-1], NUM_PATCHES, CIRCLE_FEATURES)


def vector(obs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``(..., OBS_DIM - 405)``: everything but the planes (scalars then circle), for a dense branch
    beside a convolutional one. The whole ``obs`` is the flat vector view."""
    _check(obs)
    return obs[..., VECTOR_SLICE]


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
    """The observation of ``seat`` (0 or 1) in ``state``, written by ``rules.observe_into``."""
    if seat not in (0, 1):
        raise ValueError(f"seat must be 0 or 1, got {seat!r}")
    if out is None:
        out = np.empty(OBS_DIM, dtype=np.float32)
    R.observe_into(state.array(), seat, out)
    return out


# --- documentation ---------------------------------------------------------------------------
def _num(x: float) -> str:
    return f"{x:g}"


def observation_table() -> str:
    """The layout as a Markdown table, as printed in the env's documentation page.
    Each entry holds ``quantity / divisor``."""
    rows = ["| Index | Name | Quantity | Divisor |", "|---|---|---|---|"]
    for k, (name, text) in enumerate(zip(PLANE_NAMES, PLANE_DESCRIPTIONS, strict=True)):
        rows.append(f"| {k * 81}..{k * 81 + 80} | `{name}` (9x9) | {text} | 1 |")
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
