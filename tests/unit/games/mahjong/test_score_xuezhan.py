"""XueZhan hand value: the §A12 vectors, best reading, void rule, options and bad input.

Expected values are worked out by hand from ../shared/rules/mahjong.md §A8, never computed by
the code under test."""

from __future__ import annotations

import pytest

from games.engine import BadInput
from games.mahjong.meld import Meld
from games.mahjong.score_common import WinContext
from games.mahjong.score_xuezhan import (
    XUEZHAN_SCORING_DEFAULTS,
    score_xuezhan,
    xuezhan_ready_value,
    xuezhan_waits,
)
from games.mahjong.tiles import parse_tile_list, parse_tiles, tile_index

S = 2  # void suit 条 (s), as in the §A12 settings


def peng(name: str) -> Meld:
    return Meld("peng", (tile_index(name),) * 3, source=0)


def kong(kind: str, name: str) -> Meld:
    return Meld(kind, (tile_index(name),) * 4, concealed=kind == "angang")


def score(concealed, win, how="discard", melds=(), flags=(), void=S, **options):
    ctx = WinContext(tile_index(win), how, frozenset(flags), void)
    return score_xuezhan(parse_tiles(concealed), list(melds), ctx, options)


# (id, concealed 13, winning tile, melds, how, patterns, raw fan, per payer at cap 4)
VECTORS = [
    ("XZ-01", "123456789m234p5p", "5p", (), "discard", ("basic",), 0, 1),
    ("XZ-02", "111333m555777p9p", "9p", (), "discard", ("all_pungs",), 1, 2),
    ("XZ-03", "123345678999m2m", "2m", (), "discard", ("basic", "full_flush"), 2, 4),
    ("XZ-04", "113355m224466p8p", "8p", (), "discard", ("seven_pairs",), 2, 4),
    ("XZ-05", "1111335m224466p", "5m", (), "discard", ("seven_pairs", "root"), 3, 8),
    (
        "XZ-06",
        "1122445566889m",
        "9m",
        (),
        "self_draw",
        ("seven_pairs", "full_flush", "self_draw"),
        5,
        16,
    ),
    (
        "XZ-07",
        "1111224455668m",
        "8m",
        (),
        "discard",
        ("seven_pairs", "full_flush", "root"),
        5,
        16,
    ),
    ("XZ-08", "5557779m", "9m", ("1m", "3m"), "discard", ("all_pungs", "full_flush"), 3, 8),
    ("XZ-09", "8p", "8p", ("1m", "4m", "2p", "6p"), "discard", ("all_pungs", "single_wait"), 2, 4),
    ("XZ-10", "222555m222888p5p", "5p", (), "discard", ("all_pungs", "all_258"), 3, 8),
    ("XZ-11", "1278999m111999p", "3m", (), "discard", ("basic", "terminals"), 2, 4),
    ("XZ-12", "111123m456789p5p", "5p", (), "discard", ("basic", "root"), 1, 2),
]


@pytest.mark.parametrize(
    "concealed,win,pengs,how,patterns,fan,mult",
    [v[1:] for v in VECTORS],
    ids=[v[0] for v in VECTORS],
)
def test_rules_vectors(concealed, win, pengs, how, patterns, fan, mult):
    result = score(concealed, win, how, [peng(p) for p in pengs])
    assert result.winning and result.reason == ""
    assert result.patterns == patterns
    assert result.fan == fan
    assert result.per_payer == mult
    assert result.roots == patterns.count("root")


def test_xz_p1_self_draw_value_is_per_payer():
    # XZ-P1: a self-drawn hand worth mult 4 -> each active opponent pays 4 (对对胡 + 自摸).
    result = score("111333m555777p9p", "9p", "self_draw")
    assert (result.fan, result.per_payer) == (2, 4)


def test_xz_p2_two_winners_on_one_discard():
    # XZ-P2: 对对胡 (mult 2) and a 七对 hand waiting on 9p (mult 4) win on the same 9p.
    assert score("111333m555777p9p", "9p").per_payer == 2
    assert score("113355m224466p9p", "9p").per_payer == 4


def test_best_reading_prefers_runs_when_terminals_pay_more():
    # 111222333m + 999p + 11p: triplets give 对对胡 1, runs (123m x3) give 带幺九 2.
    best = score("111222333m999p1p", "1p")
    assert (best.patterns, best.fan) == (("basic", "terminals"), 2)
    without = score("111222333m999p1p", "1p", yaojiu_jiangdui="off")
    assert (without.patterns, without.fan) == (("all_pungs",), 1)


