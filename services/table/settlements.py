"""The settlement outbox: hand results go to JetStream (``settle.all``) with a dedupe id
of room + hand; one that cannot be published waits here for the heartbeat's retry.

Each attempt also sends the same message on core NATS to records (``bus.SETTLE_PROMPT``, its
prompt copy, fire and forget), which writes it at once: a NATS node's death stalls SETTLE
for a Raft election (of the stream, or of records' consumer on it: 4 to 9 s), and the prompt
copy goes around it. SETTLE stays the durable path: a settlement is done here only once
JetStream has stored it.

Records writes each settlement exactly once (unique on room + hand), and JetStream drops a
republished dedupe id within its window, so retries, rebuilds and the prompt copy are safe.
The messages are :mod:`paiju.contracts.settle`'s types; ``settled_at`` is stamped at the
first attempt and kept through the retries.
"""

from __future__ import annotations

import logging
from typing import Any

from paiju.contracts import settle
from services.common import bus
from services.table import metrics as m
from services.table.roomlog import APPEND_TRY_SECONDS

log = logging.getLogger("paiju.table.settle")


class SettlementOutbox:
    def __init__(self, nc: Any, js: Any) -> None:
        self.nc = nc
        self.js = js
        self.unsent: list[settle.Settlement] = []   # publishes that failed: retried

    def holds(self, room_id: int) -> bool:
        """A settlement of the room still waits (its log must stay until it is out)."""
        return any(msg.room_id == room_id for msg in self.unsent)

    async def publish(self, messages: list[settle.Settlement], *, prompt: bool = True) -> None:
        """Publish settlements; one that fails waits in ``unsent``. Never raises. Without
        ``prompt`` no prompt copy goes (a rebuilt room's settled hands, published again for
        the one that may not have been stored: records has the others)."""
        for msg in messages:
            if msg.settled_at is None:
                msg = msg.replace(settled_at=settle.now())
            key = msg.key
            data = msg.encode()
            headers = {"Nats-Msg-Id": key}
            if prompt:
                try:   # the prompt copy: buffered by the client, lost if nobody listens
                    await self.nc.publish(bus.SETTLE_PROMPT, data, headers=headers)
                except Exception as exc:  # e.g. the reconnect buffer is full: SETTLE has it
                    log.debug("settlement's prompt copy not sent", extra={"id": key,
                                                                          "error": repr(exc)})
            try:
                # bounded as an append's try: an answer lost to a connection moving must
                # not hold the room for the client's 5 s; the heartbeat publishes it again
                ack = await self.js.publish(bus.SETTLE_SUBJECT, data,
                                            headers=headers, timeout=APPEND_TRY_SECONDS)
            except Exception as exc:
                log.warning("settlement not published yet", extra={"id": key, "error": repr(exc)})
                if not any(w.key == key for w in self.unsent):
                    self.unsent.append(msg)
                continue
            waited = any(w.key == key for w in self.unsent)
            self.unsent = [w for w in self.unsent if w.key != key]
            # a duplicate was counted already (a rebuilt room publishes its settled hands
            # again), unless this hand's earlier try failed: stored, its answer lost
            if ack.duplicate and not waited:
                continue
            if not msg.final:
                m.HANDS.labels(msg.game).inc()
            m.SETTLEMENTS.labels(str(msg.final).lower()).inc()
        m.PENDING.labels("settlement").set(len(self.unsent))

    async def retry(self) -> None:
        if self.unsent:
            await self.publish(list(self.unsent))
