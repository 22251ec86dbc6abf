"""Room options of rules/mahjong.md §A11 (XueZhan) and §B8 (Changsha) that change who pays,
what a pass blocks, who deals next and the birds: XueZhan ``dian_gang_hua``,
``pass_ron_rule`` (``allow_if_higher_fan``), ``pass_peng_rule``, ``pigs_pay_winners``,
``next_dealer``; Changsha ``opening_hu_birds``, ``gang_points``,
``bird_origin``, ``bird_mode``. Each is played through the engine on a stacked wall at its
non-default value and, where the difference shows, next to the default.

Every expected amount is derived by hand from the rules document (the derivation is in the
comment next to it), never copied from what the engine prints. Base 1 throughout."""

from __future__ import annotations

import pytest

from games.engine import Action
from games.mahjong import changsha, parse_tile_list, tile_index, tile_name, xuezhan
from games.mahjong.wall import full_set, stacked_wall


def T(name: str) -> int:
    return tile_index(name)


def tiles(text: str) -> list[int]:
    return parse_tile_list(text)


def act(state, seat, kind, tile=None, choice=""):
    names = () if tile is None else tuple(tile_name(t) for t in tiles(tile))
    ref = str(state.window.id) if state.phase() == "window" else ""
    return state.apply(seat, Action(kind, names, ref, choice))


def lines(state, *reasons):
    """(payer, payee, amount) of every ledger line with one of ``reasons``, sorted."""
    return sorted((p.payer, p.payee, p.amount) for p in state.ledger if p.reason in reasons)


def owed(state, *reasons):
    """Total owed per (payer, payee) over ``reasons``."""
    out: dict[tuple[int, int], int] = {}
    for p in state.ledger:
        if p.reason in reasons:
            out[(p.payer, p.payee)] = out.get((p.payer, p.payee), 0) + p.amount
    return out


def pass_window(state):
    """Everyone who may answer the open window (if any) passes."""
    while state.phase() == "window":
        act(state, state.to_act()[0], "pass")


def offered_to(events, seat):
    """The kinds ``seat`` was offered in the window these events opened (empty: none)."""
    for e in events:
        if e.kind == "candidates" and e.to == seat:
            return {a["kind"] for a in e.data["actions"]}
    return set()


# ======================================================================== XueZhan


def xz(hands, dealer, voids, front="", back="", **options):
    """A XueZhan hand with exchange off, stacked hands/draws, voids declared."""
    wall = stacked_wall([None if h is None else tiles(h) for h in hands], dealer,
                        tiles(front), tiles(back))
    state = xuezhan.new_hand_from_wall({"exchange_three": "off", **options}, wall, dealer)
    for seat in range(4):
        state.apply(seat, Action("declare_void", choice=voids[seat]))
    return state


# ---------------------------------------------------------------- dian_gang_hua (点杠花)

# Seat 0 (void s) holds 777m and waits on 5m once the 7m are a kong: 7777m 123p 456p 789p 55m.
KONGER = "777m123p456p789p5m"
FEEDER = "7m1235m2468s13579s"  # dealer 3, void m: must throw an m tile, throws 7m


@pytest.mark.parametrize("rule", ["as_self_draw", "discarder_pays"])
def test_dian_gang_hua_feeder_pays_alone_with_the_option(rule):
    state = xz([KONGER, None, None, FEEDER], dealer=3, voids="smmm", back="5m",
               dian_gang_hua=rule)
    act(state, 3, "discard", "7m")
    act(state, 0, "zhigang", "7m")
    assert state.drawn[0] == T("5m")  # the replacement, from the back
    act(state, 0, "hu")
    # §A8: basic 0 + 1 root (all four 7m) = 1; §A8.2: 杠上花 +1 and 自摸 +1 (杠上花 "also
    # counts 自摸") -> 3 fan -> 2^3 = 8 per payer. §A9 直杠: the discarder pays 2.
    assert {"kong_bloom", "self_draw", "root"} <= set(state.wins[0]["patterns"])
    assert lines(state, "zhigang") == [(3, 0, 2)]
    if rule == "as_self_draw":
        # §A6 DEFAULT: scored as a self-draw, every active opponent pays 8.
        assert lines(state, "self_draw") == [(1, 0, 8), (2, 0, 8), (3, 0, 8)]
    else:
        # §A6 option: the feeder (seat 3) pays alone; the value of the win is unchanged.
        assert lines(state, "self_draw") == [(3, 0, 8)]


