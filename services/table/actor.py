"""One asyncio task per room (single writer) with a bounded inbox.

Every accepted command becomes a log record: appended to the room's JetStream log first,
then folded into the :class:`Room`, then its effects are published as one message of the
room's ordered stream (stream.py). The room's parts do the rest: commands.py answers
commands, automation.py runs timers, entrust, windows and prompts; its timers post ticks
into the same inbox, so the room never changes from two places at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from games.engine import Action
from paiju.v1 import common_pb2, table_pb2
from services.common.tasks import cancel_and_wait
from services.table import logrec as lr
from services.table import metrics as m
from services.table import views
from services.table.automation import Arbiter, Automation
from services.table.commands import Commands
from services.table.parts import Inbox, Reply
from services.table.room import Room, RoomError
from services.table.stream import RoomStream
from services.table.views import Effects

log = logging.getLogger("paiju.table.room")

INBOX_SIZE = 256
# How long past its decision timer a room in a hand may go without a record before it
# counts as stuck (paiju_table_rooms_stuck): a timeout plays within a second or so, a log
# append retries for up to 20 s through a leader election (roomlog.APPEND_RETRY_SECONDS).
STUCK_GRACE_SECONDS = 30.0
# A log append that waits longer than this is a pause of the room (a leader election, a
# broker's failover, not load: an append takes milliseconds): its players' clocks stand
# still that long (Automation.held).
HELD_SECONDS = 0.2

Append = Callable[[int, int, dict[str, Any], int], Awaitable[int]]
Publish = Callable[["RoomActor", Effects, table_pb2.RoomEvents], Awaitable[None]]
Early = Callable[[Reply], Awaitable[None]]


class RoomActor:
    def __init__(self, room: Room, *, next_index: int, log_seq: int, append: Append, publish: Publish,
                 arbiter: Arbiter, bots: Callable[[str, Any, int], Action],
                 timers: dict[str, float], dismiss_seconds: float, idle_seconds: float,
                 entrust_delay: float, ready_seconds: float = 0.0,
                 robots_allowed: bool = False) -> None:
        self.room = room
        self.next_index = next_index
        self.log_seq = log_seq          # stream sequence of this room's last log record
        self.stream = RoomStream(room.room_id, next_index - 1)
        self._append = append
        self._publish = publish
        self.inbox: Inbox = asyncio.Queue(INBOX_SIZE)
        self.paused = False             # handed over (drain): nothing more is applied here
        # the parts see the actor through a weak proxy and stop() lets go of its ended
        # tasks (a cancelled task's traceback holds the actor's frames): no reference cycle,
        # so a room the table drops is freed at once by reference counting, not kept with
        # its hand and ring until the collector's full pass (runner.freeze_gc)
        me = weakref.proxy(self)
        self.auto = Automation(me, arbiter=arbiter, bots=bots, timers=timers,
                               dismiss_seconds=dismiss_seconds, idle_seconds=idle_seconds,
                               entrust_delay=entrust_delay, ready_seconds=ready_seconds)
        self.commands = Commands(me, self.auto, robots_allowed=robots_allowed)
        self._task: asyncio.Task[None] | None = None
        self._early: dict[asyncio.Future[Reply], Early] = {}   # see submit
        self._in_hand: asyncio.Future[Reply] | None = None     # the item being handled
        self.progressed = time.monotonic()   # when the room last recorded something

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"room-{self.room.room_id}")
        self.auto.start_timer()

    async def stop(self) -> None:
        self.auto.stop_timer()
        if self._task is not None:
            self._task.cancel()
        while not self.inbox.empty():  # every command gets exactly one reply
            _, _, fut = self.inbox.get_nowait()
            if fut is not None and not fut.done():
                fut.set_result(self._gone())
        # a cancel lost inside a NATS request would leave the loop reading its inbox forever
        await cancel_and_wait(self._task)
        self._task = None   # see __init__: no cycle through its traceback
        # the item the task was cancelled in (a lapsed room's append waiting for its check,
        # a hand-over that did not wait for it) is answered too: its sender waits for it
        fut, self._in_hand = self._in_hand, None
        if fut is not None and not fut.done():
            fut.set_result(self._gone())

    def _gone(self) -> Reply:
        if self.paused:  # handed to another table: the lobby retries there
            return Reply(common_pb2.ERR_ROOM_MOVING,
                         f"room {self.room.room_id} is moving to another table, a moment")
        return Reply(common_pb2.ERR_NO_SUCH_ROOM,
                     f"room {self.room.room_id} is no longer on this table")

    async def pause(self, timeout: float = 5.0) -> bool:
        """Stop applying anything, between two inbox items (a drain hands the room over:
        its log must not grow meanwhile). The timers stop; commands queued behind are
        answered ERR_ROOM_MOVING. False if the item in hand did not finish in ``timeout``."""
        self.auto.stop_timer()
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(self.inbox.put(("pause", None, fut)), timeout)
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            return False
        return True

    async def submit(self, kind: str, payload: Any, early: Early | None = None) -> Reply:
        """The item's reply. ``early`` is awaited by the room's task with that reply as soon
        as it is made, before the automation that follows the item: a transport sends it
        from there, so the reply leaves in the same write as the events the item caused
        (the caller's own wake-up comes after the client library's flush)."""
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        try:
            self.inbox.put_nowait((kind, payload, fut))
        except asyncio.QueueFull:
            return Reply(common_pb2.ERR_UNAVAILABLE, "the room is busy, try again")
        if early is not None:
            self._early[fut] = early
        try:
            return await fut
        finally:
            self._early.pop(fut, None)

    async def _run(self) -> None:
        await self._follow_up()
        while True:
            kind, payload, fut = await self.inbox.get()
            if kind == "pause":
                self.paused = True
            if self.paused:
                if fut is not None and not fut.done():
                    fut.set_result(Reply() if kind == "pause" else self._gone())
                continue
            self._in_hand = fut
            try:
                reply = await self._handle(kind, payload)
            except RoomError as err:
                reply = Reply(err.code, str(err))
            except Exception:  # a bug or a NATS failure must not kill the room's task
                log.exception("room command failed", extra={"room": self.room.room_id})
                reply = Reply(common_pb2.ERR_INTERNAL, "internal error; please retry")
            self._in_hand = None
            reply.position = self.stream.position
            if fut is not None and not fut.done():
                fut.set_result(reply)
                early = self._early.pop(fut, None)
                if early is not None:
                    try:
                        await early(reply)
                    except Exception:
                        log.exception("early reply failed", extra={"room": self.room.room_id})
            await self._follow_up()

    async def _follow_up(self) -> None:
        """Automation after every item; a failure here is retried on the next tick."""
        try:
            await self.auto.after()
        except Exception:
            log.exception("room automation failed", extra={"room": self.room.room_id})
            self.auto.failed()

    def stuck(self, now: float, grace: float = STUCK_GRACE_SECONDS) -> bool:
        """In a hand, and nothing recorded for longer than the current decision's timer plus
        ``grace``: by then the timer should have played for the late seats (entrust), so the
        room's task, timer or log appends are not getting through. A dismiss vote (its own
        deadline) and a room handed away do not count."""
        quiet = now - self.progressed
        if quiet <= grace:   # nearly every room: the heartbeat checks them all
            return False
        room = self.room
        if self.paused or room.closed or room.dismiss is not None or not room.in_hand():
            return False
        return quiet > room.decision_seconds(self.auto.timers) + grace

    # ------------------------------------------------------------------ records
    async def record(self, rec: lr.Record) -> Effects:
        """Append to the log (durable first), fold into the room, publish the effects."""
        rec = lr.stamp(rec, self.next_index)
        started = time.perf_counter()
        # single writer: the append names the last record we know; if another table took
        # the room over meanwhile, JetStream refuses it and this actor stands down
        self.log_seq = await self._append(self.room.room_id, self.next_index, lr.encode(rec),
                                          self.log_seq)
        took = time.perf_counter() - started
        m.LOG_APPEND.observe(took)
        if took > HELD_SECONDS:
            self.auto.held(took)
        self.next_index += 1
        self.progressed = time.monotonic()
        fx = views.apply(self.room, rec)
        await self._publish(self, fx, self.stream.record(rec.i, fx.public, fx.private,
                                                         fx.closed))
        return fx

    async def publish(self, fx: Effects, msg: table_pb2.RoomEvents) -> None:
        """Send a message of the room's stream that no record caused (a prompt)."""
        await self._publish(self, fx, msg)

    # ------------------------------------------------------------------ commands
    async def _handle(self, kind: str, payload: Any) -> Reply:
        if kind == "tick":
            await self.auto.tick()
            return Reply()
        if kind == "command":
            return await self.commands.handle(payload)
        raise ValueError(f"unknown inbox item {kind}")
