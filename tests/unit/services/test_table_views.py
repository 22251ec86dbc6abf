"""Frames from a room (services/table/views.py): what each player sees of the room's state
and of what a record caused."""

from __future__ import annotations

import json

import pytest

from paiju.contracts.settle import FinalSettlement, HandSettlement
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.table import logrec as lr
from services.table import views
from services.table.room import RoomSettings
from tests.unit.services.test_table_fold import Log, create, play_rest, profile, seated

CHENGDU = (30.6598, 104.0633)
NEXT_DOOR = (30.6601, 104.0633)      # about 33 m north
CHONGQING = (29.5630, 106.5516)


def kinds(frames: list[client_pb2.ServerFrame]) -> list[str | None]:
    return [f.WhichOneof("payload") for f in frames]


def test_room_info_shows_the_room_and_each_player_his_own_ip_only() -> None:
    log = Log(lr.Create(12345678, "changsha", {"turn_seconds": 9, "birds": 2},
                        password_hash="x", total_hands=8, base_score=5))
    log.add(lr.Join(0, 11, profile(11, ip="10.0.0.1")))
    log.add(lr.Join(1, 12, profile(12, ip="10.0.0.2")))
    info = views.room_info(log.room, for_user=11)
    assert (info.room_id, info.game, info.total_hands, info.base_score) == \
        (12345678, common_pb2.CHANGSHA, 8, 5)
    assert info.has_password and json.loads(info.options_json) == {"turn_seconds": 9, "birds": 2}
    assert [(p.user_id, p.seat, p.ip, p.coins) for p in info.players] == \
        [(11, 0, "10.0.0.1", 1000), (12, 1, "", 1000)]


def test_what_a_join_causes_a_player_change_and_alerts_for_close_players() -> None:
    log = Log(create())
    log.add(lr.Join(0, 11, profile(11, *CHENGDU)))
    log.add(lr.Join(1, 12, profile(12, *CHONGQING, ip="10.0.0.9")))
    fx = views.effects(log.room, log.add(lr.Join(2, 13, profile(13, *NEXT_DOOR, ip="10.0.0.9"))))
    assert kinds(fx.public) == ["player_change", "distance_alert", "distance_alert"]
    change = fx.public[0].player_change
    assert change.reason == lm.PlayerChange.JOIN and [p.user_id for p in change.players] == [11, 12, 13]
    alerts = [(f.distance_alert.alert, list(f.distance_alert.user_ids)) for f in fx.public[1:]]
    assert alerts == [("u13 and u11 sit less than 100m apart", [13, 11]),
                      ("u13 and u12 share an IP address", [13, 12])]
    assert fx.seats == {13: 2} and fx.changed and not fx.closed and not fx.private


def test_the_alert_distance_is_the_tables_setting() -> None:
    room_log = Log(create(), RoomSettings(geo_alert_meters=10.0))
    room_log.add(lr.Join(0, 11, profile(11, *CHENGDU)))
    fx = views.effects(room_log.room, room_log.add(lr.Join(1, 12, profile(12, *NEXT_DOOR))))
    assert kinds(fx.public) == ["player_change"]


def test_a_leave_shows_the_leaver_in_the_change_and_frees_his_seat() -> None:
    log = seated()
    fx = views.effects(log.room, log.add(lr.Leave(3)))
    change = fx.public[0].player_change
    assert change.reason == lm.PlayerChange.LEAVE and change.user_id == 14
    assert [p.user_id for p in change.players] == [11, 12, 13, 14]
    assert fx.seats == {14: None}


