"""The table service: owns rooms, runs hands, keeps the directory entries for them.

gRPC (paiju.v1.Table): CreateRoom, GetRoom, ListRooms (unary, rare) and Session (one
long-lived stream per lobby, multiplexing player commands). Rooms live in
:class:`services.table.actor.RoomActor` tasks; the contract is in docs/services.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import nats.errors
import nats.js.errors
from google.protobuf import json_format
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KV_DEL, KV_PURGE

from games.arbitration import Decision, Rules, Window
from games.engine import Action, RuleError
from paiju.v1 import arbiter_pb2_grpc, common_pb2, table_pb2, table_pb2_grpc
from services.common import bus, tls
from services.common.arbwire import decision_from_pb, window_to_pb
from services.common.config import Config
from services.common.health import nats_connected, watch_service
from services.common.server import ServiceHost, start_service
from services.common.tasks import cancel_and_wait
from services.table import metrics as m
from services.table.actor import Reply, RoomActor, create_record
from services.table.codec import GAME_NAMES
from services.table.placement import drain_target, should_adopt
from services.table.room import Effects, Room, RoomError, variant

log = logging.getLogger("paiju.table")

ROOM_IDS_BUCKET = "room_ids"    # every room id ever given out: never reused (logs, records)
ROOM_ID_LOW, ROOM_ID_HIGH = 10_000_000, 99_999_999
MAX_TIMER_SECONDS = 600
RESYNC_EVERY = 15               # heartbeats between full re-reads of the directory
WRONG_LAST_SEQUENCE = 10071     # JetStream: Nats-Expected-Last-Subject-Sequence mismatch
APPEND_RETRY_SECONDS = 8.0      # a room-log append is retried this long (a leader election)
APPEND_TIMEOUT_SECONDS = 2.0    # one append attempt
START_RETRY_SECONDS = 30.0      # streams and buckets set up at start: retried this long
REBUILD_CONCURRENCY = 8         # rooms rebuilt at once (adoption, drain hand-over, restart)



class KvWrite:
    """A directory write for one key, made on behalf of one room: ``put`` (value), ``delete``,
    or ``clear``: delete the entry only while it still names that room."""

    __slots__ = ("kind", "value", "room_id", "fresh")

    def __init__(self, kind: str, room_id: int, value: bytes = b"") -> None:
        self.kind, self.room_id, self.value = kind, room_id, value
        # made right after this table's fenced log append for the room: until a failed
        # attempt, this table is known to own the room (no need to read its entry first)
        self.fresh = True


class Unavailable(Exception):
    """NATS cannot do what a request needs right now (answered UNAVAILABLE: try again)."""


def adopt_subject(instance: str) -> str:
    """Where a draining table asks ``instance`` to take a room now (core NATS request)."""
    return f"table.{instance.replace('.', '_')}.adopt"


def moving_reply(cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
    return table_pb2.TableReply(request_id=cmd.request_id, code=common_pb2.ERR_ROOM_MOVING,
                                message=f"room {cmd.room_id} is moving between tables, a moment",
                                room_id=0, seat=-1)


def bot_move(game: str, state: Any, seat: int) -> Action:
    """Entrust and timeouts play the greedy policy of the game (games/bots)."""
    if game == "dadun":
        from games.bots.dadun import greedy_policy
    else:
        from games.bots.mahjong import greedy_policy
    return greedy_policy(state, seat)


class TableCore:
    def __init__(self, cfg: Config, instance: str, address: str) -> None:
        self.cfg = cfg
        self.instance = instance
        self.address = address
        self.rooms: dict[int, RoomActor] = {}
        self.nc: Any = None
        self.js: Any = None
        self.kv_tables: Any = None
        self.kv_rooms: Any = None
        self.kv_seats: Any = None
        self.kv_ids: Any = None
        self.unsent: list[dict[str, Any]] = []   # settlements whose publish failed: retried
        # directory writes (rooms / seats buckets) not done yet, the latest per key: retried
        self.kv_pending: dict[tuple[str, str], KvWrite] = {}
        self.room_revs: dict[int, int] = {}  # our last known revision of each room's entry
        self._kv_busy: set[tuple[str, str]] = set()
        self.unpurged: set[int] = set()          # closed rooms whose log is still stored
        self._failed_rebuilds: set[int] = set()
        self.logless: set[int] = set()           # directory entries without a room log
        self._arbiter_channel: grpc.aio.Channel | None = None
        self._arbiter: arbiter_pb2_grpc.ArbiterStub | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._retrying: asyncio.Task[None] | None = None
        self._adopting: asyncio.Task[None] | None = None
        self._watchers: list[asyncio.Task[None]] = []
        self._adopt_sub: Any = None
        self.started_at = time.time()
        # every log append of this process carries this in its message id, so JetStream's
        # deduplication can only ever match our own retries, never another table's record
        self.boot = secrets.token_hex(6)
        self.draining = False
        # rooms claimed by (or handed to) this table and not rebuilt yet, or handed away:
        # their commands are answered ERR_ROOM_MOVING, and the lobby retries
        self.moving: set[int] = set()
        # the directory as this table sees it, kept by KV watches (no listing per scan)
        self.room_dir: dict[int, tuple[dict[str, Any], int]] = {}
        self.table_seen: dict[str, tuple[dict[str, Any], float]] = {}
        self.orphaned_at: dict[int, float] = {}   # when a room was first seen without owner
        # since when this table's heartbeats have succeeded without a break: a table that
        # was itself cut off (a NATS node lost, an election) saw every lease run out,
        # others' as well as its own, and must not take their rooms for that
        self.beating_since: float | None = time.monotonic()
        self._rebuilds = asyncio.Semaphore(REBUILD_CONCURRENCY)

    # ------------------------------------------------------------------ start / stop
    async def start(self) -> None:
        self.nc = await bus.connect(self.cfg.nats.url, f"table-{self.instance}",
                                    self.cfg.nats.connect_timeout)
        self.js = self.nc.jetstream()
        await self._set_up_jetstream()
        # the dial may name several arbiters (``ipv4:a:1,b:2``): spread and skip dead ones
        self._arbiter_channel = tls.channel(self.cfg, self.cfg.arbiter.dial, "arbiter",
                                            options=[("grpc.lb_policy_name", "round_robin")])
        self._arbiter = arbiter_pb2_grpc.ArbiterStub(self._arbiter_channel)
        self._adopt_sub = await self.nc.subscribe(adopt_subject(self.instance), cb=self._on_adopt)
        await self._register()
        await self._resync()
        self._watchers = [asyncio.create_task(self._watch(self.kv_rooms, self._on_room_entry)),
                          asyncio.create_task(self._watch(self.kv_tables, self._on_table_entry))]
        await self.recover()
        self._heartbeat = asyncio.create_task(self._heartbeat_loop())

    async def _set_up_jetstream(self) -> None:
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
                self.kv_rooms = await bus.ensure_bucket(self.js, bus.ROOMS_BUCKET,
                                                        replicas=replicas)
                self.kv_seats = await bus.ensure_bucket(self.js, bus.SEATS_BUCKET,
                                                        replicas=replicas)
                self.kv_ids = await bus.ensure_bucket(self.js, ROOM_IDS_BUCKET,
                                                      replicas=replicas)
                return
            except (TimeoutError, nats.errors.Error) as exc:
                if time.monotonic() >= deadline:
                    raise
                log.warning("JetStream set-up failed, retrying", extra={"error": repr(exc)})
                await asyncio.sleep(1.0)

    async def stop(self) -> None:
        await cancel_and_wait(self._heartbeat, self._retrying, self._adopting, *self._watchers)
        for actor in list(self.rooms.values()):
            await actor.stop()
        try:
            await self.kv_tables.delete(self.instance)
        except Exception:
            pass
        if self._arbiter_channel is not None:
            await self._arbiter_channel.close()
        if self.nc is not None:
            await self.nc.drain()

    # ------------------------------------------------------------------ rooms
    def _timers(self) -> dict[str, float]:
        t = self.cfg.table
        return {"turn_seconds": t.turn_seconds, "window_seconds": t.window_seconds,
                "alone_seconds": t.alone_seconds}

    def _actor(self, room: Room, next_index: int, log_seq: int) -> RoomActor:
        t = self.cfg.table
        actor = RoomActor(
            room, next_index=next_index, log_seq=log_seq, append=self._append, publish=self._publish,
            arbiter=self._resolve, bots=bot_move,
            timers=self._timers(),
            dismiss_seconds=self.cfg.lobby.dismiss_vote_seconds,
            idle_seconds=self.cfg.lobby.idle_room_seconds, entrust_delay=t.entrust_delay_seconds,
            ready_seconds=t.ready_seconds)
        room.geo_alert_meters = float(self.cfg.lobby.geo_alert_meters)
        self.rooms[room.room_id] = actor
        self.logless.discard(room.room_id)
        m.ROOMS.set(len(self.rooms))
        return actor

    async def create_room(self, req: table_pb2.CreateRoomRequest) -> Room:
        game = GAME_NAMES.get(req.game)
        if game is None:
            raise ValueError("unknown game: choose XUEZHAN, CHANGSHA or DADUN")
        try:
            options = json.loads(req.options_json) if req.options_json else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"options_json is not JSON: {exc}") from None
        if not isinstance(options, dict):
            raise ValueError("options_json must be a JSON object")
        if req.total_hands < 0 or req.total_hands > 64 or req.base_score < 0:
            raise ValueError("total_hands must be 1..64 and base_score positive")
        probe = Room({"room_id": 0, "game": game, "options": options})
        try:  # the engine validates its own options
            variant(game).new_hand(probe.engine_options, 0, 0)
        except RuleError as err:
            raise ValueError(str(err)) from None
        for key, value in probe.room_options.items():
            if key == "entrust_cancels":
                if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 99:
                    raise ValueError("entrust_cancels must be a whole number 0..99")
            elif (isinstance(value, bool) or not isinstance(value, int | float)
                    or not math.isfinite(value) or not 0 < value <= MAX_TIMER_SECONDS):
                raise ValueError(f"{key} must be a number of seconds in (0, {MAX_TIMER_SECONDS}]")
        deadline = time.monotonic() + APPEND_RETRY_SECONDS
        for _ in range(50):
            room_id = ROOM_ID_LOW + secrets.randbelow(ROOM_ID_HIGH - ROOM_ID_LOW + 1)
            try:  # atomic, and the key is never deleted: an id is never given out twice
                await self.kv_ids.create(str(room_id), self.instance.encode())
            except nats.js.errors.KeyWrongLastSequenceError:
                continue   # taken: draw another
            except (TimeoutError, nats.errors.Error) as exc:
                # no leader for the bucket (an election), or no answer: wait, within a bound
                if time.monotonic() >= deadline:
                    raise Unavailable(f"room ids cannot be allocated now: {exc!r}") from None
                await asyncio.sleep(0.25)
                continue
            rec = create_record(room_id, req, game, options, self.cfg.table.entrust_cancels,
                                self._timers())
            room = Room({**rec, "first_dealer": 0})
            self.moving.add(room_id)   # our scans must not rebuild it while it is being made
            try:
                self.room_revs[room_id] = await self.kv_rooms.put(str(room_id),
                                                                  self._room_entry(room))
            except (TimeoutError, nats.errors.Error) as exc:
                self.moving.discard(room_id)
                raise Unavailable(f"the directory cannot be written now: {exc!r}") from None
            break
        else:
            raise RuntimeError("could not allocate a room id")
        try:
            actor = self._actor(room, 0, 0)
        finally:
            self.moving.discard(room_id)
        await actor.record(rec)
        actor.start()
        return room

    async def recover(self) -> None:
        """Take back this instance's rooms after a restart: fold each room's log."""
        mine = [rid for rid, (entry, _) in self.room_dir.items()
                if entry.get("owner") == self.instance and rid not in self.rooms]
        self.moving.update(mine)
        await asyncio.gather(*(self._rebuild_safely(rid) for rid in mine))

    # -- the directory, as watched ----------------------------------------------------
    async def _watch(self, kv: Any, apply: Any) -> None:
        """Follow a bucket for ever; a watch that ends or fails is opened again."""
        while True:
            try:
                watcher = await kv.watchall()
                async for entry in watcher:
                    if entry is not None:
                        apply(entry)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("directory watch failed, reopening", extra={"error": repr(exc)})
            await asyncio.sleep(0.5)

    def _on_room_entry(self, entry: Any) -> None:
        room_id = int(entry.key)
        if entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
            self.room_dir.pop(room_id, None)
            self.orphaned_at.pop(room_id, None)
            return
        try:
            self.room_dir[room_id] = (json.loads(entry.value), int(entry.revision))
        except ValueError:
            log.warning("unreadable room entry", extra={"room": room_id})

    def _on_table_entry(self, entry: Any) -> None:
        if entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
            self.table_seen.pop(entry.key, None)
            return
        try:
            self.table_seen[entry.key] = (json.loads(entry.value), time.monotonic())
        except ValueError:
            pass

    async def _resync(self) -> None:
        """Read the whole directory again (at start, and now and then in case a watch
        missed something)."""
        rooms: dict[int, tuple[dict[str, Any], int]] = {}
        try:
            keys = await self.kv_rooms.keys()
        except Exception:  # an empty bucket has no keys
            keys = []
        for key in keys:
            try:
                got = await self.kv_rooms.get(key)
                rooms[int(key)] = (json.loads(got.value or b"{}"), got.revision)
            except Exception:  # deleted meanwhile
                continue
        self.room_dir = rooms

    def live_tables(self) -> list[dict[str, Any]]:
        """Tables heard from within the lease (this one included)."""
        ttl = self.cfg.table.lease_ttl_seconds
        now = time.monotonic()
        return [entry for entry, seen in self.table_seen.values() if now - seen <= ttl]

    async def adopt_orphans(self) -> int:
        """Rebuild the rooms the directory gives this table that it does not run (a claim or
        a hand-over whose rebuild failed or is pending), and claim rooms whose owner no
        longer heartbeats. The claim is a compare-and-set on the room's entry, and the log
        append itself is fenced, so two tables never write one room. The rooms of a dead
        table spread over the live ones (placement.should_adopt)."""
        if self.draining:
            return 0
        ttl = self.cfg.table.lease_ttl_seconds
        now = time.monotonic()
        live = {str(t.get("instance")): t for t in self.live_tables()}
        if self.instance not in live:  # our own entry is what the others see of us
            live[self.instance] = self._table_entry()
        todo: list[int] = []
        for room_id, (entry, revision) in list(self.room_dir.items()):
            owner = entry.get("owner")
            if owner == self.instance:
                if room_id not in self.rooms and room_id not in self.logless and (
                        room_id not in self.moving
                                                  or room_id in self._failed_rebuilds):
                    todo.append(room_id)
                continue
            if not owner or owner in live:
                self.orphaned_at.pop(room_id, None)
                continue
            if self.beating_since is None or now - self.beating_since < ttl:
                continue   # our own view of the leases is not to be trusted yet
            waited = now - self.orphaned_at.setdefault(room_id, now)
            if not should_adopt(room_id, self.instance, live.values(), waited, fallback=ttl):
                continue
            if await self._table_alive(str(owner)):  # a watch can lag: ask directly
                continue
            claimed = {**entry, "owner": self.instance, "address": self.address}
            try:
                self.room_revs[room_id] = await self.kv_rooms.update(
                    str(room_id), json.dumps(claimed).encode(), last=revision)
            except Exception:  # another table won the claim, or the entry changed
                continue
            self.room_dir[room_id] = (claimed, self.room_revs[room_id])
            self.orphaned_at.pop(room_id, None)
            log.info("adopting room", extra={"room": room_id, "from": owner})
            m.ADOPTED.inc()
            todo.append(room_id)
        self.moving.update(todo)
        results = await asyncio.gather(*(self._rebuild_safely(rid) for rid in todo))
        return sum(results)

    async def _rebuild_safely(self, room_id: int) -> bool:
        """Rebuild a room this table owns; a failure is kept and retried by the next scan
        (meanwhile its players hear ERR_ROOM_MOVING)."""
        async with self._rebuilds:
            if room_id in self.rooms:
                self.moving.discard(room_id)
                return False
            try:
                await self.rebuild(room_id)
            except Exception as exc:
                log.warning("room could not be rebuilt, will retry",
                            extra={"room": room_id, "error": repr(exc)})
                self._failed_rebuilds.add(room_id)
                return False
            self._failed_rebuilds.discard(room_id)
            self.moving.discard(room_id)
            return True

    async def _table_alive(self, instance: str) -> bool:
        try:
            entry = await self.kv_tables.get(instance)
        except Exception:  # no such key: expired or deleted
            return False
        return bool(entry.value)

    # -- drain -------------------------------------------------------------------------
    async def drain(self) -> None:
        """SIGTERM: take no new rooms, hand every room to a live table that is not draining
        (between two actions: the new owner rebuilds from the log; players see a pause and
        ERR_ROOM_MOVING answers their lobby retries), within ``table.drain_seconds``."""
        self.draining = True
        try:
            await self._register()
        except Exception as exc:
            log.warning("could not announce the drain", extra={"error": repr(exc)})
        deadline = time.monotonic() + self.cfg.table.drain_seconds
        assigned: dict[str, int] = {}
        moved = 0
        for room_id in sorted(self.rooms):
            if time.monotonic() >= deadline:
                log.warning("drain bound reached: the rest wait for adoption",
                            extra={"left": len(self.rooms)})
                break
            try:
                moved += await self._hand_over(room_id, assigned)
            except Exception:
                log.exception("hand-over failed", extra={"room": room_id})
        log.info("drained", extra={"moved": moved, "left": len(self.rooms)})

    async def _hand_over(self, room_id: int, assigned: dict[str, int]) -> int:
        actor = self.rooms.get(room_id)
        if actor is None:
            return 0
        target = drain_target(self._table_entry(), self.live_tables(), assigned)
        if target is None:
            log.warning("no table to hand the room to", extra={"room": room_id})
            return 0
        self.moving.add(room_id)
        if not await actor.pause(timeout=APPEND_RETRY_SECONDS + 2):
            # an item still in hand (an append riding out an election): stop it anyway; a
            # record that lands late fences the new owner's first append, and its rebuild
            # then includes it
            actor.paused = True
            log.warning("room not paused in time, handed over anyway", extra={"room": room_id})
        entry = await self.kv_rooms.get(str(room_id))
        value = json.loads(entry.value or b"{}")
        if value.get("owner") != self.instance:
            return 0   # adopted meanwhile
        await self._flush_directory()   # our last directory writes for it go out first
        value.update(owner=target["instance"], address=target["address"])
        await self.kv_rooms.update(str(room_id), json.dumps(value).encode(), last=entry.revision)
        self._forget(room_id)
        await actor.stop()
        assigned[str(target["instance"])] = assigned.get(str(target["instance"]), 0) + 1
        try:  # the new owner's scan would find it too; this saves it the wait
            await self.nc.request(adopt_subject(str(target["instance"])),
                                  json.dumps({"room_id": room_id}).encode(), timeout=3)
        except Exception as exc:
            log.info("adopt request unanswered: its scan takes the room",
                     extra={"room": room_id, "error": repr(exc)})
        m.HANDED_OVER.inc()
        log.info("room handed over", extra={"room": room_id, "to": target["instance"]})
        return 1

    async def _on_adopt(self, msg: Any) -> None:
        """A draining table handed us a room: rebuild it now (the entry must name us)."""
        try:
            room_id = int(json.loads(msg.data)["room_id"])
            entry = await self.kv_rooms.get(str(room_id))
            value = json.loads(entry.value or b"{}")
            ok = value.get("owner") == self.instance and not self.draining
            if ok:
                self.room_dir[room_id] = (value, int(entry.revision))
                self.moving.add(room_id)
                ok = await self._rebuild_safely(room_id) or room_id in self.rooms
            await msg.respond(json.dumps({"ok": ok}).encode())
        except Exception as exc:
            log.warning("adopt request failed", extra={"error": repr(exc)})

    async def rebuild(self, room_id: int) -> None:
        if room_id in self.rooms:
            return
        records, last_seq = await self._read_log(room_id)
        if room_id in self.rooms:   # rebuilt meanwhile (a hand-over request and a scan)
            return
        if not records or records[0].get("t") != "create":
            log.warning("room log missing", extra={"room": room_id})
            self.logless.add(room_id)   # not retried by the scans
            return
        room = Room({**records[0], "first_dealer": 0})
        fx = Effects()
        for rec in records:
            room.apply(rec, fx)
        m.REBUILT.inc()
        await self._publish_settlements(room.settled)
        if room.closed:  # closed, but the table stopped before cleaning up after it
            for _, s in room.seated():
                await self._put_seat(room, s.user_id, None)
            await self._closed(room_id)
            return
        actor = self._actor(room, records[-1]["i"] + 1, last_seq)
        # this table's first record: its messages sort after anything the old owner sent
        await actor.record({"t": "owner", "instance": self.instance, "boot": self.boot})
        await self._put_room(room)
        for user_id in (s.user_id for _, s in room.seated()):
            await self._put_seat(room, user_id, room.seat_of(user_id))
        actor.start()
        log.info("room rebuilt from log", extra={"room": room_id, "records": len(records),
                                                 "hand": room.hand_no})

    async def _read_log(self, room_id: int) -> tuple[list[dict[str, Any]], int]:
        subject = bus.room_log(room_id)
        records: list[dict[str, Any]] = []
        last_seq = 0
        # a failure raises (the rebuild is retried): a partial log must never be folded
        info = await self.js.stream_info(bus.ROOM_LOG_STREAM, subjects_filter=subject)
        total = (info.state.subjects or {}).get(subject, 0)
        if not total:
            return records, last_seq
        sub = await self.js.pull_subscribe(
            subject, durable=None, stream=bus.ROOM_LOG_STREAM,
            config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL, inactive_threshold=30))
        try:
            while len(records) < total:
                batch = await sub.fetch(min(512, total - len(records)), timeout=5)
                for msg in batch:
                    records.append(json.loads(msg.data))
                    last_seq = max(last_seq, msg.metadata.sequence.stream)
                    await msg.ack()
        finally:
            await sub.unsubscribe()
        records.sort(key=lambda r: r["i"])
        return records, last_seq

    # ------------------------------------------------------------------ I/O for actors
    async def _append(self, room_id: int, index: int, rec: dict[str, Any], last_seq: int) -> int:
        """Append record ``index`` to the room's log, fenced on the last record we know.
        Retried (same message id, so at most one copy lands) while the stream has no
        leader or does not answer, for up to APPEND_RETRY_SECONDS; past that the room is
        rebuilt from its log (whatever landed) and the caller hears ERR_ROOM_MOVING."""
        subject = bus.room_log(room_id)
        msg_id = f"{room_id}:{index}:{self.boot}"
        data = json.dumps(rec).encode()
        headers = {"Nats-Msg-Id": msg_id, "Nats-Expected-Last-Subject-Sequence": str(last_seq)}
        deadline = time.monotonic() + APPEND_RETRY_SECONDS
        delay = 0.1
        while True:
            try:
                ack = await self.js.publish(subject, data, timeout=APPEND_TIMEOUT_SECONDS,
                                            headers=dict(headers))
                return int(ack.seq)   # a duplicate can only be our own earlier try
            except nats.js.errors.APIError as exc:
                if exc.err_code == WRONG_LAST_SEQUENCE:
                    stored = await self._stored(subject, msg_id)  # our earlier try did land
                    if stored is not None:
                        return stored
                    self._lost(room_id)
                    raise RoomError(common_pb2.ERR_ROOM_MOVING,
                                    f"room {room_id} has moved to another table") from None
                if exc.code is not None and exc.code < 500:
                    raise
                failure: Exception = exc
            except (TimeoutError, nats.errors.Error) as exc:
                failure = exc
            if time.monotonic() + delay >= deadline:
                break
            m.APPEND_RETRIES.inc()
            await asyncio.sleep(delay)
            delay = min(1.0, delay * 2)
        stored = await self._stored(subject, msg_id)
        if stored is not None:
            return stored
        log.warning("room log unavailable: the room is rebuilt from its log",
                    extra={"room": room_id, "error": repr(failure)})
        self._forget(room_id, stop=True, keep_directory=True)
        self.moving.add(room_id)
        self._failed_rebuilds.add(room_id)   # the next scan rebuilds it from the log
        raise RoomError(common_pb2.ERR_ROOM_MOVING, f"room {room_id} is recovering, a moment")

    async def _stored(self, subject: str, msg_id: str) -> int | None:
        """The stream sequence of the last record on ``subject`` if it is ours (its message
        id, which names this process, is ``msg_id``)."""
        try:
            last = await self.js.get_last_msg(bus.ROOM_LOG_STREAM, subject)
        except Exception:
            return None
        if (last.headers or {}).get("Nats-Msg-Id") == msg_id:
            return int(last.seq)
        return None

    def _lost(self, room_id: int) -> None:
        log.warning("room taken over by another table", extra={"room": room_id})
        self._forget(room_id, stop=True)

    def _forget(self, room_id: int, *, stop: bool = False, keep_directory: bool = False) -> None:
        """This table no longer runs the room: its pending directory writes are dropped
        (they are not ours to make any more) unless ``keep_directory``."""
        if not keep_directory:
            for item, op in list(self.kv_pending.items()):
                if op.room_id == room_id:
                    del self.kv_pending[item]
            self.room_revs.pop(room_id, None)
        actor = self.rooms.pop(room_id, None)
        m.ROOMS.set(len(self.rooms))
        if stop and actor is not None:
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(actor.stop()))

    async def _publish(self, actor: RoomActor, fx: Effects, msg: table_pb2.RoomEvents) -> None:
        """Send what one log record (or a follow-up at it) caused: one message on the room's
        subject, whatever its audience (docs/ordered-events.md). Never raises for a NATS
        failure after the append: the record is durable, so settlements and directory writes
        that fail wait in outboxes the heartbeat retries (core NATS publishes are buffered
        by the client), and a lobby that misses the message refills from the ring."""
        room = actor.room
        started = time.perf_counter()
        try:
            await self.nc.publish(bus.room_events(room.room_id), msg.SerializeToString())
        except Exception as exc:  # e.g. the client's reconnect buffer is full: a reconnecting
            # player gets a snapshot; the room must go on either way
            log.warning("events not published", extra={"room": room.room_id, "error": repr(exc)})
        m.FANOUT.observe(time.perf_counter() - started)
        await self._publish_settlements(fx.settle)
        for user_id, seat in fx.seats.items():
            await self._put_seat(room, user_id, seat)
        if fx.closed:
            await self._closed(room.room_id)
            # the last await here: stopping cancels the actor's task, which runs this
            self.rooms.pop(room.room_id, None)
            m.ROOMS.set(len(self.rooms))
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(actor.stop()))
        elif fx.changed:
            await self._put_room(room)

    async def _closed(self, room_id: int) -> None:
        """A closed room leaves the directory, then its log is purged."""
        await self._kv(bus.ROOMS_BUCKET, str(room_id), KvWrite("delete", room_id))
        self.unpurged.add(room_id)
        await self._purge_logs([room_id])  # the backlog is the heartbeat's

    async def _purge_logs(self, rooms: list[int] | None = None) -> None:
        """Purge the logs of closed rooms (JetStream purge with a subject filter). A log goes
        only after the room's settlements are published (records keeps the hands and their
        replays from those; nothing reads a closed room's log) and after its directory entry
        is deleted (a restarted table must not find a room without its log). A purge that
        fails is retried by the heartbeat; it never holds up anything else."""
        for room_id in sorted(self.unpurged) if rooms is None else rooms:
            if any(msg["room_id"] == room_id for msg in self.unsent) \
                    or (bus.ROOMS_BUCKET, str(room_id)) in self.kv_pending:
                continue
            try:
                await self.js.purge_stream(bus.ROOM_LOG_STREAM, subject=bus.room_log(room_id))
            except Exception as exc:
                log.warning("room log not purged yet", extra={"room": room_id, "error": repr(exc)})
                continue
            self.unpurged.discard(room_id)
            m.LOGS_PURGED.inc()
        m.PENDING.labels("purge").set(len(self.unpurged))

    async def _publish_settlements(self, messages: list[dict[str, Any]]) -> None:
        """Publish settlements; one that fails waits in ``unsent`` for the heartbeat to retry
        (records writes each exactly once, so retries and rebuilds are safe)."""
        for msg in messages:
            msg.setdefault("settled_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            dedupe = f"{msg['room_id']}:{'final' if msg.get('final') else msg['hand_no']}"
            try:
                await self.js.publish(bus.settle_subject(msg["room_id"]), json.dumps(msg).encode(),
                                      headers={"Nats-Msg-Id": dedupe})
            except Exception as exc:
                log.warning("settlement not published yet", extra={"id": dedupe, "error": repr(exc)})
                if msg not in self.unsent:
                    self.unsent.append(msg)
                continue
            if msg in self.unsent:
                self.unsent.remove(msg)
            if not msg.get("final"):
                m.HANDS.labels(msg["game"]).inc()
            m.SETTLEMENTS.labels(str(bool(msg.get("final"))).lower()).inc()
        m.PENDING.labels("settlement").set(len(self.unsent))

    async def _put_seat(self, room: Room, user_id: int, seat: int | None) -> None:
        if seat is None:
            await self._kv(bus.SEATS_BUCKET, str(user_id), KvWrite("clear", room.room_id))
        else:
            await self._kv(bus.SEATS_BUCKET, str(user_id), KvWrite("put", room.room_id, json.dumps({
                "room_id": room.room_id, "owner": self.instance, "address": self.address,
                "seat": seat}).encode()))

    def _room_entry(self, room: Room) -> bytes:
        info = json_format.MessageToDict(room.room_info(), preserving_proto_field_name=True)
        return json.dumps({
            "room_id": room.room_id, "owner": self.instance, "address": self.address,
            "game": room.game, "status": int(room.status), "free_seats": room.free_seats(),
            "has_password": bool(room.password), "room": info}).encode()

    async def _put_room(self, room: Room) -> None:
        await self._kv(bus.ROOMS_BUCKET, str(room.room_id),
                       KvWrite("put", room.room_id, self._room_entry(room)))

    # ------------------------------------------------------------------ directory outbox
    async def _kv(self, bucket: str, key: str, op: KvWrite) -> None:
        """Write a directory entry now if possible; else it waits (the latest value per
        key) for the heartbeat. Never raises: the room's change is already in its log."""
        self.kv_pending[(bucket, key)] = op
        await self._kv_flush((bucket, key))

    async def _kv_flush(self, item: tuple[str, str]) -> None:
        """Write the pending value of one key, and any newer one set meanwhile; one write
        per key at a time, so an older value never lands after a newer one."""
        if item in self._kv_busy:
            return  # the write in flight picks the newer value up when it is done
        self._kv_busy.add(item)
        try:
            while (op := self.kv_pending.get(item)) is not None:
                try:
                    await self._kv_write(item[0], item[1], op)
                except Exception as exc:
                    op.fresh = False  # a retry checks the room's owner first
                    log.warning("directory write failed, will retry",
                                extra={"bucket": item[0], "key": item[1], "error": repr(exc)})
                    return
                if self.kv_pending.get(item) is op:
                    del self.kv_pending[item]
        finally:
            self._kv_busy.discard(item)
            m.PENDING.labels("directory").set(len(self.kv_pending))

    async def _kv_write(self, bucket: str, key: str, op: KvWrite) -> None:
        """Checked against the room's entry in ``rooms``: a late write (a retry, or a table
        cut off from NATS for a while) never takes a room back from the table that adopted
        it, never brings back the entry of a closed room, and never clears the seat of a user
        who sits in another room now."""
        if op.kind == "delete":  # a close: the room's last record, appended by us
            self.room_revs.pop(op.room_id, None)
            await self.kv_rooms.delete(key)
            return
        if op.fresh and op.kind == "put":  # we own the room: no read on the common path
            if bucket == bus.SEATS_BUCKET:
                await self.kv_seats.put(key, op.value)
                return
            rev = self.room_revs.get(op.room_id)
            if rev is not None:
                try:
                    self.room_revs[op.room_id] = await self.kv_rooms.update(key, op.value, last=rev)
                    return
                except nats.js.errors.KeyWrongLastSequenceError:
                    pass  # written meanwhile (an adoption?): the checked path decides
        try:
            room_entry = await self.kv_rooms.get(str(op.room_id))
        except KeyNotFoundError:  # the room has closed
            room_entry = None
        owner = json.loads(room_entry.value or b"{}").get("owner") if room_entry else None
        if owner not in (None, "", self.instance):
            log.info("room belongs to another table now: directory write dropped",
                     extra={"room": op.room_id, "owner": owner, "key": key})
            return
        if bucket == bus.ROOMS_BUCKET:
            if room_entry is not None:  # compare-and-set: an adoption in between wins
                self.room_revs[op.room_id] = await self.kv_rooms.update(
                    key, op.value, last=room_entry.revision)
            return
        if op.kind == "put":
            if room_entry is not None:
                await self.kv_seats.put(key, op.value)
            return
        try:  # clear: only while the entry still names this room
            entry = await self.kv_seats.get(key)
        except KeyNotFoundError:
            return
        if json.loads(entry.value or b"{}").get("room_id") == op.room_id:
            await self.kv_seats.delete(key, last=entry.revision)

    async def _flush_directory(self) -> None:
        for item in list(self.kv_pending):
            await self._kv_flush(item)

    async def _resolve(self, window: Window, rules: Rules) -> Decision | None:
        if self._arbiter is None:
            return None
        started = time.perf_counter()
        try:
            reply = await self._arbiter.Resolve(window_to_pb(window, rules),
                                                timeout=self.cfg.table.arbiter_timeout_seconds)
        except grpc.aio.AioRpcError:
            return None
        m.ARBITER.observe(time.perf_counter() - started)
        return decision_from_pb(reply)

    # ------------------------------------------------------------------ directory
    def _table_entry(self) -> dict[str, Any]:
        players = sum(len(a.room.seated()) for a in self.rooms.values())
        return {"instance": self.instance, "address": self.address, "rooms": len(self.rooms),
                "players": players, "started_at": self.started_at, "draining": self.draining}

    async def _register(self) -> None:
        await self.kv_tables.put(self.instance, json.dumps(self._table_entry()).encode())

    async def _heartbeat_loop(self) -> None:
        beats = 0
        interval = max(0.2, self.cfg.table.lease_ttl_seconds / 5)
        while True:
            await asyncio.sleep(interval)
            beats += 1
            try:
                await self._register()
                if self.beating_since is None:
                    self.beating_since = time.monotonic()
            except Exception as exc:  # NATS down: keep trying, rooms keep playing
                self.beating_since = None
                log.warning("heartbeat failed", extra={"error": repr(exc)})
            if (self.kv_pending or self.unsent or self.unpurged) \
                    and (self._retrying is None or self._retrying.done()):
                # in a task of its own: slow retries never delay the lease above
                self._retrying = asyncio.create_task(self._retry_pending())
            if beats % RESYNC_EVERY == 0:
                try:
                    await self._resync()
                except Exception as exc:
                    log.warning("directory re-read failed", extra={"error": repr(exc)})
                target = self.cfg.nats.replicas
                await bus.report_replicas(self.js, {name: target for name in (
                    bus.ROOM_LOG_STREAM, bus.SETTLE_STREAM, *(f"KV_{b}" for b in (
                        bus.TABLES_BUCKET, bus.ROOMS_BUCKET, bus.SEATS_BUCKET, ROOM_IDS_BUCKET)))})
            if self._adopting is None or self._adopting.done():
                self._adopting = asyncio.create_task(self._adopt_scan())

    async def _adopt_scan(self) -> None:
        try:
            await self.adopt_orphans()
        except Exception as exc:  # NATS away: the next beat scans again
            log.warning("adoption scan failed", extra={"error": repr(exc)})

    async def _retry_pending(self) -> None:
        """Retry what failed after a log append; these never raise, a failure stays pending
        for the next beat. Directory entries first, then settlements: a closed room's log is
        purged only after both."""
        try:
            await self._flush_directory()
            if self.unsent:
                await self._publish_settlements(list(self.unsent))
            if self.unpurged:
                await self._purge_logs()
        except Exception:  # a bug here must not end the retries for good
            log.exception("retrying pending writes failed")

    # ------------------------------------------------------------------ commands
    async def command(self, cmd: table_pb2.TableCommand) -> table_pb2.TableReply:
        actor = self.rooms.get(cmd.room_id)
        if actor is None:
            if cmd.room_id in self.moving or \
                    self.room_dir.get(cmd.room_id, ({}, 0))[0].get("owner") == self.instance:
                return moving_reply(cmd)
            return table_pb2.TableReply(request_id=cmd.request_id, code=common_pb2.ERR_NO_SUCH_ROOM,
                                        message=f"room {cmd.room_id} is not on this table",
                                        room_id=0, seat=-1)
        if cmd.kind == "events_since":   # a lobby missed messages: from the ring, at once
            index, part = actor.stream.position
            missed = actor.stream.since(cmd.since_index, cmd.since_part)
            return table_pb2.TableReply(request_id=cmd.request_id, room_id=cmd.room_id,
                                        seat=-1, ordered=True, index=index, part=part,
                                        events=missed or (), resync=missed is None)
        reply: Reply = await actor.submit("command", cmd)
        seat = actor.room.seat_of(cmd.user_id)
        out = table_pb2.TableReply(
            request_id=cmd.request_id, code=reply.code, message=reply.message, frames=reply.frames,
            room_id=cmd.room_id if seat is not None and not actor.room.closed else 0,
            seat=-1 if seat is None else seat)
        if reply.position is not None:
            out.ordered = True
            out.index, out.part = reply.position
        return out