def test_best_reading_prefers_seven_pairs_over_runs():
    result = score("1122334455667m", "7m")  # runs: 平胡 + 清一色 = 2; pairs: 七对 + 清一色 = 4
    assert (result.patterns, result.fan) == (("seven_pairs", "full_flush"), 4)


def test_void_suit_tile_in_hand_or_melds_does_not_win():
    assert score("123456789m234p5p", "5p", void=0).reason == "void suit tile held"
    assert not score("123456789m234p5p", "5p", void=0).winning
    melded = score("123456m234p5p", "5p", melds=[peng("7s")], void=S)
    assert not melded.winning and melded.per_payer == 0
    assert score("123456m234p5p", "5p", melds=[peng("7s")], void=None).winning


def test_not_a_winning_shape():
    result = score("123456789m234p6p", "5p")
    assert not result.winning and result.fan == 0 and result.reason == "not a winning shape"


def test_heavenly_is_at_least_five_and_drops_self_draw():
    plain = score("123456789m234p5p", "5p", "self_draw", flags=["heavenly"])
    assert (plain.patterns, plain.fan, plain.per_payer) == (("heavenly", "basic"), 5, 16)
    # 七对 2 + 清一色 2 + 2 根 = 6 > 5; 自摸 is not added on top.
    big = score("1111222244556m", "6m", "self_draw", flags=["heavenly"], cap_fan="none")
    assert (big.fan, big.per_payer) == (6, 64)
    assert "self_draw" not in big.patterns and big.patterns[0] == "heavenly"
    earthly = score("123456789m234p5p", "5p", "self_draw", flags=["earthly"])
    assert earthly.fan == 5 and earthly.patterns[0] == "earthly"


def test_heavenly_option_off_scores_a_plain_self_draw():
    result = score("123456789m234p5p", "5p", "self_draw", flags=["heavenly"], tian_di_hu="off")
    assert (result.patterns, result.fan) == (("basic", "self_draw"), 1)


@pytest.mark.parametrize("cap,mult", [(2, 4), (3, 8), (4, 16), (5, 32), ("none", 32), (None, 32)])
def test_cap_applies_to_per_payer_not_raw_fan(cap, mult):
    result = score("1111224455668m", "8m", cap_fan=cap)  # XZ-07, 5 fan
    assert (result.fan, result.per_payer) == (5, mult)


def test_self_draw_bonus_add_base():
    plain = score("123456789m234p5p", "5p", "self_draw", self_draw_bonus="add_base")
    assert (plain.fan, plain.per_payer, plain.patterns) == (0, 2, ("basic",))
    capped = score("1122445566889m", "9m", "self_draw", self_draw_bonus="add_base", cap_fan=3)
    assert (capped.fan, capped.per_payer) == (4, 9)  # 2^min(4, 3) + 1 base after the cap
    discard = score("123456789m234p5p", "5p", self_draw_bonus="add_base")
    assert discard.per_payer == 1


def test_yaojiu_jiangdui_off_drops_terminals_and_258():
    assert score("222555m222888p5p", "5p", yaojiu_jiangdui="off").fan == 1
    assert score("1278999m111999p", "3m", yaojiu_jiangdui=False).fan == 0


def test_menqing_zhongzhang_on():
    result = score("222555m222888p5p", "5p", menqing_zhongzhang="on")
    assert result.patterns == ("all_pungs", "all_258", "concealed", "all_simples")
    assert result.fan == 5
    # A peng loses 门清; a 1 or 9 loses 中张; an 暗杠 keeps 门清.
    with_peng = score("222555m222p5p", "5p", melds=[peng("8p")], menqing_zhongzhang="on")
    assert "concealed" not in with_peng.patterns and "all_simples" in with_peng.patterns
    with_angang = score(
        "555m222888p5p", "5p", melds=[kong("angang", "2m")], menqing_zhongzhang="on"
    )
    assert "concealed" in with_angang.patterns and with_angang.roots == 1
    assert "all_simples" not in score("1278999m111999p", "3m", menqing_zhongzhang="on").patterns


