"""Every rule of docs/rules.md as a short scenario, including each of its "mistakes other engines made"."""

from __future__ import annotations

import numpy as np
import pytest

from patchwork_env import ADVANCE, GameState, IllegalActionError, encode_leather
from patchwork_env.core import rules
from tests.scenario import CIRCLE, buy, cells_except, play, position, start, with_cells


def square_cells(r0: int, c0: int, size: int = 7) -> list[int]:
    return [(r0 + r) * 9 + c0 + c for r in range(size) for c in range(size)]


# --- set-up and turn order ---------------------------------------------------------------------
def test_start_position() -> None:
    s = start(first_player=1)
    assert s.positions == (0, 0) and s.buttons == (5, 5) and s.income == (0, 0)
    assert s.current_player == 1 and s.top == 1
    assert s.market == (9, 1, 17) and s.circle[-1] == 0 and len(s.circle) == 33
    assert s.leather_remaining == (26, 32, 38, 44, 50)
    assert s.bonus_owner is None and not s.pending_leather and not s.is_terminal and s.winner is None
    assert not s.board(0).any() and not s.board(1).any()


def test_first_turn_offers_three_patches_and_never_the_1x2() -> None:
    s = start()
    mask = s.legal_action_mask()
    # patch 9 costs 6 and patch 17 costs 7 (5 buttons): only patch 1 (256 placements) and advance
    assert mask[:648].sum() == 0 and mask[1296:1944].sum() == 0
    assert mask[648:1296].sum() == 256 and mask[ADVANCE] and mask.sum() == 257
    assert 0 not in s.market


def test_player_behind_moves_and_may_move_several_times_in_a_row() -> None:  # mistake 7
    s = position(positions=[0, 10], top=1)
    assert s.current_player == 0
    s = s.step(buy(1))  # patch 1: time 3 -> space 3, still behind
    assert s.positions == (3, 10) and s.current_player == 0
    s = s.step(ADVANCE)  # to space 11, one in front of the opponent
    assert s.positions == (11, 10) and s.current_player == 1


def test_landing_on_the_opponent_puts_the_mover_on_top() -> None:
    s = position(positions=[0, 3], top=1)
    s = s.step(buy(1))  # time 3 -> lands on space 3 where player 1 stands
    assert s.positions == (3, 3) and s.top == 0 and s.current_player == 0


# --- advance ------------------------------------------------------------------------------------
def test_advance_is_legal_when_sharing_a_space_and_pays_one_button() -> None:  # mistake 6
    s = start(first_player=0)
    assert s.legal_action_mask()[ADVANCE]
    s = s.step(ADVANCE)
    assert s.positions == (1, 0) and s.buttons == (6, 5)
    s = s.step(ADVANCE)  # player 1 jumps to space 2: two spaces, two buttons
    assert s.positions == (1, 2) and s.buttons == (6, 7)


def test_advance_is_capped_at_53_and_paid_only_for_spaces_moved() -> None:  # mistake 11
    s = position(positions=[50, 53], first_to_finish=1, leather_remaining=[])
    s = s.step(ADVANCE)
    assert s.positions == (53, 53) and s.buttons == (8, 5)
    assert s.is_terminal and s.first_to_finish == 1


# --- buying ---------------------------------------------------------------------------------------
def test_buying_moves_the_neutral_token_pays_places_and_moves_time() -> None:
    s = start().step(buy(1, 0, 0, 0))  # patch 1 "XX/X." at the top-left corner
    assert s.buttons == (4, 5) and s.positions == (3, 0)
    assert s.circle == (17, *CIRCLE[3:], 9)  # skipped patch 9 now sits behind the token
    board = s.board(0)
    assert board[0, 0] and board[0, 1] and board[1, 0] and board.sum() == 3
    assert s.placements(0) == [(1, 0, 0, 0)]


def test_market_index_stays_right_after_the_token_wraps_round() -> None:  # mistake 12
    s = position(buttons=[50, 50])
    s = s.step(buy(2, 0, 0, 0))  # patch 17: circle becomes [2, 3, ..., 0, 9, 1]
    assert s.circle[-3:] == (0, 9, 1) and s.market == (2, 3, 4)
    for _ in range(30):
        legal = s.legal_actions()
        buys = legal[legal < 1944]
        if len(buys) == 0:
            break
        before = s.circle
        a = int(buys[-1])
        slot = a // 648
        s = s.step(a)
        assert s.circle == before[slot + 1 :] + before[:slot]
    assert len(s.circle) < 31


def test_cannot_buy_what_you_cannot_afford() -> None:  # mistake 10
    s = start()
    assert not s.legal_action_mask()[buy(0)]
    with pytest.raises(IllegalActionError, match=r"cannot afford patch 9 \(cost 6, player has 5\)"):
        s.step(buy(0))


