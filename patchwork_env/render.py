"""Drawing a position: ASCII text (``str(state)``), SVG (Jupyter) and an RGB array."""

from __future__ import annotations

import colorsys
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from patchwork_env import rules as R
from patchwork_env.bitboard import orient
from patchwork_env.patches import PATCHES

if TYPE_CHECKING:
    from patchwork_env.state import GameState

PATCH_CHARS = "0123456789abcdefghijklmnopqrstuvw"
LEATHER_CHAR = "#"


def cell_owners(state: GameState, player: int) -> npt.NDArray[np.int64]:
    """(9, 9) array: the patch id covering each cell, -2 for a leather patch, -1 if empty."""
    grid = np.full((9, 9), -1, dtype=np.int64)
    for patch, o, row, col in state.placements(player):
        if patch < 0:
            grid[row, col] = -2
            continue
        for r, c in orient(PATCHES[patch].cells, o):
            grid[row + r, col + c] = patch
    return grid


def _cell_char(v: int) -> str:
    return "." if v == -1 else LEATHER_CHAR if v == -2 else PATCH_CHARS[v]


def track_line(state: GameState) -> str:
    """The time track 0..53: tokens 0/1 (B both), L leather patch, $ income mark, - plain."""
    chars = []
    leather = set(state.leather_remaining)
    marks = {int(m) for m in R.INCOME_MARKS}
    p0, p1 = state.positions
    for space in range(R.FINAL_SPACE + 1):
        if space == p0 and space == p1:
            chars.append("B")
        elif space == p0:
            chars.append("0")
        elif space == p1:
            chars.append("1")
        elif space in leather:
            chars.append("L")
        elif space in marks:
            chars.append("$")
        else:
            chars.append("-")
    return "".join(chars)


def _shape_lines(patch: int) -> list[str]:
    shape = PATCHES[patch].shape
    return [line.replace("X", PATCH_CHARS[patch]) for line in shape]


def render_text(state: GameState) -> str:
    lines = []
    scores = state.scores()
    to_move = None if state.is_terminal else state.current_player
    heads = []
    for p in (0, 1):
        flag = " <- to move" if p == to_move else ""
        if p == to_move and state.pending_leather:
            flag = " <- places a leather patch"
        bonus = " +7x7" if state.bonus_owner == p else ""
        heads.append(
            f"P{p}: space {state.positions[p]:2d}, {state.buttons[p]:3d} buttons, "
            f"income {state.income[p]:2d}, score {scores[p]:4d}{bonus}{flag}"
        )
    lines.extend(heads)
    grids = [cell_owners(state, p) for p in (0, 1)]
    lines.append("    012345678      012345678")
    for r in range(9):
        row0 = "".join(_cell_char(int(v)) for v in grids[0][r])
        row1 = "".join(_cell_char(int(v)) for v in grids[1][r])
        lines.append(f"  {r} {row0}    {r} {row1}")
    lines.append("time " + track_line(state))
    market = state.market
    if market:
        lines.append(
            "market: "
            + "   ".join(
                f"s{i}: #{p} cost {PATCHES[p].cost} time {PATCHES[p].time} buttons {PATCHES[p].buttons}"
                for i, p in enumerate(market)
            )
        )
        shapes = [_shape_lines(p) for p in market]
        height = max(len(s) for s in shapes)
        for r in range(height):
            parts = [(s[r] if r < len(s) else "").ljust(8) for s in shapes]
            lines.append("        " + "".join(parts).rstrip())
        rest = state.circle[3:]
        if rest:
            lines.append("then:   " + " ".join(str(p) for p in rest))
    if state.is_terminal:
        lines.append(f"game over: player {state.winner} wins {scores[0]} to {scores[1]}")
    return "\n".join(lines)


def patch_color(patch: int) -> tuple[int, int, int]:
    """A distinct colour per patch id (golden-ratio hues); leather brown, empty light grey."""
    if patch == -2:
        return (139, 90, 43)
    if patch == -1:
        return (235, 235, 228)
    h = (patch * 0.618033988749895) % 1.0
    r, g, b = colorsys.hsv_to_rgb(h, 0.55, 0.88)
    return int(r * 255), int(g * 255), int(b * 255)


