"""Issue 9, defect 3: one player stopped room creation for everyone. Each CreateRoom listed
the ``tables`` bucket with a JetStream consumer of its own that lingered on the server, so a
create loop exhausted NATS's consumer limit; a burst of rooms all went to one table; nothing
limited creates, joins or logins; and every room change was pushed to every idle client.

Against a real lobby (in this process) on a real nats-server, with the in-test table and
records of tests/support/lobbyworld.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nats
import pytest
from google.protobuf import json_format

from paiju.contracts.directory import TableEntry
from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.common import bus
from services.common.natsd import EmbeddedNats, _wait_port, free_port, nats_server_binary
from services.lobby import tokens
from tests.support.lobbyworld import (
    SECRET,
    E,
    FakeTable,
    World,
    code_of,
    open_world,
    tables_seen,
)

XZ = common_pb2.XUEZHAN
NO_LIMITS = {"creates_per_user_per_minute": 0, "creates_per_ip_per_minute": 0,
             "joins_per_user_per_minute": 0, "logins_per_ip_per_minute": 0}
MAX_CONSUMERS = 24   # the account's JetStream consumer limit in the first test


@dataclass
class LimitedNats:
    """A nats-server whose one account may have at most MAX_CONSUMERS JetStream consumers
    (a production account has a limit too; this one is small enough to reach in a test)."""

    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"


@pytest.fixture
def limited_nats(tmp_path: Path) -> Iterator[LimitedNats]:
    port = free_port()
    conf = tmp_path / "nats.conf"
    conf.write_text(f"""
