"""The table's rooms: which it runs, how one is made, rebuilt from its log, sent a command,
and how what a record caused goes out. The parts it wires, each with one job:

- :mod:`~services.table.roomlog` the fenced room log in JetStream;
- :mod:`~services.table.directory` the directory writer (rooms and seats buckets);
- :mod:`~services.table.dirview` the directory as watched;
- :mod:`~services.table.settlements` the settlement outbox;
- :mod:`~services.table.lease` heartbeat, adoption and drain;
- :mod:`~services.table.lifecycle` each room's state at this table, changed in one place;
- :mod:`~services.table.arbiter_client` the arbiter;
- :mod:`~services.table.actor` one task per room (single writer), folding
  :class:`~services.table.room.Room` and keeping its ordered stream.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any

import nats.errors
import nats.js.errors
from google.protobuf import json_format
from nats.js.errors import KeyNotFoundError

from games.engine import Action
from paiju import seated
from paiju.contracts.directory import RoomEntry
from paiju.v1 import common_pb2, table_pb2
from services.common import bus
from services.common.config import Config
from services.common.tasks import cancel_and_wait
from services.table import creation, variants, views
from services.table import logrec as lr
from services.table import metrics as m
from services.table.actor import RoomActor
from services.table.adoption import Adoption
from services.table.arbiter_client import ArbiterClient
from services.table.directory import DirectoryWriter
from services.table.dirview import DirectoryView
from services.table.lease import Lease
from services.table.lifecycle import Rooms, RoomState
from services.table.nats_commands import CommandSubscription, SendReply
from services.table.parts import Reply
from services.table.room import Room, RoomSettings
from services.table.room_ids import RoomIds
from services.table.roomlog import (
    APPEND_RETRY_SECONDS,
    LeaseLapsed,
    LogFenced,
    LogUnavailable,
    RoomLog,
)
from services.table.settlements import SettlementOutbox
from services.table.views import Effects

log = logging.getLogger("paiju.table")

START_RETRY_SECONDS = 30.0      # streams and buckets set up at start: retried this long
# Rooms rebuilt at once (adoption, drain hand-over, restart), and rooms checked at once after
# a stall. A rebuild is mostly waits on NATS (log read, append, directory writes), so several
# share the event loop's turns and writes. 8 and 32 cost the same within the noise (adoption
# of 1,000 rooms: 4.2-7.0 ms of CPU a room with 8, 3.6-7.1 with 32, bench/reports/cold.md).
REBUILD_CONCURRENCY = 32


class Unavailable(Exception):
    """NATS cannot do what a request needs right now (answered UNAVAILABLE: try again)."""


def moving_reply(cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
    return table_pb2.TableReply(request_id=cmd.request_id, code=common_pb2.ERR_ROOM_MOVING,
                                message=f"room {cmd.room_id} is moving between tables, a moment",
                                room_id=0, seat=-1)


def no_room_reply(cmd: table_pb2.TableCommand, why: str) -> table_pb2.TableReply:
    return table_pb2.TableReply(request_id=cmd.request_id, code=common_pb2.ERR_NO_SUCH_ROOM,
                                message=f"room {cmd.room_id} {why}", room_id=0, seat=-1)


def bot_move(game: str, state: Any, seat: int) -> Action:
    """Entrust and timeouts play the greedy policy of the game (games/bots)."""
    return variants.get(game).spec.greedy_policy(state, seat)


def room_entry(room: Room, owner: str, address: str) -> RoomEntry:
    """The room's entry in the ``rooms`` bucket, owned by table ``owner`` at ``address``:
    what the lobbies list and route by."""
    info = json_format.MessageToDict(views.room_info(room), preserving_proto_field_name=True)
    return RoomEntry(room_id=room.room_id, owner=owner, address=address, game=room.game,
                     status=int(room.status), free_seats=room.free_seats(),
                     has_password=bool(room.password), room=info)


def table_reply(room: Room, cmd: table_pb2.TableCommand, reply: Reply) -> table_pb2.TableReply:
    """A room's reply to a command as the lobby gets it: where the user sits now, and the
    position of the room's stream the reply was made at."""
    seat = room.seat_of(cmd.user_id)
    there = seat is not None or (cmd.kind == seated.LobbyKind.WATCH and reply.code == 0)
    out = table_pb2.TableReply(
        request_id=cmd.request_id, code=reply.code, message=reply.message, frames=reply.frames,
        room_id=cmd.room_id if there and not room.closed else 0,
        seat=-1 if seat is None else seat)
    if reply.position is not None:
        out.ordered = True
        out.index, out.part = reply.position
    out.overtaken = reply.overtaken
    return out


