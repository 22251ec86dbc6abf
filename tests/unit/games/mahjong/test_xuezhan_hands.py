"""XueZhan through the engine on stacked walls: settlement vectors XZ-P1..XZ-P5
(rules/mahjong.md §A12) and each rule path (exchange, void, kongs, rob kong, 过水,
multi-win, play after wins, 杠上炮 + 呼叫转移, 查花猪 / 查大叫 / 退税, next dealer).
Expected amounts are the rules document's figures, not values computed by the engine."""

from __future__ import annotations

import pytest

from games.engine import Action, IllegalAction
from games.mahjong import parse_tile_list, tile_index, xuezhan
from games.mahjong.flow_records import PassBlock
from games.mahjong.wall import stacked_wall


def T(name: str) -> int:
    return tile_index(name)


def build(hands, dealer=0, front="", back="", voids="ssss", **options):
    """A hand with exchange off, the given 13/14-tile hands (None: filler), front draws and
    back tiles (replacements) in order, and the given voids declared."""
    opts = {"exchange_three": "off", **options}
    wall = stacked_wall([None if h is None else parse_tile_list(h) for h in hands], dealer,
                        parse_tile_list(front), parse_tile_list(back))
    state = xuezhan.new_hand_from_wall(opts, wall, dealer)
    for seat in range(4):
        state.apply(seat, Action("declare_void", choice=voids[seat]))
    return state


def advance(state, seat):
    """Let the other seats play their default (entrust) actions until ``seat`` must act."""
    while not state.is_over() and seat not in state.to_act():
        other = state.to_act()[0]
        state.apply(other, state.default_action(other))


def act(state, seat, kind, tile=None):
    tiles = () if tile is None else (tile,)
    ref = str(state.window.id) if state.phase() == "window" else ""
    return state.apply(seat, Action(kind, tiles, ref))


def lines(state, reason):
    return sorted((p.payer, p.payee, p.amount) for p in state.ledger if p.reason == reason)


# Hands reused below (13 tiles).
PUNGS_9P = "111333m555777p9p"   # XZ-02 concealed: 对对胡 waiting on 9p
PAIRS_9P = "113355s224466p9p"   # seven pairs waiting on 9p (void m)


def test_xz_p1_self_draw_everyone_pays():
    # seat 1 self-draws XZ-02 (对对胡 1 + 自摸 1 = 2 fan -> mult 4); dealer 0 throws 1s first
    # (not on his first draw, which would be 地胡)
    state = build(["1s2468m2468p3579s5m", PUNGS_9P, None, None], dealer=0,
                  front="2s6s8s4s9p")
    act(state, 0, "discard", "1s")
    act(state, 1, "discard", "2s")
    advance(state, 1)
    assert state.drawn[1] == T("9p")
    act(state, 1, "hu")
    assert lines(state, "self_draw") == [(0, 1, 4), (2, 1, 4), (3, 1, 4)]
    assert state.observation(0)["scores"] == [-4, 12, -4, -4]


def test_xz_p2_multi_win_and_next_turn_after_furthest_winner():
    state = build([PUNGS_9P, None, PAIRS_9P, "9p1357p2468p24689m"], dealer=3, voids="ssms")
    events = act(state, 3, "discard", "9p")
    opened = [e for e in events if e.kind == "window_opened"]
    assert opened and set(opened[0].data) == {"window", "source", "tile", "trigger"}
    assert sorted(e.to for e in events if e.kind == "candidates") == [0, 2]
    act(state, 0, "hu")
    assert state.phase() == "window"  # seat 2 may still win too
    act(state, 2, "hu")
    assert lines(state, "discard_win") == [(3, 0, 2), (3, 2, 4)]
    assert T("9p") not in state.discards[3]
    assert state.turn == 3 and state.phase() == "play"
    assert state.settlement is not None and not state.is_over()
    assert state.observation(1)["won"] == [1, False, 2, False]


