"""Dadun combination classifier and ``beats`` (rules/dadun.md §3 and the §7 test vectors)."""

from __future__ import annotations

import pytest

from games.dadun.cards import parse_cards
from games.dadun.combos import (
    CLASS_NAMES,
    DEFAULT_BOMB_ODDS,
    Combo,
    InvalidCombo,
    beats,
    bomb_odds,
    classify,
    interpretations,
    is_bomb_tier,
    try_classify,
)
from games.engine import IllegalAction


def cl(text: str, hand: int | None = None) -> Combo:
    cards = parse_cards(text)
    return classify(cards, len(cards) if hand is None else hand)


# §7: (play, hand size or None for "the play is not the whole hand", previous, class, beats)
SECTION_7 = [
    (1, "5h", None, "4s", 1, True),
    (2, "Kh Kd", None, "Qs Qs", 2, True),
    (3, "2c 2c", None, "Ah Ad", 2, True),
    (4, "SJ SJ", None, "2h 2d", 15, True),
    (5, "SJ BJ", None, "2h 2s", 27, True),
    (6, "SJ BJ", None, "SJ SJ", 27, False),
    (7, "BJ BJ", None, "SJ SJ", 15, True),
    (8, "3h 3d 3c", 10, None, None, None),
    (9, "3h 3d 3c", 3, "9s 9h 9d 4c 5c", 3, False),
    (10, "Ts Td Tc", 3, "9s 9h 9d 4c 5c", 3, True),
    (11, "7h 7d 7c 9s 4d", None, "6s 6h 6d Ks Kd", 5, True),
    (12, "8s 8h 8d 8c 3d", None, "7h 7d 7c 9s 4d", 5, True),
    (13, "4s 5h 6d 7c 8s", None, "3s 4h 5d 6c 7s", 6, True),
    (14, "9s Th Jd Qc Ks Ah", None, "3s 4h 5d 6c 7s", 6, False),
    (15, "Ts Jh Qd Kc As 2h", None, None, None, None),
    (16, "5s 5h 6d 6c", None, "4s 4h 5d 5c", 7, True),
]


@pytest.mark.parametrize(("row", "play", "hand", "prev", "cls", "wins"), SECTION_7)
def test_section_7_vectors(row, play, hand, prev, cls, wins):
    cards = parse_cards(play)
    hand_size = 27 if hand is None else hand
    if cls is None:
        with pytest.raises(InvalidCombo):
            classify(cards, hand_size)
        assert try_classify(cards, hand_size) is None
        return
    combo = classify(cards, hand_size)
    assert combo.cls == cls
    assert beats(combo, cl(prev)) is wins


def test_section_7_odds_and_bomb_status():
    assert bomb_odds(cl("SJ SJ")) == 1  # row 4
    assert bomb_odds(cl("SJ BJ")) == 0  # row 5
    row12 = cl("8s 8h 8d 8c 3d")
    assert (row12.key, row12.rung, is_bomb_tier(row12)) == (5, 0, False)  # rank index of 8
    assert cl("8s 8h 8d 8c").cls == 10


def test_invalid_combo_is_an_illegal_action_with_a_reason():
    with pytest.raises(IllegalAction, match="only as a last play"):
        classify(parse_cards("3h 3d 3c"), 10)
    with pytest.raises(IllegalAction, match="no combination"):
        classify(parse_cards("Ts Jh Qd Kc As 2h"), 10)


