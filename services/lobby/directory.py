"""Where things are: the directory buckets (``tables``, ``rooms``, ``seats``) and one
long-lived ``Table.Session`` stream per table address, multiplexed by request id.

A broken stream fails its pending requests with :class:`Unavailable` and is opened again on
the next command. The link of a table that left ``tables`` (dead, or restarted elsewhere on a
new address) is closed and forgotten by :meth:`Directory.prune` once nothing uses it, so a
long-running lobby facing rolling table restarts keeps a bounded number of channels. See
docs/services.md, "Directory" and "Lobby → table".

The live tables come from one long-lived watch of the ``tables`` bucket (:class:`TableCache`,
followed by :meth:`Directory.follow_tables`), never from a key listing per request: a listing
is a JetStream consumer of its own that lingers on the server for minutes, and a loop of
room creations used to exhaust the server's consumer limit for everyone. An entry not
rewritten within the lease (``table.lease_ttl_seconds``) is not live, as the tables judge it
(services/table/server.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import grpc
import nats.errors
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from services.common import bus
from services.common.tasks import cancel_and_wait
from services.lobby import metrics

log = logging.getLogger("paiju.lobby.directory")

TABLES_TTL = 10.0      # the tables bucket's TTL when the lobby creates it (table.lease_ttl)
PRUNE_SECONDS = 30.0   # how often the links of departed tables are looked for
SYNC_SECONDS = 2.0     # how long a request waits for the first snapshot of the tables watch
# A watch that has heard nothing for this many leases is opened again: live tables rewrite
# their entries five times a lease, so silence means no table at all, or a watch that died
# with its connection (its consumer is gone from the server)
SILENT_LEASES = 2.0
WATCH_INACTIVE = 10.0  # seconds NATS keeps an abandoned watch's consumer (not the default 5 min)
# A table that vanishes without closing its connections (a killed pod whose address is gone)
# is found out by keepalive pings within about 15 s: its stream breaks, what is pending
# fails, and the commands follow the room to its next owner. Tables accept a ping every 5 s
# (services/common/server.py).
KEEPALIVE = (("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000),
             ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0))
NO_TABLE_WAIT_SECONDS = 10.0    # a create waits this long for a live table to appear


Dial = Callable[[str], grpc.aio.Channel]


class Reject(Exception):
    """A request answered with an ErrorCode (becomes a Return frame for the client)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Unavailable(Reject):
    def __init__(self, message: str) -> None:
        super().__init__(common_pb2.ERR_UNAVAILABLE, message)


class Unreachable(Unavailable):
    """The table could not be reached (gRPC UNAVAILABLE: in all likelihood the call never
    got there, so another table may be asked)."""


class TableCache:
    """The ``tables`` bucket as heard from its watch: each entry with the time it was written
    (the time it arrived, or for the first snapshot the age the server gives it), and the
    rooms this lobby placed on each table since its entry was last rewritten."""

    def __init__(self, ttl: float = TABLES_TTL) -> None:
        self.ttl = ttl
        self._entries: dict[str, tuple[dict[str, Any], float]] = {}
        self._placed: dict[str, int] = {}
        self._failed: set[str] = set()      # unreachable since their entry was written
        self.synced = asyncio.Event()       # the first snapshot has been read
        self.heard = time.monotonic()       # the last time the watch said anything

    def apply(self, key: str, value: bytes | None, deleted: bool = False,
              age: float = 0.0, now: float | None = None) -> None:
        """Fold in one entry of the watch, written ``age`` seconds ago."""
        now = time.monotonic() if now is None else now
        self.heard = now
        self._placed.pop(key, None)     # a fresh entry counts the rooms placed before it
        self._failed.discard(key)
        if deleted or not value:
            self._entries.pop(key, None)
            return
        try:
            table = json.loads(value)
        except ValueError:
            log.warning("bad JSON in the tables bucket", extra={"key": key})
            return
        if not isinstance(table, dict) or not table.get("address"):
            return
        table.setdefault("instance", key)
        self._entries[key] = (table, now - max(0.0, age))

    def live(self, now: float | None = None) -> list[dict[str, Any]]:
        """Tables whose entry was written within the lease."""
        now = time.monotonic() if now is None else now
        for key in [k for k, (_, at) in self._entries.items() if now - at > 3 * self.ttl]:
            del self._entries[key]      # long gone: forget it
            self._placed.pop(key, None)
            self._failed.discard(key)
        return [table for table, at in self._entries.values() if now - at <= self.ttl]

    def load(self, table: dict[str, Any]) -> int:
        """A table's rooms as its entry says, plus those this lobby sent it since."""
        try:
            rooms = int(table.get("rooms") or 0)
        except (TypeError, ValueError):
            rooms = 0
        return rooms + self._placed.get(str(table.get("instance")), 0)

    def choose(self, now: float | None = None,
               rng: random.Random | None = None) -> dict[str, Any] | None:
        """The table for a new room: a live one that is not draining (nor found
        unreachable), with the least load; a tie is broken at random, so lobby replicas
        do not all pick the same table."""
        taking = [t for t in self.live(now) if not t.get("draining")
                  and str(t.get("instance")) not in self._failed]
        if not taking:
            return None
        least = min(self.load(t) for t in taking)
        return (rng or random).choice([t for t in taking if self.load(t) == least])

    def placed(self, instance: str, rooms: int = 1) -> None:
        """Count a room sent to ``instance`` (before its CreateRoom, so that simultaneous
        creations spread); -1 takes back one that failed."""
        count = max(0, self._placed.get(instance, 0) + rooms)
        if count:
            self._placed[instance] = count
        else:
            self._placed.pop(instance, None)

    def failed(self, instance: str) -> None:
        """Not chosen again until its entry is written again."""
        self._failed.add(instance)


