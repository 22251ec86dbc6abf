"""Frames from a room: what players see of its state (room and player info, prompts,
snapshots, distances) and of what a log record caused (:class:`Effects` from the fold's
facts). Reads a :class:`~services.table.room.Room`, never changes it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from games import fair
from paiju import frames
from paiju.contracts import settle as sm
from paiju.v1 import client_pb2, common_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common import reserved
from services.table import facts as ft
from services.table import geo, variants
from services.table import logrec as lr
from services.table import room as r
from services.table.codec import event_frame
from services.table.seat import Seat
from services.table.wire import InfoSeats


@dataclass
class Effects:
    """What one record caused, for the runtime to send (in this order)."""

    public: list[client_pb2.ServerFrame] = field(default_factory=list)
    private: list[tuple[int, client_pb2.ServerFrame]] = field(default_factory=list)
    settle: list[sm.Settlement] = field(default_factory=list)
    seats: dict[int, int | None] = field(default_factory=dict)
    changed: bool = False
    closed: bool = False


def apply(room: r.Room, rec: lr.Record, fx: Effects | None = None) -> Effects:
    """Fold one record into the room and add what it caused to ``fx`` (a new one if None)."""
    return effects(room, room.apply(rec), fx)


# ---------------------------------------------------------------------- state
def player_info(s: Seat, seat: int, for_user: int | None = None) -> common_pb2.PlayerInfo:
    p = s.profile
    return common_pb2.PlayerInfo(
        user_id=s.user_id, online=s.online, ready=s.ready, coins=p.coins + s.total, seat=seat,
        nickname=s.nickname, head_url=p.head_url, sex=p.sex, total_score=s.total,
        login_address=p.login_address, entrusted=s.entrusted, robot=s.robot,
        ip=p.ip if for_user == s.user_id else "")


def room_info(room: r.Room, for_user: int | None = None) -> common_pb2.RoomInfo:
    return common_pb2.RoomInfo(
        room_id=room.room_id, status=room.status, cur_hand=room.hand_no,
        total_hands=room.total_hands, base_score=room.base_score, play_desc=room.play_desc,
        players=[player_info(s, i, for_user) for i, s in room.seated()],
        min_hands=room.min_hands, has_password=bool(room.password),
        game=variants.get(room.game).game_type,
        options_json=json.dumps({**room.options, **room.room_options}, sort_keys=True),
        spectators=room.spectators, creator_id=room.creator_id, seats=room.spec.seats)


# json.dumps(obj, ensure_ascii=False) builds this very encoder on every call
_observation_json = json.JSONEncoder(ensure_ascii=False).encode


def prompt(room: r.Room, seat: int, seconds: float) -> client_pb2.ServerFrame:
    """What a seat may do now, and its view of the hand."""
    state = room.state
    assert state is not None
    observation, legal = state.view_and_actions(seat)
    actions = [g.ActionSpec(kind=a.kind, tiles=a.tiles, ref=a.ref, choice=a.choice)
               for a in legal]
    return frames.server_frame(g.Prompt(
        game=room.game, phase=state.phase(), actions=actions,
        observation_json=_observation_json(observation),
        seconds=int(seconds), seat=seat, hand_no=room.hand_no, room_id=room.room_id,
        decision=room.timer_key()))


def snapshot(room: r.Room, seat: int, seconds_left: float) -> list[client_pb2.ServerFrame]:
    """Frames a (re)joining player gets: the room, the hand as it sees it, its prompt."""
    s = room.seats[seat]
    assert s is not None
    out = _view(room, seat, s.user_id, s.cancels_left, seconds_left)
    if room.in_hand() and seat in room.to_act():
        out.append(prompt(room, seat, seconds_left))
    return out


def watch_snapshot(room: r.Room, seconds_left: float) -> list[client_pb2.ServerFrame]:
    """Frames a watcher (观战) gets: the room (no IP of anyone) as seat -1 and the public
    view of the running hand, never a concealed tile or card."""
    return _view(room, None, None, 0, seconds_left)


def _view(room: r.Room, seat: int | None, for_user: int | None, cancels_left: int,
          seconds_left: float) -> list[client_pb2.ServerFrame]:
    """The room, the commitment, and the hand as ``seat`` sees it (None: the public view)."""
    at = -1 if seat is None else seat
    out = [frames.server_frame(lm.RoomJoined(room=room_info(room, for_user), seat=at))]
    commitment = _commitment(room)
    if commitment is not None:
        out.append(commitment)
    if room.state is None:
        return out
    seats = InfoSeats(tuple(x.user_id if x else 0 for x in room.seats),
                      tuple(bool(x and x.entrusted) for x in room.seats), cancels_left)
    view = room.state.public_view() if seat is None else room.state.observation(seat)
    info = variants.get(room.game).codec.game_info(view, at, seconds_left, seats)
    out.append(frames.server_frame(info))
    return out


def _commitment(room: r.Room) -> client_pb2.ServerFrame | None:
    """The commitment of the hand being played, else of the next one (None: none made)."""
    deals = room.fair
    if room.in_hand() and deals.current is not None:
        hand_no, commitment = room.hand_no, deals.current.commitment
    elif not room.in_hand() and deals.next is not None:
        hand_no, commitment = deals.next.hand_no, deals.next.commitment
    else:
        return None
    return frames.server_frame(lm.HandCommitment(hand_no=hand_no, commitment=commitment,
                                                 fair_version=fair.VERSION))


def distances(room: r.Room) -> lm.UseGeo:
    """The distance band and same-IP flag of every pair of seated players."""
    seated = [s for _, s in room.seated()]
    return lm.UseGeo(uids=[s.user_id for s in seated], items=[
        lm.GeoItem(src_uid=p.src_uid, dest_uid=p.dest_uid, distance=p.label, gap=p.gap,
                   same_ip=p.same_ip) for p in geo.pairs(seated)])


def query_dismiss(room: r.Room, seconds: int) -> client_pb2.ServerFrame:
    assert room.dismiss is not None
    applicant = room.seats[room.dismiss.applicant]
    votes = []
    for i, s in room.seated():
        v = room.dismiss.votes.get(i)
        votes.append(lm.PlayerVote(user_id=s.user_id, nickname=s.nickname,
                                   vote=0 if v is None else (1 if v else 2)))
    return frames.server_frame(lm.QueryDismiss(
        apply_user_id=applicant.user_id if applicant else 0,
        apply_nickname=applicant.nickname if applicant else "", votes=votes,
        remaining_seconds=seconds))


# ---------------------------------------------------------------------- facts
_CHANGES = {"join": lm.PlayerChange.JOIN, "leave": lm.PlayerChange.LEAVE,
            "ready": lm.PlayerChange.READY, "unready": lm.PlayerChange.UNREADY,
            "online": lm.PlayerChange.ONLINE, "offline": lm.PlayerChange.OFFLINE}


def effects(room: r.Room, facts: list[ft.Fact], fx: Effects | None = None) -> Effects:
    """The frames, settlements and directory changes of the facts one record caused."""
    fx = fx if fx is not None else Effects()
    for fact in facts:
        match fact:
            case ft.Changed():
                fx.changed = True
            case ft.PlayerChanged(change, seat, user_id, players):
                fx.public.append(frames.server_frame(lm.PlayerChange(
                    reason=_CHANGES[change], seat=seat, user_id=user_id,
                    players=[player_info(s, i) for i, s in players])))
            case ft.SeatMoved(user_id, seat):
                if not reserved.is_robot(user_id):   # robots never log in: no seat entry
                    fx.seats[user_id] = seat
            case ft.SatDown(seat):
                fx.public += _alerts(room, seat)
            case ft.Entrusted(seat, on, count):
                fx.public.append(frames.server_frame(
                    lm.InEntrust(seat=seat, count=count) if on else lm.CancelEntrustDone(seat=seat)))
            case ft.DismissAsked(seconds):
                fx.public.append(query_dismiss(room, seconds))
            case ft.DismissRefused():
                fx.public.append(frames.server_frame(lm.NoticeDismiss(
                    dismissed=False, reason=lm.NoticeDismiss.PLAYER_VOTE,
                    doc="the dismiss request was refused", room_id=room.room_id)))
            case ft.EngineEvents(events):
                mapping: dict[str, Any] = {}
                ctx: ft.HandContext | None = None
                for e in events:
                    if e.ctx is not ctx:   # one context per batch: its mapping once
                        ctx, mapping = e.ctx, e.ctx.mapping()
                    frame = e.memo[_FRAME] = _event_frame(room, e, mapping)
                    if e.event.to is None:
                        fx.public.append(frame)
                    elif e.ctx.user_ids[e.event.to] and not reserved.is_robot(
                            e.ctx.user_ids[e.event.to]):   # a robot's hand goes nowhere
                        fx.private.append((e.ctx.user_ids[e.event.to], frame))
            case ft.Committed(hand_no, commitment):
                fx.public.append(frames.server_frame(lm.HandCommitment(
                    hand_no=hand_no, commitment=commitment, fair_version=fair.VERSION)))
            case ft.HandEnded():
                fx.settle.append(hand_settlement(room, fact))
                if fact.fair is not None:
                    fx.public.append(frames.server_frame(lm.FairReveal(
                        hand_no=fact.hand_no, commitment=fact.fair.commitment,
                        server_seed=fact.fair.server_seed,
                        client_seeds=fact.fair.client_seeds, fair_version=fair.VERSION)))
            case ft.Closed(reason, doc):
                # The fact holds the enum's number (the `close` log record stores it as a
                # JSON int); protoc's stubs type the field by the enum's nominal class.
                fx.public.append(frames.server_frame(lm.NoticeDismiss(
                    dismissed=True, reason=cast(lm.NoticeDismiss.Reason, reason), doc=doc,
                    room_id=room.room_id)))
                if room.hand_no > 0:
                    fx.settle.append(final_settlement(room, fact))
                fx.closed = True
    return fx


def _alerts(room: r.Room, seat: int) -> list[client_pb2.ServerFrame]:
    new = room.seats[seat]
    assert new is not None
    others = [s for i, s in room.seated() if i != seat]
    return [frames.server_frame(lm.DistanceAlert(alert=a.text, user_ids=list(a.user_ids)))
            for a in geo.alerts(new, others, room.settings.geo_alert_meters)]


def _event_frame(room: r.Room, e: ft.HandEvent,
                 mapping: dict[str, Any] | None = None) -> client_pb2.ServerFrame:
    uid = f"{e.ctx.room_id}:{e.ctx.hand_no}:{e.index}"
    return event_frame(room.game, e.event, uid, e.ctx.mapping() if mapping is None else mapping)


# An engine event's frame is made once, when its record is folded (effects), and kept with
# the event (HandEvent.memo) for the hand's settlement, which takes it: a frame is reused
# only for that very event object (a later hand, a rebuilt room: made again).
_FRAME = "frame"
# json.dumps(obj, ensure_ascii=False, sort_keys=True) builds this very encoder every call
_event_json = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


def hand_settlement(room: r.Room, hand: ft.HandEnded) -> sm.HandSettlement:
    """The settlement message of a hand (records stores it; its events are the replay)."""
    events = []
    for e in hand.events:
        frame: client_pb2.ServerFrame | None = e.memo.pop(_FRAME, None)
        if frame is None:
            frame = _event_frame(room, e)
        events.append(sm.ReplayEvent(
            idx=e.index, kind=e.event.kind, to_seat=e.event.to, event_id=frame.event_id,
            frame=frame.SerializeToString(), json=_event_json(e.event.to_dict())))
    return sm.HandSettlement(
        room_id=room.room_id, hand_no=hand.hand_no, game=room.game, base_score=room.base_score,
        seats=hand.user_ids, nicknames=hand.nicknames, deltas=hand.deltas,
        payments=tuple(sm.Payment(reason=p.reason, payer=p.payer, payee=p.payee,
                                      amount=p.amount, ref=p.ref) for p in hand.payments),
        # a fair deal's check rides in the details, which records keeps with the hand
        details=sm.plain({**hand.details, **({"fair": hand.fair} if hand.fair else {})}),
        seed=hand.seed.hex(), dealer=hand.dealer, next_dealer=hand.next_dealer,
        events=tuple(events))


def final_settlement(room: r.Room, closed: ft.Closed) -> sm.FinalSettlement:
    """The room's last settlement message: every seat's total."""
    return sm.FinalSettlement(
        room_id=room.room_id, game=room.game, base_score=room.base_score,
        seats=tuple(s.user_id if s else 0 for s in room.seats),
        nicknames=tuple(s.nickname if s else "" for s in room.seats),
        totals=closed.totals, hands_played=closed.hands_played, reason=int(closed.reason),
        doc=closed.doc)
