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

from games.arbitration import Decision, Rules, Window
from games.engine import Action, RuleError
from paiju.v1 import arbiter_pb2_grpc, common_pb2, table_pb2, table_pb2_grpc
from services.common import bus
from services.common.arbwire import decision_from_pb, window_to_pb
from services.common.config import Config
from services.common.server import ServiceHost, start_service
from services.table import metrics as m
from services.table.actor import Reply, RoomActor, create_record
from services.table.codec import GAME_NAMES
from services.table.room import Effects, Room, RoomError, variant

log = logging.getLogger("paiju.table")

ROOM_IDS_BUCKET = "room_ids"    # every room id ever given out: never reused (logs, records)
ROOM_ID_LOW, ROOM_ID_HIGH = 10_000_000, 99_999_999
MAX_TIMER_SECONDS = 600
ADOPT_EVERY = 3                 # heartbeats between scans for rooms of dead tables
WRONG_LAST_SEQUENCE = 10071     # JetStream: Nats-Expected-Last-Subject-Sequence mismatch



class KvWrite:
    """A directory write for one key, made on behalf of one room: ``put`` (value), ``delete``,
    or ``clear``: delete the entry only while it still names that room."""

    __slots__ = ("kind", "value", "room_id", "fresh")

    def __init__(self, kind: str, room_id: int, value: bytes = b"") -> None:
        self.kind, self.room_id, self.value = kind, room_id, value
        # made right after this table's fenced log append for the room: until a failed
        # attempt, this table is known to own the room (no need to read its entry first)
        self.fresh = True


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
        self._arbiter_channel: grpc.aio.Channel | None = None
        self._arbiter: arbiter_pb2_grpc.ArbiterStub | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._retrying: asyncio.Task[None] | None = None
        self.started_at = time.time()

    # ------------------------------------------------------------------ start / stop
    async def start(self) -> None:
        self.nc = await bus.connect(self.cfg.nats.url, f"table-{self.instance}",
                                    self.cfg.nats.connect_timeout)
        self.js = self.nc.jetstream()
        replicas = self.cfg.nats.replicas
        await bus.ensure_streams(self.js, replicas)
        self.kv_tables = await bus.ensure_bucket(self.js, bus.TABLES_BUCKET,
                                                 ttl=self.cfg.table.lease_ttl_seconds,
                                                 replicas=replicas)
        self.kv_rooms = await bus.ensure_bucket(self.js, bus.ROOMS_BUCKET, replicas=replicas)
        self.kv_seats = await bus.ensure_bucket(self.js, bus.SEATS_BUCKET, replicas=replicas)
        self._arbiter_channel = grpc.aio.insecure_channel(self.cfg.arbiter.dial)
        self._arbiter = arbiter_pb2_grpc.ArbiterStub(self._arbiter_channel)
        self.kv_ids = await bus.ensure_bucket(self.js, ROOM_IDS_BUCKET, replicas=replicas)
        await self._register()
        await self.recover()
        self._heartbeat = asyncio.create_task(self._heartbeat_loop())

    async def stop(self) -> None:
        for task in (self._heartbeat, self._retrying):
            if task is not None:
                task.cancel()
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
            idle_seconds=self.cfg.lobby.idle_room_seconds, entrust_delay=t.entrust_delay_seconds)
        room.geo_alert_meters = float(self.cfg.lobby.geo_alert_meters)
        self.rooms[room.room_id] = actor
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
        for _ in range(50):
            room_id = ROOM_ID_LOW + secrets.randbelow(ROOM_ID_HIGH - ROOM_ID_LOW + 1)
            try:  # atomic, and the key is never deleted: an id is never given out twice
                await self.kv_ids.create(str(room_id), self.instance.encode())
            except Exception:
                continue
            rec = create_record(room_id, req, game, options, self.cfg.table.entrust_cancels,
                                self._timers())
            room = Room({**rec, "first_dealer": 0})
            self.room_revs[room_id] = await self.kv_rooms.put(str(room_id), self._room_entry(room))
            break
        else:
            raise RuntimeError("could not allocate a room id")
        actor = self._actor(room, 0, 0)
        await actor.record(rec)
        actor.start()
        return room

    async def recover(self) -> None:
        """Take back this instance's rooms after a restart: fold each room's log."""
        for key, entry, _ in await self._room_entries():
            if entry.get("owner") == self.instance:
                try:
                    await self.rebuild(int(key))
                except Exception:  # one bad log must not keep the table from starting
                    log.exception("room could not be rebuilt", extra={"room": key})

    async def _room_entries(self) -> list[tuple[str, dict[str, Any], int]]:
        try:
            keys = await self.kv_rooms.keys()
        except Exception:  # an empty bucket has no keys
            return []
        out = []
        for key in keys:
            try:
                got = await self.kv_rooms.get(key)
                out.append((key, json.loads(got.value or b"{}"), got.revision))
            except Exception:  # deleted meanwhile
                continue
        return out

    async def adopt_orphans(self) -> int:
        """Claim rooms whose owner no longer heartbeats (its `tables` entry expired) and
        rebuild them from their logs. The claim is a compare-and-set on the room's entry, and
        the log append itself is fenced, so two tables never write one room."""
        try:
            live = set(await self.kv_tables.keys())
        except Exception:
            return 0
        adopted = 0
        for key, entry, revision in await self._room_entries():
            owner = entry.get("owner")
            if not owner or owner in live or owner == self.instance:
                continue
            if await self._table_alive(owner):  # a key listing can miss keys: ask directly
                continue
            claimed = {**entry, "owner": self.instance, "address": self.address}
            try:
                self.room_revs[int(key)] = await self.kv_rooms.update(
                    key, json.dumps(claimed).encode(), last=revision)
            except Exception:  # another table won the claim
                continue
            log.info("adopting room", extra={"room": key, "from": owner})
            try:
                await self.rebuild(int(key))
            except Exception:
                log.exception("adopted room could not be rebuilt", extra={"room": key})
                continue
            adopted += 1
        return adopted

    async def _table_alive(self, instance: str) -> bool:
        try:
            entry = await self.kv_tables.get(instance)
        except Exception:  # no such key: expired or deleted
            return False
        return bool(entry.value)

    async def rebuild(self, room_id: int) -> None:
        records, last_seq = await self._read_log(room_id)
        if not records or records[0].get("t") != "create":
            log.warning("room log missing", extra={"room": room_id})
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
        try:
            info = await self.js.stream_info(bus.ROOM_LOG_STREAM, subjects_filter=subject)
            total = (info.state.subjects or {}).get(subject, 0)
        except Exception:
            total = None
        if not total:
            return records, last_seq
        sub = await self.js.pull_subscribe(
            subject, durable=None, stream=bus.ROOM_LOG_STREAM,
            config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL, inactive_threshold=30))
        try:
            while len(records) < total:
                try:
                    batch = await sub.fetch(min(512, total - len(records)), timeout=5)
                except nats.errors.TimeoutError:
                    break
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
        subject = bus.room_log(room_id)
        try:
            ack = await self.js.publish(subject, json.dumps(rec).encode(), headers={
                "Nats-Msg-Id": f"{room_id}:{index}",
                "Nats-Expected-Last-Subject-Sequence": str(last_seq)})
            return int(ack.seq)
        except nats.js.errors.APIError as exc:
            if exc.err_code != WRONG_LAST_SEQUENCE:
                raise
            stored = await self._stored(subject, index)  # our earlier try did land
            if stored is not None:
                return stored
            self._lost(room_id)
            raise RoomError(common_pb2.ERR_NO_SUCH_ROOM,
                            f"room {room_id} has moved to another table") from None
        except (TimeoutError, nats.errors.TimeoutError):
            stored = await self._stored(subject, index)  # the answer was lost, not the record
            if stored is None:
                raise
            return stored

    async def _stored(self, subject: str, index: int) -> int | None:
        """The stream sequence of record ``index`` if it is the last one on ``subject``."""
        try:
            last = await self.js.get_last_msg(bus.ROOM_LOG_STREAM, subject)
        except Exception:
            return None
        if last.data and json.loads(last.data).get("i") == index:
            return int(last.seq)
        return None

    def _lost(self, room_id: int) -> None:
        for item, op in list(self.kv_pending.items()):  # its directory entries are not ours
            if op.room_id == room_id:
                del self.kv_pending[item]
        self.room_revs.pop(room_id, None)
        actor = self.rooms.pop(room_id, None)
        m.ROOMS.set(len(self.rooms))
        if actor is not None:
            log.warning("room taken over by another table", extra={"room": room_id})
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(actor.stop()))

    async def _publish(self, actor: RoomActor, fx: Effects) -> None:
        """Send what one log record caused. Never raises for a NATS failure after the
        append: the record is durable, so settlements and directory writes that fail wait in
        outboxes the heartbeat retries (core NATS publishes are buffered by the client)."""
        room = actor.room
        started = time.perf_counter()
        subject = bus.room_events(room.room_id)
        try:
            for frame in fx.public:
                await self.nc.publish(subject, frame.SerializeToString())
            for user_id, frame in fx.private:
                await self.nc.publish(bus.user_inbox(user_id), frame.SerializeToString())
            for frame in fx.lobby:
                await self.nc.publish(bus.LOBBY_ROOMS, frame.SerializeToString())
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
    async def _register(self) -> None:
        players = sum(len(a.room.seated()) for a in self.rooms.values())
        await self.kv_tables.put(self.instance, json.dumps({
            "instance": self.instance, "address": self.address, "rooms": len(self.rooms),
            "players": players, "started_at": self.started_at}).encode())

    async def _heartbeat_loop(self) -> None:
        beats = 0
        interval = max(0.2, self.cfg.table.lease_ttl_seconds / 5)
        while True:
            await asyncio.sleep(interval)
            beats += 1
            try:
                await self._register()
            except Exception as exc:  # NATS down: keep trying, rooms keep playing
                log.warning("heartbeat failed", extra={"error": repr(exc)})
            if (self.kv_pending or self.unsent or self.unpurged) \
                    and (self._retrying is None or self._retrying.done()):
                # in a task of its own: slow retries never delay the lease above
                self._retrying = asyncio.create_task(self._retry_pending())
            if beats % ADOPT_EVERY == 0:
                try:
                    await self.adopt_orphans()
                except Exception as exc:
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
            return table_pb2.TableReply(request_id=cmd.request_id, code=common_pb2.ERR_NO_SUCH_ROOM,
                                        message=f"room {cmd.room_id} is not on this table",
                                        room_id=0, seat=-1)
        reply: Reply = await actor.submit("command", cmd)
        seat = actor.room.seat_of(cmd.user_id)
        return table_pb2.TableReply(
            request_id=cmd.request_id, code=reply.code, message=reply.message, frames=reply.frames,
            room_id=cmd.room_id if seat is not None and not actor.room.closed else 0,
            seat=-1 if seat is None else seat)


class TableService(table_pb2_grpc.TableServicer):
    def __init__(self, core: TableCore) -> None:
        self.core = core

    async def CreateRoom(self, request: table_pb2.CreateRoomRequest,  # noqa: N802
                         context: grpc.aio.ServicerContext) -> table_pb2.CreateRoomReply:
        try:
            room = await self.core.create_room(request)
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
                              serving=False)
    address = c.advertise or f"{c.host}:{svc.port}"
    core = TableCore(cfg, instance_name(cfg, svc.port), address)
    holder["svc"].core = core
    try:
        await core.start()
    except Exception:
        await svc.stop(0)
        raise
    svc.on_stop.append(core.stop)
    await svc.set_serving(True)
    return svc