class TableLink:
    """The lobby's connection to one table instance: a channel, the unary stub and one
    bidi Session stream shared by every session of this lobby."""

    def __init__(self, address: str, timeout: float = 5.0,
                 channel: grpc.aio.Channel | None = None) -> None:
        self.address = address
        self.timeout = timeout
        self.channel = channel or grpc.aio.insecure_channel(address, options=KEEPALIVE)
        self.stub = table_pb2_grpc.TableStub(self.channel)
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[table_pb2.TableReply]] = {}
        self._outgoing: asyncio.Queue[table_pb2.TableCommand | None] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._busy = 0       # commands and unary calls in flight

    @property
    def idle(self) -> bool:
        """Nothing in flight on this link (it may be closed without failing a request)."""
        return self._busy == 0 and not self._pending

    async def command(self, cmd: table_pb2.TableCommand,
                      timeout: float | None = None) -> table_pb2.TableReply:
        """Send one command on the Session stream and wait for its reply (``timeout``
        seconds, default the link's); Unavailable when the stream breaks or no answer comes.
        A table that died fails fast: its broken stream fails what is pending at once, and a
        new stream to an address nobody listens on fails as soon as the dial is refused."""
        timeout = self.timeout if timeout is None else timeout
        self._ensure_stream()
        assert self._outgoing is not None
        self._next_id += 1
        cmd.request_id = self._next_id
        future: asyncio.Future[table_pb2.TableReply] = asyncio.get_running_loop().create_future()
        self._pending[cmd.request_id] = future
        started = time.perf_counter()
        self._outgoing.put_nowait(cmd)
        self._busy += 1
        try:
            reply = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise Unavailable(f"table {self.address} did not answer in {timeout:g}s") from None
        finally:
            self._busy -= 1
            self._pending.pop(cmd.request_id, None)
        metrics.FORWARD_SECONDS.labels(cmd.kind or "frame").observe(time.perf_counter() - started)
        return reply

    async def create_room(self, req: table_pb2.CreateRoomRequest) -> table_pb2.CreateRoomReply:
        self._busy += 1
        try:
            return await self.stub.CreateRoom(req, timeout=self.timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise Reject(common_pb2.ERR_BAD_OPTIONS, exc.details() or "bad options") from None
            problem = f"table {self.address}: {exc.code().name} {exc.details()}"
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                raise Unreachable(problem) from None
            raise Unavailable(problem) from None
        finally:
            self._busy -= 1

    def _ensure_stream(self) -> None:
        if self._reader is not None and not self._reader.done():
            return
        queue: asyncio.Queue[table_pb2.TableCommand | None] = asyncio.Queue()
        self._outgoing = queue
        call = self.stub.Session(_drain(queue))
        self._reader = asyncio.create_task(self._read(call, queue))

    async def _read(self, call: Any, queue: asyncio.Queue[Any]) -> None:
        reason = "stream ended"
        try:
            async for reply in call:
                future = self._pending.get(reply.request_id)
                if future is not None and not future.done():
                    future.set_result(reply)
        except grpc.aio.AioRpcError as exc:
            reason = f"{exc.code().name} {exc.details()}"
        finally:
            queue.put_nowait(None)
            if self._outgoing is queue:
                self._outgoing = None
            self._fail_pending(f"table {self.address} session stream broke: {reason}")
            call.cancel()

    def _fail_pending(self, message: str) -> None:
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(Unavailable(message))
        self._pending.clear()

    async def close(self) -> None:
        await cancel_and_wait(self._reader)
        await self.channel.close()


async def _drain(queue: asyncio.Queue[table_pb2.TableCommand | None],
                 ) -> AsyncIterator[table_pb2.TableCommand]:
    while (cmd := await queue.get()) is not None:
        yield cmd


class Directory:
    """Reads of the directory buckets, the live tables (watched), and the pool of table
    links. The buckets may be opened after the lobby started (:meth:`attach`): until then
    every read is :class:`Unavailable`."""

    def __init__(self, tables: KeyValue | None = None, rooms: KeyValue | None = None,
                 seats: KeyValue | None = None, timeout: float = 5.0,
                 dial: Dial | None = None, *, ttl: float = TABLES_TTL) -> None:
        self.tables = tables
        self.rooms = rooms
        self.seats = seats
        self.timeout = timeout
        self.dial = dial   # address -> channel to that table (None: plaintext)
        self.table_cache = TableCache(ttl)
        self._links: dict[str, TableLink] = {}
        self._instances: dict[str, str] = {}   # address -> instance id last listed there

    @classmethod
    async def open(cls, js: JetStreamContext, timeout: float = 5.0, *,
                   replicas: int = 1, dial: Dial | None = None,
                   ttl: float = TABLES_TTL) -> Directory:
        """A directory with its three buckets open (:meth:`attach`). ``dial`` makes the
        channel to a table (mutual TLS); ``ttl`` is the tables' lease."""
        directory = cls(timeout=timeout, dial=dial, ttl=ttl)
        await directory.attach(js, replicas=replicas)
        return directory

    async def attach(self, js: JetStreamContext, *, replicas: int = 1) -> None:
        """Open the three buckets, creating an absent one with the contract's TTLs and
        ``replicas`` (``nats.replicas``: a lobby started before the tables must not leave the
        directory on one NATS node). Fails (and opens nothing) when a bucket is missing and
        cannot be created, e.g. by a NATS user that may not create them."""
        tables = await bus.ensure_bucket(js, bus.TABLES_BUCKET, ttl=TABLES_TTL,
                                         replicas=replicas)
        rooms = await bus.ensure_bucket(js, bus.ROOMS_BUCKET, replicas=replicas)
        seats = await bus.ensure_bucket(js, bus.SEATS_BUCKET, replicas=replicas)
        self.tables, self.rooms, self.seats = tables, rooms, seats

    @property
    def opened(self) -> bool:
        return self.tables is not None and self.rooms is not None and self.seats is not None

    def _need(self) -> None:
        if not self.opened:
            raise Unavailable("the directory is not open yet (its NATS buckets are missing)")

    def link(self, address: str) -> TableLink:
        link = self._links.get(address)
        if link is None:
            channel = self.dial(address) if self.dial is not None else None
            link = self._links[address] = TableLink(address, self.timeout, channel)
        return link

    @property
    def addresses(self) -> set[str]:
        """The table addresses this lobby holds a link (channel) to."""
        return set(self._links)

    # -- the live tables ------------------------------------------------------------------

    async def follow_tables(self) -> None:
        """Keep :attr:`table_cache` current from one watch of the ``tables`` bucket, until
        cancelled. A watch that fails, or hears nothing for ``SILENT_LEASES`` leases, is
        opened again (its consumer goes from the server ``WATCH_INACTIVE`` s later)."""
        self._need()
        assert self.tables is not None
        cache = self.table_cache
        silence = SILENT_LEASES * cache.ttl
        while True:
            watcher = None
            try:
                watcher = await self.tables.watchall(inactive_threshold=WATCH_INACTIVE)
                first = True
                while True:
                    try:
                        entry = await watcher.updates(timeout=silence)
                    except nats.errors.TimeoutError:
                        break   # silent: no table, or a dead watch; open a new one
                    if entry is None:            # the end of the current entries
                        first = False
                        cache.heard = time.monotonic()
                        cache.synced.set()
                        continue
                    if not hasattr(entry, "key"):  # the watcher was stopped
                        break
                    age = 0.0
                    if first and entry.created is not None:   # an entry written before
                        age = min(3 * cache.ttl, max(0.0, time.time()
                                                     - entry.created.timestamp()))
                    cache.apply(entry.key, entry.value,
                                entry.operation in (KV_DEL, KV_PURGE), age)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("tables watch failed, opening it again", extra={"error": repr(exc)})
                await asyncio.sleep(1.0)
            finally:
                if watcher is not None:
                    try:
                        await watcher.stop()
                    except Exception:  # the connection is gone: so is the subscription
                        log.debug("tables watch stop failed", exc_info=True)

    async def live_tables(self) -> list[dict[str, Any]]:
        """The tables whose entries were written within the lease (the watched cache)."""
        self._need()
        await self._synced()
        return self.table_cache.live()

    async def _synced(self) -> None:
        """Wait (a bounded time) for the first snapshot of the tables watch."""
        if not self.table_cache.synced.is_set():
            try:
                await asyncio.wait_for(self.table_cache.synced.wait(), SYNC_SECONDS)
            except TimeoutError:
                raise Unavailable("the table list is not known yet") from None

    async def create_room(self, req: table_pb2.CreateRoomRequest,
                          ) -> tuple[TableLink, table_pb2.CreateRoomReply]:
        """Create a room on the table :meth:`TableCache.choose` picks (the least load,
        counting the rooms this lobby sent each table since its entry was written, so a
        burst spreads); a table that cannot be reached is skipped for the next one."""
        self._need()
        await self._synced()
        problem: Unavailable | None = None
        waited_until = time.monotonic() + NO_TABLE_WAIT_SECONDS
        for _ in range(3):
            table = self.table_cache.choose()
            while table is None and time.monotonic() < waited_until:
                # every lease ran out at once: NATS lost a stream leader and the tables'
                # heartbeats wait for the election (seconds); wait rather than refuse
                await asyncio.sleep(0.25)
                table = self.table_cache.choose()
            if table is None:
                break
            instance, link = str(table["instance"]), self.link(str(table["address"]))
            self.table_cache.placed(instance)
            try:
                created = await link.create_room(req)
            except Unreachable as exc:
                self.table_cache.placed(instance, -1)
                log.warning("table unreachable, placing the room elsewhere",
                            extra={"instance": instance, "error": exc.message})
                self.table_cache.failed(instance)
                problem = exc
                continue
            except BaseException:
                self.table_cache.placed(instance, -1)
                raise
            return link, created
        if problem is not None:
            raise problem
        raise Reject(common_pb2.ERR_NO_TABLE, "no live table instance")

    # -- links of departed tables -----------------------------------------------------------

    async def prune(self, in_use: Iterable[str] = ()) -> list[str]:
        """Close and forget the links of tables gone from ``tables`` (dead, expired, or
        restarted on another address) that nothing uses: no address in ``in_use`` (the owners
        of the rooms of this lobby's sessions) and nothing in flight. A table missing from
        the cache is asked for directly before its link goes. The closed addresses; a later
        command to one of them opens a new link."""
        if not self._links:
            return []
        live = await self.live_tables()
        for table in live:
            if table.get("instance") and str(table["address"]) in self._links:
                self._instances[str(table["address"])] = str(table["instance"])
        keep = {str(t["address"]) for t in live} | set(in_use)
        closed = []
        for address in [a for a in self._links if a not in keep]:
            if await self._still_listed(address):
                continue
            link = self._links.get(address)
            if link is None or not link.idle:  # used again while we looked
                continue
            del self._links[address]
            self._instances.pop(address, None)
            closed.append(address)
            await link.close()
        if closed:
            log.info("closed links to departed tables", extra={"addresses": closed})
        return closed

    async def _still_listed(self, address: str) -> bool:
        instance = self._instances.get(address)
        if not instance or self.tables is None:
            return False
        value = await _get_json(self.tables, instance)
        return value is not None and value.get("address") == address

    async def prune_forever(self, in_use: Callable[[], Iterable[str]],
                            period: float | None = None) -> None:
        """:meth:`prune` every ``period`` seconds (``PRUNE_SECONDS``), until cancelled."""
        while True:
            await asyncio.sleep(PRUNE_SECONDS if period is None else period)
            try:
                await self.prune(in_use())
            except Exception:  # NATS briefly away: try again next time
                log.warning("pruning table links failed", exc_info=True)

    # -- rooms and seats ------------------------------------------------------------------

    async def room(self, room_id: int) -> dict[str, Any] | None:
        self._need()
        assert self.rooms is not None
        return await _get_json(self.rooms, str(room_id))

    async def seat(self, user_id: int) -> dict[str, Any] | None:
        self._need()
        assert self.seats is not None
        return await _get_json(self.seats, str(user_id))

    async def close(self) -> None:
        for link in self._links.values():
            await link.close()
        self._links.clear()
        self._instances.clear()


async def _get_json(kv: KeyValue, key: str) -> dict[str, Any] | None:
    try:
        entry = await kv.get(key)
    except KeyNotFoundError:
        return None
    if not entry.value:
        return None
    try:
        value = json.loads(entry.value)
    except ValueError:
        log.warning("bad JSON in directory", extra={"bucket": kv._name, "key": key})
        return None
    return value if isinstance(value, dict) else None
