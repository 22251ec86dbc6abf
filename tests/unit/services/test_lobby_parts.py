"""Lobby building blocks without I/O: the bounded outbox, the chat rate limiter, the room
cache (list, started count, quick-start pick, no password or IP leaks), peer parsing."""

from __future__ import annotations

import asyncio
import json

from google.protobuf import json_format

from games import registry
from paiju.contracts.directory import RoomEntry
from paiju.frames import server_frame
from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.lobby.forwarding import Forwarder
from services.lobby.limits import RateLimiter
from services.lobby.rooms import RoomCache, parse_room_value
from services.lobby.sessions import Outbox, Session


def beat(n: int):  # type: ignore[no-untyped-def]
    return server_frame(lobby_msgs_pb2.HeartBeat(client_time_ms=n))


async def test_outbox_delivers_in_order_then_ends_after_close() -> None:
    box = Outbox(limit=3)
    assert all(box.push(beat(i)) for i in range(3))
    box.close()
    assert not box.push(beat(9))
    got = [(await box.next()) for _ in range(4)]
    assert [f.heartbeat.client_time_ms for f in got[:3]] == [0, 1, 2]
    assert got[3] is None


async def test_outbox_is_bounded_but_final_frames_pass() -> None:
    box = Outbox(limit=2)
    assert box.push(beat(1)) and box.push(beat(2))
    assert not box.push(beat(3))
    assert box.push(beat(4), final=True)
    assert len(box) == 3


async def test_outbox_next_waits_for_a_push() -> None:
    box = Outbox()
    waiter = asyncio.create_task(box.next())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    box.push(beat(7))
    assert (await asyncio.wait_for(waiter, 1)).heartbeat.client_time_ms == 7


async def test_full_session_queue_disconnects_the_client_and_cancels_its_stream() -> None:
    stream = asyncio.create_task(asyncio.sleep(30))
    session = Session(outbox=Outbox(limit=1))
    session.task = stream
    assert session.send(beat(1))
    assert not session.send(beat(2))
    assert session.outbox.closed and len(session.outbox) == 0
    await asyncio.sleep(0)
    assert stream.cancelled()


def test_session_numbers_its_frames_one_by_one() -> None:
    session = Session()
    assert [session.next_seq() for _ in range(3)] == [1, 2, 3]


def test_rate_limiter_sliding_window() -> None:
    limiter = RateLimiter(2, window=60)
    assert limiter.allow(1, now=0) and limiter.allow(1, now=10)
    assert not limiter.allow(1, now=20)
    assert limiter.allow(2, now=20)          # per key
    assert limiter.allow(1, now=60.5)        # the first one left the window
    assert not limiter.allow(1, now=61)


def room_value(room_id: int, *, game: int = common_pb2.XUEZHAN, players: int = 1,
               status: int = common_pb2.ROOM_WAITING, password: str = "",
               address: str = "t:1") -> bytes:
    info = common_pb2.RoomInfo(room_id=room_id, game=game, status=status,
                               has_password=bool(password))
    for seat in range(players):
        info.players.add(user_id=100 + seat, seat=seat, ip="10.0.0.9")
    room = json_format.MessageToDict(info, preserving_proto_field_name=True)
    if password:
        room["password"] = password  # a careless table: must still never reach a client
    return RoomEntry(room_id=room_id, owner="t", address=address,
                     game=registry.by_type(game).name, status=status, free_seats=4 - players,
                     has_password=bool(password), room=room).encode()


def test_room_list_drops_passwords_and_ips_and_counts_started() -> None:
    cache = RoomCache()
    cache.apply_kv("100001", room_value(100001, password="hunter2"), False)
    cache.apply_kv("100002", room_value(100002, status=common_pb2.ROOM_PLAYING, players=4), False)
    cache.apply_kv("100003", room_value(100003, game=common_pb2.DADUN), False)
    listed = cache.room_list()
    assert [r.room_id for r in listed.items] == [100001, 100002, 100003]
    assert listed.started_room_num == 1
    assert listed.items[0].has_password
    assert b"hunter2" not in listed.SerializeToString()
    assert all(not p.ip for r in listed.items for p in r.players)
    assert [r.room_id for r in cache.room_list(common_pb2.DADUN).items] == [100003]