port: {port}
jetstream {{ store_dir: "{tmp_path / 'js'}" }}
accounts {{
  GAME {{
    jetstream {{ max_mem: 64MB, max_file: 256MB, max_streams: 20,
                max_consumers: {MAX_CONSUMERS} }}
    users: [ {{ user: game, password: game }} ]
  }}
}}
no_auth_user: game
""", encoding="utf-8")
    proc = subprocess.Popen([nats_server_binary(), "-c", str(conf), "-a", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        _wait_port("127.0.0.1", port, 10, proc)
        yield LimitedNats(port, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def tables_consumers(w: World) -> int:
    info = await w.nc.jetstream().stream_info(f"KV_{bus.TABLES_BUCKET}")
    return int(info.state.consumer_count)


async def test_a_create_and_leave_loop_leaves_room_creation_working_for_everyone(
        limited_nats: LimitedNats) -> None:
    async with open_world(limited_nats) as w:   # type: ignore[arg-type] - has .url
        address = await w.lobby(**NO_LIMITS)    # the limits are another defence: off here
        attacker = await w.client(address)
        await attacker.login(3001)
        for n in range(2 * MAX_CONSUMERS):      # bounded: twice the server's consumer limit
            created = await attacker.request(lobby_msgs_pb2.CreateRoom(game=XZ))
            assert created.WhichOneof("payload") == "room_joined", (n, created)
            assert code_of(await attacker.request(lobby_msgs_pb2.AskExit())) == 0
        assert len(w.table.created) == 2 * MAX_CONSUMERS
        # one watch of the tables bucket, however many rooms were created
        assert await tables_consumers(w) <= 1
        # and anyone else still creates a room
        other = await w.client(address)
        await other.login(3002)
        created = await other.request(lobby_msgs_pb2.CreateRoom(game=XZ))
        assert created.WhichOneof("payload") == "room_joined", created


async def test_a_burst_of_rooms_spreads_over_equally_loaded_tables(world: World) -> None:
    b = await world.add_table("table-b")
    c = await world.add_table("table-c")
    address = await world.lobby(**NO_LIMITS)
    await tables_seen(world.lobbies[-1].app, "table-a", "table-b", "table-c")
    # nine creators at once; no table rewrites its entry meanwhile (its "rooms" stays 0)
    clients = [await world.client(address) for _ in range(9)]
    for i, client in enumerate(clients):
        await client.login(3100 + i)
    replies = await asyncio.gather(*(client.request(lobby_msgs_pb2.CreateRoom(game=XZ))
                                     for client in clients))
    assert all(r.WhichOneof("payload") == "room_joined" for r in replies)
    assert sorted(len(t.created) for t in (world.table, b, c)) == [3, 3, 3]
    # a fresh entry replaces what the lobby counted: a table now saying it has many rooms
    # gets none of the next ones
    await world.table.register(rooms=50)
    await b.register(rooms=50)
    await c.register(rooms=0)

    async def heard() -> None:
        while world.lobbies[-1].app.directory.table_cache.load(TableEntry(
                instance="table-a", address="", rooms=50, players=0, started_at=0.0,
                draining=False)) != 50:
            await asyncio.sleep(0.02)
    await asyncio.wait_for(heard(), 10)
    before = len(c.created)
    for client in clients[:3]:
        assert code_of(await client.request(lobby_msgs_pb2.AskExit())) == 0
        again = await client.request(lobby_msgs_pb2.CreateRoom(game=XZ))
        assert again.WhichOneof("payload") == "room_joined", again
    assert len(c.created) == before + 3


async def test_creates_joins_and_logins_are_limited_per_user_and_per_address(
        world: World) -> None:
    address = await world.lobby(creates_per_user_per_minute=3, creates_per_ip_per_minute=5,
                                joins_per_user_per_minute=4, logins_per_ip_per_minute=8)
    a = await world.client(address)
    await a.login(3201)                                           # login 1 from 127.0.0.1
    for _ in range(3):
        created = await a.request(lobby_msgs_pb2.CreateRoom(game=XZ))
        assert created.WhichOneof("payload") == "room_joined", created
        assert code_of(await a.request(lobby_msgs_pb2.AskExit())) == 0
    refused = await a.request(lobby_msgs_pb2.CreateRoom(game=XZ))
    assert code_of(refused) == E.ERR_RATE_LIMITED
    assert "rooms created: at most 3 a minute; try again in" in refused.ret.message
    assert len(world.table.created) == 3                          # nothing reached a table

    b = await world.client(address)
    await b.login(3202)                                           # login 2, same address
    for _ in range(2):
        created = await b.request(lobby_msgs_pb2.CreateRoom(game=XZ))
        assert created.WhichOneof("payload") == "room_joined", created
        assert code_of(await b.request(lobby_msgs_pb2.AskExit())) == 0
    from_ip = await b.request(lobby_msgs_pb2.CreateRoom(game=XZ))   # the sixth from this IP
    assert code_of(from_ip) == E.ERR_RATE_LIMITED
    assert "rooms created from your address: at most 5" in from_ip.ret.message
    assert len(world.table.created) == 5

    # joins, by id and quick start alike: four a minute
    room = await world.table.add_room()
    joiner = await world.client(address)
    await joiner.login(3203)                                      # login 3
    for _ in range(3):
        joined = await joiner.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
        assert joined.WhichOneof("payload") == "room_joined", joined
        assert code_of(await joiner.request(lobby_msgs_pb2.AskExit())) == 0
    quick = await joiner.request(lobby_msgs_pb2.JoinRoom(game=XZ))
    assert quick.WhichOneof("payload") == "room_joined", quick
    assert code_of(await joiner.request(lobby_msgs_pb2.AskExit())) == 0
    refused = await joiner.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
    assert code_of(refused) == E.ERR_RATE_LIMITED
    assert "room joins: at most 4 a minute" in refused.ret.message
    refused = await joiner.request(lobby_msgs_pb2.JoinRoom(game=XZ))
    assert code_of(refused) == E.ERR_RATE_LIMITED

    # logins from one address: eight a minute, the ninth is told and closed
    for uid in range(3204, 3209):                                 # logins 4..8
        c = await world.client(address)
        await c.login(uid)
    late = await world.client(address)
    reply = await late.request(lobby_msgs_pb2.Login(token=tokens.mint(3209, SECRET, 600)))
    assert code_of(reply) == E.ERR_RATE_LIMITED
    assert "login attempts from your address: at most 8 a minute" in reply.ret.message
    assert await late.closed()


async def test_room_changes_are_coalesced_per_room_for_idle_clients(world: World) -> None:
    address = await world.lobby(room_change_seconds=1.0)
    idle = await world.client(address)
    await idle.login(3301)
    busy, quiet = await world.table.add_room(), await world.table.add_room()
    created = set()
    while created != {busy.room_id, quiet.room_id}:     # each room's creation, at once
        frame = await idle.until(lambda f: f.HasField("room_change"))
        assert frame.room_change.reason == lobby_msgs_pb2.RoomChange.CREATED
        created.add(frame.room_change.room.room_id)
    await asyncio.sleep(1.1)                            # the next change of each is due now
    # a create/leave loop, as the rooms bucket shows it: 40 changes of one room in about
    # half a second, and one change of another room
    started = time.monotonic()
    for n in range(40):
        busy.seats = [3302 + n % 2, 0, 0, 0]
        value = json.loads((await world.kv["rooms"].get(str(busy.room_id))).value)
        value["room"] = json_format.MessageToDict(busy.info(), preserving_proto_field_name=True)
        value["room"]["total_hands"] = n + 1
        await world.kv["rooms"].put(str(busy.room_id), json.dumps(value).encode())
        await asyncio.sleep(0.01)
    await world.kv["rooms"].delete(str(quiet.room_id))
    assert time.monotonic() - started < 1.0
    changes = []
    with contextlib.suppress(TimeoutError):
        while True:    # everything that arrives in the next 2.5 s (bounded)
            frame = await idle.recv(timeout=2.5)
            if frame is not None and frame.HasField("room_change"):
                changes.append(frame.room_change)
    of_busy = [c.room.total_hands for c in changes if c.room.room_id == busy.room_id]
    # the first at once, then the latest state at the end of the second: not 40
    assert of_busy == [1, 40]
    assert [c.reason for c in changes if c.room.room_id == quiet.room_id] == \
        [lobby_msgs_pb2.RoomChange.DISMISSED]


def test_the_room_change_coalescer_is_bounded() -> None:
    """Unit check of the state kept and of the sends: an interval's changes go out together,
    one per room, the latest; nothing is kept once they are out (a loop over new room ids
    does not grow it for ever)."""
    from services.lobby.room_changes import RoomChanges

    async def run() -> int:
        sent: list[list[tuple[int, int]]] = []
        coalescer = RoomChanges(0.05, lambda changes: sent.append(
            [(c.room.room_id, c.room.total_hands) for c in changes]))

        def offer(room_id: int, hands: int) -> None:
            coalescer.offer(lobby_msgs_pb2.RoomChange(
                room=common_pb2.RoomInfo(room_id=room_id, total_hands=hands)))

        for room_id in range(1, 201):
            offer(room_id, 1)
            offer(room_id, 2)                # a second change of the same room: it wins
        assert sent == [[(1, 1)]]            # the first of a quiet moment, at once
        assert len(coalescer) == 200
        await asyncio.sleep(0.2)
        assert sent[1] == [(room_id, 2) for room_id in range(1, 201)]   # one send, one each
        assert len(coalescer) == 0
        offer(999, 1)                        # quiet again: at once
        assert sent[2:] == [[(999, 1)]]
        coalescer.close()
        return len(coalescer)

    assert asyncio.run(run()) == 0


async def test_a_dead_table_in_the_directory_is_skipped(world: World) -> None:
    """A table that died within its lease (its entry still there) costs no create: the
    lobby tries the next table at once and does not pick the dead one again."""
    dead = FakeTable("table-dead", world.kv)
    dead.address = f"127.0.0.1:{free_port()}"     # nobody listens there
    await dead.register(rooms=0)
    await world.table.register(rooms=9)
    address = await world.lobby(**NO_LIMITS)
    await tables_seen(world.lobbies[-1].app, "table-a", "table-dead")
    c = await world.client(address)
    await c.login(3401)
    for _ in range(3):
        created = await c.request(lobby_msgs_pb2.CreateRoom(game=XZ))
        assert created.WhichOneof("payload") == "room_joined", created
        assert code_of(await c.request(lobby_msgs_pb2.AskExit())) == 0
    assert len(world.table.created) == 3


async def test_the_lobby_follows_the_tables_bucket_after_nats_restarts(
        fresh_nats: EmbeddedNats) -> None:
    """The table cache is fed by a watch; when NATS goes away and comes back (its consumer
    gone with it), the watch is opened again and new tables are seen."""
    async with open_world(fresh_nats) as w:
        await w.lobby(**NO_LIMITS)
        app = w.lobbies[-1].app
        await tables_seen(app, "table-a")
        fresh_nats.stop()
        await asyncio.sleep(0.5)
        fresh_nats.start()
        nc = await nats.connect(fresh_nats.url)
        try:
            kv = await nc.jetstream().key_value(bus.TABLES_BUCKET)
            late = FakeTable("table-late", {"tables": kv})
            late.address = "127.0.0.1:1"
            deadline = time.monotonic() + 45           # the watch reopens within 2 leases
            while time.monotonic() < deadline:          # entries rewritten as tables do
                await late.register()
                await w.table.register()
                names = {t.instance for t in app.directory.table_cache.live()}
                if "table-late" in names:
                    break
                await asyncio.sleep(1.0)
            assert "table-late" in {t.instance for t in app.directory.table_cache.live()}
        finally:
            await nc.close()