def test_cannot_buy_what_does_not_fit() -> None:  # mistake 10
    s = position(buttons=[50, 5])
    s = with_cells(s, 0, cells_except(0, 80, 40))  # three isolated holes: nothing bigger than 1 fits
    mask = s.legal_action_mask()
    assert mask[:1944].sum() == 0 and mask[ADVANCE]
    with pytest.raises(IllegalActionError, match="overlaps"):
        s.step(buy(1, 0, 0, 0))


def test_placement_errors_name_the_reason() -> None:
    s = position(buttons=[20, 5])
    with pytest.raises(IllegalActionError, match="does not fit there"):
        s.step(buy(2, 0, 0, 5))  # the 1x5 line from column 5 leaves the board
    with pytest.raises(IllegalActionError, match="duplicate orientation: patch 9 in orientation 3 is orientation 0"):
        s.step(buy(0, 3, 0, 0))  # the 2x2 square has one distinct orientation
    with pytest.raises(IllegalActionError, match="no leather patch is pending"):
        s.step(encode_leather(0, 0))
    with pytest.raises(IllegalActionError, match="out of range"):
        s.step(5000)
    with pytest.raises(IllegalActionError, match="out of range"):
        s.step("advance")  # type: ignore[arg-type]


def test_no_such_market_slot_when_fewer_than_three_patches_are_left() -> None:
    arr = start().array().copy()
    arr[rules.NCIRCLE] = 2  # a raw late-game circle (two patches left)
    arr[rules.CIRCLE + 2 : rules.CIRCLE + 33] = -1  # the other patches are out of the game
    s = GameState._wrap(arr)  # a scenario, not a reachable position
    assert s.market == (9, 1) and not s.legal_action_mask()[1296:1944].any()
    with pytest.raises(IllegalActionError, match="no such market slot: 2 patches are on offer"):
        s.step(buy(2, 0, 0, 0))


def test_symmetric_patches_expose_only_their_lowest_orientation() -> None:  # mistake 13
    s = position(buttons=[20, 5])
    mask = s.legal_action_mask()
    square = mask[:648].reshape(8, 81)  # slot 0 holds the 2x2 square
    assert square[0].sum() == 64 and square[1:].sum() == 0
    line = mask[1296:1944].reshape(8, 81)  # slot 2 holds the 1x5 line: orientations 0 and 1 only
    assert line[0].sum() == 45 and line[1].sum() == 45 and line[2:].sum() == 0


def test_numpy_integers_are_accepted() -> None:
    s = start()
    assert s.step(np.int32(ADVANCE)) == s.step(np.int64(ADVANCE)) == s.step(ADVANCE)


# --- income ----------------------------------------------------------------------------------------
def test_income_includes_the_patch_placed_this_turn() -> None:  # mistake 8
    s = position(positions=[4, 10], buttons=[10, 5], top=1)
    s = s.step(buy(2, 0, 0, 0))  # patch 17: cost 7, time 1, one button icon; 4 -> 5 crosses a mark
    assert s.income == (1, 0) and s.buttons == (10 - 7 + 1, 5)


def test_a_pass_can_cross_two_income_marks() -> None:
    s = position(positions=[4, 11], buttons=[10, 5], top=1)
    s = s.step(buy(2, 0, 0, 0))  # income 1, now on space 5 (paid once)
    assert s.buttons == (4, 5)
    s = s.step(ADVANCE)  # 5 -> 12: seven buttons for the spaces, the mark at 11 pays 1
    assert s.positions == (12, 11) and s.buttons == (4 + 7 + 1, 5)


def test_the_final_space_is_the_ninth_income_mark() -> None:  # mistake 1
    base = position(buttons=[10, 5])
    s = base.step(buy(2, 0, 0, 0))  # player 0 gets patch 17 (one icon)
    s = position(s, positions=[50, 53], first_to_finish=1, leather_remaining=[], buttons=[0, 5])
    s = s.step(ADVANCE)  # three spaces + final income of 1
    assert s.buttons == (4, 5) and s.is_terminal


# --- leather patches -------------------------------------------------------------------------------
def test_first_player_to_pass_a_leather_patch_takes_and_places_it_at_once() -> None:
    s = position(positions=[24, 25], top=1)
    s = s.step(ADVANCE)  # player 0: 24 -> 26 passes the leather patch on 26
    assert s.pending_leather and s.current_player == 0 and s.positions == (26, 25)
    mask = s.legal_action_mask()
    assert mask.sum() == 81 and mask[1944:2025].all()
    with pytest.raises(IllegalActionError, match="a leather patch is pending"):
        s.step(ADVANCE)
    s = s.step(encode_leather(4, 4))
    assert not s.pending_leather and s.board(0)[4, 4] and s.current_player == 1
    assert s.leather_remaining == (32, 38, 44, 50)
    with pytest.raises(IllegalActionError, match="no leather patch is pending"):
        s.step(encode_leather(0, 0))