def test_xz_p3_concealed_kong_paid_by_active_players_only():
    # dealer 2 wins at once (天胡); later seat 1 draws the fourth 5s and declares 暗杠
    state = build([None, "555s12789m1289p9s", "11122233344455m", None], dealer=2,
                  front="1p2p5s", back="3s", voids="sppm")
    act(state, 2, "hu")
    assert "heavenly" in state.wins[0]["patterns"]
    assert state.turn == 3
    advance(state, 1)
    assert state.drawn[1] == T("5s")
    events = act(state, 1, "angang", "5s")
    assert lines(state, "angang") == [(0, 1, 2), (3, 1, 2)]
    public = [e for e in events if e.kind == "angang" and e.to is None]
    assert public and "tile" not in public[0].data
    assert state.drawn[1] == T("3s")  # the replacement comes from the back
    assert state.observation(0)["melds"][1][0]["tiles"] == ""
    assert state.observation(1)["melds"][1][0]["tiles"] == "5555s"


def test_xz_p4_exposed_kong_paid_by_discarder():
    state = build(["777m1234p12345s9p", None, None, "7m1235m2468s13579s"], dealer=3,
                  back="9s", voids="smmp")
    act(state, 3, "discard", "7m")
    assert state.phase() == "window"
    act(state, 0, "zhigang", "7m")
    assert lines(state, "zhigang") == [(3, 0, 2)]
    assert state.turn == 0 and state.drawn[0] == T("9s")


@pytest.mark.parametrize("fresh", [True, False])
def test_xz_p5_added_kong_pays_only_with_fresh_tile(fresh):
    hand1 = "44p1234567m1239s" if fresh else "444p123456m1239s"
    state = build(["4p1357m2389s1389p9m", hand1, None, None], dealer=0,
                  front="1p2p3p" + ("4p" if fresh else "9s"), back="1s", voids="pspp")
    act(state, 0, "discard", "4p")
    act(state, 1, "peng", "4p")
    act(state, 1, "discard", "1s")
    advance(state, 1)
    act(state, 1, "bugang", "4p")
    if fresh:
        assert lines(state, "bugang") == [(0, 1, 1), (2, 1, 1), (3, 1, 1)]
    else:
        assert lines(state, "bugang") == []


def test_exchange_three_same_suit_direction_never_own_tiles():
    for seed in range(12):
        state = xuezhan.new_hand({}, seed, seed % 4)
        assert state.phase() == "exchange" and state.to_act() == (0, 1, 2, 3)
        held = [t for t in range(27) if state.hands[0][t]]
        mixed = Action("exchange_three", tuple(state.names([held[0], held[1], held[-1]])))
        with pytest.raises(IllegalAction):
            state.apply(0, mixed)
        given = {}
        for seat in range(4):
            action = state.default_action(seat)
            assert len({name[1] for name in action.tiles}) == 1
            given[seat] = sorted(action.tiles)
            state.apply(seat, action)
        offset = {"cw": 1, "opposite": 2, "ccw": 3}[state.exchange_dir]
        for seat in range(4):
            received = sorted(state.names(state.exchange_recv[seat]))
            assert received == given[(seat - offset) % 4]
            assert (seat - offset) % 4 != seat
        assert state.phase() == "void"


def test_void_rules_discard_first_no_peng_no_win():
    state = build([None, None, None, "9p7p2468m2468s1359s"], dealer=3, voids="pmsm")
    with pytest.raises(IllegalAction):
        act(state, 3, "discard", "9p")  # seat 3 still holds void (m) tiles
    assert all(a.tiles[0][1] == "m" for a in state.legal_actions(3) if a.kind == "discard")
    act(state, 3, "discard", "2m")
    # seat 0 holds PUNGS_9P and 777p but declared void p: no win on 9p, no peng/kong of 7p
    for tile in ("9p", "7p"):
        state2 = build([PUNGS_9P, None, None, "7p9p2468p12345689s"], dealer=3, voids="pssm")
        events = act(state2, 3, "discard", tile)
        assert not any(e.kind == "candidates" and e.to == 0 for e in events)
    control = build([PUNGS_9P, None, None, "7p9p2468p12345689s"], dealer=3, voids="sssm")
    events = act(control, 3, "discard", "9p")
    assert any(e.kind == "candidates" and e.to == 0 for e in events)  # void s: he may win


