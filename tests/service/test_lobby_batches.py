"""Frames queued together leave as one stream message (ServerFrame.batch) to a client that
asked for it at login (Login.accept_batches), and one frame per message to one that did not:
through a real lobby on a real nats-server, with the in-test table of tests/support/lobbyworld.py. Both
clients see the same frames, in the same order, numbered without a gap."""

from __future__ import annotations

from paiju.frames import server_frame
from paiju.v1 import lobby_msgs_pb2
from tests.support.lobbyworld import World


def mark(n: int) -> lobby_msgs_pb2.InEntrust:
    return lobby_msgs_pb2.InEntrust(seat=0, count=n)


async def test_a_client_that_asks_gets_a_record_s_frames_in_one_message(world: World) -> None:
    address = await world.lobby()
    room = await world.table.add_room()
    batched, single = await world.client(address), await world.client(address)
    await batched.login(601, batches=True)
    await single.login(602)
    for client in (batched, single):
        joined = await client.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
        assert joined.WhichOneof("payload") == "room_joined", joined
    # records of several frames each, one private frame for 601 in each: one message apiece
    for n in range(0, 40, 4):
        private = [(601, server_frame(lobby_msgs_pb2.DistanceAlert(alert=f"a{n}")))]
        await world.emit(room, [server_frame(mark(n + i)) for i in range(4)], private)
    for client in (batched, single):
        await client.until(lambda f: f.HasField("in_entrust") and f.in_entrust.count == 39)
    await batched.until(lambda f: f.HasField("distance_alert") and f.distance_alert.alert == "a36")

    def marks(client: object) -> list[int]:
        return [f.in_entrust.count for f in client.seen if f.HasField("in_entrust")]  # type: ignore[attr-defined]

    assert marks(batched) == marks(single) == list(range(40))
    assert [f.distance_alert.alert for f in batched.seen if f.HasField("distance_alert")] \
        == [f"a{n}" for n in range(0, 40, 4)]
    assert not any(f.HasField("distance_alert") for f in single.seen)
    # Client.recv checked that every seq, inside batches or not, is the last one plus one
    assert batched.batches and sum(batched.batches) >= 10, batched.batches
    assert single.batches == []