class TableCore:
    def __init__(self, cfg: Config, instance: str, address: str) -> None:
        self.cfg = cfg
        self.instance = instance
        self.address = address
        # every log append of this process carries this in its message id (roomlog.py)
        self.boot = secrets.token_hex(6)
        self.started_at = time.time()
        # every room's life at this table (lifecycle.py); as a mapping, the rooms it runs
        self.rooms = Rooms()
        # the actor that writes each room (registered, or still being rebuilt) and the lease
        # epoch it holds the room under (lease.py, "Fencing"): nothing is written or sent
        # for a room whose epoch is not the lease's current one
        self.writers: dict[int, RoomActor] = {}
        self.tenure: dict[int, int] = {}
        self.nc: Any = None
        self.js: Any = None
        self.kv_tables: Any = None
        self.room_ids: RoomIds
        self.log: RoomLog
        self.directory: DirectoryWriter
        self.view: DirectoryView
        self.settlements: SettlementOutbox
        self.adoption: Adoption   # made below: the lease's scan runs it
        self.lease = Lease(self, scan=lambda: self.adoption.adopt_orphans())
        self.adoption = Adoption(self, self.lease)
        self.arbiter: ArbiterClient | None = None
        self._rebuilds = asyncio.Semaphore(REBUILD_CONCURRENCY)
        self.commands = CommandSubscription(self)   # the lobbies' commands over NATS

    # ------------------------------------------------------------------ start / stop
    async def start(self) -> None:
        self.nc = await bus.connect(self.cfg.nats, f"table-{self.instance}")
        self.js = self.nc.jetstream()
        kv_rooms, kv_seats = await self._set_up_jetstream()
        self.log = RoomLog(self.js, self.boot)
        self.directory = DirectoryWriter(kv_rooms, kv_seats, self.instance, self.address)
        self.view = DirectoryView(kv_rooms, self.kv_tables, self.cfg.table.lease_ttl_seconds)
        self.settlements = SettlementOutbox(self.nc, self.js)
        self.arbiter = ArbiterClient(self.nc, self.cfg.table.arbiter_timeout_seconds)
        await self.adoption.subscribe()
        await self.commands.start()
        await self.lease.register()
        try:   # a view not read now is filled by its watch, and the scans take our rooms back
            await self.view.resync()
        except Exception as exc:
            log.warning("directory not read at start-up", extra={"error": repr(exc)})
        self.view.start()
        # the lease runs before the rooms are taken back: a room writes only under a current
        # lease (_held), and a thousand rebuilds outlast the entry put by register()
        self.lease.start()
        await self.recover()

    async def _set_up_jetstream(self) -> tuple[Any, Any]:
        """The streams and buckets (created if missing). Tables starting together on a
        fresh cluster can time out creating them (the meta leader is busy): retried within
        START_RETRY_SECONDS before the start fails."""
        replicas = self.cfg.nats.replicas
        deadline = time.monotonic() + START_RETRY_SECONDS
        while True:
            try:
                await bus.ensure_streams(self.js, replicas)
                self.kv_tables = await bus.ensure_bucket(
                    self.js, bus.TABLES_BUCKET, ttl=self.cfg.table.lease_ttl_seconds,
                    replicas=replicas)
                await self._align_lease_ttl()
                kv_rooms = await bus.ensure_bucket(self.js, bus.ROOMS_BUCKET, replicas=replicas)
                kv_seats = await bus.ensure_bucket(self.js, bus.SEATS_BUCKET, replicas=replicas)
                self.room_ids = RoomIds(await bus.ensure_bucket(
                    self.js, bus.ROOM_IDS_BUCKET, replicas=replicas), self.js)
                return kv_rooms, kv_seats
            except (TimeoutError, nats.errors.Error) as exc:
                if time.monotonic() >= deadline:
                    raise
                log.warning("JetStream set-up failed, retrying", extra={"error": repr(exc)})
                await asyncio.sleep(1.0)

    async def _align_lease_ttl(self) -> None:
        """The ``tables`` bucket's TTL is the lease: a bucket made with another one (by an
        older release, or by a lobby that started first) is set to ``table.lease_ttl_seconds``
        (a failure is logged: the lease then lasts as the bucket says)."""
        name = f"KV_{bus.TABLES_BUCKET}"
        want = float(self.cfg.table.lease_ttl_seconds)
        try:
            config = (await self.js.stream_info(name)).config
            if config.max_age is not None and abs(float(config.max_age) - want) < 0.001:
                return
            have = config.max_age
            config.max_age = want
            if config.duplicate_window and float(config.duplicate_window) > want:
                config.duplicate_window = want
            await self.js.update_stream(config)
            log.info("tables bucket TTL set to the lease", extra={"was": have, "ttl": want})
        except Exception as exc:
            log.warning("tables bucket TTL not aligned with the lease",
                        extra={"ttl": want, "error": repr(exc)})

    async def stop(self) -> None:
        await self.commands.stop()
        await self.lease.stop()
        await cancel_and_wait(*self.view.tasks)
        for actor in list(self.rooms.values()):
            await actor.stop()
        try:
            await self.kv_tables.delete(self.instance)
        except Exception:
            pass
        if self.nc is not None:
            await bus.drain(self.nc)

    async def drain(self) -> None:
        await self.adoption.drain()

    # ------------------------------------------------------------------ rooms
    def _timers(self) -> dict[str, float]:
        t = self.cfg.table
        return {"turn_seconds": t.turn_seconds, "window_seconds": t.window_seconds,
                "alone_seconds": t.alone_seconds}

    def _actor(self, room: Room, next_index: int, log_seq: int, *,
               register: bool = True, epoch: int | None = None) -> RoomActor:
        t = self.cfg.table
        assert self.arbiter is not None
        actor = RoomActor(
            room, next_index=next_index, log_seq=log_seq, append=self._append, publish=self._publish,
            arbiter=self.arbiter.resolve, bots=bot_move,
            timers=self._timers(),
            dismiss_seconds=self.cfg.lobby.dismiss_vote_seconds,
            idle_seconds=self.cfg.lobby.idle_room_seconds, entrust_delay=t.entrust_delay_seconds,
            ready_seconds=t.ready_seconds, robots_allowed=t.robots_allowed)
        self.writers[room.room_id] = actor
        self.tenure[room.room_id] = self.lease.epoch if epoch is None else epoch
        if register:
            self._register(actor)
        return actor

    def _register(self, actor: RoomActor) -> None:
        self.rooms.run(actor.room.room_id, actor)

    async def create_room(self, req: table_pb2.CreateRoomRequest) -> Room:
        game, options = creation.validate(req)
        room_id = await self._new_room_id()
        rec = creation.create_record(room_id, req, game, options, self.cfg.table.entrust_cancels,
                            self._timers())
        room = Room(rec, RoomSettings(float(self.cfg.lobby.geo_alert_meters)))
        self.rooms.create(room_id)   # our scans must not rebuild it while it is being made
        try:
            self.directory.room_revs[room_id] = await self.directory.kv_rooms.put(
                str(room_id), self._room_entry(room).encode())
            actor = self._actor(room, 0, 0)   # it runs from here
        except (TimeoutError, nats.errors.Error) as exc:
            raise Unavailable(f"the directory cannot be written now: {exc!r}") from None
        finally:
            if self.rooms.state(room_id) is RoomState.CREATING:   # not made
                self.rooms.abandon(room_id)
        await actor.record(rec)
        actor.start()
        return room

    def _room_entry(self, room: Room) -> RoomEntry:
        return room_entry(room, self.instance, self.address)

    async def _new_room_id(self) -> int:
        """A room id never given out before (room_ids.py); while the ``room_ids`` bucket has
        no leader (an election) or does not answer, tried again within a bound."""
        deadline = time.monotonic() + APPEND_RETRY_SECONDS
        while True:
            try:
                return await self.room_ids.allocate()
            except (TimeoutError, nats.errors.Error) as exc:
                if time.monotonic() >= deadline:
                    raise Unavailable(f"room ids cannot be allocated now: {exc!r}") from None
                await asyncio.sleep(0.25)

    async def recover(self) -> None:
        """Take back this instance's rooms after a restart: fold each room's log."""
        mine = [rid for rid, (entry, _) in self.view.rooms.items()
                if entry.owner == self.instance and rid not in self.rooms]
        for room_id in mine:
            self.rooms.claim(room_id)
        await asyncio.gather(*(self.rebuild_safely(rid) for rid in mine))

    async def rebuild_safely(self, room_id: int) -> bool:
        """Rebuild a room this table owns; a failure is kept and retried by the next scan
        (meanwhile its players hear ERR_ROOM_MOVING)."""
        async with self._rebuilds:
            if room_id in self.rooms:
                return False
            try:
                await self.rebuild(room_id)   # its outcome is the room's state: LIVE, ...
            except Exception as exc:
                log.warning("room could not be rebuilt, will retry",
                            extra={"room": room_id, "error": repr(exc)})
                self.rooms.fail(room_id)
                return False
            return True

    async def rebuild(self, room_id: int) -> None:
        """Fold the room's log and run it here; the room ends LIVE, LOGLESS or CLOSED."""
        if room_id in self.rooms:
            return
        self.rooms.claim(room_id)   # claimed already when a caller waited for its turn
        epoch = self.lease.epoch   # a stall while the log is read: the room is checked again
        logged, last_seq = await self.log.read(room_id)
        if room_id in self.rooms:   # rebuilt meanwhile (a hand-over request and a scan)
            return
        records = [lr.decode(rec) for rec in logged]   # LogRecordError: retried, never half-folded
        if not records or not isinstance(records[0], lr.Create):
            if self.rooms.no_log(room_id):   # read again by the scans for a while
                log.warning("room log missing", extra={"room": room_id})
            return
        room = Room(records[0], RoomSettings(float(self.cfg.lobby.geo_alert_meters)))
        fx = Effects()
        for rec in records:
            views.apply(room, rec, fx)
        m.REBUILT.inc()
        await self.settlements.publish(fx.settle, prompt=False)
        if room.closed:  # closed, but the table stopped before cleaning up after it
            for _, s in room.players():
                await self.directory.put_seat(room_id, s.user_id, None)
            await self._closed(room_id)
            return
        actor = self._actor(room, records[-1].i + 1, last_seq, register=False, epoch=epoch)
        # this table's first record: its messages sort after anything the old owner sent
        await actor.record(lr.Owner(self.instance, self.boot))
        # the room's entry and its seats at once: one round trip, not one per key
        await asyncio.gather(self.directory.put_room(self._room_entry(room)), *(
            self.directory.put_seat(room_id, s.user_id, room.seat_of(s.user_id))
            for _, s in room.players()))
        self._register(actor)   # commands reach it from now on (ERR_ROOM_MOVING until then)
        actor.start()
        log.info("room rebuilt from log", extra={"room": room_id, "records": len(records),
                                                 "hand": room.hand_no})

    def forget(self, room_id: int, *, stop: bool = False, lapsed: bool = False) -> None:
        """This table no longer runs the room. Another table has it (or it was handed away):
        its pending directory writes are dropped, they are not ours to make any more. Or,
        ``lapsed``, its tenure or its log failed: they stay, and the next scan rebuilds the
        room from its log (lifecycle.py, LAPSE)."""
        if not lapsed:
            self.directory.forget(room_id)
        self.tenure.pop(room_id, None)
        writer = self.writers.pop(room_id, None)
        actor = (self.rooms.lapse(room_id) if lapsed else self.rooms.drop(room_id)) or writer
        if stop and actor is not None:
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(actor.stop()))

    # ------------------------------------------------------------------ fencing
    async def _held(self, room_id: int) -> bool:
        """The room may be written and sent for now (lease.py, "Fencing"). Right after a
        stall of this process it waits, at most a lease, for the room's check
        (:meth:`reverify`); False when the room was lost meanwhile or the check did not
        come. Returns without yielding when the room is current (the common path), so
        what the caller does next happens under the same tenure."""
        lease = self.lease
        if lease.current(self.tenure.get(room_id)):
            return True
        deadline = time.monotonic() + lease.ttl
        while not lease.current(self.tenure.get(room_id)):
            if room_id not in self.tenure or time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    def _lapse(self, room_id: int) -> None:
        """Stop running a room whose tenure could not be confirmed: nothing more is written
        or sent for it; the next scan rebuilds it from its log if the directory still names
        this table (a fenced ``owner`` append), else its new owner has it."""
        if room_id not in self.tenure:
            return
        log.warning("room held through a stall not confirmed: rebuilt from its log",
                    extra={"room": room_id})
        self.forget(room_id, stop=True, lapsed=True)

    def stale_rooms(self) -> list[int]:
        return [rid for rid, epoch in self.tenure.items() if epoch != self.lease.epoch]

    async def reverify(self) -> None:
        """After a stall (lease.py): each room whose tenure is older than the lease's epoch
        plays on only if the directory still names this table and the room's log ends with
        this table's last record; a room another table took meanwhile is dropped without a
        word (its players are the new owner's); one that cannot be checked now is rebuilt
        from its log by the next scan."""
        epoch = self.lease.epoch
        limit = asyncio.Semaphore(REBUILD_CONCURRENCY)

        async def check(room_id: int) -> None:
            actor = self.writers.get(room_id)
            if actor is None:
                return
            async with limit:
                try:
                    entry = await self.directory.kv_rooms.get(str(room_id))
                    # an unreadable entry is not checked: the room is rebuilt (below)
                    owner = RoomEntry.decode(entry.value or b"").owner
                    last = await self.js.get_last_msg(bus.room_log_stream(room_id),
                                                      bus.room_log(room_id))
                    tail = int(last.seq)
                except KeyNotFoundError:   # no entry: closed, by the table that took it
                    if self.writers.get(room_id) is actor:
                        log.info("room closed elsewhere while this table stalled",
                                 extra={"room": room_id})
                        self.forget(room_id, stop=True)
                    return
                except Exception as exc:
                    if self.writers.get(room_id) is actor:
                        log.warning("room not checked after a stall",
                                    extra={"room": room_id, "error": repr(exc)})
                        self._lapse(room_id)
                    return
            if self.writers.get(room_id) is not actor or self.tenure.get(room_id) == epoch:
                return
            if owner not in (None, "", self.instance):
                log.warning("room taken over by another table while this one stalled",
                            extra={"room": room_id, "owner": owner})
                self.forget(room_id, stop=True)
            elif tail != actor.log_seq:
                self._lapse(room_id)
            else:
                self.tenure[room_id] = epoch

        await asyncio.gather(*(check(rid) for rid in self.stale_rooms()))
        if self.stale_rooms():
            log.info("rooms checked after a stall", extra={"left": len(self.stale_rooms())})

    # ------------------------------------------------------------------ I/O for actors
    async def _append(self, room_id: int, index: int, rec: dict[str, Any], last_seq: int) -> int:
        """The room's fenced append (roomlog.py); a room another table wrote to is dropped
        here, one whose log took no append is rebuilt by the next scan. A room whose tenure
        is not confirmed (a stall) appends nothing."""
        if not await self._held(room_id):
            self._lapse(room_id)
            raise LeaseLapsed(room_id)
        try:
            return await self.log.append(room_id, index, rec, last_seq)
        except LogFenced:
            log.warning("room taken over by another table", extra={"room": room_id})
            self.forget(room_id, stop=True)
            raise
        except LogUnavailable:
            self.forget(room_id, stop=True, lapsed=True)   # the next scan rebuilds it from the log
            raise

    async def _publish(self, actor: RoomActor, fx: Effects, msg: table_pb2.RoomEvents) -> None:
        """Send what one log record (or a follow-up at it) caused: one message on the room's
        subject, whatever its audience (docs/ordered-events.md). Never raises for a NATS
        failure after the append: the record is durable, so settlements and directory writes
        that fail wait in outboxes the heartbeat retries (core NATS publishes are buffered
        by the client), and a lobby that misses the message refills from the ring."""
        room = actor.room
        # nothing goes out for a room this actor no longer writes (fenced, adopted meanwhile)
        # or whose tenure a stall left unconfirmed: its records are in the log, and whoever
        # runs the room next sends from there
        if not await self._held(room.room_id) or self.writers.get(room.room_id) is not actor:
            if self.writers.get(room.room_id) is actor:
                self._lapse(room.room_id)
            raise LeaseLapsed(room.room_id)
        started = time.perf_counter()
        try:
            await self.nc.publish(bus.room_events(room.room_id), actor.stream.data(msg))
        except Exception as exc:  # e.g. the client's reconnect buffer is full: a reconnecting
            # player gets a snapshot; the room must go on either way
            log.warning("events not published", extra={"room": room.room_id, "error": repr(exc)})
        m.FANOUT.observe(time.perf_counter() - started)
        await self.settlements.publish(fx.settle)
        for user_id, seat in fx.seats.items():
            await self.directory.put_seat(room.room_id, user_id, seat)
        if fx.closed:
            await self._closed(room.room_id)
            # the last await here: stopping cancels the actor's task, which runs this
            self.writers.pop(room.room_id, None)
            self.tenure.pop(room.room_id, None)
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(actor.stop()))
        elif fx.changed:
            await self.directory.put_room(self._room_entry(room))

    async def _closed(self, room_id: int) -> None:
        """A closed room leaves the directory, then its log is purged; the room is CLOSED
        until it is (the backlog is the heartbeat's), then GONE. Its actor, if it ran here,
        is let go only now: commands that come meanwhile wait in its inbox."""
        await self.directory.delete_room(room_id)
        purged = await self._purge(room_id)
        self.rooms.close(room_id)
        if purged:
            self.rooms.purged(room_id)

    async def let_go_lost(self, room_id: int) -> None:
        """A room that has had no log for ``lifecycle.LOGLESS_RETRY_SECONDS`` leaves the
        directory: the lobbies then tell its players it is gone (they log in again and
        find no seat) instead of retrying "moving" for ever. Once the table's view no longer
        holds the entry, the scan forgets the room (GONE)."""
        if self.directory.holds(room_id):
            return   # its deletion is on its way (the outbox retries it)
        log.warning("room without a log taken for lost: its directory entry goes",
                    extra={"room": room_id})
        await self.directory.delete_room(room_id)

    async def _purge(self, room_id: int) -> bool:
        """Purge a closed room's log, now if it may go: only after the room's settlements
        are published (records keeps the hands and their replays from those; nothing reads a
        closed room's log) and after its directory entry is deleted (a restarted table must
        not find a room without its log). False when it stays for a retry."""
        if self.settlements.holds(room_id) or self.directory.holds(room_id):
            return False
        try:
            await self.log.purge(room_id)
        except Exception as exc:
            log.warning("room log not purged yet", extra={"room": room_id, "error": repr(exc)})
            return False
        m.LOGS_PURGED.inc()
        return True

    async def purge_logs(self) -> None:
        """Retry the purge of the logs of CLOSED rooms; a failure never holds up anything
        else."""
        for room_id in self.rooms.in_state(RoomState.CLOSED):
            # a rebuild of the same room may have closed and purged it meanwhile
            if await self._purge(room_id) and self.rooms.state(room_id) is RoomState.CLOSED:
                self.rooms.purged(room_id)

    def has_pending(self) -> bool:
        return bool(self.directory.pending or self.settlements.unsent
                    or self.rooms.in_state(RoomState.CLOSED))

    async def retry_pending(self) -> None:
        """Retry what failed after a log append; these never raise, a failure stays pending
        for the next beat. Directory entries first, then settlements: a closed room's log is
        purged only after both."""
        try:
            await self.directory.flush()
            await self.settlements.retry()
            await self.purge_logs()
        except Exception:  # a bug here must not end the retries for good
            log.exception("retrying pending writes failed")

    # ------------------------------------------------------------------ commands
    async def answer(self, cmd: table_pb2.TableCommand,
                     early: SendReply | None = None) -> table_pb2.TableReply:
        """:meth:`command` for the NATS command subject (services/table/nats_commands.py):
        a failure is logged and answered ERR_INTERNAL, its details never sent."""
        try:
            return await self.command(cmd, early)
        except Exception:
            log.exception("command failed", extra={"room": cmd.room_id})
            return table_pb2.TableReply(request_id=cmd.request_id, code=common_pb2.ERR_INTERNAL,
                                        message="internal error; please retry")

    async def command(self, cmd: table_pb2.TableCommand,
                      early: SendReply | None = None) -> table_pb2.TableReply:
        """The reply to ``cmd``. When the room's task makes it, ``early`` (if any) is awaited
        with it there (RoomActor.submit); the same reply is returned either way."""
        actor = self.rooms.get(cmd.room_id)
        if actor is not None and not self.lease.current(self.tenure.get(cmd.room_id)):
            return moving_reply(cmd)   # checked after a stall first (lease.py)
        if actor is None:
            if self.rooms.lost(cmd.room_id):
                return no_room_reply(cmd, "has lost its log: it cannot go on")
            if self.rooms.moving(cmd.room_id) or self.view.owner(cmd.room_id) == self.instance:
                return moving_reply(cmd)
            return no_room_reply(cmd, "is not on this table")
        if cmd.kind == seated.LobbyKind.EVENTS_SINCE:   # from the ring, at once
            index, part = actor.stream.position
            missed = actor.stream.since(cmd.since_index, cmd.since_part)
            return table_pb2.TableReply(request_id=cmd.request_id, room_id=cmd.room_id,
                                        seat=-1, ordered=True, index=index, part=part,
                                        events=missed or (), resync=missed is None)
        made: list[table_pb2.TableReply] = []

        async def send_early(reply: Reply) -> None:
            made.append(table_reply(actor.room, cmd, reply))
            assert early is not None
            await early(made[0])

        reply: Reply = await actor.submit("command", cmd, send_early if early else None)
        if cmd.kind == seated.LobbyKind.SNAPSHOT and reply.code == common_pb2.ERR_NOT_IN_ROOM \
                and actor.room.seat_of(cmd.user_id) is None \
                and self.writers.get(cmd.room_id) is actor \
                and self.lease.current(self.tenure.get(cmd.room_id)):
            # a login's seat entry names this room, which the user has left: its clear was
            # lost (dropped with a room handed away, or with a table that died before its
            # retry), and the entry would keep him out of every other room. Cleared now
            # while this table still runs the room, only while the entry names it (a join
            # after this writes after it), and not over a newer write of it still to be made
            await self.directory.clear_stale_seat(cmd.room_id, cmd.user_id)
        return made[0] if made else table_reply(actor.room, cmd, reply)
