"""The room log: each room's records in JetStream (``room.<id>.log``), read back whole
for a rebuild and appended one at a time, fenced so two tables never write one room.

The log is spread over ``bus.ROOM_LOG_SHARDS`` streams (a room's by its id). Each stream is
one Raft group on a replicated NATS cluster; :func:`spread_leaders` spreads their leaders
over the nodes (driven by leaders.py), so that a node's loss pauses only the rooms of the
streams it led, for the length of one leader election.

The fence is ``Nats-Expected-Last-Subject-Sequence``: an append names the last record its
writer knows, so a table that lost the room (another adopted it) is refused. Every append
of this process carries ``room:index:boot:digest`` as its message id (the digest of the
record's bytes), so JetStream's duplicate detection only ever matches a retry of the same
record by this process: never another table's record, nor another record of this process
at the same index (after an append whose outcome it could not learn, the room is rebuilt
from its log, and a different record there must meet the fence, not be taken for stored).
An append ends in its sequence, LogFenced or LogUnavailable, never in an error whose
record may still land: the caller must not go on as if it had not.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import time
from collections import Counter
from typing import Any

import nats.errors
import nats.js.errors
from nats.js.api import ConsumerConfig, DeliverPolicy

from paiju.v1 import common_pb2
from services.common import bus
from services.table import metrics as m
from services.table.room import RoomError

log = logging.getLogger("paiju.table.log")

WRONG_LAST_SEQUENCE = 10071     # JetStream: Nats-Expected-Last-Subject-Sequence mismatch
IN_PROCESS = 10158              # JetStream: the same message id is being stored right now
# An append is retried while its stream elects a leader: 4 to 9 s after a node's loss, and
# later for the last of several groups when the lost node led them all and the metadata
# leader (8.2 s seen for the third of three); a room rebuilt instead pauses far longer
# (this bound, the check of what landed, then the rebuild). Past the bound the room is
# rebuilt from its log.
APPEND_RETRY_SECONDS = 20.0
# One append attempt. An acknowledgement takes milliseconds; one that does not come was
# lost (the stream's leader stepping down, a lame-duck server, a connection moving) and the
# retry, under the same message id, lands or is answered with the first try's sequence.
APPEND_TRY_SECONDS = 0.5
APPEND_TIMEOUT_SECONDS = 2.0    # one look at the log's tail
# One step of a log read (the stream's count, the consumer, a batch). A step sent while the
# stream has no leader is never answered: the read fails after this and the next adoption
# scan (a quarter second later) reads again, so a rebuild waits an election out by no more
# than this, not the client's 5 s.
READ_TRY_SECONDS = 1.0
FENCE_LOOK_SECONDS = 5.0        # the look at the tail after a fence refusal
RETRY_FIRST_DELAY = 0.05        # seconds before the first retry, doubled up to ...
RETRY_MAX_DELAY = 0.25          # ... this: a new leader answers within it
# a replica the leader heard from within this is a place for a leader: Raft heartbeats go
# every second, while JetStream still calls a replica cut off from the leader "current" for
# ten seconds (its lost-quorum interval)
HEARD_WITHIN_NS = 3_000_000_000


class LogFenced(RoomError):
    """Another table appended to the room's log: this one no longer owns the room."""

    def __init__(self, room_id: int) -> None:
        super().__init__(common_pb2.ERR_ROOM_MOVING, f"room {room_id} has moved to another table")


class LogUnavailable(RoomError):
    """The log took no append within APPEND_RETRY_SECONDS: the room is rebuilt from it."""

    def __init__(self, room_id: int) -> None:
        super().__init__(common_pb2.ERR_ROOM_MOVING, f"room {room_id} is recovering, a moment")


class LeaseLapsed(RoomError):
    """This process stalled (lease.py, "Fencing") and the room's tenure is not confirmed:
    nothing is written or sent for it; it is rebuilt from its log if it is still ours."""

    def __init__(self, room_id: int) -> None:
        super().__init__(common_pb2.ERR_ROOM_MOVING, f"room {room_id} is recovering, a moment")


