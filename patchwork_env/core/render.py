"""Drawing a position: ASCII text (``str(state)``), SVG (Jupyter) and an RGB array."""

from __future__ import annotations

import colorsys

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.bitboard import orient
from patchwork_env.core.patches import PATCHES
from patchwork_env.core.view import Position

PATCH_CHARS = "0123456789abcdefghijklmnopqrstuvw"
LEATHER_CHAR = "#"


def cell_owners(state: Position, player: int) -> npt.NDArray[np.int64]:
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


def track_line(state: Position) -> str:
    """The time track 0..53: tokens 0/1 (B both), L leather patch, $ income mark, - plain."""
    chars = []
    leather = set(state.leather_remaining)
    marks = {int(m) for m in rules.INCOME_MARKS}
    p0, p1 = state.positions
    for space in range(rules.FINAL_SPACE + 1):
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


def render_text(state: Position) -> str:
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
    """A distinct colour per patch id (golden-ratio hues, alternating saturation and brightness);
    leather brown, empty light grey."""
    if patch == -2:
        return (139, 90, 43)
    if patch == -1:
        return (235, 235, 228)
    h = (patch * 0.618033988749895) % 1.0
    s = (0.55, 0.8)[patch % 2]
    v = (0.92, 0.72)[(patch // 2) % 2]
    r, g, b = colorsys.hsv_to_rgb(h, s, v)
    return int(r * 255), int(g * 255), int(b * 255)


PLAYER_COLORS = ((220, 40, 40), (40, 160, 40))  # tokens and name bars: player 0 red, player 1 green
INCOME_COLOR = (60, 120, 200)
LEATHER_TRACK_COLOR = (120, 90, 40)
BONUS_COLOR = (230, 180, 20)
GRID_COLOR = (200, 200, 200)
SEAM_COLOR = (40, 40, 40)
INK = (30, 30, 30)

# A 3x5 pixel font for the numbers in the picture (B buttons, I income, S score, C cost, T time).
_GLYPHS = {
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001010010010",
    "8": "111101111101111",
    "9": "111101111001111",
    "-": "000000111000000",
    "B": "110101110101110",
    "I": "111010010010111",
    "S": "111100111001111",
    "C": "111100100100111",
    "T": "111010010010010",
    " ": "000000000000000",
}


def _text(img: npt.NDArray[np.uint8], y: int, x: int, text: str, color: tuple[int, int, int], px: int) -> int:
    """Draw ``text`` with the 3x5 font, each font pixel ``px`` wide; return the x after it."""
    for ch in text:
        bits = _GLYPHS[ch]
        for k, bit in enumerate(bits):
            if bit == "1":
                r, c = divmod(k, 3)
                img[y + r * px : y + (r + 1) * px, x + c * px : x + (c + 1) * px] = color
        x += 4 * px
    return x


def placement_grid(state: Position, player: int) -> npt.NDArray[np.int64]:
    """(9, 9) array: the index of the placement (in ``state.placements(player)``) covering each
    cell, -1 if empty. Two cells belong to the same piece exactly when they hold the same index."""
    grid = np.full((9, 9), -1, dtype=np.int64)
    for k, (patch, o, row, col) in enumerate(state.placements(player)):
        cells = ((0, 0),) if patch < 0 else orient(PATCHES[patch].cells, o)
        for r, c in cells:
            grid[row + r, col + c] = k
    return grid


def _quilt(img: npt.NDArray[np.uint8], state: Position, player: int, y0: int, x0: int, cell: int) -> None:
    owners = cell_owners(state, player)
    pieces = placement_grid(state, player)
    for r in range(9):
        for c in range(9):
            y, x = y0 + r * cell, x0 + c * cell
            img[y : y + cell, x : x + cell] = patch_color(int(owners[r, c]))
    for i in range(10):  # the grid, then dark seams between different pieces
        img[y0 + i * cell, x0 : x0 + 9 * cell + 1] = GRID_COLOR
        img[y0 : y0 + 9 * cell + 1, x0 + i * cell] = GRID_COLOR
    for r in range(9):
        for c in range(9):
            k = int(pieces[r, c])
            y, x = y0 + r * cell, x0 + c * cell
            if k < 0:
                continue
            if r == 0 or pieces[r - 1, c] != k:
                img[y : y + 2, x : x + cell + 1] = SEAM_COLOR
            if r == 8 or pieces[r + 1, c] != k:
                img[y + cell - 1 : y + cell + 1, x : x + cell + 1] = SEAM_COLOR
            if c == 0 or pieces[r, c - 1] != k:
                img[y : y + cell + 1, x : x + 2] = SEAM_COLOR
            if c == 8 or pieces[r, c + 1] != k:
                img[y : y + cell + 1, x + cell - 1 : x + cell + 1] = SEAM_COLOR


def _shape(img: npt.NDArray[np.uint8], patch: int, y0: int, x0: int, cell: int, faded: bool) -> None:
    color = patch_color(patch)
    if faded:
        color = tuple((v + 2 * 255) // 3 for v in color)  # type: ignore[assignment]
    for r, c in PATCHES[patch].cells:
        img[y0 + r * cell : y0 + (r + 1) * cell - 1, x0 + c * cell : x0 + (c + 1) * cell - 1] = color


def render_rgb(state: Position, cell: int = 16) -> npt.NDArray[np.uint8]:
    """uint8 (H, W, 3) picture of a position, top to bottom:

    - a bar per player in its token colour (framed when that player is to move, a gold square
      when it holds the 7x7 bonus tile), with buttons (B), income (I) and score (S);
    - both quilts, each patch in its own colour with dark seams between pieces, leather brown;
    - the time track 0..53 (income marks blue, leather patches brown) with player 0's token in
      the row below it and player 1's in the row below that;
    - the market: the three patches on offer with their cost (C) and time (T), then the next
      three in the circle, faded.
    """
    if cell < 6:
        raise ValueError(f"cell must be at least 6 pixels, got {cell}")
    px = max(1, cell // 8)  # font pixel
    gap = cell
    quilt = 9 * cell
    width = 2 * quilt + 3 * gap
    bar = 5 * px + 4
    track_cell = max(width // 56, 2)
    small = max(cell // 2, 3)
    market_h = 5 * small + 6 * px + 4
    height = gap + bar + 4 + quilt + gap + 3 * track_cell + gap + market_h + gap
    img = np.full((height, width, 3), 255, dtype=np.uint8)
    to_move = None if state.is_terminal else state.current_player
    scores = state.scores()
    qy = gap + bar + 4
    for p in (0, 1):
        x0 = gap + p * (quilt + gap)
        img[gap : gap + bar, x0 : x0 + quilt + 1] = PLAYER_COLORS[p]
        if p == to_move:
            img[qy - 3 : qy + quilt + 4, x0 - 3 : x0 + quilt + 4] = INK
        if state.bonus_owner == p:
            img[gap + 2 : gap + bar - 2, x0 + quilt - bar : x0 + quilt - 4] = BONUS_COLOR
        label = f"B{state.buttons[p]} I{state.income[p]} S{scores[p]}"
        _text(img, gap + 2, x0 + 3, label, (255, 255, 255), px)
        _quilt(img, state, p, qy, x0, cell)
    ty = qy + quilt + gap
    leather = set(state.leather_remaining)
    marks = {int(m) for m in rules.INCOME_MARKS}
    tx0 = (width - 54 * track_cell) // 2
    for space in range(rules.FINAL_SPACE + 1):
        x = tx0 + space * track_cell
        color = LEATHER_TRACK_COLOR if space in leather else INCOME_COLOR if space in marks else (220, 220, 220)
        img[ty : ty + track_cell, x : x + track_cell - 1] = color
    for p in (0, 1):
        x = tx0 + state.positions[p] * track_cell
        y = ty + (p + 1) * track_cell
        img[y : y + track_cell, x : x + track_cell - 1] = PLAYER_COLORS[p]
    my = ty + 3 * track_cell + gap
    circle = state.circle
    slot_w = 5 * small + small
    for i, patch in enumerate(circle[:6]):
        x0 = gap + i * slot_w
        if x0 + 5 * small > width:
            break
        _shape(img, patch, my, x0, small, faded=i >= rules.MARKET_SIZE)
        if i < rules.MARKET_SIZE:
            info = PATCHES[patch]
            _text(img, my + 5 * small + 2, x0, f"C{info.cost}T{info.time}", INK, px)
    return img


MARKET_CELL = 8  # px of a patch cell in the SVG's market (5x5 box per patch)
SHOWN_AHEAD = 3  # patches after the market drawn faded: what the next purchases will offer


def render_svg(state: Position, cell: int = 18) -> str:
    """An SVG drawing of both quilts, the time track and the market, for Jupyter and the replay
    page. The market is drawn as the quilts are: each of the three patches on offer as its cells in
    its own colour (the colour it has once sewn), with its cost, time and button income, then the
    next ``SHOWN_AHEAD`` patches of the circle, faded."""
    quilt = 9 * cell
    width = 2 * quilt + 60
    top = 46  # three lines of words above each quilt
    market_h = 5 * MARKET_CELL + 36
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + quilt + 48 + market_h}" '
        'font-family="monospace" font-size="11">'
    ]
    to_move = None if state.is_terminal else state.current_player
    scores = state.scores()
    for p in (0, 1):
        x0 = 20 + p * (quilt + 20)
        lines = (
            f"Player {p}" + (" (to move)" if p == to_move else ""),
            f"space {state.positions[p]}, {state.buttons[p]} buttons",
            f"income {state.income[p]}, score {scores[p]}",
        )
        weight = "bold" if p == to_move else "normal"
        for i, line in enumerate(lines):
            out.append(f'<text x="{x0}" y="{12 + 13 * i}" font-weight="{weight}">{line}</text>')
        grid = cell_owners(state, p)
        for r in range(9):
            for c in range(9):
                rgb = patch_color(int(grid[r, c]))
                out.append(
                    f'<rect x="{x0 + c * cell}" y="{top + r * cell}" width="{cell}" height="{cell}" '
                    f'fill="rgb{rgb}" stroke="#bbb"/>'
                )
    ty = top + 12 + quilt
    step = (width - 20) / 54
    leather = set(state.leather_remaining)
    marks = {int(m) for m in rules.INCOME_MARKS}
    for space in range(rules.FINAL_SPACE + 1):
        fill = "#785a28" if space in leather else "#3c78c8" if space in marks else "#ddd"
        out.append(f'<rect x="{10 + space * step:.1f}" y="{ty}" width="{step - 1:.1f}" height="8" fill="{fill}"/>')
    for p, fill in ((0, "#dc2828"), (1, "#28a028")):
        out.append(
            f'<circle cx="{10 + (state.positions[p] + 0.5) * step:.1f}" cy="{ty + 14 + 6 * p}" r="4" fill="{fill}"/>'
        )
    out += _svg_market(state, ty + 36, width)
    out.append("</svg>")
    return "".join(out)


def _svg_market(state: Position, y0: int, width: int) -> list[str]:
    """The market row of ``render_svg``: patch shapes with their numbers, then the next ones faded."""
    out = [f'<text x="10" y="{y0}">market (cost C, time T, income +B), then next</text>']
    slot = max(5 * MARKET_CELL + 16, (width - 20) // (rules.MARKET_SIZE + SHOWN_AHEAD))
    for i, patch in enumerate(state.circle[: rules.MARKET_SIZE + SHOWN_AHEAD]):
        x0, top = 10 + i * slot, y0 + 8
        faded = i >= rules.MARKET_SIZE
        for r, c in PATCHES[patch].cells:
            out.append(
                f'<rect x="{x0 + c * MARKET_CELL}" y="{top + r * MARKET_CELL}" width="{MARKET_CELL}" '
                f'height="{MARKET_CELL}" fill="rgb{patch_color(patch)}" stroke="#555"'
                + (' opacity="0.35"/>' if faded else "/>")
            )
        info = PATCHES[patch]
        fill = "#999" if faded else "#222"
        out.append(f'<text x="{x0}" y="{top + 5 * MARKET_CELL + 12}" fill="{fill}">#{patch}</text>')
        if not faded:
            out.append(
                f'<text x="{x0}" y="{top + 5 * MARKET_CELL + 25}" font-size="9">'
                f"C{info.cost} T{info.time} +{info.buttons}</text>"
            )
    return out
