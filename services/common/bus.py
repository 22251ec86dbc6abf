"""NATS and JetStream helpers: connection with reconnect, stream and KV bucket set-up.

Subjects (docs/services.md): ``room.<id>.events`` (a room's events, one RoomEvents message
per log position: docs/ordered-events.md), ``room.<id>.chat`` (chat between lobbies),
``session.kick.<uid>`` (one session per user across lobby replicas),
``table.<address>.commands`` (player commands from a lobby to a table, request/reply),
``table.<instance>.adopt`` (a draining table asks another to take a room now:
services/table/adoption.py), ``lobby.mute`` (operators' chat mutes), JetStream
``room.<id>.log.<shard>`` (the room's action log, in one of the ``ROOMLOG_<shard>``
streams), ``settle.all`` (settlements, stream SETTLE), ``records.settle`` (their
prompt copy, core NATS) and ``arbiter.decide`` (a table asks the arbiters to decide a
response window, request/reply). KV buckets: the tables' ``tables``
(instances, TTL), ``rooms`` (room owners and summaries), ``seats`` (where each user sits)
and ``room_ids`` (the room id counter: services/table/room_ids.py); the lobbies'
``match_tickets`` (matchmaking: services/lobby/matchmaker.py). The whole picture: docs/architecture.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats.errors
from nats.aio.client import Client, Server
from nats.js import JetStreamContext
from nats.js.api import (
    DiscardPolicy,
    KeyValueConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, BucketNotFoundError, NotFoundError
from nats.js.kv import KV_DEL, KV_OP, KV_PURGE, KeyValue
from prometheus_client import Counter, Gauge

from services.common.config import ConfigError, NatsConfig, read_secret_file

log = logging.getLogger("paiju.bus")

SETTLE_STREAM = "SETTLE"
TABLES_BUCKET = "tables"
ROOMS_BUCKET = "rooms"
SEATS_BUCKET = "seats"          # user id -> the room and table where that user sits
ROOM_IDS_BUCKET = "room_ids"    # the room id counter: ids are never reused (logs, records)
MATCH_TICKETS_BUCKET = "match_tickets"   # the lobbies' matchmaking (paiju/contracts/lobby.py)


def room_events(room_id: int) -> str:
    return f"room.{room_id}.events"


def room_chat(room_id: int) -> str:
    """Chat of a room (ServerFrames), between lobbies only: not ordered with its events."""
    return f"room.{room_id}.chat"


# The room log is spread over ROOM_LOG_SHARDS streams, a room's by its id, so that the
# streams' Raft leaders sit on different NATS nodes (services/table/roomlog.py balances
# them) and a node's loss pauses only the rooms whose stream it led. The count is part of
# the stored layout: a room's records are found by it, so it is a constant, not a setting.
ROOM_LOG_SHARDS = 3
ROOM_LOG_STREAMS = tuple(f"ROOMLOG_{k}" for k in range(ROOM_LOG_SHARDS))


def room_log_shard(room_id: int) -> int:
    return room_id % ROOM_LOG_SHARDS


def room_log(room_id: int) -> str:
    """The subject of a room's records: ``room.<id>.log.<shard>`` (the shard names its
    stream, ``ROOMLOG_<shard>``, whose subjects are ``room.*.log.<shard>``)."""
    return f"room.{room_id}.log.{room_log_shard(room_id)}"


def room_log_stream(room_id: int) -> str:
    """The JetStream stream holding a room's records."""
    return ROOM_LOG_STREAMS[room_log_shard(room_id)]


def table_commands(address: str) -> str:
    """Where a lobby sends player commands to the table at ``address`` (its advertised gRPC
    address, as the directory names it): core NATS request/reply, one ``TableCommand`` in,
    one ``TableReply`` back to the lobby's inbox (docs/services.md)."""
    return f"table.{address.replace('.', '_')}.commands"


def session_kick(user_id: int) -> str:
    return f"session.kick.{user_id}"


# an operator's chat mute of a user, JSON {"user_id", "until"}: every lobby keeps it
LOBBY_MUTE = "lobby.mute"


# Every settlement, of every room, on one subject of SETTLE. JetStream keeps a subject's
# state in every server's memory while the stream holds a message on it (120-160 bytes a
# subject: bench/reports/kv_markers.md), and SETTLE keeps 30 days: a subject per room would
# make that a cost per room played. Earlier releases published ``settle.<room>``, which the
# stream's ``settle.*`` still takes.
SETTLE_SUBJECT = "settle.all"