def test_a_hand_sends_private_hands_prompts_nothing_else_and_settles_with_its_replay() -> None:
    log = seated("xuezhan", total_hands=1)
    room = log.room
    fx = views.Effects()
    for seat in range(4):
        views.effects(room, log.add(lr.Ready(seat, True)), fx)
    seed = (99).to_bytes(32, "big").hex()
    views.effects(room, log.add(lr.Start(1, seed, 0)), fx)
    hands = [(uid, f.mj_hand) for uid, f in fx.private if f.WhichOneof("payload") == "mj_hand"]
    assert sorted(uid for uid, _ in hands) == [11, 12, 13, 14]
    assert all(len(h.tiles) >= 13 for _, h in hands)
    deal = next(f for f in fx.public if f.WhichOneof("payload") == "mj_deal")
    assert deal.event_uid == "12345678:1:0" and deal.mj_deal.hand_no == 1
    rest = views.effects(room, play_rest(log))
    assert len(rest.settle) == 2 and rest.closed
    hand, final = rest.settle
    assert isinstance(hand, HandSettlement) and isinstance(final, FinalSettlement)
    assert (hand.final, hand.hand_no, hand.seed, hand.dealer) == (False, 1, seed, 0)
    assert hand.seats == (11, 12, 13, 14) and sum(hand.deltas) == 0
    first = hand.events[0]
    frame = client_pb2.ServerFrame.FromString(first.frame)
    assert frame == deal and first.kind == "deal" and first.idx == 0
    assert (final.final, final.totals, final.hands_played) == (True, hand.deltas, 1)
    assert kinds(rest.public)[-1] == "notice_dismiss"
    assert rest.public[-1].notice_dismiss.reason == lm.NoticeDismiss.ALL_HANDS_PLAYED
    assert rest.seats == {11: None, 12: None, 13: None, 14: None}


@pytest.mark.parametrize("game, info", [("xuezhan", "mj_game_info"), ("dadun", "dd_game_info")])
def test_a_snapshot_is_the_room_the_hand_as_the_seat_sees_it_and_its_prompt(game: str,
                                                                            info: str) -> None:
    log = seated(game, total_hands=2)
    room = log.room
    assert kinds(views.snapshot(room, 0, 0)) == ["room_joined"]
    for seat in range(4):
        log.add(lr.Ready(seat, True))
    log.add(lr.Start(1, (5).to_bytes(32, "big").hex(), 2))
    to_act = room.to_act()[0]
    frames = views.snapshot(room, to_act, 12.4)
    assert kinds(frames) == ["room_joined", info, "prompt"]
    assert frames[0].room_joined.seat == to_act
    prompt = frames[2].prompt
    assert (prompt.game, prompt.seat, prompt.seconds, prompt.hand_no) == (game, to_act, 12, 1)
    assert prompt.actions
    if set(room.to_act()) == set(range(4)):   # every seat answers at once (XueZhan 换三张)
        assert room.state is not None
        log.add(lr.Act(to_act, room.spec.greedy_policy(room.state, to_act)))
    idle = next(s for s in range(4) if s not in room.to_act())
    assert kinds(views.snapshot(room, idle, 3)) == ["room_joined", info]


def test_distances_show_bands_never_meters() -> None:
    log = Log(create())
    log.add(lr.Join(0, 11, profile(11, *CHENGDU)))
    log.add(lr.Join(1, 12, profile(12, *CHONGQING)))
    log.add(lr.Join(2, 13, profile(13)))
    use = views.distances(log.room)
    assert list(use.uids) == [11, 12, 13]
    assert [(i.src_uid, i.dest_uid, i.distance, i.gap) for i in use.items] == [
        (11, 12, "100km-1000km", 100_000), (11, 13, "unknown", -1), (12, 13, "unknown", -1)]


def test_dismiss_frames_name_the_applicant_and_the_votes() -> None:
    log = seated()
    fx = views.effects(log.room, log.add(lr.DismissApply(1, 60, 1e9)))
    ask = fx.public[0].query_dismiss
    assert (ask.apply_user_id, ask.remaining_seconds) == (12, 60)
    assert [v.vote for v in ask.votes] == [0, 1, 0, 0]
    log.add(lr.DismissVote(0, False, 50))
    log.add(lr.DismissVote(2, False, 40))
    fx = views.effects(log.room, log.add(lr.DismissResult(False)))
    assert not fx.public[0].notice_dismiss.dismissed and not fx.closed


def test_a_dadun_settlement_frame_has_per_seat_deltas_like_mahjongs() -> None:
    log = seated("dadun", total_hands=1)
    room = log.room
    for seat in range(4):
        log.add(lr.Ready(seat, True))
    log.add(lr.Start(1, (7).to_bytes(32, "big").hex(), 0))
    rest = views.effects(room, play_rest(log))
    small = next(f.dd_small_settlement for f in rest.public
                 if f.WhichOneof("payload") == "dd_small_settlement")
    hand = rest.settle[0]
    assert isinstance(hand, HandSettlement)
    assert tuple(small.deltas) == hand.deltas and sum(small.deltas) == 0 and len(small.deltas) == 4
