"""The table service with a real nats-server over its real gRPC API: a closed room's log is
purged once its settlements are out, directory writes and purges that fail are retried by
the heartbeat, and a late offline of a replaced lobby session leaves the seat online."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import nats
import nats.errors
import pytest

from paiju import frames
from paiju.contracts.directory import SeatEntry
from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common import bus
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.table import directory
from services.table.core import TableCore
from services.table.directory import KvWrite
from services.table.lifecycle import RoomState
from services.table.server import start as start_table
from tests.support.tablekit import LobbyLink, Table, log_count
from tests.support.waiting import eventually


@pytest.fixture
async def stack(fresh_nats: EmbeddedNats) -> AsyncIterator[dict[str, Any]]:
    cfg = load_config("test", environ={
        "NATS_URL": fresh_nats.url,  # no arbiter on it: local arbitration
        "PAIJU_TABLE__TURN_SECONDS": "30", "PAIJU_TABLE__WINDOW_SECONDS": "30",
        "PAIJU_TABLE__LEASE_TTL_SECONDS": "1",                   # a heartbeat every 0.2 s
        "PAIJU_TABLE__INSTANCE": "table-more"})
    table = await start_table(cfg, port=0, metrics_port=-1)
    core = next(hook.__self__ for hook in table.on_stop  # type: ignore[attr-defined]
                if isinstance(getattr(hook, "__self__", None), TableCore))
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{table.port}")
    link = LobbyLink(f"127.0.0.1:{table.port}", fresh_nats.url)
    nc = await nats.connect(fresh_nats.url)
    yield {"nats": fresh_nats, "stub": table_pb2_grpc.TableStub(channel), "link": link,
           "core": core, "js": nc.jetstream(), "address": core.address}
    await nc.close()
    await link.close()
    await channel.close()
    await table.stop(0)


class Broken:
    """Wraps a NATS object (JetStream context, KV bucket): the named methods fail with a
    timeout while ``broken`` is set (a NATS hiccup), or with ``hang`` never answer (an
    answer lost as a connection moves); everything else passes through."""

    def __init__(self, inner: Any, methods: tuple[str, ...],
                 only: Callable[[tuple[Any, ...]], bool] = lambda args: True,
                 hang: bool = False) -> None:
        self.inner, self.methods, self.only, self.hang = inner, methods, only, hang
        self.broken = True
        self.failures = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in self.methods:
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.broken and self.only(args):
                self.failures += 1
                if self.hang:
                    await asyncio.Event().wait()
                raise nats.errors.TimeoutError
            return await attr(*args, **kwargs)
        return call


async def entry(kv: Any, key: str) -> dict[str, Any] | None:
    try:
        got = await kv.get(key)
    except Exception:  # no such key, or deleted
        return None
    return json.loads(got.value) if got.value else None


async def seated(stack: dict[str, Any], game: int = common_pb2.XUEZHAN, hands: int = 4,
                 uids: tuple[int, ...] = (11, 12, 13, 14)) -> Table:
    reply = await stack["stub"].CreateRoom(table_pb2.CreateRoomRequest(
        game=game, base_score=1, total_hands=hands))
    t = Table(stack["nats"].url, stack["link"], reply.room.room_id, "xuezhan")
    await t.connect()
    for uid in uids:
        player, joined = await t.seat(uid)
        player.auto = False
        assert joined.code == 0, joined.message
    return t


async def dismiss(t: Table) -> None:
    link, first = t.link, t.players[0].user_id
    assert (await link.send(t.room_id, first, frames.client_frame(lm.AskDismiss()))).code == 0
    for p in t.players[1:3]:
        vote = await link.send(t.room_id, p.user_id,
                               frames.client_frame(lm.ReportDismiss(agree=True)))
        assert vote.code == 0, vote.message


async def test_a_closed_room_log_is_purged_only_after_its_final_settlement(
        stack: dict[str, Any]) -> None:
    core, js = stack["core"], stack["js"]
    t = await seated(stack)
    await t.ready_all()  # hand 1 starts: closing now owes a final settlement
    assert await log_count(js, t.room_id) > 0
    settle = Broken(core.settlements.js, ("publish",),
                    only=lambda args: str(args[0]).startswith("settle."))
    core.settlements.js = settle
    await dismiss(t)
    assert settle.failures and any(m.room_id == t.room_id for m in core.settlements.unsent)
    # the settlement is not out yet, so the log stays (with the room gone from the directory)
    assert await log_count(js, t.room_id) > 0
    assert await entry(await js.key_value(bus.ROOMS_BUCKET), str(t.room_id)) is None
    settle.broken = False  # the heartbeat publishes the settlement, then purges the log

    async def purged() -> bool:
        return await log_count(js, t.room_id) == 0

    await eventually(purged)
    final = await js.get_last_msg(bus.SETTLE_STREAM, bus.SETTLE_SUBJECT)
    msg = json.loads(final.data)
    assert msg["final"] and msg["room_id"] == t.room_id and msg["hands_played"] == 0
    assert not core.rooms.in_state(RoomState.CLOSED)
    await t.close()


async def test_a_dismissed_room_leaves_no_log(stack: dict[str, Any]) -> None:
    js = stack["js"]
    t = await seated(stack)
    assert await log_count(js, t.room_id) > 0
    await dismiss(t)

    async def purged() -> bool:
        return await log_count(js, t.room_id) == 0

    await eventually(purged)
    await t.close()


async def test_a_purge_that_fails_is_retried(stack: dict[str, Any]) -> None:
    core, js = stack["core"], stack["js"]
    t = await seated(stack)  # no hand played: no settlement to wait for
    purge = Broken(core.log.js, ("purge_stream",))
    core.log.js = purge
    await dismiss(t)
    assert purge.failures and core.rooms.state(t.room_id) is RoomState.CLOSED
    assert await log_count(js, t.room_id) > 0
    gone = await t.link.send(t.room_id, 11, frames.client_frame(lm.AskReady(is_ready=True)))
    assert gone.code == common_pb2.ERR_NO_SUCH_ROOM  # closing was not held up
    purge.broken = False

    async def purged() -> bool:
        return await log_count(js, t.room_id) == 0

    await eventually(purged)
    assert not core.rooms.in_state(RoomState.CLOSED)
    await t.close()


async def test_directory_writes_that_fail_are_retried(stack: dict[str, Any]) -> None:
    core, js = stack["core"], stack["js"]
    rooms_kv = await js.key_value(bus.ROOMS_BUCKET)
    seats_kv = await js.key_value(bus.SEATS_BUCKET)
    t = await seated(stack, uids=())
    seats = Broken(core.directory.kv_seats, ("put",))
    rooms = Broken(core.directory.kv_rooms, ("update",))
    core.directory.kv_seats, core.directory.kv_rooms = seats, rooms
    player, joined = await t.seat(21)
    assert joined.code == 0 and joined.seat == 0  # the join itself is not refused
    assert seats.failures and rooms.failures
    assert await entry(seats_kv, "21") is None
    before = await entry(rooms_kv, str(t.room_id))
    assert before is not None and before["free_seats"] == 4  # stale for now
    assert (bus.SEATS_BUCKET, "21") in core.directory.pending
    seats.broken = rooms.broken = False

    async def written() -> bool:
        seat, room = await entry(seats_kv, "21"), await entry(rooms_kv, str(t.room_id))
        return (seat is not None and seat["room_id"] == t.room_id and seat["seat"] == 0
                and room is not None and room["free_seats"] == 3)

    await eventually(written)
    assert not core.directory.pending
    await t.close()


async def test_a_directory_write_never_answered_holds_the_room_for_one_try(
        stack: dict[str, Any]) -> None:
    """A write of the room's entry whose answer never comes (lost as the table's connection
    moves off a lame-duck server) holds the room's next command for one try at most, not
    the client's 5 s; the heartbeat writes the entry once NATS answers again."""
    core = stack["core"]
    t = await seated(stack, uids=(61, 62))
    kv_rooms = core.directory.kv_rooms
    hung = Broken(kv_rooms, ("update", "get"), hang=True)
    core.directory.kv_rooms = hung
    try:
        _, joined = await t.seat(63)       # a third player: the room's entry changes
        assert joined.code == 0, joined.message
        # the room's task is not stuck behind that write: the next command is answered
        ready = await t.link.send(t.room_id, 61, frames.client_frame(lm.AskReady(is_ready=True)),
                                  timeout=3 * directory.WRITE_TRY_SECONDS + 1)
        assert ready.code == 0, ready.message
        assert hung.failures >= 1 and core.directory.holds(t.room_id)
    finally:
        core.directory.kv_rooms = kv_rooms
    await eventually(lambda: not core.directory.holds(t.room_id), "the entry never written")
    await t.close()


