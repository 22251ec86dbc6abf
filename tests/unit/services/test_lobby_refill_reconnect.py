"""A refill asked before a NATS reconnect (services/lobby/streams.py) may wait for an answer
that went with the old connection: the forwarder follows it for up to its bound (15 s and
more), and meanwhile the room's stream at this lobby, its members' prompts and the answers
held for them, wait too. After the reconnect the refill is asked again at once.

Seen in the partition test: a lobby cut off from its NATS node's cluster saw a gap, asked
the table, moved to the majority 2 s later; the refill already on its way blocked the
reconnect's refill of that room."""

from __future__ import annotations

import asyncio
from typing import Any

from paiju.frames import server_frame
from paiju.v1 import lobby_msgs_pb2, table_pb2
from services.lobby.sessions import Session
from services.lobby.streams import RoomStreams
from tests.support.lobbykit import Nats
from tests.support.waiting import until

ROOM = 19


def message(index: int) -> table_pb2.RoomEvents:
    return table_pb2.RoomEvents(room_id=ROOM, index=index, frames=[
        server_frame(lobby_msgs_pb2.InEntrust(seat=0, count=index))])


class Table:
    """Answers refills from its messages; the refills asked while ``unanswered`` never
    answer (their request went with the lobby's old NATS connection)."""

    def __init__(self) -> None:
        self.messages = [message(1)]
        self.unanswered = False
        self.asked = 0

    async def events_since(self, room_id: int, since: Any) -> table_pb2.TableReply:
        self.asked += 1
        if self.unanswered:
            await asyncio.Event().wait()     # no answer, ever
        return table_pb2.TableReply(ordered=True, index=self.messages[-1].index, events=[
            m for m in self.messages if (m.index, m.part) > since])

    async def snapshot(self, member: Any, room_id: int) -> table_pb2.TableReply:
        raise AssertionError("no snapshot expected")

    def lost(self, member: Any, room_id: int) -> None:
        raise AssertionError("no member lost")


async def test_a_refill_on_its_way_at_a_reconnect_is_asked_again() -> None:
    nats, table = Nats(), Table()
    streams = RoomStreams(nats, table, gap_wait=0.05)  # type: ignore[arg-type]
    session = Session(user_id=1, room_id=ROOM)
    await streams.open(ROOM)
    streams.join(session, ROOM, table_pb2.TableReply(room_id=ROOM, ordered=True, index=1), [])
    await streams.release(ROOM)
    assert await until(lambda: table.asked == 1)   # its first refill: nothing new
    follow = asyncio.create_task(streams.follow_reconnects())
    try:
        table.unanswered = True
        table.messages += [message(2), message(3)]
        await nats.deliver(f"room.{ROOM}.events", message(3).SerializeToString())
        # 2 is missing: a refill, which never answers
        assert await until(lambda: table.asked == 2) and not session.outbox._items
        table.unanswered = False
        nats.stats["reconnects"] = 1         # the lobby's connection moved
        assert await until(lambda: len(session.outbox._items) == 2 and table.asked == 3)
        items: list[Any] = list(session.outbox._items)
        counts = [getattr(i, "frame", i).in_entrust.count for i in items]
        assert counts == [2, 3] and table.asked == 3
    finally:
        follow.cancel()
        await asyncio.gather(follow, return_exceptions=True)
        await streams.stop()