def render_rgb(state: GameState, cell: int = 16) -> npt.NDArray[np.uint8]:
    """uint8 (H, W, 3): both quilts (patches in distinct colours, the player to move framed),
    the time track (tokens, leather patches, income marks) and the next market patches."""
    gap = cell
    quilt = 9 * cell
    width = 2 * quilt + 3 * gap
    track_cell = max(width // 54, 2)
    height = gap + quilt + gap + 2 * track_cell + gap + 5 * cell // 2 + gap
    img = np.full((height, width, 3), 255, dtype=np.uint8)
    to_move = None if state.is_terminal else state.current_player
    for p in (0, 1):
        x0 = gap + p * (quilt + gap)
        if p == to_move:
            img[gap - 3 : gap + quilt + 3, x0 - 3 : x0 + quilt + 3] = (30, 30, 30)
        grid = cell_owners(state, p)
        for r in range(9):
            for c in range(9):
                y = gap + r * cell
                x = x0 + c * cell
                img[y : y + cell, x : x + cell] = patch_color(int(grid[r, c]))
                img[y : y + cell, x] = (200, 200, 200)
                img[y, x : x + cell] = (200, 200, 200)
    ty = gap + quilt + gap
    leather = set(state.leather_remaining)
    marks = {int(m) for m in R.INCOME_MARKS}
    tx0 = (width - 54 * track_cell) // 2
    for space in range(R.FINAL_SPACE + 1):
        x = tx0 + space * track_cell
        color = (120, 90, 40) if space in leather else (60, 120, 200) if space in marks else (220, 220, 220)
        img[ty : ty + track_cell, x : x + track_cell - 1] = color
    for p, color in ((0, (220, 40, 40)), (1, (40, 160, 40))):
        x = tx0 + state.positions[p] * track_cell
        y = ty + track_cell
        img[y : y + track_cell, x : x + track_cell - 1] = color
    my = ty + 2 * track_cell + gap
    small = cell // 2
    for i, patch in enumerate(state.market):
        x0 = gap + i * 6 * small
        for r, c in PATCHES[patch].cells:
            img[my + r * small : my + (r + 1) * small - 1, x0 + c * small : x0 + (c + 1) * small - 1] = patch_color(
                patch
            )
    return img


def render_svg(state: GameState, cell: int = 18) -> str:
    """An SVG drawing of both quilts, the time track and the market, for Jupyter."""
    quilt = 9 * cell
    width = 2 * quilt + 60
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{quilt + 110}" '
        'font-family="monospace" font-size="11">'
    ]
    to_move = None if state.is_terminal else state.current_player
    scores = state.scores()
    for p in (0, 1):
        x0 = 20 + p * (quilt + 20)
        label = f"P{p} sp{state.positions[p]} btn{state.buttons[p]} inc{state.income[p]} sc{scores[p]}"
        weight = "bold" if p == to_move else "normal"
        out.append(f'<text x="{x0}" y="12" font-weight="{weight}">{label}</text>')
        grid = cell_owners(state, p)
        for r in range(9):
            for c in range(9):
                rgb = patch_color(int(grid[r, c]))
                out.append(
                    f'<rect x="{x0 + c * cell}" y="{18 + r * cell}" width="{cell}" height="{cell}" '
                    f'fill="rgb{rgb}" stroke="#bbb"/>'
                )
    ty = 30 + quilt
    step = (width - 20) / 54
    leather = set(state.leather_remaining)
    marks = {int(m) for m in R.INCOME_MARKS}
    for space in range(R.FINAL_SPACE + 1):
        fill = "#785a28" if space in leather else "#3c78c8" if space in marks else "#ddd"
        out.append(f'<rect x="{10 + space * step:.1f}" y="{ty}" width="{step - 1:.1f}" height="8" fill="{fill}"/>')
    for p, fill in ((0, "#dc2828"), (1, "#28a028")):
        out.append(
            f'<circle cx="{10 + (state.positions[p] + 0.5) * step:.1f}" cy="{ty + 14 + 6 * p}" r="4" fill="{fill}"/>'
        )
    market = ", ".join(f"#{p} ({PATCHES[p].cost}b {PATCHES[p].time}t {PATCHES[p].buttons}i)" for p in state.market)
    out.append(f'<text x="10" y="{ty + 45}">market: {market}</text>')
    out.append("</svg>")
    return "".join(out)