def test_dian_gang_hua_option_leaves_a_concealed_kong_bloom_to_everyone():
    # No feeder for a 暗杠: 杠上花 on its replacement is paid by all, option or not.
    state = xz(["7777m123p456p789p5m", None, None, None], dealer=0, voids="smmm",
               back="5m", dian_gang_hua="discarder_pays")
    act(state, 0, "angang", "7m")
    act(state, 0, "hu")
    # 1 root + 杠上花 + 自摸 = 3 fan -> 8 each (not 天胡: a kong came first, §A8.2);
    # 暗杠: 2 from every other active player.
    assert lines(state, "angang") == [(1, 0, 2), (2, 0, 2), (3, 0, 2)]
    assert lines(state, "self_draw") == [(1, 0, 8), (2, 0, 8), (3, 0, 8)]


# ---------------------------------------------------------------- pass_ron_rule (过水)

# Seat 0 (void s): 23m 789m 99m 111p 999p waits on 1m and 4m.
#   + 1m: 123m 789m 99m 111p 999p: every set and the pair hold a 1 or 9 -> 带幺九 2 fan -> 4
#   + 4m: 234m ... -> 平胡 0 fan -> 1
TWO_WAITS = "23789m99m111999p"
DEALER_4M = "4m23568p12345669s"  # dealer 1, void m: his only m tile, 4m, goes first
SEAT2_1M = "1m234567p2346s78s"  # void m: throws 1m after his draw
SEAT3 = "5m6m8p2s4s5s6s7s8s9s4p6p8p"
FIRST_1M = "1m23568p12345669s"
SEAT2_4M = "4m234567p2346s78s"


@pytest.mark.parametrize("rule", ["until_next_draw", "allow_if_higher_fan"])
def test_passed_win_may_be_taken_later_only_if_worth_more(rule):
    state = xz([TWO_WAITS, DEALER_4M, SEAT2_1M, SEAT3], dealer=1, voids="smmm",
               front="9s", pass_ron_rule=rule)
    events = act(state, 1, "discard", "4m")
    assert "hu" in offered_to(events, 0)
    act(state, 0, "pass")  # passes a win worth 1
    assert state.turn == 2 and state.drawn[2] == T("9s")
    events = act(state, 2, "discard", "1m")  # worth 4 to seat 0, who has not drawn since
    if rule == "until_next_draw":
        # DEFAULT: no discard win at all until his own next draw.
        assert "hu" not in offered_to(events, 0)
        assert not state.wins
    else:
        # 过手加番: strictly more fan (2 > 0) may be taken; seat 2 pays 2^2 = 4.
        assert "hu" in offered_to(events, 0)
        act(state, 0, "hu")
        assert lines(state, "discard_win") == [(2, 0, 4)]
        assert "terminals" in state.wins[0]["patterns"]


def test_allow_if_higher_fan_still_blocks_a_win_worth_no_more():
    # The other order: he passes the 1m win (2 fan), then 4m (0 fan) is no better: blocked.
    state = xz([TWO_WAITS, FIRST_1M, SEAT2_4M, SEAT3], dealer=1, voids="smmm",
               front="9s", pass_ron_rule="allow_if_higher_fan")
    events = act(state, 1, "discard", "1m")
    assert "hu" in offered_to(events, 0)
    act(state, 0, "pass")
    events = act(state, 2, "discard", "4m")
    assert "hu" not in offered_to(events, 0)
    assert not state.wins


def test_allow_if_higher_fan_counts_the_situational_fan_of_the_passed_win():
    # Seat 0 (void s): 111m 23m 456p 789p 55p waits on 1m and 4m.
    #   + 1m: 111m 123m ...: all four 1m -> 1 root -> 1 fan
    #   + 4m: 111m 234m ... -> 0 fan
    # Dealer 1 declares 暗杠 6s and throws 4m after the replacement: for seat 0 that win is
    # 平胡 + 杠上炮 = 1 fan (§A8.2). He passes it. A plain 1m (1 fan) is then no better: blocked.
    state = xz(["11123m456p789p55p", "4m6666s123789s123p", "1m12346p2345789s", None],
               dealer=1, voids="smmm", front="9p", back="5s", pass_ron_rule="allow_if_higher_fan")
    act(state, 1, "angang", "6s")
    events = act(state, 1, "discard", "4m")
    assert "hu" in offered_to(events, 0)
    act(state, 0, "pass")
    assert state.turn == 2 and state.drawn[2] == T("9p")
    events = act(state, 2, "discard", "1m")
    assert "hu" not in offered_to(events, 0)
    assert not state.wins