# The prompt copy of every settlement: the table sends the same message on core NATS too
# (no stream), and one records of the queue group writes it at once. SETTLE stays the
# durable path (the table retries it until stored, records acknowledges it once written),
# but a NATS node's death costs it a Raft election, of the stream or of records' consumer on
# it (4 to 9 s): the prompt copy goes around both, so the hand is in SQL within moments
# (docs/services.md, "Records"). Not under ``settle.*``: SETTLE must not capture it.
SETTLE_PROMPT = "records.settle"
SETTLE_PROMPT_QUEUE = "records"

# A response window for an arbiter to decide: the table's request (a ResolveRequest), the
# arbiters' queue group, so one of them answers it (protos/paiju/v1/arbiter.proto).
ARBITER_DECIDE = "arbiter.decide"
ARBITER_QUEUE = "arbiter"


def inbox_prefix(name: str) -> str:
    """The reply-inbox prefix of a connection: ``_INBOX_<service>`` (``table-a`` ->
    ``_INBOX_table``), so NATS permissions can give each service user its own inboxes only
    (replies, JetStream pull deliveries and KV watches carry private data)."""
    return f"_INBOX_{name.split('-', 1)[0]}"


_flushes: set[asyncio.Task[None]] = set()


async def flush(nc: Client, timeout: float = 10.0) -> None:
    """``nc.flush()`` that its caller may abandon. nats-py sets the result of each PING's
    future when the PONG comes back, and a future cancelled meanwhile (the caller cancelled,
    or flush's own timeout) makes that raise inside its read loop, which then ends for good:
    the connection stays up but receives nothing until the ping timer calls it stale
    (minutes). So the PING's wait runs in a task of its own that nothing cancels; the caller
    only stops waiting for it."""
    task = asyncio.ensure_future(nc.flush(timeout=FLUSH_INNER_TIMEOUT))
    _flushes.add(task)
    task.add_done_callback(_flush_done)
    await asyncio.wait_for(asyncio.shield(task), timeout)


FLUSH_INNER_TIMEOUT = 120    # past nats-py's default ping interval: a stale link is reset


def _flush_done(task: asyncio.Task[None]) -> None:
    _flushes.discard(task)
    if not task.cancelled():
        task.exception()   # retrieved: a flush nobody waits for any more may fail quietly


async def sync(nc: Client) -> None:
    """Return once everything this connection has sent so far (subscriptions included) has
    been processed by the server. nats-py's ``flush()`` writes its PING straight to the
    socket, possibly ahead of commands still waiting in its own buffer, so one flush is not
    a barrier; the second PING goes out after them (the first round trip let the buffer
    drain). Safe to cancel (see :func:`flush`)."""
    await flush(nc)
    await flush(nc)


async def drain(nc: Client) -> None:
    """``nc.drain()`` that loses no message of the connection's subscriptions. nats-py's
    drain queues each subscription's UNSUB and then writes its PING straight to the socket
    (as in :func:`sync`), so the server may answer the PING before it has the UNSUB; a
    message it routes to the subscription in between arrives after the drain dropped the
    subscription, and is lost: a request taken by an arbiter that is stopping waits out its
    asker's timeout. So the UNSUBs go first, and once the server has processed them (two
    round trips) every message it sent them is in their queues; nats-py's drain then handles
    those, and its own UNSUBs are no-ops. The inbox of the connection's own requests is left
    to nats-py's drain, as before: replies to requests still waiting may come until then. A
    server that does not answer within ``DRAIN_SYNC_SECONDS`` (a pod's grace is short, a
    reconnect re-subscribes everything) leaves the rest to nats-py's drain."""
    if nc.is_closed or nc.is_draining:
        return
    if nc.is_connected:
        replies = bytes(nc._resp_sub_prefix or b"").decode()   # nats-py's request inbox
        for sid, sub in list(nc._subs.items()):   # nats-py lists them nowhere in public
            if not (replies and sub.subject.startswith(replies)):
                await nc._send_unsubscribe(sid)
        with contextlib.suppress(TimeoutError, nats.errors.Error):
            async with asyncio.timeout(DRAIN_SYNC_SECONDS):
                await sync(nc)
    await nc.drain()


DRAIN_SYNC_SECONDS = 2.0