def test_room_removed_on_delete_and_listed_no_more_once_finished() -> None:
    cache = RoomCache()
    cache.apply_kv("1", room_value(1), False)
    cache.apply_kv("2", room_value(2), False)
    cache.apply_kv("1", None, True)
    cache.apply_kv("2", room_value(2, status=common_pb2.ROOM_FINISHED), False)
    assert cache.get(1) is None and cache.room_list().items == []


def test_room_changes_are_derived_from_the_bucket_entries() -> None:
    """docs/ordered-events.md: new key CREATED, status moved to playing STARTED, key
    deleted or status finished DISMISSED, any other change UPDATED, no change nothing."""
    reason = lobby_msgs_pb2.RoomChange
    cache = RoomCache()

    def change(key: str, value: bytes | None) -> int | None:
        out = cache.apply_kv(key, value, value is None)
        assert out is None or (out.room.room_id == int(key)
                               and not any(p.ip for p in out.room.players))
        return None if out is None else out.reason

    assert change("7", room_value(7)) == reason.CREATED
    assert change("7", room_value(7)) is None                        # the same entry again
    assert change("7", room_value(7, players=2)) == reason.UPDATED
    assert change("7", room_value(7, players=4, status=common_pb2.ROOM_PLAYING)) \
        == reason.STARTED
    assert change("7", room_value(7, players=4, status=common_pb2.ROOM_HAND_OVER)) \
        == reason.UPDATED
    assert change("7", room_value(7, players=4, status=common_pb2.ROOM_PLAYING)) \
        == reason.STARTED
    assert change("7", room_value(7, players=4, status=common_pb2.ROOM_FINISHED)) \
        == reason.DISMISSED
    assert change("8", room_value(8)) == reason.CREATED
    assert change("8", None) == reason.DISMISSED
    assert change("8", None) is None                                 # nothing left to dismiss


def test_quick_pick_prefers_fullest_waiting_public_room_of_the_game() -> None:
    cache = RoomCache()
    cache.apply_kv("1", room_value(1, players=1), False)
    cache.apply_kv("2", room_value(2, players=3), False)
    cache.apply_kv("3", room_value(3, players=3, password="x"), False)
    cache.apply_kv("4", room_value(4, players=4), False)
    cache.apply_kv("5", room_value(5, players=2, status=common_pb2.ROOM_PLAYING), False)
    cache.apply_kv("6", room_value(6, players=3, game=common_pb2.CHANGSHA), False)
    assert cache.quick_pick(common_pb2.XUEZHAN).room_id == 2
    assert cache.quick_pick(common_pb2.XUEZHAN, frozenset({2})).room_id == 1
    assert cache.quick_pick(common_pb2.DADUN) is None


def test_bad_room_values_are_ignored() -> None:
    assert parse_room_value(b"not json") is None
    assert parse_room_value(b"[1]") is None
    assert parse_room_value(json.dumps({"room_id": 0}).encode()) is None   # fields missing
    assert parse_room_value(room_value(0)) is None
    assert parse_room_value(room_value(5).replace(b'"status":0', b'"status":"0"')) is None
    cache = RoomCache()
    cache.apply_kv("9", b"{", False)
    assert len(cache) == 0




async def test_a_moving_rooms_pause_ends_at_once_for_a_table_the_watch_names_already() -> None:
    """Between tries of a command to a moving room: a table the watch already names and
    this command has not tried is asked at once (its claim came in while the owner was
    read, or the read was of a replica behind); one it has tried waits the pause out, or
    the watch's next move."""
    cache = RoomCache()
    forwarder = Forwarder(None, cache)  # type: ignore[arg-type]   # no directory read here
    cache.apply_kv("100001", room_value(100001, address="heir:1"), False)
    assert await asyncio.wait_for(
        forwarder._moved_or(100001, "dead:1", 60.0, {"dead:1"}), 1) == "heir:1"
    # the heir was tried too (it answered "being rebuilt"): the pause, cut short by a move
    waiting = asyncio.ensure_future(forwarder._moved_or(100001, "heir:1", 60.0,
                                                        {"dead:1", "heir:1"}))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    cache.apply_kv("100001", room_value(100001, address="third:1"), False)
    assert await asyncio.wait_for(waiting, 1) == "third:1"
    assert not cache._leaving
    assert await forwarder._moved_or(100001, "third:1", 0.05, {"third:1"}) == ""