@pytest.mark.parametrize("rule, offered", [("until_next_draw", False),
                                           ("allow_if_higher_fan", True)])
def test_allow_if_higher_fan_compares_fan_not_the_capped_amount(rule, offered):
    # cap_fan 2. Seat 0 (void p) holds 1112345678999m.
    #   + 2m: 111m 22m 345m 678m 999m -> 清一色 2 fan (amount 2^2 = 4)
    #   + 1m: 111m 123m 456m 789m 99m -> 清一色 2 + 1 root (four 1m) = 3 fan (capped: 4)
    # He passes 2m; 1m scores strictly more fan (§A6 (b)), so it may be taken, paid 2^2 = 4.
    state = xz(["1112345678999m", "2m23456p12345689s", "1m12346p2345789s", None],
               dealer=1, voids="pmmm", front="9p", pass_ron_rule=rule, cap_fan=2)
    events = act(state, 1, "discard", "2m")
    assert "hu" in offered_to(events, 0)
    act(state, 0, "pass")
    events = act(state, 2, "discard", "1m")
    assert ("hu" in offered_to(events, 0)) is offered
    if offered:
        act(state, 0, "hu")
        assert state.wins[0]["fan"] == 3
        assert lines(state, "discard_win") == [(2, 0, 4)]


# ---------------------------------------------------------------- pass_peng_rule (过碰)

# Seat 0 (void s) holds 55p and 66p, not ready; seats 1, 2, 3 (void p) each hold one p tile
# that the void rule makes them throw.
PENGER = "55p66p1357m2468m9m"
D1_5P = "5p12m456m789m1239s9s"
S2_5P = "5p369m2345678s1m4m"
S3_6P = "6p1457m12345689s"


@pytest.mark.parametrize("on", [False, True])
def test_pass_peng_blocks_the_same_tile_until_his_next_draw(on):
    state = xz([PENGER, D1_5P, S2_5P, S3_6P], dealer=1, voids="sppp",
               front="7s9s1s6p", pass_peng_rule=on)
    events = act(state, 1, "discard", "5p")
    assert "peng" in offered_to(events, 0)
    act(state, 0, "pass")
    events = act(state, 2, "discard", "5p")  # the same tile, before seat 0 draws again
    # §A6 过碰 (option): he may not peng 5p again until his next draw; DEFAULT: he may.
    assert ("peng" in offered_to(events, 0)) is (not on)
    if state.phase() == "window":
        act(state, 0, "pass")
    events = act(state, 3, "discard", "6p")  # another tile: never blocked
    assert "peng" in offered_to(events, 0)
    act(state, 0, "pass")
    assert state.turn == 0 and state.drawn[0] == T("1s")
    act(state, 0, "discard", "1s")  # void s first
    events = act(state, 1, "discard", "6p")  # after his own draw: peng 6p offered again
    assert "peng" in offered_to(events, 0)


# ---------------------------------------------------------------- pigs_pay_winners (查花猪)

PIG_DEALER = "1s2468p9p2468s3579s"  # void m, holds no m
WINNER = "111333m555777p9p"  # seat 1, void s: 对对胡 waiting on 9p
PIG = "2222444466668m"  # seat 2, void m: every tile is of his void suit
LONER = "1p3p6p8p1s2s4s5s7s8s2p4p9p"  # seat 3, void m, not ready


def pig_front():
    """Draws: seat 1 wins on the 5th (9p); afterwards seats 2, 3, 0 draw in turn and seat 2
    (the pig) always draws an m tile, so he throws it and keeps his own m tiles."""
    start = "2s6s8s4s9p"
    used = tiles(PIG_DEALER + WINNER + PIG + LONER + start)
    pool = full_set()
    for t in used:
        pool.remove(t)
    ms = [t for t in pool if t < 9]
    others = [t for t in pool if t >= 9]
    rest = []
    while ms or others:
        rest.append(ms.pop(0))
        rest += [others.pop(0) for _ in range(2) if others]
    return start + "".join(tile_name(t) for t in rest)