def server_urls(url: str) -> list[str]:
    """``NATS_URL`` may name several servers of a cluster, comma-separated; the client picks
    one and reconnects across the others."""
    urls = [u.strip() for u in url.split(",") if u.strip()]
    if not urls:
        raise ValueError("no NATS URL given")
    return urls


@dataclass(frozen=True)
class NatsAuth:
    """A service's NATS credential apart from the URL: a user and password, or a token, each
    given as a value or as a file (a mounted Secret). Files are read again at every CONNECT
    the client sends (nats-py calls these readers), so a reconnect uses what the file holds
    then; :meth:`fingerprint` tells when a file changed."""

    user: str = ""
    password: str = ""
    token: str = ""
    user_file: str = ""
    password_file: str = ""
    token_file: str = ""

    @classmethod
    def of(cls, c: NatsConfig) -> NatsAuth:
        return cls(user=c.user, password=c.password, token=c.token, user_file=c.user_file,
                   password_file=c.password_file, token_file=c.token_file)

    @property
    def files(self) -> tuple[str, ...]:
        """The credential files in force now (the password file named for the current
        user)."""
        return tuple(f for f in (self.user_file, self._password_path(), self.token_file) if f)

    def _password_path(self) -> str:
        """``password_file`` may name the user: ``.../{user}-password`` is the password file
        of the current user, so a rotation to another NATS user (nats-server holds one
        password per user) switches user and password in one change of the user file."""
        if "{user}" not in self.password_file:
            return self.password_file
        return self.password_file.replace("{user}", self.current_user())

    def _read(self, value: str, path: str, what: str) -> str:
        """The file's content; the plain value when there is no file (``nats.user`` is the
        default of an optional ``user`` key: the user changes in a rotation only)."""
        if not path or (value and not Path(path).exists()):
            return value
        try:
            return read_secret_file(path, f"nats.{what}_file")
        except ConfigError as exc:   # keep the last good value's place: CONNECT then fails
            log.error("nats credential file unreadable", extra={"error": str(exc)})
            return ""

    def current_user(self) -> str:
        return self._read(self.user, self.user_file, "user")

    def current_password(self) -> str:
        return self._read(self.password, self._password_path(), "password")

    def current_token(self) -> str:
        return self._read(self.token, self.token_file, "token")

    def fingerprint(self) -> str:
        """A digest of the credential files' contents ("" for a missing one)."""
        digest = hashlib.sha256()
        for path in self.files:
            try:
                digest.update(Path(path).read_bytes())
            except OSError:
                pass
            digest.update(b"\0")
        return digest.hexdigest()

    def connect_options(self) -> dict[str, Any]:
        """nats-py options: readers, so that each CONNECT reads the files again."""
        if self.user or self.user_file:
            return {"user": self.current_user, "password": self.current_password}
        if self.token or self.token_file:
            return {"token": self.current_token}
        return {}


CREDENTIAL_RELOADS = Counter("paiju_nats_credential_reloads_total",
                             "reconnects to NATS because a mounted credential file changed")
_watchers: set[asyncio.Task[None]] = set()


async def _watch_credentials(nc: Client, auth: NatsAuth, poll: float) -> None:
    """Reconnect when a credential file changes (a rotated Secret): the new credential is
    used while the old one is still accepted, so removing the old one from the servers
    disconnects nobody. Ends with the connection."""
    seen = auth.fingerprint()
    while not nc.is_closed:
        await asyncio.sleep(poll)
        now = auth.fingerprint()
        if now == seen:
            continue
        seen = now
        if not nc.is_connected:   # reconnecting already: the next CONNECT reads the files
            continue
        log.info("nats credential file changed: reconnecting with it")
        CREDENTIAL_RELOADS.inc()
        await nc.force_reconnect()


# A NATS node cut off from the rest of its cluster (a network partition) keeps its clients:
# their connection is up, but JetStream and every subject served on the other nodes are gone
# for them. The node says so to its clients: the INFO it sends when its routes drop lists the
# cluster's client URLs it still reaches (``connect_urls``, itself included). A connection
# whose server lists no more than half of the most its servers have listed (one of three)
# for ISOLATED_SECONDS reconnects (``force_reconnect``) to another server of its list, the one
# it left tried last, again after a doubling pause while it keeps landing on a cut-off node; a
# majority node, which lists two of three, keeps its clients.
PARTITION_POLL = 0.5            # seconds between two looks at the server's cluster view
ISOLATED_SECONDS = 2.0          # cut off this long (a node's start forms its routes sooner)
ISOLATED_BACKOFF_MAX = 30.0

