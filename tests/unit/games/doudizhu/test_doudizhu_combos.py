"""Every combination of Dou Dizhu, the wing and kicker rules, how plays compare, and that the
legal-play generator lists exactly the sub-hands that classify and beat (brute force)."""

from __future__ import annotations

from itertools import product

import pytest

from games.doudizhu.cards import rank_text
from games.doudizhu.combos import Combo, beats, classify
from games.doudizhu.legal import legal_plays, pick_cards
from games.rng import Stream
from tests.unit.games.doudizhu.helpers import ranks

R = "3456789TJQKA2BR"


@pytest.mark.parametrize("text, kind, length, key", [
    ("3", "single", 1, 0), ("B", "single", 1, 13), ("R", "single", 1, 14),
    ("22", "pair", 1, 12),
    ("777", "triple", 1, 4),
    ("7773", "triple_one", 1, 4), ("777R", "triple_one", 1, 4),
    ("77733", "triple_two", 1, 4), ("22233", "triple_two", 1, 12),
    ("34567", "straight", 5, 0), ("3456789TJQKA", "straight", 12, 0), ("TJQKA", "straight", 5, 7),
    ("334455", "pair_straight", 3, 0), ("QQKKAA", "pair_straight", 3, 9),
    ("333444", "airplane", 2, 0), ("KKKAAA", "airplane", 2, 10),
    ("333444555666777888", "airplane", 6, 0),
    ("33344456", "airplane_singles", 2, 0), ("33344455", "airplane_singles", 2, 0),
    ("333444555777", "airplane_singles", 3, 0),       # a non-adjacent triple as wings
    ("QQQKKKAAA222", "airplane_singles", 3, 9),       # 2s may be wings: they never chain
    ("333444B5", "airplane_singles", 2, 0),
    ("3334445566", "airplane_pairs", 2, 0),
    ("3334445556667788TTJJ", "airplane_pairs", 4, 0),
    ("333345", "four_two_singles", 1, 0), ("333355", "four_two_singles", 1, 0),
    ("3333R5", "four_two_singles", 1, 0),
    ("33335566", "four_two_pairs", 1, 0),
    ("3333", "bomb", 1, 0), ("2222", "bomb", 1, 12),
    ("BR", "rocket", 1, 13),
])
def test_every_combination(text: str, kind: str, length: int, key: int) -> None:
    combo = classify(ranks(text))
    assert combo == Combo(kind, length, key, len(text))


@pytest.mark.parametrize("text, why", [
    ("34", "two different ranks"),
    ("3456", "a straight needs five ranks"),
    ("JQKA2", "2s never chain"),
    ("QKA2B", "jokers never chain"),
    ("3455", "no such shape"),
    ("3344", "a pair straight needs three pairs"),
    ("KKAA22", "2s never chain"),
    ("AAA222", "2s never chain"),
    ("333BR", "a triple with the rocket is no triple_two"),
    ("3333BR", "the rocket is never the two singles of 四带二"),
    ("33334444", "four with the same rank as both pairs (a bomb)"),
    ("33335555", "two pairs of one rank are a bomb"),
    ("3334447777", "a bomb is never wings"),
    ("33344445", "no wing of a body rank"),
    ("3334445556667778", "wings may not lengthen the airplane (777 beside the body)"),
    ("333444BR", "the rocket is never wings"),
    ("3333444555666", "thirteen cards make nothing"),
])
def test_non_combinations(text: str, why: str) -> None:
    assert classify(ranks(text)) is None, why


def c(text: str) -> Combo:
    combo = classify(ranks(text))
    assert combo is not None, text
    return combo


def test_comparisons() -> None:
    assert beats(c("4"), c("3")) and not beats(c("3"), c("4")) and not beats(c("3"), c("3"))
    assert beats(c("R"), c("B")) and beats(c("B"), c("2"))
    assert not beats(c("44"), c("3")), "a pair does not follow a single"
    assert beats(c("45678"), c("34567")) and not beats(c("456789"), c("34567")), "same length"
    assert beats(c("4443"), c("3336")) and not beats(c("44433"), c("3336"))
    assert beats(c("3333"), c("22")) and beats(c("3333"), c("3456789TJQKA"))
    assert beats(c("4444"), c("3333")) and not beats(c("3333"), c("4444"))
    assert beats(c("3333"), c("222255")), "a bomb beats 四带二"
    assert not beats(c("222255"), c("3333"))
    assert beats(c("BR"), c("2222")) and not beats(c("2222"), c("BR"))
    assert not any(beats(c(t), c("BR")) for t in ("3", "2222", "BR"))
    assert beats(c("44455566"), c("33344478")), "airplanes compare by the body"
    assert not beats(c("444555666777"), c("33344455")), "and must have the same length"


def _sub_multisets(counts: list[int]) -> list[list[int]]:
    return [list(v) for v in product(*(range(n + 1) for n in counts)) if sum(v)]


@pytest.mark.parametrize("seed", range(12))
def test_generator_lists_exactly_the_classifying_beating_sub_hands(seed: int) -> None:
    """Brute force over every sub-multiset of a random 9..11-card hand, leading and after
    a top of each kind the hand could hold."""
    stream = Stream(seed)
    deck = [r for r in range(13) for _ in range(4)] + [13, 14]
    stream.shuffle(deck)
    hand = [0] * 15
    for r in deck[: 9 + seed % 3]:
        hand[r] += 1
    subs = _sub_multisets(hand)
    tops: list[Combo | None] = [None, c("3"), c("33"), c("333"), c("3334"), c("33344"),
                                c("34567"), c("334455"), c("333444"), c("33344456"),
                                c("3333"), c("BR"), c("333345")]
    for top in tops:
        expected = set()
        for sub in subs:
            combo = classify(sub)
            if combo is not None and (top is None or beats(combo, top)):
                expected.add(rank_text(sub))
        plays = legal_plays(hand, top)
        got = [rank_text([list(r).count(k) for k in range(15)]) for r, _ in plays]
        assert len(got) == len(set(got)), "no play twice"
        assert set(got) == expected, (rank_text(hand), top)
        for ranks_, combo in plays:
            assert classify([list(ranks_).count(k) for k in range(15)]) == combo


def test_pick_cards_takes_the_lowest_suits() -> None:
    hand = [0, 1, 2, 3, 4, 52]  # 3s 3h 3c 3d 4s SJ
    assert pick_cards(hand, (0, 0, 13)) == [0, 1, 52]
    assert pick_cards(hand, (0, 0, 0, 0, 1)) == [0, 1, 2, 3, 4]


def test_rank_letters() -> None:
    assert R == "3456789TJQKA2BR"
    assert rank_text(ranks("BR3")) == "3BR"