class RoomLog:
    def __init__(self, js: Any, boot: str, *, retry_seconds: float = APPEND_RETRY_SECONDS) -> None:
        self.js = js
        self.boot = boot
        self.retry_seconds = retry_seconds

    async def append(self, room_id: int, index: int, rec: dict[str, Any], last_seq: int) -> int:
        """Append record ``index``, fenced on ``last_seq`` (the stream sequence of the last
        record the caller knows); its stream sequence. Retried with the same message id (at
        most one copy lands) while the stream has no leader or does not answer; raises
        LogFenced when another table wrote, LogUnavailable past the retry bound."""
        subject = bus.room_log(room_id)
        data = json.dumps(rec).encode()
        msg_id = f"{room_id}:{index}:{self.boot}:{hashlib.sha256(data).hexdigest()[:16]}"
        headers = {"Nats-Msg-Id": msg_id, "Nats-Expected-Last-Subject-Sequence": str(last_seq)}
        deadline = time.monotonic() + self.retry_seconds
        delay = RETRY_FIRST_DELAY
        while True:
            try:
                ack = await self.js.publish(subject, data, timeout=APPEND_TRY_SECONDS,
                                            headers=dict(headers))
                return int(ack.seq)   # a duplicate can only be our own earlier try
            except nats.js.errors.APIError as exc:
                if exc.err_code == WRONG_LAST_SEQUENCE:
                    # our earlier try did land? (the leader answered: so does the look)
                    stored = await self.stored(room_id, msg_id, FENCE_LOOK_SECONDS)
                    if stored is not None:
                        return stored
                    raise LogFenced(room_id) from None
                if exc.err_code != IN_PROCESS and exc.code is not None and exc.code < 500:
                    # refused for another reason: it did not land, unless an earlier try of
                    # this append did (a leader change in between)
                    stored = await self.stored(room_id, msg_id)
                    if stored is not None:
                        return stored
                    log.warning("room log refused an append: the room is rebuilt from it",
                                extra={"room": room_id, "error": repr(exc), "code": exc.code,
                                       "err_code": exc.err_code,
                                       "description": exc.description})
                    raise LogUnavailable(room_id) from None
                # an earlier try of this append is being stored (a retry after a timeout):
                # asked again, it answers that try's sequence once stored
                failure: Exception = exc
            except (TimeoutError, nats.errors.Error) as exc:
                failure = exc
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # no leader (an election: "no responders") or no answer: tried again soon, and
            # once more at the deadline, so the append lands as soon as a new leader answers
            m.APPEND_RETRIES.inc()
            await asyncio.sleep(min(delay, left))
            delay = min(RETRY_MAX_DELAY, delay * 2)
        stored = await self.stored(room_id, msg_id)
        if stored is not None:
            return stored
        log.warning("room log unavailable: the room is rebuilt from its log",
                    extra={"room": room_id, "error": repr(failure)})
        raise LogUnavailable(room_id)

    async def stored(self, room_id: int, msg_id: str,
                     timeout: float = APPEND_TIMEOUT_SECONDS) -> int | None:
        """The stream sequence of the room's last record if it is ours (its message id,
        which names this process, is ``msg_id``), within ``timeout``: a stream without a
        leader leaves the request unanswered (the client's own bound is 5 s)."""
        try:
            last = await asyncio.wait_for(
                self.js.get_last_msg(bus.room_log_stream(room_id), bus.room_log(room_id)),
                timeout)
        except Exception:
            return None
        if (last.headers or {}).get("Nats-Msg-Id") == msg_id:
            return int(last.seq)
        return None

    async def read(self, room_id: int) -> tuple[list[dict[str, Any]], int]:
        """Every record of the room in index order, and the last one's stream sequence. A
        failure raises (the rebuild is retried): a partial log must never be folded."""
        subject = bus.room_log(room_id)
        records: list[dict[str, Any]] = []
        last_seq = 0
        stream = bus.room_log_stream(room_id)
        info = await asyncio.wait_for(self.js.stream_info(stream, subjects_filter=subject),
                                      READ_TRY_SECONDS)
        total = (info.state.subjects or {}).get(subject, 0)
        if not total:
            return records, last_seq
        sub = await asyncio.wait_for(self.js.pull_subscribe(
            subject, durable=None, stream=stream,
            config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL, inactive_threshold=30)),
            READ_TRY_SECONDS)
        try:
            while len(records) < total:
                batch = await sub.fetch(min(512, total - len(records)), timeout=READ_TRY_SECONDS)
                for msg in batch:
                    records.append(json.loads(msg.data))
                    last_seq = max(last_seq, msg.metadata.sequence.stream)
                    await msg.ack()
        finally:
            await sub.unsubscribe()
        records.sort(key=lambda r: r["i"])
        return records, last_seq

    async def purge(self, room_id: int) -> None:
        """Drop a closed room's records (JetStream purge with a subject filter)."""
        await self.js.purge_stream(bus.room_log_stream(room_id), subject=bus.room_log(room_id))


