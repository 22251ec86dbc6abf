"""bus.sync is a barrier: a subscription made before it gets every message another
connection publishes after it (nats-py's single flush is not: its PING can overtake the
SUB still in the client's buffer). Also the per-service reply-inbox prefix."""

from __future__ import annotations

import asyncio

import nats

from services.common import bus
from services.common.natsd import EmbeddedNats


async def test_a_subscription_is_live_after_sync(fresh_nats: EmbeddedNats) -> None:
    listener = await bus.connect(fresh_nats.url, "lobby")
    sender = await nats.connect(fresh_nats.url)
    try:
        for i in range(300):
            sub = await listener.subscribe(f"sync.{i}")
            await bus.sync(listener)
            await sender.publish(f"sync.{i}", b"x")
            await bus.sync(sender)
            msg = await sub.next_msg(timeout=5)  # raises if the SUB was not in place
            assert msg.data == b"x"
            await sub.unsubscribe()
    finally:
        await sender.close()
        await listener.close()


async def test_each_service_replies_on_its_own_inbox_prefix(fresh_nats: EmbeddedNats) -> None:
    assert bus.inbox_prefix("table-a1") == "_INBOX_table"
    nc = await bus.connect(fresh_nats.url, "records")
    responder = await nats.connect(fresh_nats.url)
    seen: list[str] = []

    async def answer(msg: nats.aio.msg.Msg) -> None:
        seen.append(msg.reply)
        await msg.respond(b"ok")

    try:
        await responder.subscribe("ask", cb=answer)
        await bus.sync(responder)
        reply = await asyncio.wait_for(nc.request("ask", b"?", timeout=5), 10)
        assert reply.data == b"ok" and seen[0].startswith("_INBOX_records.")
    finally:
        await responder.close()
        await nc.close()
