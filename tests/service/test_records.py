"""The records service in-process against a real nats-server and a SQLite file: settlements
published on JetStream are written once and served over gRPC; duplicates are acknowledged,
malformed messages terminated, bad requests answered with precise status codes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import grpc
import nats
import pytest
from prometheus_client import REGISTRY

from paiju.contracts.fair import FairRecord
from paiju.v1 import records_pb2, records_pb2_grpc
from services.common.bus import SETTLE_PROMPT, SETTLE_STREAM, SETTLE_SUBJECT, ensure_streams
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.common.server import ServiceHost
from services.records.consumer import DURABLE
from services.records.server import start
from services.records.store import START_COINS
from tests.service.test_records_support import encode, event, final_message, hand_message
from tests.support.waiting import eventually

SEATS = [3001, 3002, 3003, 3004]


def metric(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
async def service(fresh_nats: EmbeddedNats, tmp_path: Path) -> AsyncIterator[ServiceHost]:
    cfg = load_config("test")
    cfg = replace(cfg, nats=replace(cfg.nats, url=fresh_nats.url), records=replace(
        cfg.records, database_url=f"sqlite+aiosqlite:///{tmp_path / 'records.db'}"))
    svc = await start(cfg, port=0, metrics_port=-1)
    yield svc
    await svc.stop(0)


@pytest.fixture
async def stub(service: ServiceHost) -> AsyncIterator[records_pb2_grpc.RecordsStub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        yield records_pb2_grpc.RecordsStub(channel)


@pytest.fixture
async def js(fresh_nats: EmbeddedNats) -> AsyncIterator[nats.js.JetStreamContext]:
    nc = await nats.connect(fresh_nats.url)
    context = nc.jetstream()
    await ensure_streams(context)
    yield context
    await nc.close()


async def publish(js: nats.js.JetStreamContext, message: dict, msg_id: str | None) -> None:
    headers = {"Nats-Msg-Id": msg_id} if msg_id else None
    await js.publish(SETTLE_SUBJECT, encode(message), headers=headers)


async def total_hands(stub: records_pb2_grpc.RecordsStub, room_id: int = 0) -> int:
    return (await stub.ListHands(records_pb2.ListHandsRequest(room_id=room_id))).total


async def test_published_settlements_are_written_and_served(
        service: ServiceHost, stub: records_pb2_grpc.RecordsStub,
        js: nats.js.JetStreamContext) -> None:
    written_before = metric("paiju_records_settlements_written_total")
    hands = {1: [4, -4, 0, 0], 2: [-1, -1, -1, 3], 3: [0, 2, -2, 0]}
    events = [event(0, None, b"pub"), event(1, 1, b"mine"), event(2, 2, b"theirs")]
    for hand_no, deltas in hands.items():
        await publish(js, hand_message(400001, hand_no, SEATS, deltas, events=events),
                      f"400001:{hand_no}")
    await publish(js, final_message(400001, SEATS, [3, -3, -3, 3], 3), "400001:final")

    async def all_written() -> bool:
        return await total_hands(stub, 400001) == 4

    await eventually(all_written, seconds=20)
    history = await stub.GetHistoryScores(records_pb2.HistoryRequest(room_id=400001))
    assert {i.user_id: list(i.scores) for i in history.items} == {
        uid: [hands[h][seat] for h in (1, 2, 3)] for seat, uid in enumerate(SEATS)}
    replay = await stub.GetReplay(records_pb2.ReplayRequest(room_id=400001, hand_no=2,
                                                            user_id=3002))
    assert [c.event_data for c in replay.cells] == [b"pub", b"mine"]
    assert replay.game == "xuezhan" and replay.cells[1].event_id == 9601
    player = await stub.GetPlayer(records_pb2.GetPlayerRequest(user_id=3004))
    assert player.coins == START_COINS + 3 and player.nickname == "p3004"
    assert replay.fair_json == ""   # a hand without a fair deal's record
    assert metric("paiju_records_settlements_written_total") - written_before == 4


async def test_a_fair_deals_record_is_served_with_the_replay(
        service: ServiceHost, stub: records_pb2_grpc.RecordsStub,
        js: nats.js.JetStreamContext) -> None:
    fair = {"fair_version": 1, "room_id": 400055, "hand_no": 1, "commitment": "cd" * 32,
            "server_seed": "ab" * 32, "client_seeds": ["", "0f", "", ""], "hand_seed": "ef" * 32,
            "game": "xuezhan", "options": {"base": 1}, "dealer": 0, "dealer_from_seed": True,
            "wall": ["1m", "2m"], "actions": [{"t": "act", "seat": 0}]}
    message = hand_message(400055, 1, SEATS, [1, -1, 0, 0], events=[event(0, None, b"pub")])
    message["details"]["fair"] = fair
    await publish(js, message, "400055:1")

    async def written() -> bool:
        return await total_hands(stub, 400055) == 1

    await eventually(written, seconds=20)
    replay = await stub.GetReplay(records_pb2.ReplayRequest(room_id=400055, hand_no=1,
                                                            user_id=SEATS[1]))
    assert json.loads(replay.fair_json) == fair
    assert FairRecord.decode(replay.fair_json).hand_seed == "ef" * 32   # the contract's JSON


async def test_duplicates_are_acked_and_malformed_messages_terminated(
        service: ServiceHost, stub: records_pb2_grpc.RecordsStub,
        js: nats.js.JetStreamContext) -> None:
    duplicates = metric("paiju_records_duplicates_ignored_total")
    malformed = metric("paiju_records_malformed_total")
    good = hand_message(400002, 1, SEATS, [1, -1, 0, 0])
    await publish(js, good, None)
    await publish(js, good, None)  # a table retry after the dedupe window
    await js.publish(SETTLE_SUBJECT, b"{not json")
    await publish(js, hand_message(400002, 2, SEATS, [5, 0, 0, 0]), None)  # not zero-sum
    await publish(js, hand_message(400002, 3, SEATS, [0, 0, -7, 7]), None)

    async def settled() -> bool:
        info = await js.consumer_info(SETTLE_STREAM, DURABLE)
        return info.num_pending == 0 and info.num_ack_pending == 0

    await eventually(settled, seconds=20)
    hands = await stub.ListHands(records_pb2.ListHandsRequest(room_id=400002))
    assert [(h.hand_no, list(h.deltas)) for h in hands.hands] == [(1, [1, -1, 0, 0]),
                                                                  (3, [0, 0, -7, 7])]
    assert metric("paiju_records_duplicates_ignored_total") - duplicates == 1
    assert metric("paiju_records_malformed_total") - malformed == 2
    info = await js.consumer_info(SETTLE_STREAM, DURABLE)
    assert info.num_redelivered == 0
    assert info.config.ack_wait == 10 and info.config.filter_subject == "settle.*"


async def test_a_prompt_copy_is_written_at_once_and_its_settle_message_is_a_duplicate(
        service: ServiceHost, stub: records_pb2_grpc.RecordsStub,
        js: nats.js.JetStreamContext, fresh_nats: EmbeddedNats) -> None:
    """The table sends each settlement also on core NATS (services/table/settlements.py):
    records writes that copy without waiting for SETTLE, the SETTLE message is then
    acknowledged as a duplicate; a malformed copy is left to SETTLE (nothing written)."""
    counts = {r: metric("paiju_records_prompt_settlements_total", {"result": r})
              for r in ("written", "duplicate", "failed")}
    duplicates = metric("paiju_records_duplicates_ignored_total")
    written = metric("paiju_records_settlements_written_total")
    message = hand_message(400003, 1, SEATS, [2, -2, 0, 0])
    nc = await nats.connect(fresh_nats.url)
    await nc.publish(SETTLE_PROMPT, encode(message), headers={"Nats-Msg-Id": "400003:1"})
    await nc.publish(SETTLE_PROMPT, b"{not json")

    async def prompt_written() -> bool:
        return await total_hands(stub, 400003) == 1

    await eventually(prompt_written, seconds=20)
    assert metric("paiju_records_settlements_written_total") == written   # no SETTLE yet
    await nc.publish(SETTLE_PROMPT, encode(message))   # a table's retry sends it again
    await nc.close()
    await publish(js, message, "400003:1")

    async def settled() -> bool:
        info = await js.consumer_info(SETTLE_STREAM, DURABLE)
        return info.num_pending == 0 and info.num_ack_pending == 0 and metric(
            "paiju_records_prompt_settlements_total", {"result": "duplicate"}) > counts[
            "duplicate"]

    await eventually(settled, seconds=20)
    assert await total_hands(stub, 400003) == 1
    assert metric("paiju_records_duplicates_ignored_total") - duplicates == 1
    assert metric("paiju_records_settlements_written_total") == written
    assert {r: metric("paiju_records_prompt_settlements_total", {"result": r}) - n
            for r, n in counts.items()} == {"written": 1, "duplicate": 1, "failed": 1}


@pytest.mark.parametrize(("call", "request_", "code"), [
    ("GetHistoryScores", records_pb2.HistoryRequest(room_id=0), "INVALID_ARGUMENT"),
    ("GetHistoryScores", records_pb2.HistoryRequest(room_id=999999), "NOT_FOUND"),
    ("GetReplay", records_pb2.ReplayRequest(room_id=1, hand_no=0), "INVALID_ARGUMENT"),
    ("GetReplay", records_pb2.ReplayRequest(room_id=1, hand_no=1, user_id=-1),
     "INVALID_ARGUMENT"),
    ("GetReplay", records_pb2.ReplayRequest(room_id=1, hand_no=1), "NOT_FOUND"),
    ("EnsurePlayer", records_pb2.EnsurePlayerRequest(user_id=0), "INVALID_ARGUMENT"),
    ("EnsurePlayer", records_pb2.EnsurePlayerRequest(user_id=1, nickname="x" * 65),
     "INVALID_ARGUMENT"),
    ("GetPlayer", records_pb2.GetPlayerRequest(user_id=-5), "INVALID_ARGUMENT"),
    ("GetPlayer", records_pb2.GetPlayerRequest(user_id=31337), "NOT_FOUND"),
    ("GetPlayers", records_pb2.GetPlayersRequest(user_ids=[1, 0]), "INVALID_ARGUMENT"),
    ("GetPlayers", records_pb2.GetPlayersRequest(user_ids=[-3]), "INVALID_ARGUMENT"),
    ("GetPlayers", records_pb2.GetPlayersRequest(user_ids=range(1, 502)), "INVALID_ARGUMENT"),
    ("ListHands", records_pb2.ListHandsRequest(limit=-1), "INVALID_ARGUMENT"),
])
async def test_bad_requests_get_precise_status_codes(
        stub: records_pb2_grpc.RecordsStub, call: str, request_: object, code: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await getattr(stub, call)(request_)
    assert err.value.code().name == code
    assert err.value.details()


async def test_ensure_player_creates_then_returns_the_existing_profile(
        stub: records_pb2_grpc.RecordsStub) -> None:
    request = records_pb2.EnsurePlayerRequest(user_id=5001, nickname="东风", head_url="h", sex=2)
    first = await stub.EnsurePlayer(request)
    second = await stub.EnsurePlayer(records_pb2.EnsurePlayerRequest(user_id=5001,
                                                                     nickname="other"))
    assert (first.created, second.created) == (True, False)
    assert (second.nickname, second.sex, second.coins) == ("东风", 2, START_COINS)
    fetched = await stub.GetPlayer(records_pb2.GetPlayerRequest(user_id=5001))
    assert fetched.nickname == "东风" and not fetched.created


async def test_get_players_answers_the_profiles_found_in_one_call(
        stub: records_pb2_grpc.RecordsStub) -> None:
    for uid in (5101, 5102, 5103):
        await stub.EnsurePlayer(records_pb2.EnsurePlayerRequest(user_id=uid, nickname=f"n{uid}"))
    reply = await stub.GetPlayers(records_pb2.GetPlayersRequest(
        user_ids=[5103, 5101, 31337, 5101]))     # one unknown (left out), one twice
    assert sorted((p.user_id, p.nickname, p.created) for p in reply.players) == [
        (5101, "n5101", False), (5103, "n5103", False)]
    assert reply.players[0] == await stub.GetPlayer(
        records_pb2.GetPlayerRequest(user_id=reply.players[0].user_id))
    assert not (await stub.GetPlayers(records_pb2.GetPlayersRequest())).players
    full = await stub.GetPlayers(records_pb2.GetPlayersRequest(user_ids=range(5001, 5501)))
    assert {p.user_id for p in full.players} == {5101, 5102, 5103}


async def test_consumer_survives_a_nats_restart(
        service: ServiceHost, stub: records_pb2_grpc.RecordsStub,
        fresh_nats: EmbeddedNats) -> None:
    async def publish_one(hand_no: int) -> None:
        nc = await nats.connect(fresh_nats.url)
        context = nc.jetstream()
        await ensure_streams(context)
        await publish(context, hand_message(400003, hand_no, SEATS, [2, 0, 0, -2]), None)
        await nc.close()

    def hands_written(n: int) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return await total_hands(stub, 400003) == n
        return check

    await publish_one(1)
    await eventually(hands_written(1), seconds=20)
    fresh_nats.stop()
    fresh_nats.start()
    await publish_one(2)
    await eventually(hands_written(2), seconds=30)
    player = await stub.GetPlayer(records_pb2.GetPlayerRequest(user_id=3001))
    assert player.coins == START_COINS + 4


async def test_cancelled_calls_never_leave_a_transaction_open(
        service: ServiceHost, stub: records_pb2_grpc.RecordsStub,
        js: nats.js.JetStreamContext) -> None:
    # issue 9, defect 2: logins cancelled while EnsurePlayer is in its transaction (a client
    # gone, a deadline) left SQLite's write lock held: every later settlement failed with
    # "database is locked" until records restarted
    cut = 0
    for i in range(600):   # until 10 calls were cut off midway (bounded)
        if cut >= 10:
            break
        try:
            await stub.EnsurePlayer(records_pb2.EnsurePlayerRequest(
                user_id=5000 + i, nickname=f"new{i}"), timeout=0.0005 + (i % 10) * 0.001)
        except grpc.aio.AioRpcError as exc:
            assert exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            cut += 1
    assert cut >= 10
    await publish(js, hand_message(400077, 1, SEATS, [1, -1, 0, 0]), "400077:1")

    async def written() -> bool:
        return await total_hands(stub, 400077) == 1

    await eventually(written, seconds=15)
    created = await stub.EnsurePlayer(records_pb2.EnsurePlayerRequest(user_id=5999,
                                                                      nickname="after"),
                                      timeout=5)
    assert created.nickname == "after"


async def test_players_see_only_rooms_they_sat_in(
        service: ServiceHost, stub: records_pb2_grpc.RecordsStub,
        js: nats.js.JetStreamContext) -> None:
    events = [event(0, None, b"pub"), event(1, 1, b"mine")]
    await publish(js, hand_message(400088, 1, SEATS, [2, -2, 0, 0], events=events), "400088:1")

    async def written() -> bool:
        return await total_hands(stub, 400088) == 1

    await eventually(written, seconds=20)
    seated, stranger, operator = SEATS[1], 9999, 0
    replay = await stub.GetReplay(records_pb2.ReplayRequest(room_id=400088, hand_no=1,
                                                            user_id=seated))
    assert [c.event_data for c in replay.cells] == [b"pub", b"mine"]
    history = await stub.GetHistoryScores(records_pb2.HistoryRequest(room_id=400088,
                                                                     user_id=seated))
    assert len(history.items) == 4
    for ask in (stub.GetReplay(records_pb2.ReplayRequest(room_id=400088, hand_no=1,
                                                         user_id=stranger)),
                stub.GetHistoryScores(records_pb2.HistoryRequest(room_id=400088,
                                                                 user_id=stranger))):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await ask
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND   # as if it did not exist
    public = await stub.GetReplay(records_pb2.ReplayRequest(room_id=400088, hand_no=1,
                                                            user_id=operator))
    assert [c.event_data for c in public.cells] == [b"pub"]
