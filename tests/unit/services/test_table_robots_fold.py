"""Robot seats in the room log (services/table/logrec.py, room.py): a robot is a join record
with ``robot: true`` (written only when set, so players' joins keep their bytes), and a room
folded from its log (a rebuild, an adoption) has its robots back: ready, entrusted for good,
ready again after each hand, never prompted and sent nothing private."""

from __future__ import annotations

import json

from services.common import reserved
from services.table import logrec as lr
from services.table import views
from services.table.commands import robot_profile
from services.table.room import Room


def robot_join(i: int, room_id: int, seat: int) -> dict:
    rec = lr.stamp(lr.Join(seat, reserved.robot_id(room_id, seat), robot_profile(seat),
                           robot=True), i)
    return json.loads(json.dumps(lr.encode(rec)))


def test_a_robot_join_reads_back_and_a_players_join_has_no_robot_key() -> None:
    data = robot_join(3, 12345678, 2)
    assert data["t"] == "join" and data["robot"] is True
    assert lr.encode(lr.decode(data)) == data
    person = lr.encode(lr.stamp(lr.Join(0, 7, lr.Profile("u7")), 1))
    assert "robot" not in person


def test_a_room_folded_from_its_log_keeps_its_robots() -> None:
    create = lr.stamp(lr.Create(12345678, "xuezhan", {}, creator_id=7, total_hands=2), 0)
    log = [lr.encode(create), lr.encode(lr.stamp(lr.Join(0, 7, lr.Profile("u7")), 1)),
           *(robot_join(1 + seat, 12345678, seat) for seat in (1, 2, 3))]
    room = Room(lr.decode(log[0]))
    fx = views.Effects()
    for data in log:
        views.apply(room, lr.decode(json.loads(json.dumps(data))), fx)
    robots = [s for _, s in room.seated() if s.robot]
    assert len(robots) == 3 and all(s.ready and s.entrusted for s in robots)
    assert room.creator_id == 7 and [i for i, _ in room.players()] == [0]
    assert not any(reserved.is_robot(uid) for uid in fx.seats)   # no seat entries for robots
    info = views.room_info(room)
    assert [p.robot for p in info.players] == [False, True, True, True]
    # the person gets ready: the hand starts; robots stay ready through it
    fx = views.apply(room, lr.stamp(lr.Ready(0, True), 5))
    start = lr.stamp(lr.Start(1, (42).to_bytes(32, "big").hex(), 0), 6)
    fx = views.apply(room, start)
    assert room.in_hand()
    assert all(s.ready for s in robots) and not room.seats[0].ready
    assert not any(reserved.is_robot(uid) for uid, _ in fx.private)
    assert any(uid == 7 for uid, _ in fx.private)   # the person's own hand
