"""Changsha hand value, payments, birds, opening wins and readiness: the §B9 vectors and the
§B3/B6/B7 rules. Expected values are worked out by hand from ../shared/rules/mahjong.md."""

from __future__ import annotations

import pytest

from games.engine import BadInput
from games.mahjong.meld import Meld
from games.mahjong.score_changsha import (
    CHANGSHA_SCORING_DEFAULTS,
    changsha_ready,
    changsha_waits,
    score_changsha,
)
from games.mahjong.score_changsha_opening import changsha_opening_hu
from games.mahjong.score_changsha_pay import bird_seat, changsha_payment
from games.mahjong.score_common import WinContext
from games.mahjong.tiles import parse_tile_list, parse_tiles, tile_index

DEALER = 0
QUAN_QIU_REN = ("chi 123m", "peng 555p", "chi 789s", "peng 333s")


def meld(text: str) -> Meld:
    kind, tiles = text.split()
    return Meld(kind, tuple(parse_tile_list(tiles)), concealed=kind == "angang")


def score(hand14, win, how="discard", melds=(), flags=(), **options):
    """Score the 14 tiles at the moment of winning (as the §B9 table gives them)."""
    concealed = parse_tiles(hand14)
    concealed[tile_index(win)] -= 1
    ctx = WinContext(tile_index(win), how, frozenset(flags))
    return score_changsha(concealed, [meld(m) for m in melds], ctx, options)


def pays(result, winner, payers, birds=0, **options):
    return {
        p: changsha_payment(result.x, result.big_hu, winner, p, DEALER, birds, options)
        for p in payers
    }


# (id, 14 tiles, winning tile, melds, how, flags, patterns, big_hu, X)
VECTORS = [
    ("CS-01", "123456m789p234s55s", "5s", (), "self_draw", (), ("small_hu",), 0, 2),
    ("CS-02", "123456m789p234s55s", "5s", (), "discard", (), ("small_hu",), 0, 1),
    ("CS-04", "111m333p666s999s77m", "7m", (), "discard", (), ("all_pungs",), 1, 6),
    ("CS-05", "2225588m22555p88s", "8s", (), "self_draw", (), ("all_258",), 1, 6),
    ("CS-06", "111234456789m99m", "9m", (), "discard", (), ("full_flush",), 1, 6),
    (
        "CS-07",
        "111333555777m99m",
        "9m",
        (),
        "self_draw",
        (),
        ("all_pungs", "full_flush"),
        2,
        12,
    ),
    ("CS-08", "1133m5577p992244s", "4s", (), "discard", (), ("seven_pairs",), 1, 6),
    ("CS-09", "111133m5577p9922s", "2s", (), "self_draw", (), ("luxury_seven_pairs",), 2, 12),
    ("CS-10", "11223355668899m", "9m", (), "discard", (), ("seven_pairs", "full_flush"), 2, 12),
    ("CS-11", "77m", "7m", QUAN_QIU_REN, "discard", (), ("all_melded",), 1, 6),
    # CS-12: the vector's 14 tiles with one set turned into the 开杠 meld (4 sets + pair).
    (
        "CS-12",
        "456m789p234s55s",
        "5s",
        ("kaigang 1111m",),
        "self_draw",
        ("kong_bloom",),
        ("kong_bloom",),
        1,
        6,
    ),
]


@pytest.mark.parametrize(
    "hand,win,melds,how,flags,patterns,big_hu,x",
    [v[1:] for v in VECTORS],
    ids=[v[0] for v in VECTORS],
)
def test_rules_vectors_classification(hand, win, melds, how, flags, patterns, big_hu, x):
    result = score(hand, win, how, melds, flags)
    assert result.winning and result.reason == ""
    assert result.small_hu == (patterns == ("small_hu",))
    assert (result.patterns, result.big_hu, result.x) == (patterns, big_hu, x)


def test_cs01_small_self_draw_with_dealer_bonus():
    result = score("123456m789p234s55s", "5s", "self_draw")
    assert pays(result, 1, (0, 2, 3)) == {0: 3, 2: 2, 3: 2}


def test_cs02_small_discard_win():
    result = score("123456m789p234s55s", "5s")
    assert pays(result, 2, (3,)) == {3: 1}
    assert pays(result, 2, (DEALER,)) == {DEALER: 2}  # CS-02b: the dealer discarded


def test_cs03_pair_not_258_is_no_win():
    for how in ("discard", "self_draw"):
        result = score("123456m789p234s11s", "1s", how)
        assert not result.winning and result.x == 0
        assert result.reason == "small hu needs a 2/5/8 pair"
    # A situational big hu needs a legal shape too: the pair must still be 2/5/8.
    assert not score("123456m789p234s11s", "1s", "self_draw", flags=["kong_bloom"]).winning


