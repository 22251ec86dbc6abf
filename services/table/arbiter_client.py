"""The arbiter client: every response window is decided by an arbiter, asked over NATS.

A window is one request on ``arbiter.decide`` (``ResolveRequest``, answered with a
``ResolveReply``) on the table's own connection: it leaves in the next write of the
connection's flusher with the room's other messages, and whichever arbiter replica the queue
group picks answers on the table's inbox.

A final decision is checked by the engine before the room logs it (``verify``, the room
state's ``verify_decision``: the check ``resolve_window`` makes, on nothing but the state):
a decision the fold would refuse never reaches the log.

**Local arbitration**, the one degraded mode: a window no arbiter answers within
``table.arbiter_timeout_seconds`` (a hung arbiter, a lost message), that no arbiter is there
to take (NATS answers "no responders" at once), or whose decision the engine refuses (an
arbiter gone wrong), is decided here by the function the arbiter runs,
:func:`games.arbitration.resolve`, so an arbiter outage never stalls a room. Each such window
is counted in ``paiju_table_arbiter_fallback_total{reason}`` (alert
``PaijuArbiterFallbackRising``); entering and leaving the mode is logged. A window the
arbiter refuses as malformed is not a reason: it raises
:class:`games.arbitration.InvalidWindow`, as the function would here."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import nats.errors
from google.protobuf.message import DecodeError
from nats.aio.client import Client
from nats.errors import TimeoutError as NatsTimeout

from games.arbitration import Decision, InvalidWindow, Rules, Window, resolve
from games.engine import RuleError
from paiju.v1 import arbiter_pb2
from services.common import bus
from services.common.arbwire import decision_from_pb, window_to_pb
from services.table import metrics as m

log = logging.getLogger("paiju.table.arbiter")

class ArbiterClient:
    def __init__(self, nc: Client, timeout: float) -> None:
        self.nc = nc
        self.timeout = timeout
        self.local = False   # in local arbitration: the last window had no arbiter's answer

    async def resolve(self, window: Window, rules: Rules,
                      verify: Callable[[Decision], None] | None = None) -> Decision:
        """The arbiter's decision on ``window``, a final one passed by ``verify`` (RuleError:
        refused); in local arbitration (no answer in time, or refused) the same function's,
        here. InvalidWindow when the window is malformed."""
        started = time.perf_counter()
        reply, reason = await self._ask(window, rules)
        if reply is not None:
            if reply.error:
                raise InvalidWindow(reply.error)
            m.ARBITER.observe(time.perf_counter() - started)
            decision = decision_from_pb(reply)
            try:
                if decision.final and verify is not None:
                    verify(decision)
            except RuleError as err:
                log.warning("arbiter decision refused", extra={"error": str(err)})
                reason = "refused"
            else:
                if self.local:
                    self.local = False
                    log.info("local arbitration over: the arbiter answers again")
                return decision
        m.ARBITER_FALLBACK.labels(reason).inc()
        if not self.local:
            self.local = True
            log.warning("local arbitration: no arbiter answered, windows decided here",
                        extra={"reason": reason})
        return resolve(window, rules)

    async def _ask(self, window: Window, rules: Rules) -> tuple[arbiter_pb2.ResolveReply | None, str]:
        """The arbiter's reply, or None and why there is none (one of m.FALLBACK_REASONS)."""
        request = window_to_pb(window, rules)
        try:
            msg = await self.nc.request(bus.ARBITER_DECIDE, request.SerializeToString(),
                                        timeout=self.timeout)
        except NatsTimeout:   # also while the connection reconnects: the request waits
            return None, "timeout"
        except nats.errors.Error:   # no arbiter subscribed ("no responders"); closed, draining
            return None, "unavailable"
        try:
            return arbiter_pb2.ResolveReply.FromString(msg.data), ""
        except DecodeError:
            return None, "refused"
