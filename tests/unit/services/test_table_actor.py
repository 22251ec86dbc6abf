"""The table's room actor against an in-memory log that can fail: a failed append or a
rebuild must never leave a room stuck (a window nobody resolves, a timer that never fires, a
dismiss vote without a countdown), and entrust ends with the hand."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from games.arbitration import resolve
from paiju import frames
from paiju.v1 import common_pb2, table_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.table.actor import RoomActor, create_record
from services.table.room import Effects, Room
from services.table.server import bot_move

FAST = {"turn_seconds": 0.2, "window_seconds": 0.2, "alone_seconds": 0.2}
SLOW = {"turn_seconds": 30, "window_seconds": 30, "alone_seconds": 30}


class MemoryLog:
    """The room log in memory; ``fail`` makes chosen appends raise (a NATS outage)."""

    def __init__(self, records: list[dict[str, Any]] | None = None) -> None:
        self.records = list(records or [])
        self.fail: Callable[[dict[str, Any]], bool] = lambda rec: False

    async def append(self, room_id: int, index: int, rec: dict[str, Any], last_seq: int) -> int:
        if self.fail(rec):
            raise ConnectionError("simulated JetStream outage")
        self.records.append(rec)
        return len(self.records)


async def no_publish(actor: RoomActor, fx: Effects) -> None:
    return None


async def no_arbiter(window: Any, rules: Any) -> None:
    return None  # the in-process fallback decides


def actor_for(room: Room, log: MemoryLog, timers: dict[str, float], entrust_delay: float = 0.0,
              dismiss_seconds: float = 0.3) -> RoomActor:
    return RoomActor(room, next_index=len(log.records), log_seq=len(log.records),
                     append=log.append, publish=no_publish, arbiter=no_arbiter, bots=bot_move,
                     timers=timers, dismiss_seconds=dismiss_seconds, idle_seconds=100,
                     entrust_delay=entrust_delay)


def command(uid: int, payload: Any) -> table_pb2.TableCommand:
    cmd = table_pb2.TableCommand(room_id=1234567, user_id=uid, frame=frames.client_frame(payload))
    cmd.profile.coins, cmd.profile.nickname = 100_000, f"u{uid}"
    return cmd


async def seated_room(timers: dict[str, float], game: int = common_pb2.XUEZHAN,
                      **kw: Any) -> tuple[Room, RoomActor, MemoryLog]:
    log = MemoryLog()
    name = {common_pb2.XUEZHAN: "xuezhan", common_pb2.DADUN: "dadun"}[game]
    rec = create_record(1234567, table_pb2.CreateRoomRequest(game=game, total_hands=4), name, {}, 3)
    room = Room({**rec, "first_dealer": 0})
    actor = actor_for(room, log, timers, **kw)
    await actor.record(rec)
    actor.start()
    for uid in (1, 2, 3, 4):
        assert (await actor.submit("command", command(uid, lm.JoinRoom(room_id=1234567)))).code == 0
    return room, actor, log


def rebuilt(log: MemoryLog, timers: dict[str, float], **kw: Any) -> tuple[Room, RoomActor]:
    room = Room({**log.records[0], "first_dealer": 0})
    for rec in log.records:
        room.apply(rec, Effects())
    actor = actor_for(room, MemoryLog(log.records), timers, **kw)
    actor.start()
    return room, actor


async def eventually(test: Callable[[], bool], seconds: float = 10.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if test():
            return True
        await asyncio.sleep(0.05)
    return test()


async def ready_all(actor: RoomActor) -> None:
    for uid in (1, 2, 3, 4):
        await actor.submit("command", command(uid, lm.AskReady(is_ready=True)))


async def test_a_window_whose_resolve_append_failed_is_resolved_later_and_after_a_rebuild() -> None:
    room, actor, log = await seated_room(SLOW, entrust_delay=0.01)
    failed = asyncio.Event()

    def fail_first_resolve(rec: dict[str, Any]) -> bool:
        if rec["t"] == "resolve" and not failed.is_set():
            failed.set()
            return True
        return False

    log.fail = fail_first_resolve
    await ready_all(actor)
    for seat in range(4):  # bots play every seat
        await actor.record({"t": "entrust", "seat": seat, "reason": "exit"})
    actor.inbox.put_nowait(("tick", None, None))
    assert await eventually(failed.is_set, 30)
    # live: the automation retries and the hand goes on
    assert await eventually(lambda: any(r["t"] == "resolve" for r in log.records), 10)
    await actor.stop()
    # a rebuild of a log that ends with a final set of answers but no decision decides it
    # too (the answers may be all of them, or fewer when the early final answer applies)
    cut = max(i for i, r in enumerate(log.records) if r["t"] == "resolve")
    stuck = MemoryLog(log.records[:cut])
    room2, actor2 = rebuilt(stuck, SLOW, entrust_delay=0.01)
    window = room2.pending_window()
    assert window is not None and resolve(window, room2.arbitration_rules()).final
    assert await eventually(lambda: room2.pending_window() is None
                            or room2.pending_window().id != window.id, 10)
    await actor2.stop()


async def test_a_timeout_whose_append_failed_fires_again() -> None:
    room, actor, log = await seated_room(FAST)
    failures = []

    def fail_once(rec: dict[str, Any]) -> bool:
        if rec["t"] in ("entrust", "act") and not failures:
            failures.append(rec)
            return True
        return False

    log.fail = fail_once
    await ready_all(actor)
    assert await eventually(lambda: bool(failures), 5)
    # nobody answers: only the timer can move the hand on, so it must fire again
    assert await eventually(lambda: room.hand_no == 1 and not room.in_hand(), 20)
    await actor.stop()


async def test_an_open_dismiss_vote_still_times_out_after_a_rebuild() -> None:
    room, actor, log = await seated_room(SLOW, dismiss_seconds=0.3)
    assert (await actor.submit("command", command(1, lm.AskDismiss()))).code == 0
    await actor.stop()
    room2, actor2 = rebuilt(log, SLOW, dismiss_seconds=0.3)
    assert room2.dismiss is not None
    assert await eventually(lambda: room2.dismiss is None, 5)
    assert room2.closed  # silent voters count as agreeing when the countdown ends
    await actor2.stop()


async def test_entrust_ends_with_the_hand_and_the_settlement_names_the_hand_dealer() -> None:
    room, actor, log = await seated_room({"turn_seconds": 0.05, "window_seconds": 0.05,
                                          "alone_seconds": 0.05}, game=common_pb2.DADUN)
    await ready_all(actor)
    assert await eventually(lambda: room.hand_no == 1 and not room.in_hand(), 60)
    assert any(r["t"] == "entrust" for r in log.records), "timeouts entrusted the seats"
    assert not any(s.entrusted for _, s in room.seated()), "entrust lasts until the deal ends"
    start = next(r for r in log.records if r["t"] == "start")
    settled = json.loads(json.dumps(room.settled[0]))
    assert settled["dealer"] == start["dealer"]
    await actor.stop()
