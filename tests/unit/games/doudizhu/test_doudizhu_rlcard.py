"""Conformance with an independent implementation: RLCard's Dou Dizhu (rlcard 1.2.0, a
test-only dependency). The play-phase rules are the same, so the legal moves must agree
exactly at every state; the differences outside play (docs/doudizhu.md, "Differences from
RLCard") are each pinned here. The full 100,000-state run is bench/bench_doudizhu.py."""

from __future__ import annotations

import random

import pytest
from rlcard.games.doudizhu.judger import DoudizhuJudger
from rlcard.games.doudizhu.utils import CARD_TYPE

from bench.doudizhu_rlcard import Reference, conform, move_text, our_moves
from games.doudizhu.cards import rank_text
from games.doudizhu.combos import classify
from games.doudizhu.legal import legal_plays
from tests.unit.games.doudizhu.helpers import PASS, cards, ranks, spring_hand

# RLCard's type names -> ours (chains carry their length after the last underscore).
KIND = {"solo": "single", "pair": "pair", "trio": "triple", "trio_solo": "triple_one",
        "trio_pair": "triple_two", "four_two_solo": "four_two_singles",
        "four_two_pair": "four_two_pairs", "bomb": "bomb", "rocket": "rocket",
        "solo_chain": "straight", "pair_chain": "pair_straight", "trio_chain": "airplane",
        "trio_solo_chain": "airplane_singles", "trio_pair_chain": "airplane_pairs"}


def _ours(rl_type: str) -> tuple[str, int]:
    head, _, tail = rl_type.rpartition("_")
    if tail.isdigit() and head in KIND:
        return KIND[head], int(tail)
    return KIND[rl_type], 1


def test_legal_moves_agree_with_rlcard_at_every_play_state() -> None:
    result = conform(70, label="unit")
    assert result.states >= 4000, result.states
    assert result.disagreements == []
    assert result.hands == 70 and result.payoffs_agree == result.hands


def test_every_rlcard_combination_has_our_reading_and_order() -> None:
    """All 27,471 plays of RLCard's action space: same kind and length, and the same order
    (RLCard's weight) within a kind and length."""
    keys: dict[tuple[str, int], dict[int, set[int]]] = {}
    for text, readings in CARD_TYPE[0].items():
        assert len(readings) == 1, "RLCard reads every play one way, as we do"
        (rl_type, weight), = readings
        combo = classify(ranks(text))
        assert combo is not None, text
        assert (combo.kind, combo.length) == _ours(rl_type), text
        keys.setdefault((combo.kind, combo.length), {}).setdefault(int(weight), set()).add(
            combo.key)
    for weights in keys.values():
        ordered = [weights[w] for w in sorted(weights)]
        assert all(len(k) == 1 for k in ordered)
        assert [min(k) for k in ordered] == sorted(min(k) for k in ordered)
    assert len(CARD_TYPE[0]) == 27471


def test_no_other_rank_multiset_is_a_combination() -> None:
    rng = random.Random(7)
    deck = [r for r in range(13) for _ in range(4)] + [13, 14]
    for _ in range(20_000):
        rng.shuffle(deck)
        counts = [0] * 15
        for r in deck[: rng.randint(1, 20)]:
            counts[r] += 1
        assert (classify(counts) is None) == (rank_text(counts) not in CARD_TYPE[2])


def test_lead_moves_agree_with_rlcard_s_generator_on_random_hands() -> None:
    rng = random.Random(11)
    deck = [r for r in range(13) for _ in range(4)] + [13, 14]
    for _ in range(400):
        rng.shuffle(deck)
        counts = [0] * 15
        for r in deck[: rng.choice([17, 20, rng.randint(1, 20)])]:
            counts[r] += 1
        ours = {rank_text([list(p).count(k) for k in range(15)])
                for p, _ in legal_plays(counts, None)}
        assert ours == DoudizhuJudger.playable_cards_from_hand(rank_text(counts))


# -- the differences, each pinned (docs/doudizhu.md) ------------------------------------------


def test_difference_rlcard_has_no_bidding_its_landlord_is_always_player_0() -> None:
    from rlcard.games.doudizhu.game import DoudizhuGame

    for _ in range(5):
        game = DoudizhuGame()
        _, first = game.init_game()
        assert game.round.landlord_id == 0 and first == 0
        assert len(game.players[0].current_hand) == 20


def test_difference_rlcard_pays_one_to_each_winner_we_settle_zero_sum_stakes() -> None:
    state = spring_hand()  # seat 0 landlord: straight, bomb, rocket, then out: a spring
    ref = Reference([state.hand_of(s) for s in range(3)])
    for play in ("3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks As", "2s 2h 2c 2d", "SJ BJ"):
        for seat, action in ((0, cards(play)), (1, PASS), (2, PASS)):
            assert move_text(action) in ref.legal() and our_moves(state, seat) == ref.legal()
            state.apply(seat, action)
            ref.step(move_text(action))
    state.apply(0, cards("3h 3c"))
    ref.step("33")
    assert ref.is_over() and ref.payoffs() == [1, 0, 0]
    assert state.settlement().deltas == (16, -8, -8)  # x2 bomb, x2 rocket, x2 spring


def test_difference_rlcard_moves_have_no_suits() -> None:
    state = spring_hand()
    ref = Reference([state.hand_of(s) for s in range(3)])
    plays = [a for a in state.legal_actions(0) if a.kind == "play"]
    assert len(plays) == len(ref.legal()), "one action per rank multiset, as RLCard"
    assert state.can(0, cards("3h 3c")) and state.can(0, cards("3s 3c")), "any suits"


@pytest.mark.parametrize("text", ["333444555666", "33344455", "3333BR", "3334447777"])
def test_shared_wing_rules_are_rlcard_s(text: str) -> None:
    assert (classify(ranks(text)) is None) == (text not in CARD_TYPE[2])
