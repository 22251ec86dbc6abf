"""Changsha's optional extras (rules/mahjong.md §B3, §B5): the opening types 节节高, 三同,
一枝花, the during-play 中途四喜 / 中途六六顺, and 双杠上开花. Amounts follow §B7: every
opening-type win is a 小胡自摸 (X = 2 from each other player, +1 in a pair with the dealer);
a 大胡 pays 6k (+k with the dealer). Dealer = seat 0, no birds."""

from __future__ import annotations

import pytest

from games.engine import Action, BadInput, IllegalAction, RuleError
from games.mahjong import changsha, parse_tile_list, parse_tiles
from games.mahjong.score_changsha_opening import changsha_opening_hu, opening_shown_tiles
from games.mahjong.wall import stacked_wall
from tests.unit.games.mahjong.test_changsha_hands import DEALER_C, act, build, owed

STEP = "223344m159p369s7s"       # 22 33 44 m: 节节高
SAME = "33m33p33s1479m169p"      # 33 in every suit: 三同
FLOWER = "113467m1346p135s"      # one tile of rank 2/5/8, and it is the 5s: 一枝花
EXTRAS = ["opening_step_pairs", "opening_same_rank_pairs", "opening_one_flower"]


def opening(hand: str, **options) -> tuple[str, ...]:
    return changsha_opening_hu(parse_tiles(hand), options)


# ---------------------------------------------------------------- the opening extras, pure

def test_each_extra_type_is_found_only_when_the_room_lists_it():
    assert opening(STEP, opening_hu_types=EXTRAS) == ("opening_step_pairs",)
    assert opening(SAME, opening_hu_types=EXTRAS) == ("opening_same_rank_pairs",)
    assert opening(FLOWER, opening_hu_types=EXTRAS) == ("opening_one_flower",)
    for hand in (STEP, SAME, FLOWER):  # DEFAULT: only the first four types
        assert not set(opening(hand)) & set(EXTRAS)


def test_near_misses_are_not_extra_types():
    assert opening("2233m55m159p369s7s", opening_hu_types=EXTRAS) == ()   # 22 33 _ 55
    assert opening("33m33p3s1479m169p2s", opening_hu_types=EXTRAS) == ()   # one 3s only
    two_jiang = "113467m1346p155s"                                          # two 5s
    assert opening(two_jiang, opening_hu_types=EXTRAS) == ()
    an_eight = "113467m1346p138s"                                          # the one is an 8
    assert opening(an_eight, opening_hu_types=EXTRAS) == ()


def test_repeats_count_each_disjoint_occurrence():
    six_pairs = "223344556677m9p"  # two runs of three pairs
    assert opening(six_pairs, opening_hu_types=["opening_step_pairs"]) == ("opening_step_pairs",)
    assert opening(six_pairs, opening_hu_types=["opening_step_pairs"],
                   opening_hu_repeat="count_repeats") == ("opening_step_pairs",) * 2
    twice = "3333m3333p33s1m79s"  # 33 33 in two suits but one pair of 3s: once, even repeated
    assert opening(twice, opening_hu_types=["opening_same_rank_pairs"],
                   opening_hu_repeat="count_repeats") == ("opening_same_rank_pairs",)


def test_the_shown_tiles_are_the_pairs_of_the_type():
    assert opening_shown_tiles(parse_tiles(STEP), ["opening_step_pairs"]) == \
        parse_tiles_list("223344m")
    assert opening_shown_tiles(parse_tiles(SAME), ["opening_same_rank_pairs"]) == \
        parse_tiles_list("33m33p33s")
    assert len(opening_shown_tiles(parse_tiles(FLOWER), ["opening_one_flower"])) == 13


def parse_tiles_list(text: str) -> list[int]:
    counts = parse_tiles(text)
    return [t for t in range(27) for _ in range(counts[t])]


def test_unknown_opening_types_are_refused():
    with pytest.raises(BadInput, match="opening_hu_types"):
        opening(STEP, opening_hu_types=["opening_step_pairs", "nine_gates"])
    with pytest.raises(BadInput, match="opening_hu_types"):
        changsha.new_hand({"opening_hu_types": ["midway_five"]}, 1, 0)


# ---------------------------------------------------------------- through the engine

def test_an_extra_opening_win_is_paid_as_a_small_self_draw():
    wall = stacked_wall([parse_tile_list(DEALER_C), parse_tile_list(STEP), None, None], 0)
    state = changsha.new_hand_from_wall(
        {"bird_count": 0, "opening_hu_types": ["opening_step_pairs"]}, wall, 0)
    assert state.phase() == "opening" and state.to_act() == (1,)
    events = state.apply(1, Action("hu"))
    (shown,) = [e for e in events if e.kind == "opening_hu"]
    assert shown.data["types"] == ["opening_step_pairs"] and shown.to is None
    assert shown.data["tiles"] == ["2m", "2m", "3m", "3m", "4m", "4m"]
    opening_pay = sorted((p.payer, p.amount) for p in state.ledger if p.reason == "opening_hu")
    assert opening_pay == [(0, 3), (2, 2), (3, 2)]  # 2 each, +1 with the dealer
    assert state.phase() == "play" and state.turn == 0


