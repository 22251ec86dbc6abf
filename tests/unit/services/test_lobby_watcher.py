"""A spectator's membership of a room's stream (services/lobby/watching.py): a member of the
stream (streams.Member) whose user id is -1, so the orderer gives it public frames only; with
a delay of N positions each frame waits until the stream is N log positions further on, or
MAX_HOLD_SECONDS at most. In a room's stream (streams.py, with stand-ins for NATS and the
table): a room that closes lets its held frames go at once and ends the watch (kept in the
app's Watches until stopped, so the table is told), a stream that cannot bring it back asks
for the public view and ends the watch without a reconnect, and each app's watches are its
own."""

from __future__ import annotations

import asyncio
from typing import Any

from paiju.frames import server_frame
from paiju.v1 import lobby_msgs_pb2, table_pb2
from services.lobby import streams as streams_module
from services.lobby import watching
from services.lobby.ordering import Message, RoomOrderer
from services.lobby.sessions import Session
from services.lobby.streams import Member, RoomStreams
from tests.support.lobbykit import Nats

ROOM = 9


def sent(session: Session) -> list[Any]:
    return session.outbox.take(10_000)


def counts(session: Session) -> list[int]:
    return [getattr(item, "frame", item).in_entrust.count for item in sent(session)]


def mark(n: int) -> Any:
    return server_frame(lobby_msgs_pb2.InEntrust(seat=0, count=n))


def events(index: int, *, closed: bool = False) -> bytes:
    return table_pb2.RoomEvents(room_id=ROOM, index=index, frames=[mark(index)],
                                closed=closed).SerializeToString()


def test_a_watcher_gets_public_frames_only() -> None:
    session = Session(user_id=5)
    orderer: RoomOrderer[Member] = RoomOrderer(1, lambda m, f: m.send(f), now=lambda: 0.0)
    watcher = watching.Watcher(session, 1, 0, lambda: orderer.delivered)
    orderer.join(watcher, watcher.user_id, (1, 0), ["joined"])
    orderer.offer(Message((2, 0), ["public"], [(5, "private to 5"), (0, "never")]))
    assert sent(session) == ["joined", "public"]


def test_a_delayed_watcher_gets_each_frame_n_positions_late() -> None:
    session = Session(user_id=5)
    orderer: RoomOrderer[Member] = RoomOrderer(1, lambda m, f: m.send(f), now=lambda: 0.0)
    watcher = watching.Watcher(session, 1, 2, lambda: orderer.delivered)
    orderer.join(watcher, watcher.user_id, (1, 0), [])
    for index in range(2, 7):
        orderer.offer(Message((index, 0), [f"e{index}"]))
    assert sent(session) == ["e2", "e3", "e4"]          # the stream is at 6: up to 4 out
    watcher.release(now=10 ** 9)                        # a quiet room: out after the bound
    assert sent(session) == ["e5", "e6"]
    watcher.end()
    assert not watcher.held


def test_a_closed_room_lets_every_held_frame_go() -> None:
    session = Session(user_id=5)
    closed = [False]
    watcher = watching.Watcher(session, 1, 5, lambda: (3, 0), lambda: closed[0])
    watcher.send(mark(7))
    assert sent(session) == []
    closed[0] = True
    watcher.release()
    assert counts(session) == [7]


class Table:
    """The room's owner: it cannot refill (``resync``), and its snapshots fail."""

    def __init__(self) -> None:
        self.snapshots: list[tuple[int, bool]] = []     # (user id, spectator)
        self.lost_members: list[Member] = []

    async def events_since(self, room_id: int, since: Any) -> table_pb2.TableReply:
        return table_pb2.TableReply(resync=True)

    async def snapshot(self, member: Member, room_id: int) -> table_pb2.TableReply:
        self.snapshots.append((member.session.user_id, member.spectator))
        raise ConnectionError("table away")

    def lost(self, member: Member, room_id: int) -> None:
        self.lost_members.append(member)


async def watched(delay: int) -> tuple[Nats, Table, RoomStreams, watching.Watches,
                                        Session, watching.Watcher]:
    """A room of this lobby's streams with one seated session (user 1) and one watch
    (user 2's session), both from position 1."""
    nats, table = Nats(), Table()
    streams = RoomStreams(nats, table, gap_wait=0.01)  # type: ignore[arg-type]
    watches = watching.Watches(streams)
    seated, spectator = Session(user_id=1, room_id=ROOM, seat=0), Session(user_id=2)
    room = await streams.open(ROOM)
    at_one = table_pb2.TableReply(room_id=ROOM, ordered=True, index=1)
    streams.join(seated, ROOM, at_one, [])
    watcher = watching.Watcher(spectator, ROOM, delay, lambda: room.orderer.delivered,
                               lambda: room.orderer.closed)
    watches.add(watcher)
    streams.join(watcher, ROOM, at_one, [])
    await streams.release(ROOM)
    return nats, table, streams, watches, seated, watcher


async def test_a_room_that_closes_lets_the_held_frames_go_and_ends_the_watch() -> None:
    nats, _, streams, watches, seated, watcher = await watched(delay=5)
    spectator = watcher.session
    for index in (2, 3):
        await nats.deliver(f"room.{ROOM}.events", events(index))
    assert counts(spectator) == [] and watches.live(spectator) is watcher
    await nats.deliver(f"room.{ROOM}.events", events(4, closed=True))
    assert counts(spectator) == [2, 3, 4]           # at once, not after a tick
    assert counts(seated) == [2, 3, 4] and seated.room_id == 0 and seated.seat == -1
    assert watches.live(spectator) is None and not watcher.held
    assert spectator in watches                     # until stopped: the table is told then
    other = watching.Watches(streams)               # another app's registry: its own
    assert spectator not in other and other.live(spectator) is None
    await streams.stop()


async def test_a_watch_the_stream_cannot_bring_back_asks_the_public_view_then_ends() -> None:
    nats, table, streams, watches, seated, watcher = await watched(delay=5)
    spectator = watcher.session
    await nats.deliver(f"room.{ROOM}.events", events(2))
    await nats.deliver(f"room.{ROOM}.events", events(4))    # a gap the table cannot refill
    assert counts(spectator) == []                           # 2 is held (delay 5)
    for _ in range(300):
        if len(table.lost_members) == 2:
            break
        await asyncio.sleep(0.02)
    assert sorted(table.snapshots) == sorted(
        [(1, False), (2, True)] * streams_module.SNAPSHOT_TRIES)
    assert set(table.lost_members) == {seated, watcher}
    assert counts(spectator) == [] and not watcher.held     # dropped: the watch is over
    assert watches.live(spectator) is None and seated.room_id == 0
    assert ROOM not in streams.rooms
    await streams.stop()