class TableService(table_pb2_grpc.TableServicer):
    def __init__(self, core: TableCore) -> None:
        self.core = core

    async def CreateRoom(self, request: table_pb2.CreateRoomRequest,  # noqa: N802
                         context: grpc.aio.ServicerContext) -> table_pb2.CreateRoomReply:
        if self.core.draining:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "this table is draining")
        try:
            room = await self.core.create_room(request)
        except Unavailable as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        return table_pb2.CreateRoomReply(room=room.room_info())

    async def GetRoom(self, request: table_pb2.GetRoomRequest,  # noqa: N802
                      context: grpc.aio.ServicerContext) -> common_pb2.RoomInfo:
        actor = self.core.rooms.get(request.room_id)
        if actor is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"room {request.room_id} is not here")
        return actor.room.room_info()

    async def ListRooms(self, request: table_pb2.ListRoomsRequest,  # noqa: N802
                        context: grpc.aio.ServicerContext) -> table_pb2.ListRoomsReply:
        want = GAME_NAMES.get(request.game)
        rooms = [a.room for a in self.core.rooms.values() if want is None or a.room.game == want]
        started = sum(1 for r in rooms if r.hand_no > 0)
        return table_pb2.ListRoomsReply(rooms=[r.room_info() for r in rooms],
                                        started_room_num=started)

    async def Session(self, request_iterator: AsyncIterator[table_pb2.TableCommand],  # noqa: N802
                      context: grpc.aio.ServicerContext) -> AsyncIterator[table_pb2.TableReply]:
        out: asyncio.Queue[table_pb2.TableReply | None] = asyncio.Queue()
        pending: set[asyncio.Task[None]] = set()

        async def run(cmd: table_pb2.TableCommand) -> None:
            try:
                await out.put(await self.core.command(cmd))
            except Exception:  # details go to the log, never to a client
                log.exception("command failed", extra={"room": cmd.room_id})
                await out.put(table_pb2.TableReply(request_id=cmd.request_id,
                                                   code=common_pb2.ERR_INTERNAL,
                                                   message="internal error; please retry"))

        async def read() -> None:
            try:
                async for cmd in request_iterator:
                    task = asyncio.create_task(run(cmd))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
            finally:
                if pending:
                    await asyncio.gather(*pending, return_exceptions=True)
                await out.put(None)

        reader = asyncio.create_task(read())
        try:
            while True:
                item = await out.get()
                if item is None:
                    break
                yield item
        finally:
            reader.cancel()


def instance_name(cfg: Config, port: int) -> str:
    return cfg.table.instance or f"table-{socket.gethostname()}-{port}"


async def start(cfg: Config, *, port: int | None = None, metrics_port: int | None = None) -> ServiceHost:
    c = cfg.table
    holder: dict[str, TableService] = {}

    def register(server: grpc.aio.Server) -> list[str]:
        holder["svc"] = TableService(None)  # type: ignore[arg-type]
        table_pb2_grpc.add_TableServicer_to_server(holder["svc"], server)
        return ["paiju.v1.Table"]

    svc = await start_service("table", c.host, c.port if port is None else port,
                              c.metrics_port if metrics_port is None else metrics_port, register,
                              serving=False, cfg=cfg)
    address = c.advertise or f"{c.host}:{svc.port}"
    core = TableCore(cfg, instance_name(cfg, svc.port), address)
    holder["svc"].core = core
    try:
        await core.start()
    except Exception:
        await svc.stop(0)
        raise
    svc.on_stop.append(core.stop)
    svc.on_drain.append(core.drain)
    await watch_service(svc, {"nats": nats_connected(core.nc)}, cfg.nats.liveness_seconds)
    return svc