def test_big_hu_payments_cs04_to_cs12():
    assert pays(score("111m333p666s999s77m", "7m"), 1, (2,)) == {2: 6}
    assert pays(score("2225588m22555p88s", "8s", "self_draw"), 3, (0, 1, 2)) == {0: 7, 1: 6, 2: 6}
    assert pays(score("111234456789m99m", "9m"), 1, (2,)) == {2: 6}
    assert pays(score("111333555777m99m", "9m", "self_draw"), DEALER, (1, 2, 3)) == {
        1: 14,
        2: 14,
        3: 14,
    }
    assert pays(score("1133m5577p992244s", "4s"), 2, (3,)) == {3: 6}
    assert pays(score("111133m5577p9922s", "2s", "self_draw"), 2, (0, 1, 3)) == {
        0: 14,
        1: 12,
        3: 12,
    }
    assert pays(score("11223355668899m", "9m"), 1, (3,)) == {3: 12}
    assert pays(score("77m", "7m", melds=QUAN_QIU_REN), 2, (1,)) == {1: 6}
    bloom = score("456m789p234s55s", "5s", "self_draw", ("kaigang 1111m",), ["kong_bloom"])
    assert pays(bloom, 1, (0, 2, 3)) == {0: 7, 2: 6, 3: 6}


def test_not_a_winning_shape():
    result = score("123456m789p234s59s", "9s")
    assert not result.winning and result.reason == "not a winning shape"


def test_best_reading_luxury_seven_pairs_over_runs():
    # 1111 2222 3333 55m reads as 123m x4 + 55m (小胡 + 清一色 = 1) or as triple luxury seven
    # pairs (4) + 清一色 (1) = 5.
    result = score("111122223333m55m", "5m")
    assert result.patterns == ("triple_luxury_seven_pairs", "full_flush")
    assert (result.big_hu, result.x) == (5, 30)


def test_double_luxury_and_multiplicative_stacking():
    double = score("1111m2222m3355p77p", "7p")
    assert (double.patterns, double.big_hu, double.x) == (("double_luxury_seven_pairs",), 3, 18)
    mult = score("1111m2222m3355p77p", "7p", big_hu_stack="multiplicative")
    assert (mult.big_hu, mult.x) == (3, 24)  # 6 x 2^(3-1)
    one = score("111m333p666s999s77m", "7m", big_hu_stack="multiplicative")
    assert one.x == 6


def test_all_pungs_and_all_258_stack():
    result = score("222m555p888s555s22p", "2p")
    assert (result.patterns, result.big_hu, result.x) == (("all_pungs", "all_258"), 2, 12)


def test_all_melded_by_self_draw():
    result = score("77m", "7m", "self_draw", QUAN_QIU_REN)
    assert (result.patterns, result.x) == (("all_melded",), 6)


def test_situational_big_hu_on_a_small_hu_shape():
    hand = "123456m789p234s55s"
    assert score(hand, "5s", "rob_kong").patterns == ("rob_kong",)
    assert score(hand, "5s", "self_draw", flags=["last_tile"]).patterns == ("last_tile_draw",)
    assert score(hand, "5s", flags=["last_tile"]).patterns == ("last_tile_shot",)
    assert score(hand, "5s", flags=["kong_shot"]).patterns == ("kong_shot",)
    assert score(hand, "5s", "self_draw", flags=["heavenly"]).patterns == ("heavenly",)
    assert score(hand, "5s", flags=["earthly"]).patterns == ("earthly",)
    stacked = score("111333555777m99m", "9m", "self_draw", flags=["last_tile"])
    assert (stacked.big_hu, stacked.x) == (3, 18)


def test_menqing_option():
    hand = "123456m789p234s55s"
    assert score(hand, "5s", "self_draw").small_hu
    on = score(hand, "5s", "self_draw", menqing_big_hu="on")
    assert (on.patterns, on.x) == (("concealed",), 6)
    assert score(hand, "5s", menqing_big_hu="on").small_hu  # discard win: not 门清
    chi = score("456m789p234s55s", "5s", "self_draw", ("chi 123m",), menqing_big_hu="on")
    assert chi.small_hu and chi.x == 2


@pytest.mark.parametrize(
    "mode,birds,amount",
    [("add_double", 0, 3), ("add_double", 2, 9), ("mul_double", 2, 12), ("add_points", 2, 5)],
)
def test_bird_modes_after_dealer_bonus(mode, birds, amount):
    # 小胡自摸 X = 2, dealer pays: +1 bonus, then the bird factor.
    assert changsha_payment(2, 0, 1, DEALER, DEALER, birds, {"bird_mode": mode}) == amount