# One example per paiClass (play, hand size or None) and a near miss (play, hand, what it is).
EXAMPLES = {
    1: ("7h", None),
    2: ("7h 7s", None),
    3: ("7h 7s 7d", 3),
    4: ("7h 7s 7d 9c", 4),
    5: ("7h 7s 7d 9c 3d", None),
    6: ("3s 4h 5d 6c 7s", None),
    7: ("5h 5d 6h 6s", None),
    8: ("3s 3h 3d 4s 4h 4d 9c Jd Qs 2h", None),
    9: ("5h Td Ks", None),
    10: ("9s 9h 9c 9d", None),
    11: ("9s 9h 9c 9d 9s", None),
    12: ("9s 9h 9h 9c 9d 9s", None),
    13: ("9s 9s 9h 9h 9c 9c 9d", None),
    14: ("9s 9s 9h 9h 9c 9c 9d 9d", None),
    15: ("BJ BJ", None),
    16: ("9h 9h 9d 9d 9s", None),
    17: ("9h 9h 9d 9d 9s 9c", None),
    18: ("5h 5d 5s Th Td Ts Kh Kd Ks", None),
    19: ("5h 5d 5s 5c Th Td Ts Tc Kh Kd Ks Kc", None),
    20: ("SJ SJ BJ", None),
    21: ("SJ SJ BJ BJ", None),
    22: ("5h 5d 5s 5c 5h Th Td Ts Tc Th Kh Kd Ks Kc Kh", None),
    23: ("5h 5d 5s 5c 5h 5d Th Td Ts Tc Th Td Kh Kd Ks Kc Kh Kd", None),
    24: ("5h 5d 5s 5c 5h 5d 5s " "Th Td Ts Tc Th Td Ts " "Kh Kd Ks Kc Kh Kd Ks", None),
    25: ("5h 5d 5s 5c 5h 5d 5s 5c " "Th Td Ts Tc Th Td Ts Tc " "Kh Kd Ks Kc Kh Kd Ks Kc", None),
    26: ("9h 9h 9d 9d", None),
    27: ("SJ BJ", None),
}
NEAR_MISSES = {
    1: ("", None, None),
    2: ("7h 8h", None, None),
    3: ("7h 7s 7d", 4, None),
    4: ("7h 7s 7d 9c", 5, None),
    5: ("7h 7s 9c 9d 3d", None, None),
    6: ("3s 4h 5d 6c 8s", None, None),
    7: ("5h 5d 7h 7s", None, None),
    8: ("As Ah Ad 2s 2h 2d 3c 4c 5c 6c", None, None),
    9: ("5h Td Qs", None, None),
    10: ("9s 9h 9c 8d", 4, 4),
    11: ("9s 9h 9c 9d 8s", None, 5),
    12: ("9s 9h 9h 9c 9d 9s 8s", None, None),
    13: ("9s 9s 9h 9h 9c 9c 9d 8d", None, None),
    14: ("9s 9s 9h 9h 9c 9c 9d 9d 8d", None, None),
    15: ("SJ 2h", None, None),
    16: ("9h 9h 9d 9c 9s", None, 11),
    17: ("9h 9h 9d 9c 9s 9c", None, 12),
    18: ("5h 5d 5s Th Td Ts Kh Kd Qs", None, None),
    19: ("5h 5d 5s 5c Th Td Ts Tc Kh Kd Ks Qc", None, None),
    20: ("SJ SJ 2h", None, None),
    21: ("SJ SJ BJ 2h", None, None),
    22: ("5h 5d 5s 5c 5h Th Td Ts Tc Th Kh Kd Ks Kc", None, None),
    23: ("5h 5d 5s 5c 5h 5d Th Td Ts Tc Th Td Kh Kd Ks Kc Kh Qd", None, None),
    24: ("5h 5d 5s 5c 5h 5d 5s Th Td Ts Tc Th Td Ts Kh Kd Ks Kc Kh Kd", None, None),
    25: ("5h 5d 5s 5c 5h 5d 5s 5c Th Td Ts Tc Th Td Ts Tc Kh Kd Ks Kc Kh Kd Ks 4c", None, None),
    26: ("9h 9h 9d 9s", None, 10),
    27: ("SJ BJ BJ", None, 20),
}


def test_every_class_has_a_canonical_name():
    assert sorted(CLASS_NAMES) == list(range(1, 28))
    assert CLASS_NAMES[9] == "five_ten_king" and CLASS_NAMES[27] == "joker_mixed_pair"
    assert set(EXAMPLES) == set(NEAR_MISSES) == set(CLASS_NAMES)


