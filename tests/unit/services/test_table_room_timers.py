"""Which timers and entrust cancels a room really has: its own options (the table's names,
or a game's own names such as Dadun's play_timeout_s), else the table's timers when the
room was created; and the countdowns the engine shows are those same timers."""

from __future__ import annotations

from typing import Any

from paiju.v1 import common_pb2, table_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm
from services.table import logrec as lr
from services.table.actor import RoomActor
from services.table.core import bot_move
from services.table.creation import create_record
from services.table.room import Room
from services.table.views import Effects
from tests.support.waiting import until
from tests.unit.services.test_table_actor import (
    MemoryLog,
    command,
    local_arbiter,
    ready_all,
)

TABLE_NOW = {"turn_seconds": 30.0, "window_seconds": 30.0, "alone_seconds": 30.0}
AT_CREATION = {"turn_seconds": 12.0, "window_seconds": 5.0, "alone_seconds": 9.0}


async def started(game: int, name: str, options: dict[str, Any]
                  ) -> tuple[Room, RoomActor, list[Any]]:
    frames: list[Any] = []

    async def publish(actor: RoomActor, fx: Effects, msg: table_pb2.RoomEvents) -> None:
        frames.extend(fx.public)
        frames.extend(frame for _, frame in fx.private)


    log = MemoryLog()
    rec = create_record(1234567, table_pb2.CreateRoomRequest(game=game, total_hands=2), name,
                        options, 3, AT_CREATION)
    room = Room(rec)
    actor = RoomActor(room, next_index=0, log_seq=0, append=log.append, publish=publish,
                      arbiter=local_arbiter, bots=bot_move, timers=TABLE_NOW, dismiss_seconds=30,
                      idle_seconds=100, entrust_delay=0.0)
    await actor.record(rec)
    actor.start()
    for uid in (1, 2, 3, 4):
        assert (await actor.submit("command", command(uid, lm.JoinRoom(room_id=1234567)))).code == 0
    await ready_all(actor)
    assert await until(room.in_hand, 5)
    return room, actor, frames


def hint_alone(frames: list[Any]) -> list[g.DdHintAlone]:
    out = []
    for frame in frames:
        if frame.WhichOneof("payload") == "dd_hint_alone":
            out.append(frame.dd_hint_alone)
    return out


async def test_dadun_room_options_are_its_real_timers_and_its_countdowns() -> None:
    room, actor, frames = await started(common_pb2.DADUN, "dadun",
                                        {"play_timeout_s": 7, "entrust_cancels": 1})
    assert room.phase() == "alone"
    # alone: not set by the room, so the table's timer at creation (9 s), not today's 30 s
    assert room.decision_seconds(TABLE_NOW) == 9.0
    assert await until(lambda: bool(hint_alone(frames)), 5)
    assert {h.countdown for h in hint_alone(frames)} == {9}
    # play: the room's own play_timeout_s is both the engine's countdown and the timer
    assert room.engine_options["play_timeout_s"] == 7
    assert room.room_options["turn_seconds"] == 7
    assert "entrust_cancels" not in room.engine_options
    assert [room.seats[i].cancels_left for i in range(4)] == [1, 1, 1, 1]
    await actor.stop()


async def test_mahjong_rooms_take_the_timers_of_their_creation_and_entrust_cancels() -> None:
    room, actor, _ = await started(common_pb2.XUEZHAN, "xuezhan", {"entrust_cancels": 0})
    assert room.decision_seconds(TABLE_NOW) == 12.0      # exchange three: a turn timer
    assert [room.seats[i].cancels_left for i in range(4)] == [0, 0, 0, 0]
    await actor.stop()


def test_a_room_from_an_older_log_without_timers_uses_the_table_defaults() -> None:
    rec = create_record(1234567, table_pb2.CreateRoomRequest(game=common_pb2.DADUN), "dadun",
                        {}, 3)
    logged = lr.encode(lr.stamp(rec, 0))
    logged.pop("timers")
    room = Room(lr.decode(logged))
    assert room.decision_seconds(TABLE_NOW) == 30.0
    assert "play_timeout_s" not in room.engine_options  # the engine's own default shows