def _in_reach(replica: Any) -> bool:
    """A follower that could lead now: online, current, and heard from by the leader
    lately (a node just cut off from the others looks current for seconds more)."""
    return bool(replica.current) and not replica.offline \
        and (replica.active or 0) < HEARD_WITHIN_NS


async def spread_leaders(nc: Any, js: Any) -> tuple[str | None, bool]:
    """Spread the room log streams' leaders over the NATS nodes: when a node leads more
    than its share (``ceil(streams / nodes)``), ask one of its streams to step down in
    favour of a current replica on the node that leads the fewest (JetStream's leader
    step-down with a preferred placement, nats-server 2.11+). One move per call (the next
    call sees its result); the moved stream pauses for one election. Returns the stream
    moved (or None: balanced, a single server, or a stream without a leader now) and
    whether the streams are settled: each has a leader, every replica of each is online,
    current and heard from lately, and no leader is to move. Until then a leader may still
    have to move (a node that was down catches up, then is counted), so the caller looks
    again soon (leaders.py). A node cut off from the others is never picked: its stream
    would only elect again on the majority."""
    clusters = []
    for name in bus.ROOM_LOG_STREAMS:
        cluster = (await js.stream_info(name)).cluster
        if cluster is None:
            return None, True      # a single server: nothing to spread
        if not cluster.leader:
            return None, False     # electing now: look again soon
        clusters.append((name, cluster))
    led = Counter(cluster.leader for _, cluster in clusters)
    nodes = set(led)
    settled = True
    for _, cluster in clusters:
        for p in cluster.replicas or ():
            if _in_reach(p):
                nodes.add(p.name)
            else:
                settled = False    # down, cut off or catching up: counted once current
    share = math.ceil(len(clusters) / len(nodes))
    for name, cluster in clusters:
        if led[cluster.leader] <= share:
            continue
        peers = [p.name for p in cluster.replicas or () if _in_reach(p)]
        best = min(peers, key=lambda peer: (led[peer], peer), default=None)
        if best is None or led[best] + 1 > share:
            continue
        reply = await nc.request(
            f"$JS.API.STREAM.LEADER.STEPDOWN.{name}",
            json.dumps({"placement": {"preferred": best}}).encode(), timeout=2.0)
        answer = json.loads(reply.data or b"{}")
        if not answer.get("success"):
            log.warning("room log leader not moved",
                        extra={"stream": name, "to": best, "error": answer.get("error")})
            return None, False
        m.LOG_LEADER_MOVES.inc()
        log.info("room log leader moved", extra={"stream": name, "from": cluster.leader,
                                                 "to": best})
        return str(name), False
    return None, settled