@pytest.mark.parametrize("cls", sorted(EXAMPLES))
def test_each_class_recognised(cls):
    text, hand = EXAMPLES[cls]
    combo = cl(text, hand)
    assert combo.cls == cls
    assert combo.name == CLASS_NAMES[cls]
    assert combo.size == len(parse_cards(text))
    assert combo.cards == tuple(sorted(parse_cards(text)))


@pytest.mark.parametrize("cls", sorted(NEAR_MISSES))
def test_each_class_near_miss(cls):
    text, hand, other = NEAR_MISSES[cls]
    cards = parse_cards(text)
    hand_size = 27 if hand is None else hand
    if other is None:
        assert try_classify(cards, hand_size) is None
    else:
        assert classify(cards, hand_size).cls == other


def test_units_keys_and_last_only_flags():
    straight = cl("9s Th Jd Qc Ks Ah")
    assert (straight.units, straight.key) == (6, 6)
    pairs = cl("5s 5h 6d 6c 7s 7s")
    assert (pairs.units, pairs.key) == (3, 2)
    plane = cl("3s 3h 3d 4s 4h 4d 9c Jd Qs 2h")
    assert (plane.units, plane.key, plane.last_only) == (2, 1, False)
    assert cl("7h 7s 7d", 3).last_only and cl("7h 7s 7d 9c", 4).last_only
    assert not cl("7h 7s 7d 9c 3d").last_only
    assert cl("5h 5d 5s 5c Th Td Ts Tc Kh Kd Ks Kc").units == 4


def test_four_plus_one_is_triple_two_even_with_a_colour_four():
    combo = cl("8h 8h 8d 8d 3d")
    assert (combo.cls, combo.key, combo.rung) == (5, 5, 0)


def test_three_510k_sets_are_not_an_airplane_or_triples():
    for hand in (9, 27):
        combo = cl("5s 5h 5d Ts Th Td Ks Kh Kd", hand)
        assert (combo.cls, combo.units) == (18, 3)


def test_airplane_with_510k_ranks_is_an_airplane():
    combo = cl("5s 5h 5d 6s 6h 6d Ts Td Ks Kd")
    assert (combo.cls, combo.key, combo.units) == (8, 3, 2)


def test_two_510k_sets_and_sequences_with_2_are_no_combination():
    for text in ("5h 5d Th Td Kh Kd", "Ah Ad 2h 2d", "Js Qh Kd Ac 2s", "Qs Qh Ks Kh As Ah 2s 2h"):
        assert try_classify(parse_cards(text), 27) is None


def test_airplane_picks_the_highest_run_and_extra_triples_may_be_wings():
    combo = cl("3s 3h 3d 4s 4h 4d 5s 5h 5d 8c")
    assert (combo.cls, combo.units, combo.key) == (8, 2, 2)
    wings_of_fours = cl("7s 7h 7d 8s 8h 8d Js Jh Jd Jc")
    assert (wings_of_fours.units, wings_of_fours.key) == (2, 5)


def test_short_airplane_only_as_a_last_play():
    text = "3s 3h 3d 4s 4h 4d 9c"
    assert try_classify(parse_cards(text), 10) is None
    assert cl(text, 7).cls == 8 and cl(text, 7).last_only
    with pytest.raises(InvalidCombo, match="last play"):
        classify(parse_cards(text), 10)
    assert cl("3s 3h 3d 4s 4h 4d", 6).units == 2


def test_short_last_play_airplane_reading_chosen_against_the_previous_play():
    cards = parse_cards("4s 4h 4d 5s 5h 5d 6s 6h 6d")
    readings = interpretations(cards, 9)
    assert [(c.units, c.key) for c in readings] == [(3, 3), (2, 3)]
    two_triples = cl("3s 3h 3d 4s 4h 4d 9c Jd Qs 2h")
    chosen = classify(cards, 9, against=two_triples)
    assert (chosen.units, chosen.key) == (2, 3) and beats(chosen, two_triples)
    assert not beats(classify(cards, 9), two_triples)


