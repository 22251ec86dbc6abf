"""A lobby under test or under measurement: its configuration against a given NATS server and
records address, and a bare client of its Connect stream. Shared by the lobby's service tests
(tests/service/test_lobby*.py) and bench/bench_lobby.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

import grpc

from paiju.frames import client_frame
from paiju.v1 import client_pb2
from services.common.config import Config, load_config
from tests.support.waiting import NeverHappened, eventually


def lobby_config(nats_url: str, records_address: str, secret: str, **lobby: Any) -> Config:
    """The test configuration with the given NATS URL, records dial address, token secret
    and other lobby keys. The lobby judges tables live by ``table.lease_ttl_seconds``: these
    tests' fake tables write their entry once and never renew it, so they get a lease of
    10 s (config/test.toml's 2 s is the real tables', who renew it every 0.5 s)."""
    cfg = load_config("test")
    return replace(cfg, nats=replace(cfg.nats, url=nats_url),
                   lobby=replace(cfg.lobby, token_secret=secret, **lobby),
                   records=replace(cfg.records, address=records_address),
                   table=replace(cfg.table, lease_ttl_seconds=10))


async def wait_cached(app: Any, *room_ids: int, timeout: float = 10.0) -> None:
    """Wait until a lobby's room cache (``app.cache``, filled asynchronously by its watch
    of the ``rooms`` bucket) holds every room of ``room_ids``; fail after ``timeout``."""
    def missing() -> list[int]:
        return [r for r in room_ids if app.cache.get(r) is None]
    try:
        await eventually(lambda: not missing(), seconds=timeout, every=0.02)
    except NeverHappened:
        raise NeverHappened(f"rooms {missing()} never reached the lobby's room cache "
                            f"({timeout:g} s)") from None


class Nats:
    """A stand-in for the lobby's NATS connection in unit tests: subscriptions are
    remembered by subject (the test calls their callbacks with :class:`Msg`), never called
    by a server; ``stats`` and ``is_connected`` as nats-py has them."""

    def __init__(self) -> None:
        self.stats = {"reconnects": 0}
        self.is_connected = True
        self.callbacks: dict[str, Any] = {}

    async def subscribe(self, subject: str, cb: Any) -> Any:
        self.callbacks[subject] = cb
        return self

    async def flush(self, timeout: float = 10) -> None:
        pass

    async def unsubscribe(self) -> None:
        pass

    async def deliver(self, subject: str, data: bytes) -> None:
        await self.callbacks[subject](Msg(subject, data))


@dataclass
class Msg:
    """A NATS message as a subscription callback gets it."""

    subject: str
    data: bytes


class ConnectStream:
    """One Lobby.Connect stream and nothing more (no reader task): frames go out numbered by
    ``seq``; whoever reads ``call`` gets the server's frames in order."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.call = self.channel.stream_stream(
            "/paiju.v1.Lobby/Connect", request_serializer=None,
            response_deserializer=client_pb2.ServerFrame.FromString)()
        self.seq = 0

    async def send(self, payload: Any) -> int:
        """Send ``payload`` in the next numbered frame; its seq."""
        self.seq += 1
        await self.call.write(client_frame(payload, seq=self.seq).SerializeToString())
        return self.seq

    async def send_raw(self, data: bytes) -> None:
        await self.call.write(data)

    async def close(self) -> None:
        self.call.cancel()
        await self.channel.close()


class FrameReader:
    """Reading helpers over a transport's ``send(payload) -> seq`` and ``recv(timeout)``
    (a ServerFrame, or None once the server closed): used by the gRPC and WebSocket test
    clients alike."""

    async def send(self, payload: Any) -> int:
        raise NotImplementedError

    async def recv(self, timeout: float = 10.0) -> client_pb2.ServerFrame | None:
        raise NotImplementedError

    async def until(self, test: Any, timeout: float = 10.0) -> client_pb2.ServerFrame:
        """The next frame passing ``test``, skipping others (pushes, room changes)."""
        async def scan() -> client_pb2.ServerFrame:
            while True:
                frame = await self.recv(timeout)
                assert frame is not None, "the server closed the connection"
                if test(frame):
                    return frame
        return await asyncio.wait_for(scan(), timeout)

    async def request(self, payload: Any, timeout: float = 10.0) -> client_pb2.ServerFrame:
        """Send and return the first reply frame (reply_to = its seq)."""
        seq = await self.send(payload)
        return await self.until(lambda f: f.reply_to == seq, timeout)