def play_out(state, winner=None, on_tile=None):
    """Play to the end: every window is passed and every seat throws what it drew (or its
    first legal discard); the only win taken is ``winner`` self-drawing ``on_tile``."""
    while not state.is_over():
        seat = state.to_act()[0]
        drawn = state.drawn[seat]
        if state.phase() == "window":
            act(state, seat, "pass")
        elif seat == winner and drawn == T(on_tile):
            act(state, seat, "hu")
        else:
            throw = Action("discard", (tile_name(drawn),)) if drawn is not None else None
            if throw is None or not state.can(seat, throw):
                throw = next(a for a in state.legal_actions(seat) if a.kind == "discard")
            state.apply(seat, throw)


@pytest.mark.parametrize("on", [False, True])
def test_pigs_pay_winners_option(on):
    state = xz([PIG_DEALER, WINNER, PIG, LONER], dealer=0, voids="msmm", front=pig_front(),
               pigs_pay_winners=on)
    play_out(state, winner=1, on_tile="9p")
    assert state.end_reason == "wall_exhausted" and [w["seat"] for w in state.wins] == [1]
    # seat 1: 对对胡 1 + 自摸 1 = 2 fan -> 4 from each of the three others (§A9).
    assert lines(state, "self_draw") == [(0, 1, 4), (2, 1, 4), (3, 1, 4)]
    assert state.settlement().details["pigs"] == [2]
    # §A10.1: a pig pays base x 2^cap = 16 to every non-pig non-winner (seats 0 and 3);
    # with "winners collect from pigs" the winner (seat 1) is paid 16 too.
    expected = [(2, 0, 16), (2, 3, 16)] + ([(2, 1, 16)] if on else [])
    assert lines(state, "flower_pig") == sorted(expected)


# ---------------------------------------------------------------- next_dealer

PUNGS_9P = "111333m555777p9p"
PAIRS_9P = "113355s224466p9p"


@pytest.mark.parametrize("rule, multi_next, single_next", [
    ("first_winner", 3, 0),  # §A1 DEFAULT: multi-win discard -> the discarder; else the winner
    ("rotate", 0, 2),        # option: always the seat after the dealer
])
def test_next_dealer_rule(rule, multi_next, single_next):
    # Dealer 3 throws 9p, seats 0 and 2 both win on it (一炮多响).
    state = xz([PUNGS_9P, None, PAIRS_9P, "9p1357p2468p24689m"], dealer=3, voids="ssms",
               next_dealer=rule)
    act(state, 3, "discard", "9p")
    act(state, 0, "hu")
    act(state, 2, "hu")
    play_out(state)  # no more wins: the wall runs out
    assert [w["seat"] for w in state.wins] == [0, 2]
    assert state.settlement().next_dealer == multi_next
    # Dealer 1 throws 9p, only seat 0 wins.
    state = xz([PUNGS_9P, "9p1357p2468s13579s", None, None], dealer=1, voids="smpp",
               next_dealer=rule)
    act(state, 1, "discard", "9p")
    act(state, 0, "hu")
    play_out(state)
    assert [w["seat"] for w in state.wins] == [0]
    assert state.settlement().next_dealer == single_next


# ======================================================================== Changsha


def cs(hands, front="", back="", dealer=0, declare=(), seed=0, **options):
    """A Changsha hand, dealer 0 unless told, no birds unless told; opening wins: the seats
    in ``declare`` declare them, the others pass."""
    wall = stacked_wall([None if h is None else tiles(h) for h in hands], dealer,
                        tiles(front), tiles(back))
    state = changsha.new_hand_from_wall({"bird_count": 0, **options}, wall, dealer, seed=seed)
    events = []
    while state.phase() == "opening":
        seat = state.to_act()[0]
        events += state.apply(seat, Action("hu" if seat in declare else "pass"))
    return state, events


DEALER = "9s13789m2468p137s6s"  # no opening win, throws 9s
DEALER_C = "9s23678m2468p1367s"
SMALL = "123456m789p234s5s"  # + 5s: 小胡 with a 5s pair


# ---------------------------------------------------------------- opening_hu_birds