def test_duplicates_beyond_two_decks_and_bad_hand_sizes_are_rejected():
    with pytest.raises(InvalidCombo, match="more than twice"):
        classify(parse_cards("7h 7h 7h"), 3)
    with pytest.raises(InvalidCombo, match="smaller"):
        classify(parse_cards("7h 7d"), 1)
    with pytest.raises(InvalidCombo):
        classify([54], 1)


@pytest.mark.parametrize(
    ("text", "cls"),
    [("9h 9h 9d 9d", 26), ("9s 9s 9c 9c", 26), ("9h 9d 9s 9c", 10), ("9h 9h 9d 9s", 10),
     ("9h 9h 9d 9d 9c", 16), ("9s 9s 9c 9c 9h", 16), ("9h 9h 9d 9s 9c", 11),
     ("9h 9h 9d 9d 9s 9s", 17), ("9s 9s 9c 9c 9h 9d", 17), ("9h 9h 9d 9s 9s 9c", 12)],
)
def test_four_red_four_black_variants(text, cls):
    assert cl(text).cls == cls


# The bomb ladder of §3.2, low -> high, one representative per rung.
LADDER = [
    (1, "5h Td Ks"),
    (2, "5s Ts Ks"),
    (3, "3s 3h 3c 3d"),
    (4, "3h 3h 3d 3d"),
    (5, "3s 3h 3c 3d 3s"),
    (6, "3h 3h 3d 3d 3s"),
    (7, "5h 5d 5s Th Td Ts Kh Kd Ks"),
    (8, "3s 3s 3h 3h 3c 3d"),
    (9, "3h 3h 3d 3d 3s 3c"),
    (10, "SJ BJ BJ"),
    (11, "3s 3s 3h 3h 3c 3c 3d"),
    (12, EXAMPLES[19][0]),
    (13, "3s 3s 3h 3h 3c 3c 3d 3d"),
    (14, EXAMPLES[22][0]),
    (15, EXAMPLES[23][0]),
    (16, EXAMPLES[24][0]),
    (17, EXAMPLES[25][0]),
    (18, "SJ SJ BJ BJ"),
]


def test_ladder_rungs_match_the_rules_table():
    assert [cl(text).rung for _, text in LADDER] == [rung for rung, _ in LADDER]


@pytest.mark.parametrize("i", range(len(LADDER)))
def test_ladder_order_rung_by_rung(i):
    combo = cl(LADDER[i][1])
    for j, (_, other_text) in enumerate(LADDER):
        assert beats(combo, cl(other_text)) is (i > j), (LADDER[i], LADDER[j])


def test_a_higher_rung_beats_a_lower_rung_of_any_rank():
    assert beats(cl("3h 3h 3d 3d"), cl("2s 2h 2c 2d"))
    assert beats(cl("3s 3h 3c 3d 3s"), cl("2h 2h 2d 2d"))
    assert beats(cl("5h 5d 5s Th Td Ts Kh Kd Ks"), cl("2h 2h 2d 2d 2s"))
    assert not beats(cl("2h 2h 2d 2d 2s 2s"), cl("3s 3s 3h 3h 3c 3c 3d"))


def test_inside_a_rung_bombs_compare_by_rank_and_other_plays_tie():
    assert beats(cl("4s 4h 4c 4d"), cl("3s 3h 3c 3d"))
    assert not beats(cl("3s 3h 3c 3d"), cl("4s 4h 4c 4d"))
    assert not beats(cl("4s 4h 4c 4d"), cl("4s 4h 4c 4d"))
    assert beats(cl("2s 2s 2c 2c"), cl("As As Ac Ac"))
    assert not beats(cl("5h Th Kh"), cl("5s Ts Ks"))
    assert not beats(cl("5s Td Kh"), cl("5h Tc Ks"))
    assert not beats(cl("SJ SJ BJ"), cl("SJ BJ BJ"))


