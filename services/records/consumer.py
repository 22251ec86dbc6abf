"""The durable JetStream pull consumer ``records`` on ``SETTLE`` (settle.*).

Each message is parsed, written in one transaction, and only then acknowledged:
- written or already written (duplicate): ack;
- malformed, or rejected by the database for its content (integrity / data errors): logged,
  counted and terminated (``term``), so it is never redelivered;
- the database unavailable (a restart, a failover, a dropped connection): ``nak`` with a
  delay, the rest of the batch handed back too, and the next pull after a backoff;
- any other failure: the same, logged with its traceback (a defect, not a fault).
A broker fault while pulling (a NATS node lost: the stream or this consumer electing a
leader) is retried on the same subscription after a backoff; any other broker fault
restarts the pull loop (stream and consumer set up again) after a backoff.

The prompt copy: records also takes each settlement as the table sends it on core NATS
(``bus.SETTLE_PROMPT``, one records of the queue group) and writes it at once, through the
same writer. A NATS node's death stalls SETTLE for a Raft election (of the stream, or of this
consumer: 4 to 9 s); the prompt copy goes around it, and the SETTLE message, when it comes,
is a duplicate. It is never acknowledged nor retried: whatever fails there (malformed, the
database away, nobody listening) is left to SETTLE, and logged there.
Faults of the database or the broker are warnings that say what is retried and when, and
``paiju_records_fault_retries_total{fault}`` counts them; tracebacks are kept for defects.
A process killed between commit and ack gets the message again and acks it as a duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import ServiceUnavailableError
from prometheus_client import Counter, Histogram
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, InterfaceError, OperationalError

from services.common.bus import (
    SETTLE_PROMPT,
    SETTLE_PROMPT_QUEUE,
    SETTLE_STREAM,
    connect,
    ensure_streams,
    flush,
)
from services.common.config import NatsConfig
from services.common.metrics import LATENCY_BUCKETS
from services.records.settlement import MalformedSettlement, Settlement, parse_settlement
from services.records.store import SettlementWriter

log = logging.getLogger("paiju.records.consumer")

DURABLE = "records"
SUBJECTS = "settle.*"
ACK_WAIT_SECONDS = 10.0
RETRY_DELAY_SECONDS = 1.0     # between tries to connect to NATS at start-up
# pauses after a fault (and the redelivery delay of the settlements it held back): doubled
# from the first to the last while the fault lasts, so a database back after a restart of a
# second or two is written to again within a few tenths of a second, and one that is away
# for long is tried every 2 s
BACKOFF_SECONDS = (0.1, 0.2, 0.4, 0.8, 1.6, 2.0)
# pauses between pulls while the stream or the consumer has no leader (an election after a
# NATS node's death: seconds): short, so that the first pull after it finds the leader
ELECTION_BACKOFF_SECONDS = (0.1, 0.2, 0.25)
ELECTION_RESTART_SECONDS = 20.0   # longer than any election: the pull loop starts over
# the JetStream API's answers (stream and consumer set-up) within this, else tried again: a
# request sent while the stream elects a leader is never answered
API_TIMEOUT_SECONDS = 2.0
PROMPT_PENDING = 1000          # prompt copies waiting for the writer; beyond: dropped (SETTLE)

WRITTEN = Counter("paiju_records_settlements_written_total",
                  "SETTLE messages written (hands and final messages)")
DUPLICATES = Counter("paiju_records_duplicates_ignored_total",
                     "SETTLE messages already written (e.g. by their prompt copy), "
                     "acknowledged and ignored")
PROMPT = Counter("paiju_records_prompt_settlements_total",
                 "Prompt copies of settlements (core NATS): written, duplicate (already "
                 "written), or left to SETTLE (failed)", ["result"])
for _result in ("written", "duplicate", "failed"):
    PROMPT.labels(_result)
MALFORMED = Counter("paiju_records_malformed_total",
                    "Settlement messages terminated because they can never be written")
FAILURES = Counter("paiju_records_write_failures_total",
                   "Settlement writes that failed and were left for redelivery")
WRITE_SECONDS = Histogram("paiju_records_write_seconds",
                          "Time to write one settlement transaction", buckets=LATENCY_BUCKETS)
# The SLO "hands settle within 5 s of their end" (docs/slo.md) is read from this one: the
# 5 s bucket must stay.
FAULT_RETRIES = Counter("paiju_records_fault_retries_total",
                        "Retries after a fault of the database or the broker", ["fault"])
for _fault in ("database", "nats"):
    FAULT_RETRIES.labels(_fault)
SETTLE_DELAY = Histogram("paiju_records_settlement_delay_seconds",
                         "From a hand's end (the table's publish) to its settlement written",
                         buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800))


def hand_ended(msg: Any, settlement: Settlement, received: float | None = None) -> float:
    """When the hand ended, as well as can be told (Unix time): JetStream's timestamp of the
    table's publish (nanoseconds), or for a prompt copy when it was ``received`` (it comes
    within moments of its publish), unless the settlement waited in the table's outbox, when
    its ``settled_at`` (the first attempt, to the second) is the earlier and truer one."""
    settled = settlement.settled_at.replace(tzinfo=UTC).timestamp()
    try:
        stored = float(msg.metadata.timestamp.timestamp())
    except Exception:  # not a JetStream delivery (no metadata)
        if received is None:
            return settled
        stored = received
    return stored if stored < settled + 1 else settled


# SQLSTATE classes of a server that is away: 08 connection exceptions, 57P operator
# intervention (shutting down, starting up: "cannot connect now")
UNAVAILABLE_SQLSTATES = ("08", "57P")


def database_fault(exc: BaseException) -> bool:
    """The database restarted, unreachable or its connection dropped (not a defect)."""
    if isinstance(exc, (OperationalError, InterfaceError, OSError, TimeoutError)):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    sqlstate = str(getattr(exc.orig, "sqlstate", None) or "")
    return exc.connection_invalidated or sqlstate.startswith(UNAVAILABLE_SQLSTATES)


def broker_fault(exc: BaseException) -> bool:
    """NATS unreachable, a connection dropped or a stream leader being elected."""
    return isinstance(exc, (NatsError, OSError, TimeoutError))


class Backoff:
    """The pause before the next try while a fault lasts: :data:`BACKOFF_SECONDS` in turn,
    the last repeated; :meth:`reset` once a try succeeds."""

    def __init__(self, steps: tuple[float, ...] = BACKOFF_SECONDS) -> None:
        self.steps = steps
        self.failures = 0

    def upcoming(self) -> float:
        """The pause :meth:`next` will give."""
        return self.steps[min(self.failures, len(self.steps) - 1)]

    def next(self) -> float:
        delay = self.upcoming()
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0


def consumer_config(ack_wait: float = ACK_WAIT_SECONDS) -> ConsumerConfig:
    return ConsumerConfig(
        durable_name=DURABLE, filter_subject=SUBJECTS, ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL, ack_wait=ack_wait, max_deliver=-1,
        max_ack_pending=1000)


async def handle(msg: Msg, writer: SettlementWriter, retry_delay: float) -> str:
    """Process one delivery; returns what happened: written, duplicate, malformed, retry
    (handed back, redelivered in ``retry_delay`` seconds)."""
    try:
        settlement = parse_settlement(msg.data)
    except MalformedSettlement as exc:
        log.error("malformed settlement terminated",
                  extra={"subject": msg.subject, "error": str(exc)})
        MALFORMED.inc()
        await msg.term()
        return "malformed"
    started = time.perf_counter()
    try:
        written = await writer.write(settlement)
    except (IntegrityError, DataError) as exc:
        log.error("settlement rejected by the database, terminated",
                  extra={"key": settlement.key, "error": str(exc.orig)})
        MALFORMED.inc()
        await msg.term()
        return "malformed"
    except Exception as exc:
        if not database_fault(exc):
            log.exception("settlement write failed, will be redelivered",
                          extra={"key": settlement.key})
        else:
            log.warning("database unavailable: settlement %s redelivered in %.1f s (%r)",
                        settlement.key, retry_delay, exc,
                        extra={"key": settlement.key, "error": repr(exc)})
            FAULT_RETRIES.labels("database").inc()
        FAILURES.inc()
        await msg.nak(delay=retry_delay)
        return "retry"
    wrote(msg, settlement, written, started)
    (WRITTEN if written else DUPLICATES).inc()
    await msg.ack()
    log.debug("settlement %s", "written" if written else "duplicate",
              extra={"key": settlement.key})
    return "written" if written else "duplicate"


def wrote(msg: Any, settlement: Settlement, written: bool, started: float,
          received: float | None = None) -> None:
    WRITE_SECONDS.observe(time.perf_counter() - started)
    if written:
        SETTLE_DELAY.observe(max(0.0, time.time() - hand_ended(msg, settlement, received)))


async def handle_prompt(msg: Msg, writer: SettlementWriter) -> str:
    """Write a settlement's prompt copy; returns written, duplicate or failed. Never raises:
    a failure is left to the settlement's SETTLE message (logged where it fails there)."""
    received = time.time()
    try:
        settlement = parse_settlement(msg.data)
    except MalformedSettlement:
        PROMPT.labels("failed").inc()
        return "failed"
    started = time.perf_counter()
    try:
        written = await writer.write(settlement)
    except Exception as exc:
        if database_fault(exc) or isinstance(exc, (IntegrityError, DataError)):
            log.debug("prompt settlement not written, left to SETTLE",
                      extra={"key": settlement.key, "error": repr(exc)})
        else:
            log.exception("prompt settlement write failed, left to SETTLE",
                          extra={"key": settlement.key})
        PROMPT.labels("failed").inc()
        return "failed"
    wrote(msg, settlement, written, started, received)
    result = "written" if written else "duplicate"
    PROMPT.labels(result).inc()
    log.debug("prompt settlement %s", result, extra={"key": settlement.key})
    return result


