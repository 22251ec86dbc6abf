"""The table's room actor against an in-memory log that can fail: a failed append or a
rebuild must never leave a room stuck (a window nobody resolves, a timer that never fires, a
dismiss vote without a countdown), and entrust ends with the hand. Timers of simultaneous
phases belong to the phase; a late offline of a replaced lobby session changes nothing."""

from __future__ import annotations

import asyncio
import gc
import json
import time
import weakref
from collections.abc import Callable
from typing import Any

from clients.robot.robot import action_frame
from games.arbitration import Decision, Rules, Window, resolve
from paiju import frames
from paiju.v1 import common_pb2, table_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.table import logrec as lr
from services.table import views
from services.table.actor import RoomActor
from services.table.automation import Timer
from services.table.core import bot_move
from services.table.creation import create_record
from services.table.room import Room
from services.table.views import Effects
from tests.support.waiting import until

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


async def no_publish(actor: RoomActor, fx: Effects, msg: table_pb2.RoomEvents) -> None:
    return None


async def local_arbiter(window: Window, rules: Rules, verify: Callable[[Decision], None],
                        ) -> Decision:
    return resolve(window, rules)   # what an arbiter (or local arbitration) decides


def actor_for(room: Room, log: MemoryLog, timers: dict[str, float], entrust_delay: float = 0.0,
              dismiss_seconds: float = 0.3, ready_seconds: float = 0.0) -> RoomActor:
    return RoomActor(room, next_index=len(log.records), log_seq=len(log.records),
                     append=log.append, publish=no_publish, arbiter=local_arbiter, bots=bot_move,
                     timers=timers, dismiss_seconds=dismiss_seconds, idle_seconds=100,
                     entrust_delay=entrust_delay, ready_seconds=ready_seconds)


def command(uid: int, payload: Any) -> table_pb2.TableCommand:
    cmd = table_pb2.TableCommand(room_id=1234567, user_id=uid, frame=frames.client_frame(payload))
    cmd.profile.coins, cmd.profile.nickname = 100_000, f"u{uid}"
    return cmd


async def seated_room(timers: dict[str, float], game: int = common_pb2.XUEZHAN,
                      **kw: Any) -> tuple[Room, RoomActor, MemoryLog]:
    log = MemoryLog()
    name = {common_pb2.XUEZHAN: "xuezhan", common_pb2.DADUN: "dadun"}[game]
    rec = create_record(1234567, table_pb2.CreateRoomRequest(game=game, total_hands=4), name, {}, 3)
    room = Room(rec)
    actor = actor_for(room, log, timers, **kw)
    await actor.record(rec)
    actor.start()
    for uid in (1, 2, 3, 4):
        assert (await actor.submit("command", command(uid, lm.JoinRoom(room_id=1234567)))).code == 0
    return room, actor, log


