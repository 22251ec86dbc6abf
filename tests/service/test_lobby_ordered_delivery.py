"""A room's messages reach a client in position order, each once, with no gaps, through a
real lobby and a real nats-server, whatever order NATS delivers them in (issue 10, "Done
when"; docs/ordered-events.md): the in-test table of tests/support/lobbyworld.py keeps the room's ring,
and the test publishes the room's messages itself, shuffled, duplicated, late, and some
never, while the client plays on. The lobby must refill what is missing from the table and
drop what comes twice or too late; the client's answer to a command comes after everything
before its position and before anything after."""

from __future__ import annotations

import asyncio
import random

import pytest

from paiju.frames import server_frame
from paiju.v1 import lobby_msgs_pb2, table_pb2
from services.common import bus
from tests.support.lobbyworld import World, seated_client


def mark(n: int) -> lobby_msgs_pb2.InEntrust:
    return lobby_msgs_pb2.InEntrust(seat=0, count=n)


@pytest.mark.parametrize("seed", [1, 2])
async def test_messages_out_of_order_late_doubled_and_lost_reach_the_client_in_order(
        world: World, seed: int) -> None:
    rng = random.Random(seed)
    address = await world.lobby()
    client, room = await seated_client(world, address, 501)
    other, _ = await seated_client(world, address, 502, room)
    # the table's next 60 records, some of them with a second and third part (a prompt),
    # some with a frame for 501 alone: what it would publish and keep in its ring
    records: list[list[table_pb2.RoomEvents]] = []
    n = 0
    for _ in range(60):
        room.index += 1
        group = []
        for part in range(rng.choice((1, 1, 2, 3))):
            n += 1
            private = [table_pb2.UserFrame(user_id=501, frame=server_frame(
                lobby_msgs_pb2.DistanceAlert(alert=f"a{n}")))] if rng.random() < 0.2 else []
            group.append(table_pb2.RoomEvents(room_id=room.room_id, index=room.index, part=part,
                                              frames=[server_frame(mark(n))], private=private))
        records.append(group)
        room.ring.extend(group)
    expected = [f.in_entrust.count for g in records for m in g for f in m.frames]
    alerts = [p.frame.distance_alert.alert for g in records for m in g for p in m.private]
    # the network: records (their parts together and in order, as one publisher's are)
    # shuffled a few places, some twice, some lost, some a second late; the last one lost
    wire = [g for g in records[:-1] if rng.random() > 0.1]
    wire += [g for g in records if rng.random() < 0.1]
    rng.shuffle(wire)
    late = [g for g in records if rng.random() < 0.1]
    subject = bus.room_events(room.room_id)
    for group in wire:
        for message in group:
            await world.nc.publish(subject, message.SerializeToString())
    await asyncio.sleep(1.0)
    for group in late:                     # long after their time: dropped, never shown
        for message in group:
            await world.nc.publish(subject, message.SerializeToString())
    # a command now: its answer is made after the last record (lost on the way): held
    # until the stream has everything before it, then shown before anything later
    ready = await client.request(lobby_msgs_pb2.AskReady(is_ready=True))
    assert ready.ret.code == 0
    after = server_frame(mark(10_000))
    await world.emit(room, [after])
    await client.until(lambda f: f.HasField("in_entrust") and f.in_entrust.count == 10_000)
    seen = [f for f in client.seen if f.HasField("in_entrust")]
    assert [f.in_entrust.count for f in seen] == [*expected, 10_000]
    assert [f.distance_alert.alert for f in client.seen if f.HasField("distance_alert")] \
        == alerts
    at = client.seen.index(ready)
    assert client.seen.index(seen[len(expected) - 1]) < at < client.seen.index(seen[-1])
    # the other member got the same room messages, none of 501's own
    await other.until(lambda f: f.HasField("in_entrust") and f.in_entrust.count == 10_000)
    assert [f.in_entrust.count for f in other.seen if f.HasField("in_entrust")] \
        == [*expected, 10_000]
    assert not any(f.HasField("distance_alert") for f in other.seen)
