"""The arbiter client: every response window is decided by an arbiter, over one long-lived
``Arbiter.Decide`` stream per table process.

Every room's requests share the stream: a request carries an id, the reader hands each reply
to the request that waits for it. A stream that fails, or a request that times out (a hung
arbiter), drops the stream: the requests waiting on it are answered at once, and the next
one opens a new stream (on another arbiter, when the dial names several).

A final decision is checked by the engine before the room logs it (``verify``, the room
state's ``verify_decision``: the check ``resolve_window`` makes, on nothing but the state):
a decision the fold would refuse never reaches the log.

**Local arbitration**, the one degraded mode: a window no arbiter answers within
``table.arbiter_timeout_seconds`` (none reachable, the stream broke, a hung arbiter), or
whose decision the engine refuses (an arbiter gone wrong), is decided here by the function
the arbiter runs, :func:`games.arbitration.resolve`, so an arbiter outage never stalls a
room. Each such window is counted in ``paiju_table_arbiter_fallback_total{reason}`` (alert
``PaijuArbiterFallbackRising``); entering and leaving the mode is logged. A window the
arbiter refuses as malformed is not a reason: it raises
:class:`games.arbitration.InvalidWindow`, as the function would here."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable

import grpc

from games.arbitration import Decision, InvalidWindow, Rules, Window, resolve
from games.engine import RuleError
from paiju.v1 import arbiter_pb2, arbiter_pb2_grpc
from services.common import tls
from services.common.arbwire import decision_from_pb, window_to_pb
from services.common.config import Config
from services.table import metrics as m

log = logging.getLogger("paiju.table.arbiter")

Reply = arbiter_pb2.ResolveReply | None


class _Stream:
    """One Decide call: its outgoing queue, the requests waiting for a reply, its reader."""

    def __init__(self, stub: arbiter_pb2_grpc.ArbiterStub) -> None:
        self.out: asyncio.Queue[arbiter_pb2.ResolveRequest | None] = asyncio.Queue()
        self.waiting: dict[int, asyncio.Future[Reply]] = {}
        self.call = stub.Decide(self._requests())
        self.reader = asyncio.create_task(self._read())

    async def _requests(self) -> AsyncIterator[arbiter_pb2.ResolveRequest]:
        while (request := await self.out.get()) is not None:
            yield request

    async def _read(self) -> None:
        try:
            async for reply in self.call:
                fut = self.waiting.pop(reply.request_id, None)
                if fut is not None and not fut.done():
                    fut.set_result(reply)
        except grpc.aio.AioRpcError:
            pass   # the arbiter went away: the waiting requests are decided locally
        finally:
            self.fail()

    def fail(self) -> None:
        """Every waiting request gets None (its window is decided locally)."""
        waiting, self.waiting = self.waiting, {}
        for fut in waiting.values():
            if not fut.done():
                fut.set_result(None)

    def close(self) -> None:
        self.out.put_nowait(None)
        self.call.cancel()
        self.reader.cancel()
        self.fail()


class ArbiterClient:
    def __init__(self, cfg: Config) -> None:
        self.timeout = cfg.table.arbiter_timeout_seconds
        # the dial may name several arbiters (``ipv4:a:1,b:2``): spread and skip dead ones
        self._channel = tls.channel(cfg, cfg.arbiter.dial, "arbiter",
                                    options=[("grpc.lb_policy_name", "round_robin")])
        self._stub = arbiter_pb2_grpc.ArbiterStub(self._channel)
        self._stream: _Stream | None = None
        self._ids = itertools.count(1)
        self.local = False   # in local arbitration: the last window had no arbiter's answer

    def _current(self) -> _Stream:
        s = self._stream
        if s is None or s.reader.done():
            s = self._stream = _Stream(self._stub)
        return s

    def _drop(self, s: _Stream) -> None:
        if self._stream is s:
            self._stream = None
        s.close()

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

    async def _ask(self, window: Window, rules: Rules) -> tuple[Reply, str]:
        """The arbiter's reply, or None and why there is none (one of m.FALLBACK_REASONS)."""
        s = self._current()
        request = window_to_pb(window, rules)
        request.request_id = rid = next(self._ids)
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        s.waiting[rid] = fut
        s.out.put_nowait(request)
        try:
            async with asyncio.timeout(self.timeout):
                reply = await fut
        except TimeoutError:
            self._drop(s)   # a hung arbiter: the next request opens a new stream
            return None, "timeout"
        return reply, "unavailable"

    async def close(self) -> None:
        if self._stream is not None:
            self._drop(self._stream)
        await self._channel.close()