class SettleConsumer:
    """Connects to NATS (retrying until it can), then pulls and writes settlements until
    :meth:`stop`. Messages are handled one at a time, in delivery order."""

    def __init__(self, nats_url: str | NatsConfig, writer: SettlementWriter, *, batch: int = 32,
                 connect_timeout: float = 2.0, replicas: int = 1,
                 ack_wait: float = ACK_WAIT_SECONDS) -> None:
        self.nats_url = nats_url
        self.ack_wait = ack_wait
        self.replicas = replicas
        self.writer = writer
        self.batch = batch
        self.connect_timeout = connect_timeout
        self.nc: Client | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._backoff = Backoff()

    @property
    def connected(self) -> bool:
        return self.nc is not None and bool(self.nc.is_connected)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="records-consumer")

    async def _connect(self) -> Client:
        while True:
            try:
                return await connect(self.nats_url, "records", self.connect_timeout)
            except Exception as exc:  # NATS not up yet: keep serving reads, retry
                log.warning("nats connect failed, retrying", extra={"error": repr(exc)})
                await asyncio.sleep(RETRY_DELAY_SECONDS)

    async def _on_prompt(self, msg: Msg) -> None:
        if not self._stopping.is_set():
            await handle_prompt(msg, self.writer)

    async def _run(self) -> None:
        self.nc = await self._connect()
        # nats-py subscribes again after every reconnect
        await self.nc.subscribe(SETTLE_PROMPT, queue=SETTLE_PROMPT_QUEUE, cb=self._on_prompt,
                                pending_msgs_limit=PROMPT_PENDING)
        while not self._stopping.is_set():
            try:
                await self._consume(self.nc)
            except Exception as exc:  # stream set-up or NATS trouble: start over
                delay = self._backoff.next()
                if not broker_fault(exc):
                    log.exception("consumer loop failed, restarting in %.2f s", delay)
                else:
                    log.warning("broker unavailable (%r): pulling again in %.2f s", exc, delay,
                                extra={"error": repr(exc)})
                    FAULT_RETRIES.labels("nats").inc()
                await asyncio.sleep(delay)

    async def _consume(self, nc: Client) -> None:
        js = nc.jetstream(timeout=API_TIMEOUT_SECONDS)
        await ensure_streams(js, self.replicas, room_log=False)
        sub = await js.pull_subscribe(SUBJECTS, durable=DURABLE, stream=SETTLE_STREAM,
                                      config=consumer_config(self.ack_wait))
        log.info("consuming settlements", extra={"durable": DURABLE})
        self._backoff.reset()
        try:
            await self._pull(sub)
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _pull(self, sub: JetStreamContext.PullSubscription) -> None:
        electing = Backoff(ELECTION_BACKOFF_SECONDS)
        since = 0.0
        while not self._stopping.is_set():
            try:
                msgs = await sub.fetch(self.batch, timeout=1.0)
            except (NatsTimeout, TimeoutError):  # nats-py raises either when nothing came
                continue
            except ServiceUnavailableError as exc:
                # the stream or this consumer has no leader (a NATS node died): pull again
                # soon on the same subscription; setting it up again would wait for the
                # same election, and then for the API's timeout
                if not electing.failures:
                    since = time.monotonic()
                elif time.monotonic() - since > ELECTION_RESTART_SECONDS:
                    raise
                delay = electing.next()
                if electing.failures == 1:
                    log.warning("settlements unavailable (%r), a leader being elected: "
                                "pulling again in %.2f s, then every %.2f s until it answers",
                                exc, delay, ELECTION_BACKOFF_SECONDS[-1],
                                extra={"error": repr(exc)})
                FAULT_RETRIES.labels("nats").inc()
                await asyncio.sleep(delay)
                continue
            if electing.failures:
                log.info("settlements available again",
                         extra={"pulls_failed": electing.failures})
                electing.reset()
            for i, msg in enumerate(msgs):
                if self._stopping.is_set():  # hand the rest back at once
                    for rest in msgs[i:]:
                        await rest.nak()
                    return
                delay = self._backoff.upcoming()
                if await handle(msg, self.writer, delay) != "retry":
                    self._backoff.reset()
                    continue
                # the database failed this one: the rest of the batch waits for it too
                for rest in msgs[i + 1:]:
                    await rest.nak(delay=delay)
                await asyncio.sleep(self._backoff.next())
                break

    async def stop(self, timeout: float = 5.0) -> None:
        """Finish the message in hand, then close the NATS connection."""
        self._stopping.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout)
            except TimeoutError:
                log.warning("consumer did not stop in time, cancelled")
            except Exception:
                log.exception("consumer ended with an error")
        if self.nc is not None and not self.nc.is_closed:
            with contextlib.suppress(Exception):
                await flush(self.nc, timeout=2)
            await self.nc.close()