def test_situational_fan():
    base = "123456789m234p5p"
    bloom = score(base, "5p", "self_draw", flags=["kong_bloom"])
    assert (bloom.patterns, bloom.fan) == (("basic", "kong_bloom", "self_draw"), 2)
    assert score(base, "5p", flags=["kong_shot"]).patterns == ("basic", "kong_shot")
    assert score(base, "5p", "rob_kong").patterns == ("basic", "rob_kong")
    drawn = score(base, "5p", "self_draw", flags=["last_tile"])
    assert (drawn.patterns, drawn.fan) == (("basic", "last_tile_draw", "self_draw"), 2)
    assert score(base, "5p", flags=["last_tile"]).patterns == ("basic", "last_tile_shot")
    assert score(base, "5p", flags=["last_tile"], haidi_pao_counts="off").fan == 0


def test_eighteen_arhats_four_kongs_and_a_pair():
    melds = [
        kong("zhigang", "1m"),
        kong("angang", "4m"),
        kong("bugang", "2p"),
        kong("angang", "6p"),
    ]
    result = score("8p", "8p", melds=melds, cap_fan="none")
    # 对对胡 1 + 金钩钓 1 + 4 根 = 6 (十八罗汉).
    assert (result.fan, result.roots, result.per_payer) == (6, 4, 64)


def test_waits_with_best_fan():
    waits = xuezhan_waits(parse_tiles("2223344m112233p"), [], S, {})
    # +2m: 龙七对 (七对 + 根) 3 beats 平胡; 3m, 4m, 5m: 平胡.
    assert waits == [
        (tile_index(t), fan) for t, fan in [("2m", 3), ("3m", 0), ("4m", 0), ("5m", 0)]
    ]
    assert xuezhan_ready_value(parse_tiles("2223344m112233p"), [], S, {}) == 8
    assert xuezhan_ready_value(parse_tiles("2223344m112233p"), [], S, {"cap_fan": 2}) == 4


def test_no_wait_on_a_fifth_copy_or_with_a_void_tile():
    assert xuezhan_waits(parse_tiles("1111m456p789p123s"), [], None, {}) == []
    # peng 1m + 1222m: 1m would be the fifth copy, so only 3m (123m + 22m) remains,
    # worth 1 fan: all four 1m are held (根).
    assert xuezhan_waits(parse_tiles("1222m456p789p"), [peng("1m")], None, {}) == [
        (tile_index("3m"), 1)
    ]
    assert xuezhan_waits(parse_tiles("2223344m112233s"), [], S, {}) == []
    assert xuezhan_ready_value(parse_tiles("2223344m112233s"), [], S, {}) == 0


def test_defaults_match_the_rules_table():
    assert XUEZHAN_SCORING_DEFAULTS == {
        "self_draw_bonus": "add_fan",
        "yaojiu_jiangdui": "on",
        "menqing_zhongzhang": "off",
        "tian_di_hu": "on",
        "haidi_pao_counts": "on",
        "cap_fan": 4,
    }


@pytest.mark.parametrize(
    "concealed,melds,options,message",
    [
        ("123456789m234p", (), {}, "expected 13"),
        ("5555p123456789m", (), {}, "at most 4"),
        ("123456789m234p", ("5p",), {}, "expected 10"),
        ("123456789m234p5p", (), {"cap_fan": 7}, "cap_fan"),
        ("123456789m234p5p", (), {"self_draw_bonus": "double"}, "self_draw_bonus"),
    ],
)
def test_bad_input_raises(concealed, melds, options, message):
    with pytest.raises(BadInput, match=message):
        score(concealed, "5p", melds=[peng(m) for m in melds], **options)


def test_chi_meld_and_bad_context_are_rejected():
    chi = Meld("chi", tuple(parse_tile_list("123m")))
    with pytest.raises(BadInput, match="no chi"):
        score("456789m234p5p", "5p", melds=[chi])
    with pytest.raises(BadInput, match="win must be"):
        WinContext(tile_index("5p"), "ron")
    with pytest.raises(BadInput, match="unknown flags"):
        WinContext(tile_index("5p"), "discard", frozenset({"lucky"}))
    with pytest.raises(BadInput, match="win_tile"):
        WinContext(27, "discard")


def test_unknown_room_options_are_ignored():
    result = score("123456789m234p5p", "5p", exchange_three="any", multi_ron="off")
    assert result.winning and result.per_payer == 1
