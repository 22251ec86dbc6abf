"""Where things are: the directory buckets (``tables``, ``rooms``, ``seats``) and one
long-lived ``Table.Session`` stream per table address, multiplexed by request id.

A broken stream fails its pending requests with :class:`Unavailable` and is opened again on
the next command. The link of a table that left ``tables`` (dead, or restarted elsewhere on a
new address) is closed and forgotten by :meth:`Directory.prune` once nothing uses it, so a
long-running lobby facing rolling table restarts keeps a bounded number of channels. See
docs/services.md, "Directory" and "Lobby → table".
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import grpc
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError, NoKeysError
from nats.js.kv import KeyValue

from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from services.common import bus
from services.common.tasks import cancel_and_wait
from services.lobby import metrics

log = logging.getLogger("paiju.lobby.directory")

NO_TABLE_RETRIES = 5
TABLES_TTL = 10.0
PRUNE_SECONDS = 30.0   # how often the links of departed tables are looked for
# A table that vanishes without closing its connections (a killed pod whose address is gone)
# is found out by keepalive pings within about 15 s: its stream breaks, what is pending
# fails, and the commands follow the room to its next owner. Tables accept a ping every 5 s
# (services/common/server.py).
KEEPALIVE = (("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000),
             ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0))


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
            raise Unavailable(f"table {self.address}: {exc.code().name} {exc.details()}") from None
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
    """Reads of the directory buckets and the pool of table links."""

    def __init__(self, tables: KeyValue, rooms: KeyValue, seats: KeyValue,
                 timeout: float = 5.0, dial: Dial | None = None) -> None:
        self.tables = tables
        self.rooms = rooms
        self.seats = seats
        self.timeout = timeout
        self.dial = dial   # address -> channel to that table (None: plaintext)
        self._links: dict[str, TableLink] = {}
        self._instances: dict[str, str] = {}   # address -> instance id last listed there

    @classmethod
    async def open(cls, js: JetStreamContext, timeout: float = 5.0, *,
                   replicas: int = 1, dial: Dial | None = None) -> Directory:
        """Open the three buckets, creating an absent one with the contract's TTLs and
        ``replicas`` (``nats.replicas``: a lobby started before the tables must not leave the
        directory on one NATS node). ``dial`` makes the channel to a table (mutual TLS)."""
        return cls(await bus.ensure_bucket(js, bus.TABLES_BUCKET, ttl=TABLES_TTL,
                                           replicas=replicas),
                   await bus.ensure_bucket(js, bus.ROOMS_BUCKET, replicas=replicas),
                   await bus.ensure_bucket(js, bus.SEATS_BUCKET, replicas=replicas), timeout,
                   dial)

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

    async def prune(self, in_use: Iterable[str] = ()) -> list[str]:
        """Close and forget the links of tables gone from ``tables`` (dead, expired, or
        restarted on another address) that nothing uses: no address in ``in_use`` (the owners
        of the rooms of this lobby's sessions) and nothing in flight. A table missing from a
        key listing is asked for directly before its link goes (a listing can come back
        short). The closed addresses; a later command to one of them opens a new link."""
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
        if not instance:
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

    async def live_tables(self) -> list[dict[str, Any]]:
        try:
            keys = await self.tables.keys()
        except NoKeysError:
            return []
        out = []
        for key in keys:
            value = await _get_json(self.tables, key)
            if value and value.get("address"):
                out.append(value)
        return out

    async def least_loaded_table(self) -> TableLink:
        tables = await self.live_tables()
        for _ in range(NO_TABLE_RETRIES):  # a KV key listing can come back short: look again
            if tables:
                break
            await asyncio.sleep(0.2)
            tables = await self.live_tables()
        taking = [t for t in tables if not t.get("draining")]   # a draining table takes none
        if not taking:
            raise Reject(common_pb2.ERR_NO_TABLE, "no live table instance")
        best = min(taking, key=lambda t: (int(t.get("rooms", 0)), t.get("instance", "")))
        return self.link(best["address"])

    async def room(self, room_id: int) -> dict[str, Any] | None:
        return await _get_json(self.rooms, str(room_id))

    async def seat(self, user_id: int) -> dict[str, Any] | None:
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