def rebuilt(log: MemoryLog, timers: dict[str, float], **kw: Any) -> tuple[Room, RoomActor]:
    room = Room(lr.decode(log.records[0]))
    for rec in log.records:
        views.apply(room, lr.decode(rec))
    actor = actor_for(room, MemoryLog(log.records), timers, **kw)
    actor.start()
    return room, actor


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
        await actor.record(lr.Entrust(seat, "exit"))
    actor.inbox.put_nowait(("tick", None, None))
    assert await until(failed.is_set, 30)
    # live: the automation retries and the hand goes on
    assert await until(lambda: any(r["t"] == "resolve" for r in log.records), 10)
    await actor.stop()
    # a rebuild of a log that ends with a final set of answers but no decision decides it
    # too (the answers may be all of them, or fewer when the early final answer applies)
    cut = max(i for i, r in enumerate(log.records) if r["t"] == "resolve")
    stuck = MemoryLog(log.records[:cut])
    room2, actor2 = rebuilt(stuck, SLOW, entrust_delay=0.01)
    window = room2.pending_window()
    assert window is not None and resolve(window, room2.arbitration_rules()).final
    assert await until(lambda: room2.pending_window() is None
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
    assert await until(lambda: bool(failures), 5)
    # nobody answers: only the timer can move the hand on, so it must fire again
    assert await until(lambda: room.hand_no == 1 and not room.in_hand(), 20)
    await actor.stop()


async def test_an_open_dismiss_vote_still_times_out_after_a_rebuild() -> None:
    room, actor, log = await seated_room(SLOW, dismiss_seconds=0.3)
    # the first table dies before its countdown can end: without its timer, only the
    # rebuilt actor can close the vote
    actor.auto.stop_timer()
    assert (await actor.submit("command", command(1, lm.AskDismiss()))).code == 0
    await actor.stop()
    assert room.dismiss is not None and not room.closed
    assert not any(r["t"] == "dismiss_result" for r in log.records)
    room2, actor2 = rebuilt(log, SLOW, dismiss_seconds=0.3)
    assert room2.dismiss is not None
    assert await until(lambda: room2.dismiss is None, 5)
    assert room2.closed  # silent voters count as agreeing when the countdown ends
    await actor2.stop()


async def test_entrust_ends_with_the_hand_and_the_settlement_names_the_hand_dealer() -> None:
    room, actor, log = await seated_room({"turn_seconds": 0.05, "window_seconds": 0.05,
                                          "alone_seconds": 0.05}, game=common_pb2.DADUN)
    await ready_all(actor)
    assert await until(lambda: room.hand_no == 1 and not room.in_hand(), 60)
    assert any(r["t"] == "entrust" for r in log.records), "timeouts entrusted the seats"
    assert not any(s.entrusted for _, s in room.seated()), "entrust lasts until the deal ends"
    start = next(r for r in log.records if r["t"] == "start")
    fx = Effects()   # the settlements, as a rebuild publishes them again
    folded = Room(lr.decode(log.records[0]))
    for rec in log.records:
        views.apply(folded, lr.decode(rec), fx)
    settled = json.loads(fx.settle[0].encode())
    assert settled["dealer"] == start["dealer"]
    await actor.stop()


async def processed(actor: RoomActor) -> None:
    """Wait until the actor has handled everything queued so far, automation included: a
    snapshot goes through the same inbox, after the follow-up of every earlier item."""
    reply = await actor.submit("command", table_pb2.TableCommand(room_id=1234567, user_id=1,
                                                                 kind="snapshot"))
    assert reply.code == 0, reply.message


async def commit(actor: RoomActor, seat: int) -> None:
    """The bot's move for ``seat``, sent as that player's frame (user ids are seat + 1)."""
    room = actor.room
    action = bot_move(room.game, room.state, seat)
    cmd = table_pb2.TableCommand(room_id=1234567, user_id=seat + 1,
                                 frame=action_frame(room.game, action.to_dict()))
    reply = await actor.submit("command", cmd)
    assert reply.code == 0, reply.message


async def exchange_started(actor: RoomActor) -> float:
    """Every seat ready: the hand starts with exchange three (换三张), all four seats to
    answer on one timer; its deadline."""
    await ready_all(actor)
    await processed(actor)
    assert actor.room.phase() == "exchange" and actor.room.to_act() == (0, 1, 2, 3)
    deadline = actor.auto.deadlines.at(Timer.DECISION)
    assert deadline is not None
    return deadline


async def test_answers_in_a_simultaneous_phase_do_not_extend_the_deadline_of_the_others() -> None:
    # exchange three (换三张): every seat chooses at once, on the turn timer; three answers
    # a second apart, which a slow machine has 5 s to send and a restarted timer would show
    # 3 s late
    turn, stagger = 8.0, 1.0
    room, actor, log = await seated_room({"turn_seconds": turn, "window_seconds": 30,
                                          "alone_seconds": 30})
    appended_at: list[tuple[float, dict[str, Any]]] = []
    append = log.append

    async def timed_append(room_id: int, index: int, rec: dict[str, Any], last_seq: int) -> int:
        seq = await append(room_id, index, rec, last_seq)
        appended_at.append((time.monotonic(), rec))
        return seq

    actor._append = timed_append
    original = await exchange_started(actor)
    key = room.timer_key()
    committed = []
    for seat in (1, 2, 3):  # staggered answers: the engine steps after each one
        await asyncio.sleep(stagger)
        decision = room.decision
        await commit(actor, seat)
        await processed(actor)
        committed.append(time.monotonic())
        assert room.decision > decision and room.phase() == "exchange"
        assert room.timer_key() == key and actor.auto.deadlines.at(Timer.DECISION) == original
    assert committed[-1] < original, "the machine was too slow to stagger the answers in time"
    assert room.to_act() == (0,)
    # seat 0 never answers: its timer fires at the phase's deadline, not a turn after the
    # last answer of the others (which is when a timer restarted by every answer would fire)
    assert await until(lambda: any(r["t"] == "act" and r["seat"] == 0 for _, r in appended_at),
                            3 * turn)
    fired_at, timeout = next((t, r) for t, r in appended_at if r["t"] == "act" and r["seat"] == 0)
    assert timeout["by"] == "timeout"
    assert original <= fired_at < committed[-1] + turn
    # the next phase (void, 定缺) gets a fresh timer
    await processed(actor)
    assert room.phase() == "void" and room.timer_key() != key
    renewed = actor.auto.deadlines.at(Timer.DECISION)
    assert renewed is not None and renewed > original
    await actor.stop()


async def test_a_rebuilt_simultaneous_phase_restarts_its_timer_once() -> None:
    room, actor, log = await seated_room(SLOW)
    await ready_all(actor)
    await processed(actor)
    await commit(actor, 1)
    await actor.stop()
    room2, actor2 = rebuilt(log, SLOW)
    await processed(actor2)
    assert room2.phase() == "exchange" and room2.to_act() == (0, 2, 3)
    assert room2.timer_key() == room.timer_key()  # the key is folded from the log
    deadline = actor2.auto.deadlines.at(Timer.DECISION)
    assert deadline is not None
    for seat in (2, 3):
        await commit(actor2, seat)
        await processed(actor2)
        assert actor2.auto.deadlines.at(Timer.DECISION) == deadline
    await actor2.stop()


def lobby_command(kind: str, uid: int, session: str = "", at: float = 0.0) -> table_pb2.TableCommand:
    return table_pb2.TableCommand(room_id=1234567, user_id=uid, kind=kind, session_id=session,
                                  login_at=at)


async def test_a_late_offline_of_a_replaced_session_keeps_the_seat_online() -> None:
    room, actor, log = await seated_room(SLOW)
    await ready_all(actor)
    await processed(actor)
    seat = room.seats[0]
    assert seat is not None and room.in_hand()

    async def send(kind: str, session: str = "", at: float = 0.0) -> None:
        assert (await actor.submit("command", lobby_command(kind, 1, session, at))).code == 0

    await send("online", "old", 100.0)   # lobby replica A: the first login
    await send("online", "new", 200.0)   # replica B: the user reconnected there
    await send("offline", "old", 100.0)  # A tears the old session down only now
    assert seat.online and not seat.entrusted and seat.session == "new"
    await send("online", "old", 100.0)   # a late online of the old session is stale too
    assert seat.session == "new"
    assert not any(r["t"] == "offline" for r in log.records)
    # the log keeps the session: a rebuilt room still tells the sessions apart
    room2 = Room(lr.decode(log.records[0]))
    for rec in log.records:
        views.apply(room2, lr.decode(rec))
    seat2 = room2.seats[0]
    assert seat2 is not None and seat2.session == "new" and seat2.online
    # the current session going away is an offline, and entrust plays the seat
    await send("offline", "new", 200.0)
    assert not seat.online and seat.entrusted
    await send("online", "newest", 300.0)
    assert seat.online and not seat.entrusted and seat.session == "newest"
    await actor.stop()


async def test_offline_without_a_session_behaves_as_before() -> None:
    room, actor, log = await seated_room(SLOW)
    seat = room.seats[1]
    assert seat is not None
    online = await actor.submit("command", lobby_command("online", 2, "s1", 100.0))
    assert online.code == 0 and seat.session == "s1"
    # a command that names no session (a tool, a test kit): its offline and online count
    assert (await actor.submit("command", lobby_command("offline", 2))).code == 0
    assert not seat.online
    assert (await actor.submit("command", lobby_command("online", 2))).code == 0
    assert seat.online and seat.session == ""  # unknown now: any offline counts
    assert (await actor.submit("command", lobby_command("offline", 2, "other", 50.0))).code == 0
    assert not seat.online
    await actor.stop()


async def test_a_kind_that_is_no_lobby_kind_or_not_the_rooms_is_refused_by_name() -> None:
    room, actor, log = await seated_room(SLOW)
    before = len(log.records)
    unknown = await actor.submit("command", lobby_command("teleport", 1))
    assert unknown.code == common_pb2.ERR_BAD_FRAME
    assert "unknown table command kind 'teleport'" in unknown.message
    # the table answers events_since from the stream ring, never through the room's task
    ring = await actor.submit("command", lobby_command("events_since", 1))
    assert ring.code == common_pb2.ERR_BAD_FRAME and "events_since" in ring.message
    assert len(log.records) == before
    await actor.stop()


async def test_seats_not_ready_after_a_hand_are_readied_when_the_ready_timer_runs_out() -> None:
    # a player who missed the end of a hand (his lobby died, his room moved) never readies:
    # the room must not wait for him for ever; the next hand starts, entrust plays for him
    room, actor, log = await seated_room(FAST, entrust_delay=0.01, ready_seconds=0.3)
    appended_at: list[float] = []    # when each record of log.records was appended
    append = log.append

    async def timed_append(room_id: int, index: int, rec: dict[str, Any], last_seq: int) -> int:
        seq = await append(room_id, index, rec, last_seq)
        appended_at.append(time.monotonic())
        return seq

    actor._append = timed_append
    await ready_all(actor)
    for seat in range(4):
        await actor.record(lr.Entrust(seat, "exit"))
    actor.inbox.put_nowait(("tick", None, None))
    assert await until(lambda: room.hand_no == 1 and not room.in_hand(), 30)
    # nobody readies; the next hand starts by itself once the timer ran out
    assert await until(lambda: room.hand_no == 2, 10)
    timed = log.records[-len(appended_at):]
    first = next(i for i, r in enumerate(timed) if r["t"] == "ready" and r.get("by") == "timeout")
    # the timer is armed after the hand's last record (and the next hand's commitment)
    assert appended_at[first] - appended_at[first - 1] >= 0.3
    readied = [r for r in log.records if r["t"] == "ready" and r.get("by") == "timeout"]
    assert sorted(r["seat"] for r in readied) == [0, 1, 2, 3]
    await actor.stop()


async def test_no_ready_timer_before_the_first_hand() -> None:
    room, actor, log = await seated_room(FAST, ready_seconds=0.1)
    await asyncio.sleep(0.5)
    assert room.hand_no == 0 and not any(r["t"] == "ready" for r in log.records)
    await actor.stop()


async def test_an_early_reply_leaves_after_the_items_events_and_before_what_follows() -> None:
    """``submit(..., early)``: the room's task hands the reply over right after the events
    the command caused and before the automation that follows it (here: the last ready
    starts the hand), so a transport sends it in the same write as those events."""
    room, actor, _ = await seated_room(SLOW)
    sent: list[tuple[str, tuple[int, int]]] = []

    async def publish(actor: RoomActor, fx: Effects, msg: table_pb2.RoomEvents) -> None:
        sent.append(("events", (msg.index, msg.part)))

    async def early(reply: Any) -> None:
        sent.append(("reply", reply.position))

    actor._publish = publish
    for uid in (1, 2, 3):
        await actor.submit("command", command(uid, lm.AskReady(is_ready=True)))
    sent.clear()
    reply = await actor.submit("command", command(4, lm.AskReady(is_ready=True)), early)
    assert reply.code == 0
    assert await until(lambda: room.in_hand())
    kinds = [kind for kind, _ in sent]
    at = kinds.index("reply")
    assert kinds.count("reply") == 1 and at >= 1, sent
    assert sent[at][1] == sent[at - 1][1], "the reply stands where its events ended"
    assert kinds[at + 1:] and set(kinds[at + 1:]) == {"events"}, "the hand starts after it"
    await actor.stop()



async def played_actor() -> RoomActor:
    """A room's actor in a hand its bots play (events, frames, prompts, a full ring)."""
    room, actor, _ = await seated_room(FAST, entrust_delay=0.01)
    await ready_all(actor)
    for seat in range(4):
        await actor.record(lr.Entrust(seat, "exit"))
    actor.inbox.put_nowait(("tick", None, None))
    assert await until(lambda: len(room.hand_events) >= 20, 30)
    return actor


async def test_a_stopped_room_is_freed_by_reference_counting_alone() -> None:
    """A room the table lets go (closed, fenced, lapsed after a stall, handed away) is freed
    the moment its actor is dropped: its parts and its ended tasks hold no reference cycle
    back to it. A cycle would keep the room, its hand's events and frames and its ring of
    recent messages until the collector's full pass (services/common/runner.freeze_gc:
    every 5 minutes): the table's RSS grew with every room rebuilt meanwhile
    (bench/reports/soak.md)."""
    actor = await played_actor()
    gone_room, gone_actor = weakref.ref(actor.room), weakref.ref(actor)
    gc.collect()
    was = gc.isenabled()
    gc.disable()      # only reference counting may free it
    try:
        await actor.stop()
        del actor
        assert gone_actor() is None, "the stopped actor is kept alive by a reference cycle"
        assert gone_room() is None, "the stopped room is kept alive by a reference cycle"
    finally:
        if was:
            gc.enable()


async def test_a_stalled_log_append_stops_the_clocks_of_the_seats_still_to_answer() -> None:
    """The room's log append waits (a stream leader election): the seats still to answer lose
    no time meanwhile, an answer that arrives during the wait (after the deadline as first
    armed) is applied as the player's, not overtaken by a timeout, and the waiting room
    holds one tick at most, so the answer is never refused as 'busy'."""
    turn = 3.0   # exchange three (换三张): all four seats answer on one timer
    room, actor, log = await seated_room({"turn_seconds": turn, "window_seconds": 30,
                                          "alone_seconds": 30})
    append = log.append
    stalled, release = asyncio.Event(), asyncio.Event()
    held: list[float] = []   # how long the append waited

    async def stalling_append(room_id: int, index: int, rec: dict[str, Any], last_seq: int) -> int:
        if rec["t"] == "act" and rec["seat"] == 1 and not stalled.is_set():
            stalled.set()
            began = time.monotonic()
            await release.wait()
            held.append(time.monotonic() - began)
        return await append(room_id, index, rec, last_seq)

    actor._append = stalling_append
    deadline = await exchange_started(actor)
    answer_1 = asyncio.create_task(commit(actor, 1))
    await stalled.wait()
    await asyncio.sleep(deadline - time.monotonic() + 0.3)   # seat 0's timer as first armed is over
    assert actor.inbox.qsize() <= 1, "the timer floods the waiting room's inbox with ticks"
    # sent during the wait, after the first deadline: still in time
    answer_0 = asyncio.create_task(commit(actor, 0))
    assert await until(lambda: any(kind == "command" for kind, _, _ in actor.inbox._queue))  # type: ignore[attr-defined]
    release.set()
    await answer_1
    await answer_0
    mine = {r["seat"]: r["by"] for r in log.records if r["t"] == "act"}
    assert mine == {1: "player", 0: "player"}
    # the clock of the seats still to answer stood still while the append waited
    moved = actor.auto.deadlines.at(Timer.DECISION)
    assert moved is not None and moved >= deadline + held[0] - 0.1
    assert room.to_act() == (2, 3)
    await actor.stop()


async def test_a_room_stopped_in_the_middle_of_an_item_answers_it() -> None:
    """A table stops a room while the room's task is inside an item (a lapsed room's append
    waiting for its check, a hand-over that did not wait for the item): its sender gets a
    reply all the same, as the items queued behind it do. Without one, the lobby's command
    waits out its timeout, and the table drops the command's copies as under way."""
    room, actor, log = await seated_room(SLOW)
    entered = asyncio.Event()

    async def never_appends(room_id: int, index: int, rec: dict[str, Any], last_seq: int) -> int:
        entered.set()
        await asyncio.Event().wait()   # cancelled by stop()
        return 0

    actor._append = never_appends
    ready = asyncio.create_task(actor.submit("command", command(1, lm.AskReady(is_ready=True))))
    queued = asyncio.create_task(actor.submit("command", command(2, lm.AskReady(is_ready=True))))
    await asyncio.wait_for(entered.wait(), 10)
    await actor.stop()
    replies = await asyncio.wait_for(asyncio.gather(ready, queued), 10)
    assert [r.code for r in replies] == [common_pb2.ERR_NO_SUCH_ROOM] * 2
