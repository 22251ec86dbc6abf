"""Changsha through the engine on stacked walls: payment vectors CS-01..CS-12 of
rules/mahjong.md §B9 (dealer = seat 0, dealer bonus on) and the rule paths: chi only from
the previous seat, opening wins, 海底, 开杠, birds, next dealer. Expected amounts come from
the rules document (X, + dealer bonus, x bird factor), not from the engine."""

from __future__ import annotations

import pytest

from games.engine import Action, IllegalAction
from games.mahjong import changsha, parse_tile_list, tile_index
from games.mahjong.wall import stacked_wall


def T(name: str) -> int:
    return tile_index(name)


def build(hands, front="", back="", dealer=0, declare=(), **options):
    """Dealer 0 unless told; opening wins: seats in ``declare`` declare, others pass."""
    opts = {"bird_count": 0, **options}
    wall = stacked_wall([None if h is None else parse_tile_list(h) for h in hands], dealer,
                        parse_tile_list(front), parse_tile_list(back))
    state = changsha.new_hand_from_wall(opts, wall, dealer)
    while state.phase() == "opening":
        seat = state.to_act()[0]
        state.apply(seat, Action("hu" if seat in declare else "pass"))
    return state


def act(state, seat, kind, tile=None, choice=""):
    tiles = () if tile is None else tuple(parse_tile_list_names(tile))
    ref = str(state.window.id) if state.phase() == "window" else ""
    return state.apply(seat, Action(kind, tiles, ref, choice))


def parse_tile_list_names(text):
    return [changsha.MahjongState.name(t) for t in parse_tile_list(text)]


def advance(state, seat):
    while not state.is_over() and seat not in state.to_act():
        other = state.to_act()[0]
        state.apply(other, state.default_action(other))


def owed(state, reasons=("self_draw", "discard_win", "kong_shot", "rob_kong", "birds",
                         "haidi_shot")):
    """Total paid per (payer -> payee) for the given reasons."""
    out = {}
    for p in state.ledger:
        if p.reason in reasons:
            out[(p.payer, p.payee)] = out.get((p.payer, p.payee), 0) + p.amount
    return out


SMALL = "123456m789p234s5s"  # + 5s: 小胡 with a 5s pair (CS-01)
DEALER = "9s13789m2468p137s6s"
DEALER_C = "9s23678m2468p1367s"  # no 1m, no 9m


def test_cs01_small_self_draw_with_dealer_bonus():
    state = build([DEALER, SMALL, None, None], front="5s")
    act(state, 0, "discard", "9s")
    act(state, 1, "hu")
    assert state.wins[0]["patterns"] == ["small_hu"]
    assert owed(state) == {(0, 1): 3, (2, 1): 2, (3, 1): 2}
    assert state.settlement().next_dealer == 1


def test_cs02_small_discard_win_non_dealer():
    state = build([DEALER, None, SMALL, None], front="1p1p5s")
    act(state, 0, "discard", "9s")
    advance(state, 3)
    act(state, 3, "discard", "5s")
    act(state, 2, "hu")
    assert owed(state) == {(3, 2): 1}


def test_cs02b_dealer_discards_the_winning_tile():
    state = build([DEALER, None, SMALL, None], front="1p1p9p5s")
    act(state, 0, "discard", "9s")
    advance(state, 0)
    act(state, 0, "discard", "5s")
    act(state, 2, "hu")
    assert owed(state) == {(0, 2): 2}


def test_cs04_all_pungs_discard_win():
    state = build([DEALER, "111m333p666s999s7m", None, None], front="2p7m")
    act(state, 0, "discard", "9s")
    advance(state, 2)
    act(state, 2, "discard", "7m")
    act(state, 1, "hu")
    assert state.wins[0]["big_hu"] == 1 and "all_pungs" in state.wins[0]["patterns"]
    assert owed(state) == {(2, 1): 6}