@pytest.mark.parametrize("seed, dice, hits, pairs", [
    # Seat 1 declares 大四喜 (1111m), one 小胡自摸: X = 2 from each other player, +1 dealer
    # bonus in the pair with the dealer (seat 0) -> 3, 2, 2 before birds (§B3, §B7).
    # Pips are bird ranks counted from the declarer: seat (1 + pip - 1) mod 4.
    # Dice 1 and 5: both land on seat 1 -> n = 2 in every pair -> x (1 + 2).
    (14, [1, 5], [0, 2, 0, 0], {(0, 1): 3 * 3, (2, 1): 2 * 3, (3, 1): 2 * 3}),
    # Dice 4 and 3: seat 0 and seat 3 -> n = 1 for (0,1) and (3,1), 0 for (2,1).
    (122, [4, 3], [1, 0, 0, 1], {(0, 1): 3 * 2, (2, 1): 2 * 1, (3, 1): 2 * 2}),
])
def test_opening_hu_two_dice_birds(seed, dice, hits, pairs):
    state, events = cs([DEALER_C, "1111m23p456s789p9s", None, None], declare=(1,), seed=seed,
                       opening_hu_birds="two_dice")
    birds = [e.data for e in events if e.kind == "birds"]
    assert birds == [{"dice": dice, "origin": 1, "hits": hits}]
    assert owed(state, "opening_hu", "birds") == pairs
    assert owed(state, "opening_hu") == {(0, 1): 3, (2, 1): 2, (3, 1): 2}


def test_opening_hu_no_birds_by_default():
    state, events = cs([DEALER_C, "1111m23p456s789p9s", None, None], declare=(1,), seed=0)
    assert not [e for e in events if e.kind == "birds"]
    assert owed(state, "opening_hu", "birds") == {(0, 1): 3, (2, 1): 2, (3, 1): 2}


# ---------------------------------------------------------------- gang_points (杠分)

KONG_DEALER = "1111m59m2468p1357s"  # 1111m: 补张 from hand; then throws 9m
KONG_S1 = "999m3m6m1p3p5p7p2s4s6s8s"  # 999m: 补张 on the dealer's 9m; throws 7p
KONG_S2 = "77p2p4p6p2m4m6m8m3s5s7s9s"  # 77p: peng, later adds the drawn 7p
KONG_S3 = "357m1345689p16s9s"


@pytest.mark.parametrize("on", [False, True])
def test_gang_points_option(on):
    state, _ = cs([KONG_DEALER, KONG_S1, KONG_S2, KONG_S3],
                  front="9s8s2s7p", back="9p9s", gang_points=on)
    act(state, 0, "buzhang", "1m")  # four in hand: concealed
    act(state, 0, "discard", "9m")
    assert state.phase() == "window"
    act(state, 1, "buzhang", "9m")  # three in hand + the dealer's discard: claimed
    assert state.turn == 1 and state.drawn[1] == T("9s")  # his replacement
    act(state, 1, "discard", "7p")
    act(state, 2, "peng", "7p")
    act(state, 2, "discard", "2m")
    while state.turn != 2 or state.drawn[2] != T("7p"):
        seat = state.to_act()[0]
        if state.phase() == "window":
            act(state, seat, "pass")
        else:
            act(state, seat, "discard", tile_name(state.drawn[seat]))
    act(state, 2, "buzhang", "7p")  # the fourth tile added to the peng
    assert not state.wins
    if not on:
        # §B5 DEFAULT: no kong money in classic Changsha.
        assert not [p for p in state.ledger if p.reason != "opening_hu"]
        return
    # §B5 option 杠分: concealed 2 from each other player, claimed (明杠) 1 from the feeder,
    # added (补杠) 1 from each other player.
    assert lines(state, "angang") == [(1, 0, 2), (2, 0, 2), (3, 0, 2)]
    assert lines(state, "zhigang") == [(0, 1, 1)]
    assert lines(state, "bugang") == [(0, 2, 1), (1, 2, 1), (3, 2, 1)]


# ---------------------------------------------------------------- birds: origin and mode