async def test_a_snapshot_for_a_user_who_left_clears_his_stale_seat_entry(
        stack: dict[str, Any]) -> None:
    """A login resumes the seat its entry names, but the user had left the room and the clear
    of his entry was lost (dropped with a room handed away, or with a table that died before
    its retry): the table answers "not in this room" and clears the entry, which would keep
    him out of every other room (the lobby refuses a create or a join while it names a
    room). An entry naming another room is not touched."""
    core, js = stack["core"], stack["js"]
    seats_kv = await js.key_value(bus.SEATS_BUCKET)
    t = await seated(stack, uids=(21, 22))
    left = await t.link.send(t.room_id, 21, frames.client_frame(lm.AskExit()))
    assert left.code == 0, left.message

    async def cleared() -> bool:
        return await entry(seats_kv, "21") is None

    await eventually(cleared)
    stale = SeatEntry(room_id=t.room_id, owner=core.instance, address=stack["address"], seat=0)
    await seats_kv.put("21", stale.encode())                   # the lost clear, undone
    elsewhere = SeatEntry(room_id=t.room_id + 1, owner="table-x", address="10.0.0.9:1", seat=2)
    await seats_kv.put("23", elsewhere.encode())               # a user seated in another room
    for uid in (21, 23):
        answer = await t.link.send(t.room_id, uid, kind="snapshot")
        assert answer.code == common_pb2.ERR_NOT_IN_ROOM, answer
    seated_one = await t.link.send(t.room_id, 22, kind="snapshot")
    assert seated_one.code == 0 and seated_one.seat == 1, seated_one
    await eventually(cleared)

    async def written() -> bool:
        return not core.directory.pending and not core.directory._busy

    await eventually(written)    # the clears asked are done: 23's entry was read, and kept
    assert (await entry(seats_kv, "23") or {}).get("room_id") == t.room_id + 1
    assert (await entry(seats_kv, "22") or {}).get("room_id") == t.room_id   # still seated
    # a write of the entry still to be made (a join elsewhere whose put failed, say) is newer
    # than what the repair saw: the repair leaves it in place
    newer = KvWrite("put", t.room_id + 5, SeatEntry(room_id=t.room_id + 5, owner=core.instance,
                                                    address=stack["address"], seat=0).encode())
    core.directory.pending[(bus.SEATS_BUCKET, "24")] = newer
    await core.directory.clear_stale_seat(t.room_id, 24)
    assert core.directory.pending[(bus.SEATS_BUCKET, "24")] is newer
    del core.directory.pending[(bus.SEATS_BUCKET, "24")]
    await t.close()


