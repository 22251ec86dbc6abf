"""The arbiter client: ``Resolve`` on the arbiter service, None when it does not answer in
time (the room then uses the same pure function in-process, games.arbitration)."""

from __future__ import annotations

import time

import grpc

from games.arbitration import Decision, Rules, Window
from paiju.v1 import arbiter_pb2_grpc
from services.common import tls
from services.common.arbwire import decision_from_pb, window_to_pb
from services.common.config import Config
from services.table import metrics as m


class ArbiterClient:
    def __init__(self, cfg: Config) -> None:
        self.timeout = cfg.table.arbiter_timeout_seconds
        # the dial may name several arbiters (``ipv4:a:1,b:2``): spread and skip dead ones
        self._channel = tls.channel(cfg, cfg.arbiter.dial, "arbiter",
                                    options=[("grpc.lb_policy_name", "round_robin")])
        self._stub = arbiter_pb2_grpc.ArbiterStub(self._channel)

    async def resolve(self, window: Window, rules: Rules) -> Decision | None:
        started = time.perf_counter()
        try:
            reply = await self._stub.Resolve(window_to_pb(window, rules), timeout=self.timeout)
        except grpc.aio.AioRpcError:
            return None
        m.ARBITER.observe(time.perf_counter() - started)
        return decision_from_pb(reply)

    async def close(self) -> None:
        await self._channel.close()