def test_dealer_bonus_off_and_big_hu_bonus():
    assert changsha_payment(12, 2, 1, DEALER, DEALER, 0, {"dealer_bonus": "off"}) == 12
    assert changsha_payment(12, 2, DEALER, 3, DEALER, 1, {}) == 28  # (12 + 2) x 2
    assert changsha_payment(6, 1, 2, 3, DEALER, 0, {}) == 6


def test_payment_rejects_bad_input():
    with pytest.raises(BadInput):
        changsha_payment(2, 0, 1, 1, DEALER, 0, {})
    with pytest.raises(BadInput):
        changsha_payment(2, 0, 1, 4, DEALER, 0, {})
    with pytest.raises(BadInput):
        changsha_payment(2, 0, 1, 2, DEALER, 0, {"bird_mode": "triple"})


@pytest.mark.parametrize(
    "rank,origin,seat",
    [
        (1, 2, 2),
        (5, 2, 2),
        (9, 2, 2),
        (2, 2, 3),
        (6, 3, 0),
        (3, 1, 3),
        (7, 0, 2),
        (4, 0, 3),
        (8, 1, 0),
    ],
)
def test_bird_seat(rank, origin, seat):
    assert bird_seat(rank, origin) == seat


def test_opening_hu_each_type():
    assert changsha_opening_hu(parse_tiles("1113m4679p13679s"), {}) == ("opening_no_258",)
    assert changsha_opening_hu(parse_tiles("123456789m1234p"), {}) == ("opening_missing_suit",)
    assert changsha_opening_hu(parse_tiles("111m222p333s456m7p"), {}) == ("opening_two_triplets",)
    assert changsha_opening_hu(parse_tiles("1111m234p567p258s"), {}) == ("opening_four",)
    assert changsha_opening_hu(parse_tiles("123456m789p234s5s"), {}) == ()


def test_opening_hu_repeats_only_when_asked():
    dealer_hand = parse_tiles("1111m2222p333s456m")  # 14 tiles: two quads, three triplets
    assert changsha_opening_hu(dealer_hand, {}) == ("opening_four", "opening_two_triplets")
    repeated = changsha_opening_hu(dealer_hand, {"opening_hu_repeat": "count_repeats"})
    assert repeated == ("opening_four", "opening_four", "opening_two_triplets")
    four_triplets = parse_tiles("111m222p333s555m8p")
    assert changsha_opening_hu(four_triplets, {"opening_hu_repeat": "count_repeats"}) == (
        "opening_two_triplets",
        "opening_two_triplets",
    )


def test_opening_hu_types_option_filters():
    hand = parse_tiles("1111m34679p13679s")  # quad, no 2/5/8
    assert changsha_opening_hu(hand, {}) == ("opening_four", "opening_no_258")
    assert changsha_opening_hu(hand, {"opening_hu_types": ["opening_no_258"]}) == (
        "opening_no_258",
    )
    with pytest.raises(BadInput, match="opening_hu_types"):
        changsha_opening_hu(hand, {"opening_hu_types": ["jiejiegao"]})
    with pytest.raises(BadInput):
        changsha_opening_hu(parse_tiles("123m"), {})


def test_ready_and_waits():
    assert changsha_ready(parse_tiles("123456m789p234s5s"), [], {})
    # 1234s waits on 1s or 4s, both pairs outside 2/5/8: shaped but not ready.
    assert not changsha_ready(parse_tiles("123456m789p1234s"), [], {})
    # After a 开杠 the rest must still be ready (§B5).
    assert changsha_ready(parse_tiles("456m789p234s5s"), [meld("kaigang 1111m")], {})
    waits = changsha_waits(parse_tiles("1133m5577p99224s"), [], {})
    assert waits == [(tile_index("4s"), 1)]  # 七小对 only


def test_bad_input_raises():
    with pytest.raises(BadInput, match="expected 13"):
        score_changsha(parse_tiles("123456m789p234s"), [], WinContext(0, "discard"), {})
    with pytest.raises(BadInput, match="not a run"):
        score("456m789p234s55s", "5s", melds=("chi 135m",))
    with pytest.raises(BadInput, match="identical"):
        score("456m789p234s55s", "5s", melds=("peng 123m",))
    with pytest.raises(BadInput, match="big_hu_stack"):
        score("123456m789p234s55s", "5s", big_hu_stack="sum")


def test_defaults_match_the_rules_table():
    assert CHANGSHA_SCORING_DEFAULTS["opening_hu_types"] == (
        "opening_four",
        "opening_no_258",
        "opening_missing_suit",
        "opening_two_triplets",
    )
    assert {k: v for k, v in CHANGSHA_SCORING_DEFAULTS.items() if k != "opening_hu_types"} == {
        "opening_hu_repeat": "once_per_type",
        "dealer_bonus": "on",
        "bird_mode": "add_double",
        "big_hu_stack": "additive",
        "menqing_big_hu": "off",
    }