async def one_command(nats_url: str, address: str,
                      cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
    """One command over a NATS connection of its own (as a second lobby replica would send)."""
    nc = await nats.connect(nats_url)
    try:
        msg = await nc.request(bus.table_commands(address), cmd.SerializeToString(), timeout=10)
    finally:
        await nc.close()
    return table_pb2.TableReply.FromString(msg.data)


async def test_a_late_offline_from_a_replaced_session_keeps_the_seat_online(
        stack: dict[str, Any]) -> None:
    stub = stack["stub"]
    t = await seated(stack)
    await t.ready_all()  # in a hand: an offline seat is entrusted

    async def send(kind: str, session: str, at: float) -> None:
        reply = await one_command(stack["nats"].url, stack["address"], table_pb2.TableCommand(
            request_id=1, room_id=t.room_id, user_id=11, kind=kind, session_id=session,
            login_at=at))
        assert reply.code == 0, reply.message

    async def seat_11() -> Any:
        room = await stub.GetRoom(table_pb2.GetRoomRequest(room_id=t.room_id))
        return next(p for p in room.players if p.user_id == 11)

    await send("online", "replica-a", 1000.0)
    await send("online", "replica-b", 2000.0)   # the user reconnected to another replica
    await send("offline", "replica-a", 1000.0)  # the first replica tears down the old session
    now = await seat_11()
    assert now.online and not now.entrusted
    await send("offline", "replica-b", 2000.0)  # the live session going away does count
    now = await seat_11()
    assert not now.online and now.entrusted
    await t.close()