def test_cs05_all_258_self_draw():
    state = build([DEALER, None, None, "2225588m2255p88s"], front="1p1p5p")
    act(state, 0, "discard", "9s")
    advance(state, 3)
    assert state.drawn[3] == T("5p")
    act(state, 3, "hu")
    assert "all_258" in state.wins[0]["patterns"]
    assert owed(state) == {(0, 3): 7, (1, 3): 6, (2, 3): 6}


def test_cs07_dealer_two_big_hu_self_draw():
    state = build(["111333555777m9m1s", None, None, None], front="1p2p3p9m", declare=())
    act(state, 0, "discard", "1s")
    advance(state, 0)
    assert state.drawn[0] == T("9m")
    act(state, 0, "hu")
    assert state.wins[0]["big_hu"] == 2
    assert owed(state) == {(1, 0): 14, (2, 0): 14, (3, 0): 14}


def test_cs09_luxury_seven_pairs():
    state = build([DEALER_C, None, "111133m5577p922s", None], front="1p9s")
    act(state, 0, "discard", "1s")  # not 9s: a win on the dealer's first discard is 地胡
    advance(state, 2)
    act(state, 2, "hu")
    assert "luxury_seven_pairs" in state.wins[0]["patterns"]
    assert owed(state) == {(0, 2): 14, (1, 2): 12, (3, 2): 12}


def test_cs12_kaigang_reveal_wins_kong_bloom_and_locks_nothing_else():
    state = build([DEALER_C, "999m456m789p234s5s", None, None], front="9m", back="5s1p")
    act(state, 0, "discard", "9s")
    assert state.drawn[1] == T("9m")
    assert state.can(1, Action("kaigang", ("9m",))) and state.can(1, Action("buzhang", ("9m",)))
    act(state, 1, "kaigang", "9m")
    assert "kong_bloom" in state.wins[0]["patterns"]
    assert owed(state) == {(0, 1): 7, (2, 1): 6, (3, 1): 6}


KONGER = "999m456m789p234s5s"  # ready on 5s once the four 9m are set aside
SHOOTEE = "456m567p234p55s12s"  # waits on 3s


def test_kaigang_reveal_missed_gives_kong_shot_to_others():
    state = build([DEALER_C, KONGER, SHOOTEE, None], front="9m", back="1p3s")
    act(state, 0, "discard", "9s")
    act(state, 1, "kaigang", "9m")
    assert state.window.trigger == "kaigang_reveal" and state.locked[1]
    act(state, 2, "hu")
    assert "kong_shot" in state.wins[0]["patterns"]
    assert owed(state) == {(1, 2): 6}


def test_after_kaigang_the_hand_is_locked():
    state = build([DEALER_C, KONGER, SHOOTEE, None], front="9m", back="1p3s")
    act(state, 0, "discard", "9s")
    act(state, 1, "kaigang", "9m")
    act(state, 2, "pass")
    advance(state, 1)
    assert state.phase() == "play" and state.turn == 1
    drawn = state.name(state.drawn[1])
    assert {a.kind for a in state.legal_actions(1)} <= {"hu", "discard"}
    assert [a.tiles for a in state.legal_actions(1) if a.kind == "discard"] == [(drawn,)]
    other = next(n for n in ("1m", "2m", "3m", "4m", "5m", "6m") if n != drawn
                 and state.hands[1][T(n)])
    with pytest.raises(IllegalAction):
        act(state, 1, "discard", other)


def test_chi_only_from_the_previous_seat():
    state = build(["5m1379p1379s1379m2p", "46m258p258s2588m9p", "46m369p369s147s11p", None])
    events = act(state, 0, "discard", "5m")
    chi_to = {e.to for e in events if e.kind == "candidates"
              and any(a["kind"] == "chi" for a in e.data["actions"])}
    assert chi_to == {1}
    act(state, 1, "chi", "46m")
    assert [m.kind for m in state.melds[1]] == ["chi"] and state.turn == 1