# A stopping service's ``drain()`` waits this long at most for its subscriptions' callbacks
# (nats-py's default, 30 s, is more than a pod's grace after a table's hand-over)
DRAIN_SECONDS = 5

PARTITION_MOVES = Counter("paiju_nats_partition_moves_total",
                          "reconnects to another NATS server because ours was cut off from "
                          "the majority of its cluster")
LAME_DUCK_MOVES = Counter("paiju_nats_lame_duck_moves_total",
                          "reconnects to another NATS server because ours said it is stopping "
                          "(lame-duck mode)")


class ClusterClient(Client):
    """nats-py's client, noting how many servers of the cluster its server reaches: the
    length of ``connect_urls`` in the server's every INFO (the first, and those it sends when
    a route comes or goes)."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster_now: int | None = None   # listed by the current server (None: unknown)
        self.cluster_seen = 0                  # the most any of our servers has listed
        self.leaving = ""     # a server being left, cut off or stopping (its host:port)
        self.reconnect_wait = 0.5

    def pick_server(self, servers: list[Server],
                    info: dict[str, Any]) -> tuple[Server | None, float]:
        """nats-py's ``reconnect_to_server_handler`` (the pool comes shuffled): the server
        that failed least, the one being left (cut off, or stopping) only after the others; a
        server that failed is tried after ``reconnect_wait``."""
        if not servers:
            return None, 0.0
        pick = min(servers, key=lambda s: (s.uri.netloc == self.leaving, s.reconnects))
        return pick, (self.reconnect_wait if pick.reconnects else 0.0)

    async def _process_info(self, info: dict[str, Any], initial_connection: bool = False) -> None:
        urls = info.get("connect_urls")
        if urls is not None:
            self.cluster_now = len(urls)
            self.cluster_seen = max(self.cluster_seen, len(urls))
        elif initial_connection:
            self.cluster_now = None
        await super()._process_info(info, initial_connection)

    @property
    def isolated(self) -> bool:
        """The server is cut off from the majority of the cluster it was seen in."""
        return (self.cluster_seen >= 3 and self.cluster_now is not None
                and self.cluster_now <= self.cluster_seen // 2)


async def _watch_partition(nc: ClusterClient, poll: float, after: float) -> None:
    """Move the connection off a server cut off from its cluster (see ISOLATED_SECONDS).
    Ends with the connection."""
    since: float | None = None
    pause = after
    while not nc.is_closed:
        await asyncio.sleep(poll)
        if not nc.is_connected or not nc.isolated:
            since = None
            if nc.is_connected:
                pause, nc.leaving = after, ""
            continue
        now = time.monotonic()
        since = since or now
        if now - since < pause:
            continue
        nc.leaving = str(getattr(nc.connected_url, "netloc", ""))
        log.warning("nats server cut off from its cluster: reconnecting to another",
                    extra={"server": nc.leaving, "reaches": nc.cluster_now,
                           "cluster": nc.cluster_seen})
        PARTITION_MOVES.inc()
        since = None
        pause = min(ISOLATED_BACKOFF_MAX, pause * 2)
        await nc.force_reconnect()


def _keep(task: asyncio.Task[None], tasks: list[asyncio.Task[None]]) -> None:
    _watchers.add(task)
    task.add_done_callback(_watchers.discard)
    tasks.append(task)


async def connect(url: str | NatsConfig, name: str, connect_timeout: float | None = None, *,
                  auth: NatsAuth | None = None, credentials_poll: float | None = None,
                  isolated_after: float = ISOLATED_SECONDS) -> Client:
    """Connect with unlimited reconnects across every given server (a restarted nats-server,
    or another node of the cluster, is picked up again), and away from a server cut off from
    its cluster for ``isolated_after`` seconds (0: never; see ISOLATED_SECONDS). ``url`` is
    ``nats.url`` or the whole ``NatsConfig`` (then its credentials too); credentials go to
    nats-py apart from the URL, their files read at every (re)connect and watched for a
    change."""
    if isinstance(url, NatsConfig):
        auth = auth or NatsAuth.of(url)
        connect_timeout = url.connect_timeout if connect_timeout is None else connect_timeout
        credentials_poll = credentials_poll or url.credentials_poll_seconds
        url = url.url
    auth = auth or NatsAuth()

    async def on_error(exc: Exception) -> None:
        log.warning("nats error", extra={"error": repr(exc)})

    async def on_disconnect() -> None:
        log.warning("nats disconnected")

    async def on_reconnect() -> None:
        log.info("nats reconnected")

    async def on_lame_duck() -> None:
        # A server stopping gracefully (a rolling upgrade) says so, then shuts its JetStream
        # down after its grace period (1 s in tests, 10 s by default) while its clients stay
        # connected until it closes them over ``lame_duck_duration``: their JetStream
        # requests (room-log appends, KV reads and writes) would time out until then. Leave
        # it now, for another server.
        nc.leaving = str(getattr(nc.connected_url, "netloc", ""))
        log.info("nats server in lame-duck mode: reconnecting to another",
                 extra={"server": nc.leaving})
        LAME_DUCK_MOVES.inc()
        await nc.force_reconnect()

    watcher: list[asyncio.Task[None]] = []

    async def on_closed() -> None:
        for task in watcher:
            task.cancel()

    nc = ClusterClient()
    options: dict[str, Any] = {   # nats.connect's, whose annotations say int for seconds
        "connect_timeout": 2.0 if connect_timeout is None else connect_timeout,
        "reconnect_time_wait": nc.reconnect_wait, "reconnect_to_server_handler": nc.pick_server,
        **auth.connect_options()}
    await nc.connect(
        servers=server_urls(url), name=name, max_reconnect_attempts=-1, allow_reconnect=True,
        error_cb=on_error, disconnected_cb=on_disconnect, reconnected_cb=on_reconnect,
        closed_cb=on_closed, lame_duck_mode_cb=on_lame_duck, inbox_prefix=inbox_prefix(name),
        drain_timeout=DRAIN_SECONDS, **options,
    )
    if auth.files:
        _keep(asyncio.ensure_future(_watch_credentials(nc, auth, credentials_poll or 5.0)),
              watcher)
    if isolated_after > 0:
        _keep(asyncio.ensure_future(_watch_partition(nc, PARTITION_POLL, isolated_after)),
              watcher)
    return nc


STREAM_REPLICAS = Gauge("paiju_stream_replicas",
                        "replicas in force of a JetStream stream or KV bucket this service uses",
                        ["stream"])
STREAM_REPLICAS_TARGET = Gauge("paiju_stream_replicas_target",
                               "replicas configured (nats.replicas) for that stream", ["stream"])


def _note_replicas(name: str, in_force: int, target: int) -> None:
    STREAM_REPLICAS.labels(name).set(in_force)
    STREAM_REPLICAS_TARGET.labels(name).set(target)
    if in_force < target:
        log.warning("stream has fewer replicas than configured: raise them with "
                    "`nats stream edit --replicas` (start-up never changes a stream's replicas "
                    "or retention)",
                    extra={"stream": name, "replicas": in_force, "configured": target})


async def report_replicas(js: JetStreamContext, streams: dict[str, int]) -> None:
    """Read the replicas in force of each stream (name -> configured) again, for the
    metrics: an operator who raised them by hand sees the alert clear without a restart."""
    for name, target in streams.items():
        try:
            info = await js.stream_info(name)
        except Exception as exc:  # reporting only
            log.debug("stream info unavailable", extra={"stream": name, "error": repr(exc)})
            continue
        _note_replicas(name, info.config.num_replicas or 1, target)


async def _ensure_stream(js: JetStreamContext, config: StreamConfig) -> None:
    """Create the stream if it does not exist; an existing stream is left as it is (an
    operator's replicas, retention and limits stand) and only reported."""
    assert config.name is not None
    try:
        info = await js.stream_info(config.name)
    except NotFoundError:
        try:
            info = await js.add_stream(config)
        except BadRequestError:  # created meanwhile by another service
            info = await js.stream_info(config.name)
    _note_replicas(config.name, info.config.num_replicas or 1, config.num_replicas or 1)


async def ensure_streams(js: JetStreamContext, replicas: int = 1, *,
                         room_log: bool = True) -> None:
    """Create the room log streams (one per shard) and the settlement stream if missing;
    idempotent, and never an update (records' NATS user may not update streams). Records,
    which never touches the room log (and may not, under NATS permissions), passes
    ``room_log=False``."""
    if room_log:
        for shard, name in enumerate(ROOM_LOG_STREAMS):
            await _ensure_stream(js, StreamConfig(
                name=name, subjects=[f"room.*.log.{shard}"], storage=StorageType.FILE,
                retention=RetentionPolicy.LIMITS, max_age=7 * 24 * 3600, duplicate_window=120,
                num_replicas=replicas))
    await _ensure_stream(js, StreamConfig(
        name=SETTLE_STREAM, subjects=["settle.*"], storage=StorageType.FILE,
        retention=RetentionPolicy.LIMITS, discard=DiscardPolicy.OLD,
        max_age=30 * 24 * 3600, duplicate_window=24 * 3600, num_replicas=replicas))


async def ensure_bucket(js: JetStreamContext, bucket: str, ttl: float | None = None,
                        replicas: int = 1) -> KeyValue:
    """The KV bucket, created with ``replicas`` if missing; an existing one is kept as it is
    and its replicas reported (a warning and a metric when below ``replicas``)."""
    try:
        kv = await js.key_value(bucket)
    except (NotFoundError, BadRequestError, BucketNotFoundError):  # not created yet
        try:
            kv = await js.create_key_value(KeyValueConfig(bucket=bucket, ttl=ttl, history=1,
                                                          replicas=replicas))
        except BadRequestError:  # created meanwhile by another service
            kv = await js.key_value(bucket)
    stream = f"KV_{bucket}"
    try:
        info = await js.stream_info(stream)
        _note_replicas(stream, info.config.num_replicas or 1, replicas)
    except Exception as exc:  # reporting only: the bucket works either way
        log.warning("stream info unavailable", extra={"stream": stream, "error": repr(exc)})
    return kv


@dataclass(frozen=True, slots=True)
class LatestEntry:
    """A KV key's latest entry: ``value`` None when it is a delete or purge marker;
    ``revision``, its stream sequence (what a compare-and-set names as the last)."""

    value: bytes | None
    revision: int


async def kv_latest(js: JetStreamContext, bucket: str, key: str) -> LatestEntry | None:
    """The latest entry of ``key`` in ``bucket``, read from its stream's leader; None when the
    key was never there. A bucket's own get may be answered by any replica (direct get), and
    one catching up after a restart or a partition can answer an older entry, or none."""
    try:
        msg = await js.get_last_msg(f"KV_{bucket}", f"$KV.{bucket}.{key}", direct=False)
    except NotFoundError:
        return None
    marker = (msg.headers or {}).get(KV_OP) in (KV_DEL, KV_PURGE)
    return LatestEntry(None if marker else (msg.data or b""), int(msg.seq or 0))


class KeyWatch:
    """A watch of every key of a bucket (``kv.watchall``) whose None, the end of the keys'
    last values, comes once and after the last of them.

    nats-py sends its None at once when the new consumer has nothing left to deliver and the
    client has taken nothing yet: also the case when every value is already on its way, still
    in the client's buffers (a loaded process), and the values then come after the None. That
    early None is always the watch's first item, so a None is trusted after a value, or when
    the bucket held nothing as the watch opened (or holds nothing now); otherwise the end is
    the first value that leaves the consumer nothing pending (``delta`` 0), which is how a
    watch on a busy bucket ends it too."""

    def __init__(self, kv: KeyValue, watcher: Any, held: int) -> None:
        self.kv = kv
        self.watcher = watcher
        self.held = held          # messages in the bucket's stream as the watch opened

    @classmethod
    async def open(cls, kv: KeyValue, **options: Any) -> KeyWatch:
        held = (await kv.status()).values
        return cls(kv, await kv.watchall(**options), held)

    @classmethod
    @contextlib.asynccontextmanager
    async def opened(cls, kv: KeyValue, **options: Any) -> AsyncIterator[KeyWatch]:
        """:meth:`open`, and :meth:`stop` whatever ends the block (its consumer goes too;
        a stop that fails, the connection gone, is no error of the block's)."""
        watch = await cls.open(kv, **options)
        try:
            yield watch
        finally:
            with contextlib.suppress(Exception):
                await watch.stop()

    async def stop(self) -> None:
        await self.watcher.stop()

    def __aiter__(self) -> Any:
        return self._entries()

    async def _entries(self) -> Any:
        first = True    # the keys' last values are still coming
        valued = False  # one of them came
        async for entry in self.watcher:
            if entry is None:
                if first and (valued or self.held == 0
                              or (await self.kv.status()).values == 0):
                    first = False
                    yield None
                continue   # early (values on their way), or after ours
            valued = True
            yield entry
            if first and entry.delta == 0:
                first = False
                yield None
