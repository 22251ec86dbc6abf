"""A table process killed mid-hand and started again rebuilds the room from its JetStream
log: the same hand, the same view for every seat, and the hand finishes, settled once."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import grpc
import nats

from paiju.contracts.directory import RoomEntry, SeatEntry
from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from services.common import bus
from services.common.natsd import EmbeddedNats
from tests.support.procs import make_service
from tests.support.tablekit import LobbyLink, Table


async def snapshot(link: LobbyLink, room_id: int, user_id: int) -> dict:
    reply = await link.send(room_id, user_id, kind="snapshot")
    assert reply.code == 0, reply.message
    info = next(f for f in reply.frames if f.WhichOneof("payload") == "mj_game_info")
    return json.loads(info.mj_game_info.observation_json)


async def test_killed_table_resumes_the_hand_from_its_log(fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    # long timers: once the players stop answering, nothing moves the hand on, so the views
    # taken before the kill must equal those after the restart
    table = make_service("table", fresh_nats.url, tmp_path,
                         PAIJU_TABLE__INSTANCE="table-restart", PAIJU_TABLE__TURN_SECONDS="30",
                         # no arbiter on this NATS: local arbitration decides
                         PAIJU_TABLE__WINDOW_SECONDS="30", PAIJU_TABLE__ALONE_SECONDS="30")
    table.start()
    try:
        async with grpc.aio.insecure_channel(table.address) as channel:
            stub = table_pb2_grpc.TableStub(channel)
            created = await stub.CreateRoom(table_pb2.CreateRoomRequest(
                game=common_pb2.XUEZHAN, base_score=1, total_hands=1))
        room_id = created.room.room_id
        link = LobbyLink(table.address, fresh_nats.url)
        t = Table(fresh_nats.url, link, room_id, "xuezhan")
        await t.connect()
        players = [(await t.seat(uid))[0] for uid in (71, 72, 73, 74)]
        t.play()
        await t.ready_all()
        # let some turns happen, then stop everyone and take a snapshot of every seat
        for _ in range(200):
            if sum(1 for f in players[0].received if f.WhichOneof("payload") == "mj_discard") >= 6:
                break
            await asyncio.sleep(0.02)
        await t.pause()
        before = [await snapshot(link, room_id, p.user_id) for p in players]
        assert before[0]["phase"] not in ("over",)
        await t.close()
        await link.close()

        table.stop(signal.SIGKILL)
        table.start()

        link = LobbyLink(table.address, fresh_nats.url)
        after = [await snapshot(link, room_id, p.user_id) for p in players]
        assert after == before
        t = Table(fresh_nats.url, link, room_id, "xuezhan")
        await t.connect()
        # re-subscribe the same players (new subscriptions) and let them finish the hand
        resumed = []
        for p in players:
            q = type(p)(p.user_id, "xuezhan")
            await t.nc.subscribe(bus.room_events(room_id), cb=t._deliver(q))
            resumed.append(q)
        t.players = resumed
        await bus.sync(t.nc)
        t.play()
        for p in resumed:  # prompts may have been sent before we subscribed: ask again
            reply = await link.send(room_id, p.user_id, kind="snapshot")
            for f in reply.frames:
                if f.WhichOneof("payload") == "prompt":
                    p.prompts.put_nowait(f.prompt)
        nc = await nats.connect(fresh_nats.url)
        js = nc.jetstream()
        sub = await js.subscribe("settle.*", ordered_consumer=True)
        got = [json.loads((await sub.next_msg(timeout=60)).data) for _ in range(2)]
        await asyncio.sleep(0.5)
        with_more = []
        try:
            with_more.append(await sub.next_msg(timeout=0.5))
        except nats.errors.TimeoutError:
            pass
        await nc.close()
        assert [m["hand_no"] for m in got] == [1, 0] and got[1]["final"]
        assert sum(got[0]["deltas"]) == 0
        assert not with_more, "each settlement is in the stream once"
        await t.close()
        await link.close()
    finally:
        table.stop()


async def test_a_live_table_adopts_the_rooms_of_a_dead_one(fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    common = {"PAIJU_TABLE__TURN_SECONDS": "30", "PAIJU_TABLE__WINDOW_SECONDS": "30",
              "PAIJU_TABLE__ALONE_SECONDS": "30",
              "PAIJU_TABLE__LEASE_TTL_SECONDS": "2"}
    a = make_service("table", fresh_nats.url, tmp_path, PAIJU_TABLE__INSTANCE="table-a", **common)
    b = make_service("table", fresh_nats.url, tmp_path, PAIJU_TABLE__INSTANCE="table-b", **common)
    a.start()
    try:
        async with grpc.aio.insecure_channel(a.address) as channel:
            created = await table_pb2_grpc.TableStub(channel).CreateRoom(table_pb2.CreateRoomRequest(
                game=common_pb2.XUEZHAN, base_score=1, total_hands=1))
        room_id = created.room.room_id
        link = LobbyLink(a.address, fresh_nats.url)
        t = Table(fresh_nats.url, link, room_id, "xuezhan")
        await t.connect()
        players = [(await t.seat(uid))[0] for uid in (81, 82, 83, 84)]
        for p in players:
            p.auto = False
        await t.ready_all()   # the hand starts before the table handles the next command
        before = [await snapshot(link, room_id, p.user_id) for p in players]
        await t.close()
        await link.close()
        a.kill()
        # b starts once a is dead: with the short lease, a stalled but live table-a must not
        # lose its room to b before the snapshots above (b adopts after a's entry expires)
        b.start()

        nc = await nats.connect(fresh_nats.url)
        kv = await nc.jetstream().key_value("rooms")
        seats = await nc.jetstream().key_value("seats")
        owner = seat_entry = None
        for _ in range(150):  # the entry of table-a expires, table-b claims the room
            owner = RoomEntry.decode((await kv.get(str(room_id))).value).owner
            seat_entry = SeatEntry.decode((await seats.get("81")).value)
            if owner == seat_entry.owner == "table-b":
                break
            await asyncio.sleep(0.2)
        await nc.close()
        assert owner == "table-b"
        assert seat_entry is not None
        assert seat_entry.owner == "table-b" and seat_entry.address == b.address

        link = LobbyLink(b.address, fresh_nats.url)
        after = [await snapshot(link, room_id, p.user_id) for p in players]
        assert after == before
        await link.close()
    finally:
        a.stop()
        b.stop()
