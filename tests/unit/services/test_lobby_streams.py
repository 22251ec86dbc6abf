"""The room streams' refills (services/lobby/streams.py) with stand-ins for NATS and the
table: a gap is refilled from the table after a short wait, a table that cannot refill
(``resync``) gets a snapshot request per member, a NATS reconnect refills every room, a
table away for long ends in snapshots (held answers go out) and then a reconnect of the
member, and a room gone while refilling (or a member no longer in it at its snapshot) leaves
its sessions out of it, each told to log in again."""

from __future__ import annotations

import asyncio
from typing import Any

from paiju.frames import server_frame
from paiju.v1 import common_pb2, lobby_msgs_pb2, table_pb2
from services.lobby import streams as streams_module
from services.lobby.sessions import Session
from services.lobby.streams import Member, RoomStreams
from tests.support.lobbykit import Nats
from tests.support.waiting import until

ROOM = 9


def mark(n: int) -> Any:
    return server_frame(lobby_msgs_pb2.InEntrust(seat=0, count=n))


def message(index: int) -> table_pb2.RoomEvents:
    return table_pb2.RoomEvents(room_id=ROOM, index=index, frames=[mark(index)])


class Table:
    """The room's owner: its messages so far, or (``resync``) a ring that lost them."""

    def __init__(self) -> None:
        self.messages = [message(1)]
        self.resync = False
        self.down = False                   # every request fails (the table is away)
        self.gone = False                   # the room is no more
        self.not_in_room = False            # snapshots: the user sits there no more
        self.asked: list[Any] = []
        self.snapshots: list[int] = []
        self.lost_users: list[int] = []

    async def events_since(self, room_id: int, since: Any) -> table_pb2.TableReply:
        self.asked.append(since)
        if self.down:
            raise ConnectionError("table away")
        if self.gone:
            return table_pb2.TableReply(code=common_pb2.ERR_NO_SUCH_ROOM)
        if self.resync:
            return table_pb2.TableReply(resync=True)
        return table_pb2.TableReply(ordered=True, index=self.messages[-1].index, events=[
            m for m in self.messages if (m.index, m.part) > since])

    async def snapshot(self, member: Member, room_id: int) -> table_pb2.TableReply:
        self.snapshots.append(member.user_id)
        if self.down:
            raise ConnectionError("table away")
        if self.not_in_room:
            return table_pb2.TableReply(code=common_pb2.ERR_NOT_IN_ROOM)
        return table_pb2.TableReply(room_id=ROOM, seat=0, ordered=True, index=10,
                                    frames=[mark(1000 + member.user_id)])

    def lost(self, member: Member, room_id: int) -> None:
        self.lost_users.append(member.user_id)


async def joined(gap_wait: float = 0.05) -> tuple[Nats, Table, RoomStreams, Session]:
    nats, table = Nats(), Table()
    streams = RoomStreams(nats, table, gap_wait=gap_wait)  # type: ignore[arg-type]
    session = Session(user_id=1, room_id=ROOM)
    await streams.open(ROOM)
    streams.join(session, ROOM, table_pb2.TableReply(room_id=ROOM, ordered=True, index=1), [])
    await streams.release(ROOM)
    for _ in range(500):                    # its first refill, once subscribed: nothing new
        if table.asked:                     # (waited for, not timed: a loaded machine is slow)
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(gap_wait * 3)       # and no second one
    assert table.asked == [(1, 0)]
    return nats, table, streams, session


async def publish(nats: Nats, index: int) -> None:
    await nats.deliver(f"room.{ROOM}.events", message(index).SerializeToString())


def counts(session: Session) -> list[int]:
    return [getattr(item, "frame", item).in_entrust.count for item in session.outbox._items]


async def test_a_gap_is_refilled_after_a_short_wait() -> None:
    nats, table, streams, session = await joined()
    table.messages += [message(2), message(3)]
    await publish(nats, 3)                  # 2 is missing: wait for it a moment
    assert counts(session) == []
    assert await until(lambda: counts(session) == [2, 3])
    assert table.asked == [(1, 0), (1, 0)]
    await streams.stop()


async def test_a_table_that_cannot_refill_gets_a_snapshot_request_per_member() -> None:
    nats, table, streams, session = await joined()
    table.resync = True
    await publish(nats, 3)
    assert await until(lambda: counts(session) == [1001])
    assert table.snapshots == [1]
    table.messages.append(message(11))
    await publish(nats, 11)                 # after the snapshot's position: in order
    assert counts(session) == [1001, 11]
    await streams.stop()


async def test_every_room_is_refilled_after_a_nats_reconnect() -> None:
    nats, table, streams, session = await joined()
    follow = asyncio.create_task(streams.follow_reconnects())
    await asyncio.sleep(0.05)
    table.messages += [message(2), message(3)]
    nats.stats["reconnects"] = 1            # messages 2 and 3 went while it was away
    assert await until(lambda: counts(session) == [2, 3])
    assert counts(session) == [2, 3] and table.asked[-1] == (1, 0)
    follow.cancel()
    await asyncio.gather(follow, return_exceptions=True)
    await streams.stop()


async def test_a_table_away_for_long_ends_in_snapshots_then_a_reconnect() -> None:
    nats, table, streams, session = await joined(gap_wait=0.01)
    table.down = True
    streams.begin(session, ROOM)
    streams.reply(session, ROOM, table_pb2.TableReply(ordered=True, index=5),
                  [mark(500)])                # an answer ahead of the stream: held
    await asyncio.sleep(0)
    assert counts(session) == []
    for _ in range(300):                     # refills fail, then snapshots fail
        if table.lost_users:
            break
        await asyncio.sleep(0.02)
    assert len(table.asked) >= 1 + streams_module.RESYNC_AFTER
    assert counts(session) == [500]          # the held answer went out at the resync
    assert table.snapshots == [1] * streams_module.SNAPSHOT_TRIES and table.lost_users == [1]
    assert session.room_id == 0 and ROOM not in streams.rooms
    await streams.stop()


async def test_a_room_gone_while_refilling_sends_its_sessions_to_log_in_again() -> None:
    """Its last messages never came here: the session is out of it, and told (lost: it
    logs in again and learns the room ended while it was away), not left waiting."""
    nats, table, streams, session = await joined()
    table.gone = True
    await publish(nats, 3)
    assert await until(lambda: bool(table.lost_users) and ROOM not in streams.rooms)
    assert session.room_id == 0 and ROOM not in streams.rooms
    assert table.lost_users == [1]
    await streams.stop()


async def test_a_member_no_longer_in_the_room_at_its_resync_is_told() -> None:
    nats, table, streams, session = await joined()
    table.resync, table.not_in_room = True, True
    await publish(nats, 3)
    assert await until(lambda: bool(table.lost_users) and ROOM not in streams.rooms)
    assert table.snapshots == [1] and table.lost_users == [1]
    assert session.room_id == 0 and ROOM not in streams.rooms
    await streams.stop()
