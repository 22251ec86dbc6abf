"""A cancelled barrier must not cut a connection off (issue 9, defect 1): a kicked session
was cancelled inside ``bus.sync``; when the PONG came back nats-py set the result of the
cancelled future, its read loop ended, and the lobby received nothing more for minutes."""

from __future__ import annotations

import asyncio

import nats

from services.common import bus
from services.common.natsd import EmbeddedNats


async def test_cancelling_sync_leaves_the_connection_working(nats_server: EmbeddedNats) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        got: asyncio.Queue[bytes] = asyncio.Queue()

        async def on_msg(msg: nats.aio.msg.Msg) -> None:
            await got.put(msg.data)

        await nc.subscribe("flush.cancel.test", cb=on_msg)
        await bus.sync(nc)
        for _ in range(20):   # cancelled at once, before any PONG can come back
            task = asyncio.create_task(bus.sync(nc))
            await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0.2)   # the PONGs arrive
        await nc.publish("flush.cancel.test", b"still here")
        assert await asyncio.wait_for(got.get(), 3) == b"still here"
        await bus.sync(nc)   # and the barrier itself still works
    finally:
        await nc.close()
