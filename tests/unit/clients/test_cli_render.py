"""The terminal client's pure renderers on real engine observations, real Prompt messages
and real event frames (engine events through the table's codec), for all three games."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from clients.cli import render
from games.bots import dadun as dadun_bots
from games.bots import mahjong as mahjong_bots
from games.dadun import game as dadun
from games.engine import Event
from games.mahjong import changsha, xuezhan
from paiju import frames
from paiju.v1 import common_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm
from services.table.codec import event_frame

ENGINES = {"xuezhan": (xuezhan, mahjong_bots), "changsha": (changsha, mahjong_bots),
           "dadun": (dadun, dadun_bots)}


def prompt_of(game: str, state: Any, seat: int, seconds: int = 9) -> g.Prompt:
    """A Prompt built the way the table builds one."""
    return g.Prompt(game=game, phase=state.phase(), seat=seat, seconds=seconds, hand_no=1,
                    observation_json=json.dumps(state.observation(seat), ensure_ascii=False),
                    actions=[g.ActionSpec(kind=a.kind, tiles=list(a.tiles), ref=a.ref,
                                          choice=a.choice) for a in state.legal_actions(seat)])


def play_hand(game: str, seed: int) -> tuple[Any, list[Event]]:
    """A full greedy hand: the final state and every event in order."""
    engine, bots = ENGINES[game]
    state = engine.new_hand({}, seed, 0)
    events: list[Event] = []
    while not state.is_over():
        seat = state.to_act()[0]
        events.extend(state.apply(seat, bots.greedy_policy(state, seat)))
    return state, events


def advance_until(game: str, seed: int, wanted: Any) -> tuple[Any, int]:
    """Play greedy moves until ``wanted(observation)`` holds for the seat to act."""
    engine, bots = ENGINES[game]
    state = engine.new_hand({}, seed, 0)
    while not state.is_over():
        seat = state.to_act()[0]
        if wanted(state.observation(seat)):
            return state, seat
        state.apply(seat, bots.greedy_policy(state, seat))
    raise AssertionError("the hand ended before the wanted situation")


# ---------------------------------------------------------------- observations
@pytest.mark.parametrize("game", ["xuezhan", "changsha"])
def test_mahjong_opening_observation_shows_own_hand_every_seat_and_who_acts(game: str) -> None:
    obs = ENGINES[game][0].new_hand({}, 5, 0).observation(0)
    lines = render.observation_lines(game, obs)
    assert lines[0].startswith(f"your hand (手牌): {obs['hand']}")
    if obs["drawn"]:
        assert f"drawn (摸到) {obs['drawn']}" in lines[0]
    seat_rows = [line for line in lines if " | " in line]
    assert [row.split("|")[0].strip() for row in seat_rows] == ["you", "seat 1", "seat 2", "seat 3"]
    for row, count in zip(seat_rows, obs["hand_counts"], strict=True):
        assert f"{count:>2} tiles" in row
    who = ", ".join("you" if s == 0 else f"seat {s}" for s in obs["to_act"])
    assert lines[-1] == f"phase {obs['phase']}; to act: {who}"
    assert f"wall (牌墙) {obs['wall_remaining']} tiles" in lines[-2]


def test_mahjong_table_lists_melds_discards_voids_and_the_claim_window() -> None:
    state, seat = advance_until("xuezhan", 11, lambda o: o["phase"] == "window"
                                and any(o["melds"]))
    obs = state.observation(seat)
    text = "\n".join(render.observation_lines("xuezhan", obs))
    for melds in obs["melds"]:
        for meld in melds:
            assert f"{meld['kind']}({render.TERMS[meld['kind']]}):{meld['tiles']}" in text
    rows = [line for line in text.splitlines() if " | " in line]
    for row, discards, void in zip(rows, obs["discards"], obs["void"], strict=True):
        assert row.endswith("discards " + (" ".join(discards) or "-"))
        assert f"void {void}" in row
    window = obs["window"]
    assert f"claim window {window['id']}: {window['tile']}" in text


def test_dadun_observation_shows_cards_desk_and_banker() -> None:
    state, seat = advance_until("dadun", 11, lambda o: o["phase"] == "play" and o["desk"])
    obs = state.observation(seat)
    lines = render.observation_lines("dadun", obs)
    cards = obs["hand"].split()
    assert lines[0] == f"your cards (手牌, {len(cards)}): {obs['hand']}"
    text = "\n".join(lines)
    banker = "you" if obs["banker"] == seat else f"seat {obs['banker']}"
    assert f"banker (庄) {banker}" in text
    desk_line = next(line for line in lines if line.startswith("desk (桌面)"))
    assert f"{obs['desk_points']} pts" in desk_line
    for play in obs["desk"]:
        assert play["cards"] in desk_line
    assert "points caught (抓分) " + " ".join(map(str, obs["catch"])) in text


def test_dadun_opening_observation_has_an_empty_desk() -> None:
    obs = dadun.new_hand({}, 3, 0).observation(0)
    lines = render.observation_lines("dadun", obs)
    assert "desk (桌面) empty" in lines
    assert lines[-1] == "phase alone; to act: you"


# ---------------------------------------------------------------- actions and prompts
@pytest.mark.parametrize("game", ["xuezhan", "changsha", "dadun"])
def test_prompt_numbers_every_legal_action_once_in_order(game: str) -> None:
    state = ENGINES[game][0].new_hand({}, 9, 0)
    seat = state.to_act()[0]
    prompt = prompt_of(game, state, seat, seconds=7)
    lines = render.prompt_lines(prompt)
    assert f">> your decision (seat {seat}, {state.phase()}), 7 s left:" in lines
    numbered = " ".join(render.action_lines(prompt.actions))
    numbers = [int(n) for n in re.findall(r"(?:^|\s)(\d+)\) ", numbered)]
    assert numbers == list(range(1, len(prompt.actions) + 1))
    for line in render.action_lines(prompt.actions):
        assert len(line) <= render.WIDTH


def test_action_labels_name_the_move_and_its_tiles() -> None:
    assert render.action_label(g.ActionSpec(kind="discard", tiles=["5m"])) == "discard 5m"
    assert render.action_label(g.ActionSpec(kind="peng", tiles=["6m"], ref="3")) == "peng (碰) 6m"
    assert render.action_label(g.ActionSpec(kind="pass", ref="3")) == "pass (过)"
    assert render.action_label(g.ActionSpec(kind="hu", ref="3")) == "hu (胡)"
    assert render.action_label(g.ActionSpec(kind="declare_void", choice="s")).startswith(
        "void (定缺) s")
    assert render.action_label({"kind": "play", "tiles": ["3s", "3s"], "ref": "t.1"}) == "play 3s 3s"
    assert render.action_label(g.ActionSpec(kind="choose_alone", choice="yes")) == "play alone (打独)"
    assert render.action_label(g.ActionSpec(kind="choose_alone", choice="no")) == "no alone (不打独)"


def test_window_prompt_offers_the_claim_in_words() -> None:
    state, seat = advance_until("xuezhan", 11, lambda o: o["phase"] == "window")
    prompt = prompt_of("xuezhan", state, seat)
    text = " ".join(render.prompt_lines(prompt))
    for i, action in enumerate(prompt.actions, 1):
        assert f"{i}) {render.action_label(action)}" in text
    assert "pass (过)" in text


# ---------------------------------------------------------------- events
@pytest.mark.parametrize("game", ["xuezhan", "changsha"])
def test_every_public_mahjong_discard_meld_and_hu_gets_its_line(game: str) -> None:
    _, events = play_hand(game, 21)
    for i, event in enumerate(events):
        if event.to is not None:
            continue
        line = render.event_line(event_frame(game, event, f"1:1:{i}"), me=0)
        d = event.data
        if event.kind == "discard":
            who = "you discard" if d["seat"] == 0 else f"seat {d['seat']} discards"
            assert line == f"{who} {d['tile']}"
        elif event.kind in ("peng", "chi"):
            assert line is not None and f"{event.kind} (" in line and " ".join(d["tiles"]) in line
        elif event.kind == "hu":
            assert line is not None and "HU (胡)" in line and d["tile"] in line
            assert all(p in line for p in d["patterns"])
        elif event.kind in ("turn", "hand_over", "window_opened", "window_closed", "draw"):
            assert line is None


def test_dadun_plays_passes_and_trick_ends_get_their_lines() -> None:
    _, events = play_hand("dadun", 21)
    kinds = set()
    for i, event in enumerate(events):
        if event.to is not None:
            continue
        line = render.event_line(event_frame("dadun", event, f"1:1:{i}"), me=2)
        d = event.data
        kinds.add(event.kind)
        if event.kind == "play":
            assert line is not None and d["cards"] in line and f"({d['class_name']})" in line
        elif event.kind == "pass":
            assert line is not None and ("you pass" in line or "passes" in line)
        elif event.kind == "clear_desk":
            assert line is not None and "the trick (收牌)" in line and f"{d['desk_points']} pts" in line
        elif event.kind == "payment":
            assert line is not None and f" {d['amount']} ({d['reason']})" in line
    assert {"play", "pass", "clear_desk"} <= kinds


def test_private_own_tiles_and_draws_are_shown_public_draws_are_not() -> None:
    hand = frames.server_frame(g.MjHand(tiles=["1m", "2m"]))
    assert render.event_line(hand, 0) == "your tiles (手牌): 1m 2m"
    own = frames.server_frame(g.MjDraw(seat=0, tile="7p", wall_remaining=40))
    assert render.event_line(own, 0) == "you draw (摸) 7p, wall 40"
    public = frames.server_frame(g.MjDraw(seat=1, wall_remaining=40))
    assert render.event_line(public, 0) is None
    cards = frames.server_frame(g.DdAssign(cards=["3s", "SJ"]))
    assert render.event_line(cards, 0) == "your cards (发牌, 2): 3s SJ"


def test_birds_name_each_seat_hit_with_its_count() -> None:
    tiles = frames.server_frame(g.MjBirds(tiles=["1m", "5m", "9s"], hits=[2, 0, 1, 0]))
    assert render.event_line(tiles, 2) == "birds (扎鸟) 1m 5m 9s; hits seat 0 x2, you x1"
    dice = frames.server_frame(g.MjBirds(dice=[3, 6], hits=[0, 1, 0, 1]))
    assert render.event_line(dice, 0) == "birds (扎鸟) dice 3 6; hits seat 1 x1, seat 3 x1"
    none = frames.server_frame(g.MjBirds(tiles=["2p"], hits=[0, 0, 0, 0]))
    assert render.event_line(none, 0) == "birds (扎鸟) 2p; hits -"


def test_platform_notices_read_plainly() -> None:
    err = frames.error_frame(common_pb2.MJ_ILLEGAL_ACTION, "not your turn")
    assert render.event_line(err) == "error 9691: not your turn"
    assert render.error_line(err.ret) == "error 9691: not your turn"
    entrust = render.event_line(frames.server_frame(lm.InEntrust(seat=0, count=2)), me=0)
    assert entrust is not None and entrust.startswith("you are entrusted (托管), 2 cancels left")
    assert "entrust-cancel" in entrust
    other = render.event_line(frames.server_frame(lm.InEntrust(seat=3, count=1)), me=0)
    assert other == "seat 3 is entrusted (托管), 1 cancels left"
    closed = render.event_line(frames.server_frame(lm.NoticeDismiss(
        dismissed=True, reason=lm.NoticeDismiss.PLAYER_VOTE, room_id=123456)))
    assert closed is not None and closed.startswith("room 123456 closed (解散): the players voted")
    kick = render.event_line(frames.server_frame(lm.KickOut(user_id=1001)))
    assert kick is not None and "1001" in kick and "顶号" in kick
    vote = render.event_line(frames.server_frame(lm.QueryDismiss(
        apply_user_id=7, apply_nickname="ann", remaining_seconds=30,
        votes=[lm.PlayerVote(user_id=7, nickname="ann", vote=1),
               lm.PlayerVote(user_id=8, nickname="bob", vote=0)])))
    assert vote is not None and "asked by ann: ann yes, bob ?" in vote and "vote yes" in vote


# ---------------------------------------------------------------- settlement
@pytest.mark.parametrize("game", ["xuezhan", "changsha", "dadun"])
def test_settlement_lines_carry_the_engine_deltas_and_every_payment(game: str) -> None:
    state, events = play_hand(game, 33)
    result = state.settlement()
    over = next(e.data for e in events if e.kind == "hand_over")
    payments = [dict(e.data) for e in events if e.kind == "payment"]
    lines = render.settlement_lines(game, over, payments, me=1, hand_no=2)
    assert lines[0].startswith("=== settlement (结算): hand 2 over")
    shown = [int(x) for x in re.findall(r"[+-]\d+", lines[1])]
    assert shown == list(result.deltas)
    assert lines[1].startswith(f"deltas: seat 0 {result.deltas[0]:+d}, you {result.deltas[1]:+d}")
    body = "\n".join(lines)
    for p in payments:
        payer = "you pay" if p["payer"] == 1 else f"seat {p['payer']} pays"
        payee = "you" if p["payee"] == 1 else f"seat {p['payee']}"
        assert f"{payer} {payee} {p['amount']} ({p['reason']})" in body
    if game == "dadun":
        assert sum(1 for line in lines if ": win " in line) == 4
    else:
        assert "hands (亮牌):" in body


# ---------------------------------------------------------------- rooms
def test_room_lines_show_seats_ready_and_the_viewer() -> None:
    room = common_pb2.RoomInfo(room_id=123456, game=common_pb2.DADUN, total_hands=4, cur_hand=1,
                               base_score=2, players=[
                                   common_pb2.PlayerInfo(user_id=1001, seat=0, nickname="me",
                                                         ready=True, online=True),
                                   common_pb2.PlayerInfo(user_id=7, seat=1, nickname="bot",
                                                         online=False, entrusted=True)])
    lines = render.room_lines(room, me_uid=1001)
    assert lines[0] == "room 123456: Dadun (崇仁打盾), waiting, hand 1/4, base 2"
    assert lines[1] == "  seat 0: me (you) [1001] score 0 (ready)"
    assert lines[2] == "  seat 1: bot [7] score 0 (offline, entrust 托管)"
    listed = render.room_list_lines([room])
    assert listed == ["  123456 dadun    2/4 players, waiting, hands 4"]
    assert "no rooms yet" in render.room_list_lines([])[0]


def test_dadun_snapshot_line_shows_cards_desk_and_turn() -> None:
    info = g.DdGameInfo(hand=["3s", "SJ"], desktop_score=15, cur_out_seat=2, desktop=[
        g.DdUseOut(seat=1, cards=["5h", "5d"]), g.DdUseOut(seat=2, is_skip=True)])
    line = render.event_line(frames.server_frame(info), me=2)
    assert line == "your cards (2): 3s SJ | desk 15 pts: seat 1: 5h 5d | to act: you"


def test_a_changsha_midway_win_travels_as_an_opening_win_and_reads_plainly() -> None:
    event = Event("midway_hu", {"seat": 1, "types": ["midway_four"], "tiles": ["1m"] * 4})
    frame = event_frame("changsha", event, "1:1:0")
    assert frame.WhichOneof("payload") == "mj_opening_hu"
    assert list(frame.mj_opening_hu.types) == ["midway_four"]
    assert list(frame.mj_opening_hu.shown) == ["1m"] * 4
    line = render.event_line(frame, me=0)
    assert "midway_four" in line and "1m" in line