@pytest.mark.parametrize("origin, hits, pairs", [
    # Seat 1 self-draws a 小胡 (X = 2; +1 with the dealer: 3, 2, 2); birds 1s and 2p.
    # DEFAULT origin = winner (seat 1): 1s -> seat 1, 2p -> seat 2;
    #   n(0,1) = 1, n(2,1) = 2, n(3,1) = 1 -> 3x2, 2x3, 2x2 (加法翻倍, x (1 + n)).
    ("winner", [0, 1, 1, 0], {(0, 1): 6, (2, 1): 6, (3, 1): 4}),
    # 定庄扎鸟, origin = dealer (seat 0): 1s -> seat 0, 2p -> seat 1;
    #   n(0,1) = 2, n(2,1) = 1, n(3,1) = 1 -> 3x3, 2x2, 2x2.
    ("dealer", [1, 1, 0, 0], {(0, 1): 9, (2, 1): 4, (3, 1): 4}),
])
def test_bird_origin(origin, hits, pairs):
    state, _ = cs([DEALER, SMALL, None, None], front="5s", back="1s2p", bird_count=2,
                  bird_origin=origin)
    act(state, 0, "discard", "9s")
    act(state, 1, "hu")
    assert state.birds.origin == (1 if origin == "winner" else 0)
    assert list(state.birds.hits) == hits
    assert owed(state, "self_draw", "birds") == pairs


def test_bird_origin_dealer_on_a_discard_win():
    # Seat 2 wins a 小胡 on seat 3's discard: X = 1, no dealer in the pair. Birds 3s, 3p.
    # Winner origin (seat 2): rank 3 -> seat 0 twice: n(3,2) = 0 -> 1.
    # Dealer origin (seat 0): rank 3 -> seat 2 twice: n(3,2) = 2 -> 1 x 3 = 3.
    for origin, amount in (("winner", 1), ("dealer", 3)):
        state, _ = cs([DEALER, None, SMALL, None], front="1p1p5s", back="3s3p", bird_count=2,
                      bird_origin=origin)
        act(state, 0, "discard", "9s")
        act(state, 1, "discard", "1p")
        act(state, 2, "discard", "1p")
        act(state, 3, "discard", "5s")
        act(state, 2, "hu")
        assert owed(state, "discard_win", "birds") == {(3, 2): amount}, origin


@pytest.mark.parametrize("mode, pairs", [
    # Same win as above, DEFAULT origin: amounts 3, 2, 2 with n = 1, 2, 1 (§B7.4).
    ("add_double", {(0, 1): 3 * 2, (2, 1): 2 * 3, (3, 1): 2 * 2}),  # x (1 + n)
    ("mul_double", {(0, 1): 3 * 2, (2, 1): 2 * 4, (3, 1): 2 * 2}),  # x 2^n
    ("add_points", {(0, 1): 3 + 1, (2, 1): 2 + 2, (3, 1): 2 + 1}),  # + n
])
def test_bird_mode(mode, pairs):
    state, _ = cs([DEALER, SMALL, None, None], front="5s", back="1s2p", bird_count=2,
                  bird_mode=mode)
    act(state, 0, "discard", "9s")
    act(state, 1, "hu")
    assert state.birds.hits == (0, 1, 1, 0)
    assert owed(state, "self_draw", "birds") == pairs
    # The base amount (X + dealer bonus) stays its own line; birds add the rest.
    assert owed(state, "self_draw") == {(0, 1): 3, (2, 1): 2, (3, 1): 2}


def test_bird_mode_on_a_big_hu_with_both_birds_on_the_payer():
    # CS-04: seat 1 wins 碰碰胡 (1 大胡, X = 6) on seat 2's discard, no dealer in the pair.
    # Birds 2p and 6m: ranks 2 and 6 from the winner (seat 1) -> seat 2, the payer: n = 2.
    # add_double 6 x 3 = 18, mul_double 6 x 2^2 = 24, add_points 6 + 2 = 8.
    for mode, amount in (("add_double", 18), ("mul_double", 24), ("add_points", 8)):
        state, _ = cs([DEALER, "111m333p666s999s7m", None, None], front="2p7m",
                      back="2p6m", bird_count=2, bird_mode=mode)
        act(state, 0, "discard", "9s")
        pass_window(state)  # seat 1 could take the 9s
        act(state, 1, "discard", "2p")
        pass_window(state)
        act(state, 2, "discard", "7m")
        act(state, 1, "hu")
        assert state.wins[0]["big_hu"] == 1
        assert state.birds.hits == (0, 0, 2, 0)
        assert owed(state, "discard_win", "birds") == {(2, 1): amount}, mode
