"""The settlement outbox: hand results go to JetStream (``settle.<room>``) with a dedupe id
of room + hand; one that cannot be published waits here for the heartbeat's retry.

Records writes each settlement exactly once (unique on room + hand), and JetStream drops a
republished dedupe id within its window, so retries and rebuilds are safe.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from services.common import bus
from services.table import metrics as m

log = logging.getLogger("paiju.table.settle")


def dedupe_id(msg: dict[str, Any]) -> str:
    return f"{msg['room_id']}:{'final' if msg.get('final') else msg['hand_no']}"


class SettlementOutbox:
    def __init__(self, js: Any) -> None:
        self.js = js
        self.unsent: list[dict[str, Any]] = []   # publishes that failed: retried

    def holds(self, room_id: int) -> bool:
        """A settlement of the room still waits (its log must stay until it is out)."""
        return any(msg["room_id"] == room_id for msg in self.unsent)

    async def publish(self, messages: list[dict[str, Any]]) -> None:
        """Publish settlements; one that fails waits in ``unsent``. Never raises."""
        for msg in messages:
            msg.setdefault("settled_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            dedupe = dedupe_id(msg)
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

    async def retry(self) -> None:
        if self.unsent:
            await self.publish(list(self.unsent))