def test_rob_the_added_kong():
    # seat 1 pengs 4p, later adds the drawn 4p; seat 2 waits on 4p and robs it
    state = build(["4p1357m2389s1389p9m", "44p1234567m1239s", "123456789m3566p", None],
                  dealer=0, front="1p2p3p4p", voids="pssp")
    act(state, 0, "discard", "4p")
    act(state, 1, "peng", "4p")
    act(state, 2, "pass")  # he could win on it now; 过水 lasts until his own draw
    act(state, 1, "discard", "1s")
    advance(state, 1)
    events = act(state, 1, "bugang", "4p")
    opened = [e for e in events if e.kind == "window_opened"]
    assert opened and opened[0].data["trigger"] == "rob_kong"
    act(state, 2, "hu")
    assert lines(state, "rob_kong") and all(p[0] == 1 for p in lines(state, "rob_kong"))
    assert "rob_kong" in state.wins[0]["patterns"] and lines(state, "bugang") == []
    assert [m.kind for m in state.melds[1]] == ["peng"]


def test_pass_then_no_win_until_own_draw():
    state = build([PUNGS_9P, "9p1357p2468s13579s", None, None], dealer=1, front="9p",
                  voids="smpp")
    act(state, 1, "discard", "9p")
    act(state, 0, "pass")
    assert state.pass_block[0] == PassBlock("all")
    assert state.turn == 2 and state.drawn[2] == T("9p")
    events = act(state, 2, "discard", "9p")
    assert not any(e.kind == "candidates" and e.to == 0 for e in events)
    advance(state, 0)
    assert state.pass_block[0] is None  # lifted by his own draw


def test_kong_shot_moves_the_kong_money_to_the_winner():
    state = build([PUNGS_9P, "5555s1236s9s9p1234p", None, None], dealer=1, back="9s",
                  voids="smmm")
    act(state, 1, "angang", "5s")
    assert lines(state, "angang") == [(0, 1, 2), (2, 1, 2), (3, 1, 2)]
    act(state, 1, "discard", "9p")
    act(state, 0, "hu")
    assert "kong_shot" in state.wins[0]["patterns"]
    assert lines(state, "discard_win") == [(1, 0, 4)]  # 对对胡 1 + 杠上炮 1 = 2 fan
    assert lines(state, "call_transfer") == [(1, 0, 6)]


def test_wall_exhaustion_pigs_then_not_ready_then_refund():
    state = build(["22224444666688m", PUNGS_9P, "5555s13579m1379s", None], dealer=0,
                  voids="mspp")
    while not state.is_over():
        seat = state.to_act()[0]
        if state.phase() == "window":
            act(state, seat, "pass")
        elif seat == 2 and state.can(2, Action("angang", ("5s",))):
            act(state, 2, "angang", "5s")
        elif state.can(seat, Action("discard", (state.name(state.drawn[seat] or 0),))):
            act(state, seat, "discard", state.name(state.drawn[seat]))
        else:
            state.apply(seat, state.default_action(seat))
    assert state.end_reason == "wall_exhausted" and not state.wins
    details = state.settlement().details
    assert details["pigs"] == [0] and 1 in details["ready"] and 2 not in details["ready"]
    assert lines(state, "flower_pig") == [(0, 1, 16), (0, 2, 16), (0, 3, 16)]
    assert (2, 1, 2) in lines(state, "not_ready")  # 对对胡 wait: 1 fan -> 2
    assert lines(state, "kong_refund") == [(2, 0, 2), (2, 1, 2), (2, 3, 2)]
    reasons = [p.reason for p in state.ledger if p.reason in
               ("flower_pig", "not_ready", "kong_refund")]
    assert reasons == sorted(reasons, key=["flower_pig", "not_ready", "kong_refund"].index)
    assert state.settlement().next_dealer == 0


def test_multi_ron_off_only_the_nearest_wins():
    state = build([PUNGS_9P, None, PAIRS_9P, "9p1357p2468p24689m"], dealer=3, voids="ssms",
                  multi_ron=False)
    act(state, 3, "discard", "9p")
    act(state, 0, "hu")  # nearest after the discarder: final at once
    assert [w["seat"] for w in state.wins] == [0]
    assert lines(state, "discard_win") == [(3, 0, 2)]
    assert state.turn == 1


def test_pass_rule_same_tile_only_blocks_only_that_tile():
    state = build([PUNGS_9P, "9p1357p2468s13579s", None, None], dealer=1, front="9p",
                  voids="smpp", pass_ron_rule="same_tile_only")
    act(state, 1, "discard", "9p")
    act(state, 0, "pass")
    assert state.pass_block[0] == PassBlock("tile", (T("9p"),))