def test_opening_win_pays_each_type_as_small_self_draw():
    state = build([DEALER_C, "1111m23p456s789p9s", None, None], declare=(1,))
    opening = [p for p in state.ledger if p.reason == "opening_hu"]
    assert sorted((p.payer, p.amount) for p in opening) == [(0, 3), (2, 2), (3, 2)]
    assert state.phase() == "play" and state.turn == 0


def play_to_haidi(state):
    """Nobody claims or wins, everyone throws what he draws, until the 海底 offer."""
    while state.phase() != "haidi":
        seat = state.to_act()[0]
        if state.phase() == "window":
            state.apply(seat, Action("pass", ref=str(state.window.id)))
        elif state.phase() == "play":
            drawn = state.drawn[seat]
            tile = drawn if drawn is not None else max(
                t for t in range(27) if state.hands[seat][t])
            state.apply(seat, Action("discard", (state.name(tile),)))
        else:
            state.apply(seat, Action("pass"))


def test_haidi_refused_by_all_is_a_draw_and_first_offered_deals():
    state = changsha.new_hand({"bird_count": 0}, 5, 0)
    play_to_haidi(state)
    first = state.turn
    assert state.wall.remaining() == 1
    for k in range(4):
        assert state.to_act() == ((first + k) % 4,)
        state.apply((first + k) % 4, Action("haidi", choice="no"))
    assert state.is_over() and state.end_reason == "wall_exhausted" and not state.wins
    assert state.settlement().next_dealer == first
    assert not [p for p in state.ledger if p.reason != "opening_hu"]


def test_haidi_taken_without_win_is_exposed_and_taker_deals():
    state = changsha.new_hand({"bird_count": 0}, 5, 0)
    play_to_haidi(state)
    first = state.turn
    state.apply(first, Action("haidi", choice="yes"))
    if state.phase() == "window":
        assert state.window.trigger == "haidi"
        assert all(set(k) == {"hu", "pass"} for k in state.window.candidates.values())
        for seat in state.to_act():
            state.apply(seat, Action("pass", ref=str(state.window.id)))
    assert state.is_over()
    if not state.wins:
        assert state.settlement().next_dealer == first
    else:
        assert "last_tile_draw" in state.wins[0]["patterns"]


def test_haidi_compulsory_option():
    state = changsha.new_hand({"haidi_compulsory": True}, 5, 0)
    play_to_haidi(state)
    with pytest.raises(IllegalAction):
        state.apply(state.turn, Action("haidi", choice="no"))
    assert state.legal_actions(state.turn) == [Action("haidi", choice="yes")]


def test_birds_double_the_pairs_they_hit():
    # seat 1 small self-draw (X = 2); birds 1s (rank 1 -> winner) and 2p (rank 2 -> seat 2)
    state = build([DEALER, SMALL, None, None], front="5s", back="1s2p", bird_count=2)
    act(state, 0, "discard", "9s")
    act(state, 1, "hu")
    assert state.birds.hits == (0, 1, 1, 0)
    # per pair: (X + dealer bonus) x (1 + birds on winner + birds on payer)
    assert owed(state) == {(0, 1): 3 * 2, (2, 1): 2 * 3, (3, 1): 2 * 2}
    assert {p.reason for p in state.ledger} == {"self_draw", "birds"}


@pytest.mark.parametrize("rule, dealer_next", [("discarder", 0), ("discarder_next", 1)])
def test_multi_win_discarder_deals_next(rule, dealer_next):
    state = build([DEALER, SMALL, "123456p789m234s5s", None], front="9p9p9p5s",
                  next_dealer_on_multi_ron=rule)
    act(state, 0, "discard", "9s")
    advance(state, 0)
    act(state, 0, "discard", "5s")
    act(state, 1, "hu")
    act(state, 2, "hu")
    assert [w["seat"] for w in state.wins] == [1, 2]
    assert owed(state) == {(0, 1): 2, (0, 2): 2}  # X = 1, dealer bonus + 1
    assert state.settlement().next_dealer == dealer_next