def test_the_dealer_declares_a_quad_midway_once():
    dealer = "1111m678m2468p137s"
    state = build([dealer, None, None, None], opening_hu_types=["midway_four"])
    assert state.phase() == "play" and state.turn == 0
    quad = Action("midway_hu", ("1m",))
    assert quad in state.legal_actions(0)
    events = state.apply(0, quad)
    declared = [e for e in events if e.kind == "midway_hu"]
    assert declared and declared[0].data["tiles"] == ["1m"] * 4 and declared[0].to is None
    pay = sorted((p.payer, p.amount) for p in state.ledger if p.reason == "opening_hu")
    assert pay == [(1, 3), (2, 3), (3, 3)]  # the dealer wins 2 + 1 from each
    assert quad not in state.legal_actions(0) and state.turn == 0  # still his turn
    with pytest.raises(IllegalAction):
        state.apply(0, quad)
    copy = changsha.deserialize(state.serialize())
    assert quad not in copy.legal_actions(0)
    act(state, 0, "discard", "1m")  # the hand goes on with the tiles in hand


def test_midway_is_off_by_default_and_a_quad_shown_at_the_opening_is_not_shown_again():
    dealer = "1111m678m2468p137s"
    state = build([dealer, None, None, None])
    assert not [a for a in state.legal_actions(0) if a.kind == "midway_hu"]
    with pytest.raises(IllegalAction):
        state.apply(0, Action("midway_hu", ("1m",)))
    both = build([dealer, None, None, None], declare=(0,),
                 opening_hu_types=["opening_four", "midway_four"])
    assert [p.reason for p in both.ledger].count("opening_hu") == 3
    assert not [a for a in both.legal_actions(0) if a.kind == "midway_hu"]


def test_a_quad_completed_by_a_draw_is_declared_midway():
    state = build([DEALER_C, "111m456m789p234s5s", None, None], front="1m",
                  opening_hu_types=["midway_four"])
    act(state, 0, "discard", "9s")
    assert state.turn == 1 and state.drawn[1] is not None
    act(state, 1, "midway_hu", "1m")
    pay = sorted((p.payer, p.amount) for p in state.ledger if p.reason == "opening_hu")
    assert pay == [(0, 3), (2, 2), (3, 2)]


def test_two_triplets_midway_once_or_repeated_with_a_new_triplet_each_time():
    dealer = "111m222p333s4567m9p"  # three concealed triplets
    once = build([dealer, None, None, None], opening_hu_types=["midway_two_triplets"])
    offered = {a.tiles for a in once.legal_actions(0) if a.kind == "midway_hu"}
    assert offered == {("1m", "2p"), ("1m", "3s"), ("2p", "3s")}
    once.apply(0, Action("midway_hu", ("2p", "1m")))  # either order
    assert not [a for a in once.legal_actions(0) if a.kind == "midway_hu"]
    rep = build([dealer, None, None, None], opening_hu_types=["midway_two_triplets"],
                opening_hu_repeat="count_repeats")
    rep.apply(0, Action("midway_hu", ("1m", "2p")))
    offered = {a.tiles for a in rep.legal_actions(0) if a.kind == "midway_hu"}
    assert offered == {("1m", "3s"), ("2p", "3s")}  # 3s is new; 1m+2p were both shown
    rep.apply(0, Action("midway_hu", ("1m", "3s")))
    assert not [a for a in rep.legal_actions(0) if a.kind == "midway_hu"]
    assert [p.reason for p in rep.ledger].count("opening_hu") == 6


def test_bad_midway_requests_are_refused_and_change_nothing():
    state = build(["111m222p333s4567m9p", None, None, None],
                  opening_hu_types=["midway_two_triplets"])
    before = state.serialize()
    for tiles in [("1m",), ("1m", "4m"), ("1m", "1m"), ("1m", "2p", "3s"), ()]:
        with pytest.raises(IllegalAction):
            state.apply(0, Action("midway_hu", tiles))
    with pytest.raises(BadInput):
        state.apply(0, Action("midway_hu", ("1x", "2p")))
    with pytest.raises(RuleError):  # not his turn
        state.apply(1, Action("midway_hu", ("1m", "2p")))
    assert state.serialize() == before


# ---------------------------------------------------------------- 双杠上开花

KONGER = "999m456m789p234s5s"  # ready on 5s once the four 9m are set aside


@pytest.mark.parametrize("double, amounts", [
    (False, {(0, 1): 7, (2, 1): 6, (3, 1): 6}),     # one 杠上开花: 6, +1 with the dealer
    (True, {(0, 1): 14, (2, 1): 12, (3, 1): 12}),   # counted twice: k = 2 -> 12, +2
])
def test_both_reveals_completing_the_hand_count_twice_with_the_option(double, amounts):
    state = build([DEALER_C, KONGER, None, None], front="9m", back="5s5s",
                  double_kong_bloom=double)
    act(state, 0, "discard", "9s")
    act(state, 1, "kaigang", "9m")
    patterns = state.wins[0]["patterns"]
    assert "kong_bloom" in patterns and ("double_kong_bloom" in patterns) == double
    assert owed(state) == amounts


def test_one_completing_reveal_is_single_even_with_the_option():
    state = build([DEALER_C, KONGER, None, None], front="9m", back="5s1p",
                  double_kong_bloom=True)
    act(state, 0, "discard", "9s")
    act(state, 1, "kaigang", "9m")
    assert "double_kong_bloom" not in state.wins[0]["patterns"]
    assert owed(state) == {(0, 1): 7, (2, 1): 6, (3, 1): 6}


def test_a_declined_opening_win_is_told_only_to_the_seat_that_declined():
    wall = stacked_wall([parse_tile_list(DEALER_C), parse_tile_list(STEP), None, None], 0)
    state = changsha.new_hand_from_wall(
        {"bird_count": 0, "opening_hu_types": ["opening_step_pairs"]}, wall, 0)
    events = state.apply(1, Action("pass"))
    (passed,) = [e for e in events if e.kind == "opening_pass"]
    assert passed.to == 1  # a public pass would reveal that his hand had an opening win
    assert all(e.to is None for e in events if e.kind == "turn")
