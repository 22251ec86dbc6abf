"""The table's per-record shortcuts give what the plain way gives, after every record of
played hands: a prompt's observation and actions from one engine call (mahjong computes
its candidates once), the engine events' frames a hand's settlement reuses (each made once). And every window of those hands is decided by
the arbiter's handler through the wire, which gives the pure function's decision, passed by
the state's check (verify_decision, no trial on a clone) and taken by the fold."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from bench.table_views_ref import prompt as plain_prompt
from games import registry
from games.arbitration import Decision, Rules, Window, resolve
from paiju.contracts.settle import HandSettlement
from paiju.v1 import client_pb2
from services.arbiter.server import decide
from services.common.arbwire import decision_from_pb, window_to_pb
from services.table import facts as ft
from services.table import logrec as lr
from services.table import views
from services.table.room import Room
from tests.unit.services.test_table_fold import create, profile

GAMES = tuple(spec.name for spec in registry.all())   # every game of the registry


def plain_settlement_events(room: Room, settle: HandSettlement) -> list[dict[str, Any]]:
    """The settlement's events made afresh from the room's events of that hand, as JSON."""
    events = room.hand_events
    assert [e.index for e in events] == [x.idx for x in settle.events]
    out = []
    for e in events:
        frame = views._event_frame(room, e)
        out.append({"i": e.index, "kind": e.event.kind, "to": e.event.to,
                    "event_id": frame.event_id,
                    "frame": base64.b64encode(frame.SerializeToString()).decode(),
                    "json": json.dumps(e.event.to_dict(), ensure_ascii=False, sort_keys=True)})
    return out


def arbitrate(window: Window, rules: Rules) -> Decision:
    """The decision as the table gets it from an arbiter: through the wire and the arbiter's
    handler. It must be the pure function's."""
    decision = decision_from_pb(decide(window_to_pb(window, rules)))
    assert decision == resolve(window, rules)
    return decision


class Table:
    """Records folded with their frames (views.apply), as the actor does."""

    def __init__(self, game: str, hands: int, *, compare: bool = True) -> None:
        self.compare = compare   # each settlement's events with the plain ones
        first = lr.stamp(create(game, hands), 0)
        self.records: list[lr.Record] = [first]
        self.room = Room(first)
        self.settled: list[HandSettlement] = []
        views.apply(self.room, first)
        for seat, uid in enumerate(range(11, 11 + self.room.spec.seats)):
            self.add(lr.Join(seat, uid, profile(uid)))

    def add(self, rec: lr.Record) -> views.Effects:
        rec = lr.stamp(rec, len(self.records))
        self.records.append(rec)
        fx = views.apply(self.room, rec)
        for msg in fx.settle:
            if isinstance(msg, HandSettlement):
                # the settlement took the frames its events kept since their fold
                assert not any(e.memo for e in self.room.hand_events)
                if self.compare:
                    assert json.loads(msg.encode())["events"] == plain_settlement_events(
                        self.room, msg)
                self.settled.append(msg)
        return fx

    def check_prompts(self) -> None:
        room = self.room
        for seat in room.to_act():
            assert room.state is not None
            made = views.prompt(room, seat, 9.5)
            assert made.SerializeToString() == plain_prompt(room, seat, 9.5).SerializeToString()
            listed = room.state.observation(seat).get("candidates")
            if room.spec.family == "mahjong":   # its observation lists the candidates
                assert listed == [a.to_dict() for a in room.state.legal_actions(seat)]

    def play(self, seed: int) -> None:
        room = self.room
        for seat in range(room.spec.seats):
            self.add(lr.Ready(seat, True))
        self.add(lr.Start(room.hand_no + 1, seed.to_bytes(32, "big").hex(), room.dealer))
        for _ in range(3000):
            if not room.in_hand():
                return
            self.check_prompts()
            assert room.state is not None
            seat = room.to_act()[0]
            response = room.is_response(seat)
            self.add(lr.Act(seat, room.spec.greedy_policy(room.state, seat), "player", response))
            window, rules = room.pending_window(), room.arbitration_rules()
            if response and window is not None and rules is not None:
                decision = arbitrate(window, rules)
                if decision.final:
                    room.state.verify_decision(decision)   # the table's check
                    self.add(lr.Resolve(decision))   # the fold raises on one it refuses
        raise AssertionError("the hand did not end")


@pytest.mark.parametrize("game", GAMES)
def test_prompts_and_settlements_are_the_plain_ones_after_every_record(game: str) -> None:
    table = Table(game, hands=3)
    for seed in (20261202, 7, 99):
        table.play(seed)
    assert len(table.settled) == 3 and table.room.closed


@pytest.mark.parametrize("game", GAMES)
def test_a_hands_event_frames_are_made_once_for_the_screens_and_its_settlement(
        game: str, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[int, int]] = []
    make = views._event_frame

    def counted(room: Room, e: ft.HandEvent,
                mapping: dict[str, Any] | None = None) -> client_pb2.ServerFrame:
        made.append((e.ctx.hand_no, e.index))
        return make(room, e, mapping)

    monkeypatch.setattr(views, "_event_frame", counted)
    table = Table(game, hands=2, compare=False)
    for seed in (31, 32):
        table.play(seed)
    assert len(table.settled) == 2
    assert sorted(made) == sorted({(msg.hand_no, e.idx) for msg in table.settled
                                   for e in msg.events})


@pytest.mark.parametrize("game", GAMES)
def test_a_room_rebuilt_in_the_middle_of_a_hand_settles_it_the_same(game: str) -> None:
    live = Table(game, hands=1)
    live.play(4242)
    cut = next(i for i, rec in enumerate(live.records) if isinstance(rec, lr.Start)) + 9
    first = live.records[0]
    assert isinstance(first, lr.Create)
    rebuilt = Room(first)
    for rec in live.records[:cut]:
        rebuilt.apply(rec)          # folded without frames: none to reuse for these
    settle = [msg for rec in live.records[cut:] for msg in views.apply(rebuilt, rec).settle]
    assert settle[0] == live.settled[0]