def test_bomb_tier_beats_every_normal_play_and_never_the_reverse():
    normal = [cl(t) for t in ("BJ", "BJ BJ", "SJ BJ", "2s 2h", "As Ah Ad 2s 2h",
                              "3s 4h 5d 6c 7s 8s 9h Th Jd Qc Ks Ah", EXAMPLES[8][0])]
    mixed_510k = cl("5h Td Ks")
    for combo in normal:
        assert beats(mixed_510k, combo) and not beats(combo, mixed_510k)
        assert not is_bomb_tier(combo)
    assert is_bomb_tier(mixed_510k)


def test_normal_plays_need_the_same_class_and_size():
    assert not beats(cl("4s 4h"), cl("3s"))
    assert not beats(cl("4s 5h 6d 7c 8s 9s"), cl("3s 4h 5d 6c 7s"))
    assert not beats(cl("5s 5h 6d 6c 7s 7s"), cl("4s 4h 5d 5c"))
    assert beats(cl("5s 5h 6d 6c 7s 7s"), cl("4s 4h 5d 5c 6s 6s"))
    assert not beats(cl("4s 5h 6d 7c 8s"), cl("4h 5d 6c 7s 8s"))
    assert beats(cl("BJ"), cl("SJ")) and beats(cl("SJ"), cl("2s"))
    assert not beats(cl("3s 3h 3d 4s 4h 4d 5s 5h 5d 6s 6h 6d 7c 8c 9c"),
                     cl("3s 3h 3d 4s 4h 4d 9c Jd Qs 2h"))


def test_triple_family_compares_by_triple_rank_across_sizes():
    last_triple_one = cl("Ts Td Tc 3h", 4)
    triple_two = cl("9s 9h 9d 4c 5c")
    assert beats(last_triple_one, triple_two)
    assert beats(cl("Js Jd Jc 3h 3d"), last_triple_one)
    assert beats(cl("Js Jd Jc 3h 3d"), cl("Ts Td Tc", 3))
    assert not beats(cl("9s 9h 9d 4c 5c"), cl("9h 9d 9c 6c 6d"))


def test_joker_pairs_order():
    ordered = [cl(t) for t in ("2s 2h", "SJ BJ", "SJ SJ", "BJ BJ")]
    for i, a in enumerate(ordered):
        for j, b in enumerate(ordered):
            assert beats(a, b) is (i > j)
    assert not beats(cl("SJ SJ"), cl("5h Td Ks"))


def test_default_bomb_odds_follow_the_rules_table():
    expected = {"SJ SJ": 1, "3s 3h 3c 3d": 1, "3h 3h 3d 3d": 2, "3s 3h 3c 3d 3s": 2,
                "3h 3h 3d 3d 3s": 3, EXAMPLES[18][0]: 3, "3s 3s 3h 3h 3c 3d": 3,
                "3h 3h 3d 3d 3s 3c": 4, "SJ SJ BJ": 4, "3s 3s 3h 3h 3c 3c 3d": 5,
                EXAMPLES[19][0]: 5, "3s 3s 3h 3h 3c 3c 3d 3d": 6, EXAMPLES[22][0]: 7,
                EXAMPLES[23][0]: 8, EXAMPLES[24][0]: 9, EXAMPLES[25][0]: 10,
                "SJ SJ BJ BJ": 12, "5h Td Ks": 0, "5s Ts Ks": 0, "SJ BJ": 0, "2s 2h": 0,
                "9s Th Jd Qc Ks": 0}
    for text, odds in expected.items():
        assert bomb_odds(cl(text)) == odds, text
    assert len(DEFAULT_BOMB_ODDS) == 17


def test_bomb_odds_with_a_custom_table_keyed_by_int_or_string():
    assert bomb_odds(cl("3s 3h 3c 3d"), {10: 7}) == 7
    assert bomb_odds(cl("3s 3h 3c 3d"), {"10": 4}) == 4
    assert bomb_odds(cl("5h Td Ks"), {10: 7}) == 0