def test_a_leather_patch_is_taken_once_and_never_by_the_second_player() -> None:  # mistake 9
    s = position(positions=[24, 25], top=1)
    s = play(s, ADVANCE, encode_leather(0, 0))
    s = s.step(ADVANCE)  # player 1: 25 -> 27 passes space 26, already empty
    assert not s.pending_leather and s.current_player == 0 and not s.board(1).any()


def test_leather_cell_must_be_free() -> None:
    s = with_cells(position(positions=[24, 25], top=1), 0, [0])
    s = s.step(ADVANCE)
    assert not s.legal_action_mask()[encode_leather(0, 0)]
    with pytest.raises(IllegalActionError, match="already covered"):
        s.step(encode_leather(0, 0))


def test_original_layout_has_a_leather_patch_on_20() -> None:  # mistake 3
    s = start(layout="original")
    assert s.leather_layout == "original" and s.leather_remaining == (20, 26, 32, 44, 50)
    s = position(s, positions=[19, 19], top=0)
    assert s.step(ADVANCE).pending_leather
    revised = position(positions=[19, 19], top=0)
    assert not revised.step(ADVANCE).pending_leather


def test_a_full_quilt_loses_the_leather_patch() -> None:
    s = with_cells(position(positions=[24, 25], top=1, bonus_owner=None), 0, range(81))
    s = s.step(ADVANCE)
    assert not s.pending_leather and s.leather_remaining == (32, 38, 44, 50) and s.current_player == 1


def test_reaching_53_past_a_leather_patch_places_it_before_anyone_moves() -> None:
    s = position(positions=[49, 49], buttons=[10, 5], top=0, leather_remaining=[50])
    s = s.step(buy(0, 0, 0, 0))  # patch 9: time 5, capped at 53, passes the leather patch on 50
    assert s.positions == (53, 49) and s.pending_leather and s.current_player == 0
    assert s.first_to_finish == 0 and not s.is_terminal
    s = s.step(encode_leather(8, 8))
    assert s.current_player == 1  # a player on 53 never moves again
    s = s.step(ADVANCE)
    assert s.is_terminal and s.winner is not None and not s.legal_action_mask().any()


# --- the 7x7 bonus -----------------------------------------------------------------------------------
def test_bonus_goes_to_the_first_7x7_square_not_a_full_board() -> None:  # mistake 5
    s = position(positions=[24, 25], top=1)
    s = with_cells(s, 0, [c for c in square_cells(2, 1) if c != 5 * 9 + 4])
    s = play(s, ADVANCE, encode_leather(5, 4))
    assert s.bonus_owner == 0 and s.empty_cells(0) == 81 - 49
    assert s.scores()[0] == s.buttons[0] + 7 - 2 * 32


def test_bonus_from_a_regular_patch_and_it_is_kept_for_good() -> None:
    s = position(buttons=[5, 20])
    s = with_cells(s, 0, [c for c in square_cells(0, 0) if c not in (0, 1, 9)])
    s = s.step(buy(1, 0, 0, 0))  # patch 1 "XX/X." closes the square
    assert s.bonus_owner == 0
    assert s.current_player == 1 and s.market[1] == 2  # the 1x3 line
    s = with_cells(s, 1, [c for c in square_cells(2, 2) if c not in (20, 21, 22)])
    s = s.step(buy(1, 0, 2, 2))  # player 1 completes a square of its own later
    assert s.board(1)[2:9, 2:9].all() and s.bonus_owner == 0


# --- end and score ---------------------------------------------------------------------------------
def test_score_formula_can_be_negative() -> None:
    s = position(buttons=[12, 3])
    assert s.scores() == (12 - 162, 3 - 162)


@pytest.mark.parametrize("first", [0, 1])
def test_equal_scores_go_to_who_reached_53_first(first: int) -> None:  # mistake 4
    s = position(positions=[53, 53], buttons=[9, 9], first_to_finish=first, leather_remaining=[])
    assert s.is_terminal and s.scores()[0] == s.scores()[1] and s.winner == first


def test_game_over_rejects_every_action() -> None:
    s = position(positions=[53, 53], first_to_finish=0, leather_remaining=[])
    assert not s.legal_action_mask().any() and len(s.legal_actions()) == 0
    with pytest.raises(IllegalActionError, match="the game is over"):
        s.step(ADVANCE)


def test_old_states_never_change() -> None:
    s = start()
    before = s.to_notation()
    mask_before = s.legal_action_mask().copy()
    s.step(buy(1))
    s.step(ADVANCE)
    assert s.to_notation() == before and np.array_equal(s.legal_action_mask(), mask_before)
    with pytest.raises(ValueError):
        s.array()[4] = 7
    with pytest.raises(ValueError):
        s.legal_action_mask()[0] = True
