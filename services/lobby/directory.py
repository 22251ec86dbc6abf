"""Where things are: the directory buckets (``tables``, ``rooms``, ``seats``), the live
tables (table_cache.py, followed here by one long-lived watch) and the pool of links to
tables (table_link.py), one per address. See docs/services.md, "Directory" and
"Lobby → table".

The link of a table that left ``tables`` (dead, or restarted elsewhere on a new address) is
closed and forgotten by :meth:`Directory.prune` once nothing uses it, so a long-running
lobby facing rolling table restarts keeps a bounded number of channels.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import grpc
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from paiju.contracts.directory import RoomEntry, SeatEntry, TableEntry
from paiju.contracts.typed import BadContract, Contract
from paiju.v1 import common_pb2, table_pb2
from services.common import bus
from services.lobby.errors import Reject, Unavailable, Unreachable
from services.lobby.table_cache import TABLES_TTL, TableCache
from services.lobby.table_link import TableLink

log = logging.getLogger("paiju.lobby.directory")

PRUNE_SECONDS = 30.0   # how often the links of departed tables are looked for
SYNC_SECONDS = 2.0     # how long a request waits for the first snapshot of the tables watch
# A watch that has heard nothing for this many leases is opened again: live tables rewrite
# their entries five times a lease, so silence means no table at all, or a watch that died
# with its connection (its consumer is gone from the server)
SILENT_LEASES = 2.0
WATCH_INACTIVE = 10.0  # seconds NATS keeps an abandoned watch's consumer (not the default 5 min)
NO_TABLE_WAIT_SECONDS = 10.0    # a create waits this long for a live table to appear


Dial = Callable[[str], grpc.aio.Channel]


class Directory:
    """Reads of the directory buckets, the live tables (watched), and the pool of table
    links. The buckets may be opened after the lobby started (:meth:`attach`): until then
    every read is :class:`Unavailable`."""

    def __init__(self, tables: KeyValue | None = None, rooms: KeyValue | None = None,
                 seats: KeyValue | None = None, timeout: float = 5.0,
                 dial: Dial | None = None, *, ttl: float = TABLES_TTL, nc: Any = None) -> None:
        self.tables = tables
        self.rooms = rooms
        self.seats = seats
        self.timeout = timeout
        self.dial = dial   # address -> channel to that table (None: plaintext)
        self.nc = nc       # commands to tables over NATS when set (table_link.py)
        self.table_cache = TableCache(ttl)
        self.js: JetStreamContext | None = None   # set by attach (the leader's reads)
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
        self.js = js

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
            link = self._links[address] = TableLink(address, self.timeout, channel, self.nc)
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
            quiet = asyncio.timeout(silence)
            try:
                async with bus.KeyWatch.opened(self.tables,
                                               inactive_threshold=WATCH_INACTIVE) as watch, \
                        quiet:
                    first = True
                    async for entry in watch:
                        quiet.reschedule(asyncio.get_running_loop().time() + silence)
                        if entry is None:            # the end of the current entries
                            first = False
                            cache.heard = time.monotonic()
                            cache.synced.set()
                            continue
                        age = 0.0
                        if first and entry.created is not None:   # an entry written before
                            age = min(3 * cache.ttl, max(0.0, time.time()
                                                         - entry.created.timestamp()))
                        cache.apply(entry.key, entry.value,
                                    entry.operation in (KV_DEL, KV_PURGE), age)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if isinstance(exc, TimeoutError) and quiet.expired():
                    continue   # silent: no table, or a dead watch; open a new one
                log.warning("tables watch failed, opening it again", extra={"error": repr(exc)})
                await asyncio.sleep(1.0)

    async def live_tables(self) -> list[TableEntry]:
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
            instance, link = table.instance, self.link(table.address)
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
            if table.instance and table.address in self._links:
                self._instances[table.address] = table.instance
        keep = {t.address for t in live} | set(in_use)
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
        value = await _get(self.tables, instance, TableEntry)
        return value is not None and value.address == address

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

    async def room(self, room_id: int, *, leader: bool = False) -> RoomEntry | None:
        """The room's entry, None when it has none. A bucket's get may be answered by any
        replica (direct get), and one catching up after a restart or a partition answers
        "no such key" for a recent room: ``leader`` asks the stream's leader instead."""
        self._need()
        assert self.rooms is not None
        if not leader or self.js is None:
            return await _get(self.rooms, str(room_id), RoomEntry)
        entry = await bus.kv_latest(self.js, bus.ROOMS_BUCKET, str(room_id))
        if entry is None or not entry.value:
            return None
        return _decode(RoomEntry, entry.value, bus.ROOMS_BUCKET, str(room_id))

    async def seat(self, user_id: int) -> SeatEntry | None:
        self._need()
        assert self.seats is not None
        return await _get(self.seats, str(user_id), SeatEntry)

    async def close(self) -> None:
        for link in self._links.values():
            await link.close()
        self._links.clear()
        self._instances.clear()


E = TypeVar("E", bound=Contract)


async def _get(kv: KeyValue, key: str, kind: type[E]) -> E | None:
    """The entry under ``key``; None when there is none, or it is unreadable (logged)."""
    try:
        entry = await kv.get(key)
    except KeyNotFoundError:
        return None
    if not entry.value:
        return None
    return _decode(kind, entry.value, kv._name, key)


def _decode(kind: type[E], raw: bytes, bucket: str, key: str) -> E | None:
    try:
        return kind.decode(raw)
    except BadContract as exc:
        log.warning("unreadable directory entry",
                    extra={"bucket": bucket, "key": key, "error": str(exc)})
        return None
