"""Profile reads of concurrent logins coalesced into one records call
(services/lobby/records_client.py, ProfileBatcher): one GetPlayers answers a loop turn's
reads, each read keeps the outcome one GetPlayer would have given it, and a records of the
last release (no GetPlayers: UNIMPLEMENTED) is read one profile at a time again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from paiju.v1 import common_pb2, lobby_msgs_pb2, records_pb2_grpc
from services.lobby import records_client, tokens
from services.lobby.errors import Reject
from services.lobby.records_client import RecordsClient
from tests.support.lobbyworld import SECRET, E, FakeRecords, World, code_of


@dataclass
class Records:
    fake: FakeRecords
    client: RecordsClient

    def names(self) -> list[str]:
        return [name for name, _ in self.fake.calls]


@pytest.fixture
async def records() -> AsyncIterator[Records]:
    fake = FakeRecords()
    server = grpc.aio.server()
    records_pb2_grpc.add_RecordsServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    client = RecordsClient(f"127.0.0.1:{port}", timeout=3)
    try:
        yield Records(fake, client)
    finally:
        await client.close()
        await server.stop(0)


async def read_all(client: RecordsClient, uids: list[int]) -> list[object]:
    """Concurrent profile reads (as concurrent logins make them): each profile or error."""
    return await asyncio.gather(*(client.profile(uid, "", create=False) for uid in uids),
                                return_exceptions=True)


async def test_concurrent_reads_are_one_get_players_call(records: Records) -> None:
    uids = list(range(1, 51))
    got = await read_all(records.client, [*uids, 7])     # 7 twice: asked once
    assert [p.user_id for p in got] == [*uids, 7]         # type: ignore[attr-defined]
    assert records.names() == ["GetPlayers"]
    assert list(records.fake.calls[0][1].user_ids) == uids
    assert got[6].nickname == "p7"                         # type: ignore[attr-defined]


async def test_a_full_batch_goes_at_once_and_the_rest_in_another(
        records: Records, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records_client, "MAX_BATCH", 4)
    got = await read_all(records.client, list(range(1, 11)))
    assert [p.user_id for p in got] == list(range(1, 11))   # type: ignore[attr-defined]
    assert sorted(list(req.user_ids) for _, req in records.fake.calls) == [
        [1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]


async def test_a_missing_profile_refuses_that_login_only(records: Records) -> None:
    records.fake.unknown = {3}
    got = await read_all(records.client, [1, 2, 3, 4])
    assert isinstance(got[2], Reject) and got[2].code == common_pb2.ERR_BAD_TOKEN
    assert "no player 3" in got[2].message
    assert [p.user_id for p in (got[0], got[1], got[3])] == [1, 2, 4]  # type: ignore[attr-defined]


async def test_an_id_records_refuses_fails_alone(records: Records) -> None:
    got = await read_all(records.client, [1, 0, 2])
    assert isinstance(got[1], Reject) and [got[0].user_id, got[2].user_id] == [1, 2]  # type: ignore[union-attr]
    assert sorted(records.names()) == ["GetPlayer", "GetPlayers"]


async def test_records_down_fails_every_read_of_the_batch_as_one_call_would(
        records: Records) -> None:
    records.fake.down = True
    got = await read_all(records.client, [1, 2, 3])
    assert all(isinstance(g, Reject) and g.code == common_pb2.ERR_UNAVAILABLE for g in got)
    assert len({id(g) for g in got}) == 3                  # an error of its own each
    assert set(records.names()) == {"GetPlayers"}          # (gRPC retried UNAVAILABLE)
    assert {tuple(req.user_ids) for _, req in records.fake.calls} == {(1, 2, 3)}
    records.fake.down = False
    assert (await records.client.profile(2, "", create=False)).user_id == 2


async def test_reads_wait_while_calls_are_out_then_go_together(
        records: Records, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records_client, "MAX_IN_FLIGHT", 1)
    records.fake.players_held = asyncio.Event()
    first = asyncio.create_task(records.client.profile(1, "", create=False))
    while not records.fake.calls:
        await asyncio.sleep(0.01)
    later = [asyncio.create_task(records.client.profile(uid, "", create=False))
             for uid in range(2, 12)]
    for _ in range(5):          # loop turns: the batch waits for the call out
        await asyncio.sleep(0)
    assert len(records.fake.calls) == 1 and len(records.client.profiles.pending) == 10
    records.fake.players_held.set()
    assert (await first).user_id == 1
    assert [(await t).user_id for t in later] == list(range(2, 12))
    assert [list(req.user_ids) for _, req in records.fake.calls] == [[1], list(range(2, 12))]


async def test_a_cancelled_read_leaves_the_others_of_its_batch_alone(records: Records) -> None:
    records.fake.players_held = asyncio.Event()
    reads = [asyncio.create_task(records.client.profile(uid, "", create=False))
             for uid in (1, 2, 3)]
    while not records.fake.calls:
        await asyncio.sleep(0.01)
    reads[1].cancel()
    records.fake.players_held.set()
    assert (await reads[0]).user_id == 1 and (await reads[2]).user_id == 3
    assert reads[1].cancelled()


async def test_a_records_without_get_players_is_read_one_by_one_for_a_while(
        records: Records, monkeypatch: pytest.MonkeyPatch) -> None:
    records.fake.has_get_players = False
    records.fake.unknown = {2}
    got = await read_all(records.client, [1, 2, 3])
    assert got[0].user_id == 1 and got[2].user_id == 3     # type: ignore[union-attr]
    assert isinstance(got[1], Reject) and got[1].code == common_pb2.ERR_BAD_TOKEN
    assert records.names() == ["GetPlayers", "GetPlayer", "GetPlayer", "GetPlayer"]
    records.fake.calls.clear()
    await read_all(records.client, [4, 5])                 # remembered: no GetPlayers
    assert records.names() == ["GetPlayer", "GetPlayer"]
    # once the while is over, GetPlayers is tried again (records may have been upgraded)
    records.fake.has_get_players = True
    records.client.profiles.single_until = 0.0
    records.fake.calls.clear()
    await read_all(records.client, [6, 7])
    assert records.names() == ["GetPlayers"]


async def test_the_dev_path_still_creates_profiles_one_by_one(records: Records) -> None:
    await asyncio.gather(*(records.client.profile(uid, "x", create=True) for uid in (1, 2)))
    assert records.names() == ["EnsurePlayer", "EnsurePlayer"]


async def test_concurrent_logins_on_a_lobby_read_profiles_in_batches(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Logins of a lobby that reads profiles (prod: dev_profiles false) go through
    GetPlayers: the logins that come while a call is out share the next one; a user without
    a profile is refused as before."""
    monkeypatch.setattr(records_client, "MAX_IN_FLIGHT", 1)
    address = await world.lobby(dev_profiles=False)
    batcher = world.lobbies[-1].app.records.profiles
    world.records.unknown = {1020}
    world.records.players_held = asyncio.Event()
    clients = [await world.client(address) for _ in range(20)]
    logins = [asyncio.create_task(
        c.request(lobby_msgs_pb2.Login(token=tokens.mint(1001 + k, SECRET, 60))))
        for k, c in enumerate(clients)]
    for _ in range(500):
        if len(batcher.pending) + sum(len(r.user_ids) for n, r in world.records.calls) == 20:
            break
        await asyncio.sleep(0.01)
    world.records.players_held.set()
    replies = await asyncio.gather(*logins)
    assert [r.login_ok.player.nickname for r in replies[:19]] == [
        f"p{1001 + k}" for k in range(19)]
    assert code_of(replies[19]) == E.ERR_BAD_TOKEN
    asked = [req for name, req in world.records.calls if name == "GetPlayers"]
    assert not [name for name, _ in world.records.calls if name == "GetPlayer"]
    assert 2 <= len(asked) <= 3 < 20
    assert sorted(uid for req in asked for uid in req.user_ids) == list(range(1001, 1021))
