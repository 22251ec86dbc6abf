"""The embedded nats-server starts on a free port, carries a message and a JetStream
publish, survives a restart on the same store, and stops."""

from __future__ import annotations

import asyncio
import socket

import nats

from services.common import bus
from services.common.natsd import EmbeddedNats


async def test_message_goes_through_and_jetstream_survives_restart() -> None:
    server = EmbeddedNats().start()
    try:
        nc = await nats.connect(server.url)
        sub = await nc.subscribe("room.1.events")
        await nc.publish("room.1.events", b"hello")
        msg = await sub.next_msg(timeout=2)
        assert msg.data == b"hello"
        js = nc.jetstream()
        await bus.ensure_streams(js)
        ack = await js.publish(bus.room_log(1), b"action-1", headers={"Nats-Msg-Id": "1:1"})
        dup = await js.publish(bus.room_log(1), b"action-1", headers={"Nats-Msg-Id": "1:1"})
        assert dup.duplicate and dup.seq == ack.seq
        await nc.close()

        server.stop()
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", server.port)) != 0
        server.start()
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        stored = await js.get_msg(bus.room_log_stream(1), ack.seq)
        assert stored.data == b"action-1"
        await nc.close()
    finally:
        server.close()
    assert server.proc is None


async def test_client_reconnects_after_server_restart() -> None:
    server = EmbeddedNats().start()
    try:
        nc = await bus.connect(server.url, "reconnect-test")
        server.stop(kill=True)
        server.start()
        received = None
        for _ in range(40):  # the client notices the restart and reconnects by itself
            try:
                sub = await nc.subscribe("x")
                await nc.publish("x", b"after")
                received = (await sub.next_msg(timeout=0.5)).data
                break
            except Exception:
                await asyncio.sleep(0.25)
        assert received == b"after"
        assert nc.stats["reconnects"] >= 1
        await nc.close()
    finally:
        server.close()
