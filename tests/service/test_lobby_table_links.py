"""The lobby's links to tables: the link of a table gone from the ``tables`` bucket is
closed once nothing uses it (no session in one of its rooms, no request in flight), by a
prune the lobby runs on its own; a table that comes back gets a new link. The in-test table
and records of tests/support/lobbyworld.py stand in for the real ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from paiju.v1 import lobby_msgs_pb2
from services.lobby import directory as directory_module
from tests.support.lobbykit import wait_cached
from tests.support.lobbyworld import World, code_of, seated_client, tables_seen
from tests.support.waiting import eventually


def lobby_app(world: World) -> Any:
    return world.lobbies[-1].app


async def test_the_link_of_a_departed_unused_table_is_closed(world: World) -> None:
    address = await world.lobby()
    app = lobby_app(world)
    a = world.table
    b = await world.add_table("table-b")
    c1, room_a = await seated_client(world, address, 221)         # on table a
    c2, room_b = await seated_client(world, address, 222, await b.add_room())
    # the owners come from the room cache, filled asynchronously by the bucket watch
    await wait_cached(app, room_a.room_id, room_b.room_id)
    assert app.directory.addresses == {a.address, b.address}
    # both tables listed: nothing to close
    assert await app.directory.prune(app.table_addresses()) == []

    await world.kv["tables"].delete("table-b")                    # b's entry expired
    await tables_seen(app, "table-a")
    # a session still sits in b's room: b's link stays
    assert app.table_addresses() == {a.address, b.address}
    assert await app.directory.prune(app.table_addresses()) == []
    left = await c2.request(lobby_msgs_pb2.AskExit())
    assert code_of(left) == 0, left
    assert app.table_addresses() == {a.address}
    assert await app.directory.prune(app.table_addresses()) == [b.address]
    assert app.directory.addresses == {a.address}

    # b comes back (say, restarted on the same address): a new link just works
    await b.register()
    joined = await c2.request(lobby_msgs_pb2.JoinRoom(room_id=room_b.room_id))
    assert joined.HasField("room_joined"), joined               # a new link just works
    assert b.address in app.directory.addresses


async def test_a_short_listing_or_a_request_in_flight_keeps_the_link(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    address = await world.lobby()
    app = lobby_app(world)
    await seated_client(world, address, 231)
    a = world.table
    assert await app.directory.prune() == []                      # learns a's instance

    async def short_listing() -> list[dict[str, Any]]:
        return []
    monkeypatch.setattr(app.directory, "live_tables", short_listing)
    assert await app.directory.prune() == []                      # a is asked for directly
    monkeypatch.undo()

    await world.kv["tables"].delete("table-a")
    await tables_seen(app)
    a.hold = True                                                 # a never answers
    link = app.directory.link(a.address)
    pending = asyncio.ensure_future(link.command(directory_module.table_pb2.TableCommand(
        room_id=1, user_id=231, kind="online")))
    await eventually(lambda: not link.idle, seconds=5)
    assert await app.directory.prune() == []                      # busy: kept
    pending.cancel()
    await asyncio.gather(pending, return_exceptions=True)
    assert link.idle
    assert await app.directory.prune() == [a.address]


async def test_the_lobby_prunes_on_its_own(world: World,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(directory_module, "PRUNE_SECONDS", 0.05)
    address = await world.lobby()
    app = lobby_app(world)
    b = await world.add_table("table-b")
    c, _ = await seated_client(world, address, 241, await b.add_room())
    await c.request(lobby_msgs_pb2.AskExit())
    assert b.address in app.directory.addresses
    await world.kv["tables"].delete("table-b")
    await eventually(lambda: b.address not in app.directory.addresses, seconds=5)
