"""GameState construction, identity, copying, serialisation errors and drawing."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from patchwork_env import ADVANCE, GameState, new_game
from tests.scenario import CIRCLE, buy, play, start


def test_seeded_games_are_reproducible_and_differ_by_seed() -> None:
    assert new_game(7) == new_game(7)
    assert new_game(7).circle != new_game(8).circle
    rng = np.random.default_rng(7)
    order = rng.permutation(np.arange(1, 33))
    assert new_game(7).circle == (*order.tolist(), 0)
    assert new_game(7).top == int(rng.integers(2))


def test_given_circle_and_first_player_are_used() -> None:
    s = new_game(circle=CIRCLE, first_player=1, leather_layout="original")
    assert s.circle == tuple(CIRCLE) and s.current_player == 1 and s.leather_layout == "original"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"circle": CIRCLE[:-1]}, "each patch id 0..32 exactly once"),
        ({"circle": [0, *CIRCLE[:-1]]}, "must end with the 1x2 patch"),
        ({"circle": [*CIRCLE[:-2], 9, 0]}, "exactly once"),
        ({"circle": "abc"}, "sequence of 33 integer patch ids"),
        ({"first_player": 2}, "first_player must be the integer 0 or 1"),
        ({"leather_layout": "new"}, "leather_layout must be one of"),
    ],
)
def test_new_game_rejects_bad_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        new_game(0, **kwargs)


def test_copies_are_free_and_states_are_hashable() -> None:
    s = start()
    assert copy.copy(s) is s and copy.deepcopy(s) is s
    t = s.step(ADVANCE)
    assert len({s, t, start()}) == 2


def test_board_and_player_arguments() -> None:
    s = start().step(buy(1, 0, 0, 0))
    assert s.board(0).shape == (9, 9) and s.board(0).dtype == np.bool_
    with pytest.raises(ValueError, match="player must be the integer 0 or 1"):
        s.board(2)


def _dict(**changes: Any) -> dict[str, Any]:
    d = start().step(buy(1, 0, 0, 0)).to_dict()
    d.update(changes)
    return d


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"positions": [60, 0]}, r"positions must be an integer in 0\.\.53"),
        ({"buttons": [-1, 5]}, "buttons must be an integer"),
        ({"top": 3}, "top must be an integer in 0..1"),
        ({"leather_layout": "x"}, "leather_layout must be one of"),
        ({"leather_remaining": [27]}, "not a leather space"),
        ({"positions": [30, 0]}, r"with a token on space 30 exactly \[32, 38, 44, 50\] are left"),
        ({"circle": [17, 17]}, "circle must hold distinct patch ids"),
        ({"circle": list(range(2, 33))}, r"patches \[0\] are neither in the circle nor on a quilt"),
        ({"placements": [[[1, 0, 0, 0], [2, 0, 0, 0]], []]}, "placed twice"),
        ({"placements": [[[1, 4, 0, 0]], []]}, "not a distinct orientation"),
        ({"placements": [[[1, 0, 8, 8]], []]}, "leaves the board"),
        ({"bonus_owner": 1}, "no covered 7x7 square"),
        ({"first_to_finish": 0}, "first_to_finish is 0 but players"),
        ({"pending_leather": 1}, "pending_leather must be true or false"),
        ({"extra": 1}, r"unknown keys \['extra'\]"),
    ],
)
def test_from_dict_names_the_inconsistency(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        GameState.from_dict(_dict(**changes))


def test_from_dict_rejects_overlapping_placements() -> None:
    d = _dict()
    d["circle"] = [c for c in d["circle"] if c != 3]
    d["placements"][0].append([3, 0, 0, 0])
    with pytest.raises(ValueError, match="overlaps an earlier one"):
        GameState.from_dict(d)


@pytest.mark.parametrize(
    ("text", "match"),
    [("R 0,0 5,5", "11 space-separated fields"), ("X 0,0 5,5 0 - - - 1.0 - - 0", "cannot read notation")],
)
def test_from_notation_errors(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        GameState.from_notation(text)


def test_notation_is_one_line_and_readable() -> None:
    s = play(start(), ADVANCE, ADVANCE, ADVANCE, buy(2, 0, 0, 0))
    text = s.to_notation()
    assert "\n" not in text and text.startswith("R 3,3 8,0 1 - 26,32,38,44,50 - 2.3.4.")
    assert GameState.from_notation(text) == s
    assert eval(repr(s), {"GameState": GameState}) == s


def test_notation_is_case_sensitive() -> None:
    """Its letters are upper case as written (an upper-cased notation is the notation itself); a
    lower-case letter is refused by name, not as an unreadable field."""
    s = play(start(), ADVANCE, ADVANCE, ADVANCE, buy(2, 0, 0, 0))
    text = s.to_notation()
    assert text.upper() == text and GameState.from_notation(text.upper()) == s
    for wrong in (text.lower(), "r" + text[1:], "o" + text[1:]):
        with pytest.raises(ValueError, match=r"^notation is case-sensitive, .* at character 0 got '[ro]'$"):
            GameState.from_notation(wrong)
    rng, game = np.random.default_rng(0), new_game(np.random.default_rng(0))
    while "L:" not in game.to_notation():  # a quilt with a leather patch, L:ROW:COL
        game = game.step(int(rng.choice(game.legal_actions())))
    quilts = game.to_notation()
    with pytest.raises(ValueError, match=rf"at character {quilts.index('L:')} got 'l'$"):
        GameState.from_notation(quilts.replace("L:", "l:", 1))


def test_str_draws_quilts_track_and_market() -> None:
    s = start().step(buy(1, 0, 0, 0))
    text = str(s)
    assert "P0: space  3" in text and "to move" in text
    assert "  0 11......." in text  # patch 1 drawn with its id on player 0's quilt
    assert "time 1--0" in text and "market: s0: #17" in text
    assert s._repr_svg_().startswith("<svg")
