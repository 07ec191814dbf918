"""Drawings of a position: the RGB picture, the SVG, and the environments' render modes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from patchwork_env import ADVANCE, GameState, SingleAgentEnv, env, new_game, raw_env
from patchwork_env.core.render import (
    BONUS_COLOR,
    PLAYER_COLORS,
    patch_color,
    placement_grid,
    render_rgb,
    render_svg,
)
from tests import scenario


def random_game(seed: int) -> list[GameState]:
    rng = np.random.default_rng(seed)
    s = new_game(seed)
    out = [s]
    while not s.is_terminal:
        legal = s.legal_actions()
        s = s.step(int(legal[int(rng.random() * len(legal))]))
        out.append(s)
    return out


GAME = random_game(4)


def has_color(img: np.ndarray, color: tuple[int, int, int]) -> bool:
    return bool((img == np.array(color, dtype=np.uint8)).all(axis=-1).any())


def test_palette_is_distinct() -> None:
    colors = [patch_color(p) for p in range(-2, 33)]
    assert len(set(colors)) == len(colors)
    assert not set(PLAYER_COLORS) & set(colors)


def test_rgb_is_uint8_and_the_same_size_all_game() -> None:
    shapes = set()
    for s in [*GAME[::5], GAME[-1]]:
        img = render_rgb(s)
        assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
        shapes.add(img.shape)
    assert len(shapes) == 1  # frames of one game can be stacked into a video
    bigger = render_rgb(GAME[0], cell=24)
    assert bigger.shape[0] > render_rgb(GAME[0]).shape[0]
    with pytest.raises(ValueError, match="cell must be at least 6"):
        render_rgb(GAME[0], cell=3)


def test_rgb_shows_quilts_tokens_market_and_bonus() -> None:
    start = GAME[0]
    img = render_rgb(start)
    for color in PLAYER_COLORS:
        assert has_color(img, color)
    for patch in start.market:  # the market patches are drawn at full colour
        assert has_color(img, patch_color(patch))
    later = next(s for s in GAME if s.placements(0) and s.placements(0)[0][0] >= 0)
    first_patch = later.placements(0)[0][0]
    assert has_color(render_rgb(later), patch_color(first_patch))
    assert not has_color(img, BONUS_COLOR)
    assert has_color(render_rgb(_bonus_position()), BONUS_COLOR)


def _bonus_position() -> GameState:
    """Player 0 completes the top-left 7x7 square by buying patch 1 (XX/X.) into its last hole."""
    hole = [0, 1, 9]
    square = [r * 9 + c for r in range(7) for c in range(7) if r * 9 + c not in hole]
    state = scenario.play(scenario.with_cells(scenario.start(), 0, square), scenario.buy(1, 0, 0, 0))
    assert state.bonus_owner == 0
    return state


def test_placement_grid_matches_the_board() -> None:
    s = GAME[-1]
    for p in (0, 1):
        grid = placement_grid(s, p)
        np.testing.assert_array_equal(grid >= 0, s.board(p))
        assert set(np.unique(grid[grid >= 0]).tolist()) == set(range(len(s.placements(p))))


def test_svg_is_well_formed() -> None:
    for s in (GAME[0], GAME[len(GAME) // 2], GAME[-1]):
        svg = render_svg(s)
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg")
        assert s._repr_svg_() == svg


def test_env_render_modes(capsys: pytest.CaptureFixture[str]) -> None:
    e = raw_env(render_mode="ansi")
    e.reset(seed=0)
    assert e.render() == str(e.game_state)
    e = raw_env(render_mode="human")
    e.reset(seed=0)
    assert e.render() is None
    e.step(ADVANCE)  # human mode draws after every step
    out = capsys.readouterr().out
    assert out.count("P0: space") == 2 and str(e.game_state) in out
    e = raw_env(render_mode="rgb_array")
    e.reset(seed=0)
    img = e.render()
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8
    with pytest.warns(UserWarning, match="without a render mode"):
        assert raw_env().render() is None


def test_single_agent_render_modes(capsys: pytest.CaptureFixture[str]) -> None:
    e = SingleAgentEnv(render_mode="ansi")
    e.reset(seed=0)
    assert e.render() == str(e.game_state)
    e = SingleAgentEnv(render_mode="rgb_array")
    e.reset(seed=0)
    img = e.render()
    assert isinstance(img, np.ndarray) and img.shape[2] == 3
    e = SingleAgentEnv(render_mode="human")
    e.reset(seed=0)
    assert "P0: space" in capsys.readouterr().out


@pytest.mark.parametrize("call", ["render", "observe", "state", "agent_iter"])
def test_the_env_before_reset_says_to_reset_first(call: str) -> None:
    """``env(render_mode="ansi").render()`` before ``reset()`` was PettingZoo's AssertionError: a
    RuntimeError, as ``step()`` before ``reset()`` is here, for every call that needs a reset."""
    e = env(render_mode="ansi")
    with pytest.raises(RuntimeError, match=rf"^call reset\(\) before {call}\(\)$"):
        getattr(e, call)(*(["player_0"] if call == "observe" else []))
    e.reset(seed=0)
    assert e.render() == str(e.unwrapped.game_state)
    single = SingleAgentEnv(render_mode="ansi")
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before render\(\)$"):
        single.render()


def test_the_svg_draws_the_market_as_the_quilts_are_drawn() -> None:
    """Each patch on offer as its cells in its own colour (with cost, time and income), the next
    ones faded: not a line of text."""
    from patchwork_env.core.patches import PATCHES
    from patchwork_env.core.render import SHOWN_AHEAD, patch_color

    s = GAME[len(GAME) // 2]
    svg = render_svg(s)
    root = ET.fromstring(svg)
    rects = [e for e in root.iter() if e.tag.endswith("rect")]
    for i, patch in enumerate(s.circle[: 3 + SHOWN_AHEAD]):
        drawn = [r for r in rects if r.get("fill") == f"rgb{patch_color(patch)}" and r.get("width") == "8"]
        assert len(drawn) == len(PATCHES[patch].cells), patch
        assert all((r.get("opacity") is not None) == (i >= 3) for r in drawn)
    for patch in s.market:
        p = PATCHES[patch]
        assert f"C{p.cost} T{p.time} +{p.buttons}" in svg
