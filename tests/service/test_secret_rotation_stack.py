"""NATS password rotation under play: the real services (records, arbiter, table, lobby), each
with its NATS user and password as the pods mount them (the files ``user`` and
``<user>-password`` of the Secret paiju-nats, deploy/k8s/base), on a nats-server that runs the
configuration the chart renders from deploy/k8s/nats/values-auth.yaml (the passwords in the
included passwords.conf). While robots play, every service is moved to its second user
(``<svc>-b``, the same permissions) as docs/runbooks.md, "Rotate a NATS password", says:

1. the second users' passwords are renewed in both Secrets (passwords.conf for the server,
   ``<svc>-b-password`` for the pods); the server reloads (SIGHUP, as the chart's config
   reloader sends it when the included file changes);
2. each service's ``user`` file names its second user: every connection reconnects with it;
3. the old users' passwords are replaced by ones nobody knows; reload.

Every hand is played to its end and records writes every settlement; no connection is left
on an old user; nats-server logs no permission violation but a reply refused across a reload.
A command in flight during a switch may get an error frame (measured: 0-2 a run).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import grpc
import pytest

from services.common.natsd import free_port, nats_server_binary
from tests.support.secret_volume import update_secret_volume
from tests.support.waiting import eventually
from tests.unit.deploy.test_deploy_nats import (
    PASSWORDS,
    SERVICE_USERS,
    auth_values,
    format_config,
    passwords_conf,
)

SECRET_TOKEN = "rotation-test-secret"
HANDS = 16
SECOND = {user: f"pw-{user}-b-{os.getpid()}" for user in SERVICE_USERS}


@dataclass
class Server:
    conf: Path
    passwords: Path
    port: int
    http: int
    log: Path
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def configure(self, passwords: dict[str, str]) -> None:
        """The configuration the chart renders from values-auth.yaml (every service's two
        users), the passwords in the included passwords.conf."""
        doc = {"port": self.port, "http_port": self.http,
               "jetstream": {"store_dir": str(self.conf.parent / "js")},
               **auth_values()["config"]["merge"]}
        self.passwords.write_text(passwords_conf(passwords), encoding="utf-8")
        self.conf.write_text(format_config(doc), encoding="utf-8")

    def reload(self) -> None:
        self.proc.send_signal(signal.SIGHUP)

    def users_connected(self) -> list[str]:
        with urllib.request.urlopen(
                f"http://127.0.0.1:{self.http}/connz?auth=1&limit=1024", timeout=2) as r:
            return sorted(c.get("authorized_user", "") for c in
                          json.load(r)["connections"] or [])

    def violations(self) -> list[str]:
        return [line for line in self.log.read_text(errors="replace").splitlines()
                if "Violation" in line]

    def reloaded(self) -> int:
        return self.log.read_text(errors="replace").count("Reloaded server configuration")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    conf = tmp_path / "nats-config" / "nats.conf"
    conf.parent.mkdir()
    include = auth_values()["config"]["merge"]["00$include"]
    passwords = (conf.parent / include).resolve()
    passwords.parent.mkdir(parents=True)
    log = tmp_path / "nats.log"
    s = Server(conf, passwords, free_port(), free_port(), log, None)  # type: ignore[arg-type]
    s.configure(dict(PASSWORDS))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAIJU_NATS_")}
    s.proc = subprocess.Popen([nats_server_binary(), "-c", str(conf), "-a", "127.0.0.1",
                               "-l", str(log)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert s.proc.poll() is None, log.read_text() if log.exists() else "died"
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"http://127.0.0.1:{s.http}/healthz", timeout=1)
                break
            assert time.monotonic() < deadline, "nats-server did not start"
            time.sleep(0.05)
        yield s
    finally:
        s.proc.send_signal(signal.SIGTERM)
        try:
            s.proc.wait(10)
        except subprocess.TimeoutExpired:
            s.proc.kill()
            s.proc.wait()


@contextlib.asynccontextmanager
async def stack(server: Server, tmp: Path) -> AsyncIterator[dict[str, Any]]:
    from services.arbiter.server import start as start_arbiter
    from services.common.config import load_config
    from services.lobby.server import start as start_lobby
    from services.records.server import start as start_records
    from services.table.server import start as start_table

    def cfg_for(user: str | None) -> Any:
        env = {"PAIJU_TABLE__INSTANCE": "table-rot"}
        if user:   # deploy/k8s/base: the user file optional, the password named by the user
            mounted = tmp / "secrets" / user
            update_secret_volume(mounted, {f"{user}-password": PASSWORDS[user]})
            env.update({"NATS_URL": server.url, "PAIJU_NATS__USER": user,
                        "PAIJU_NATS__USER_FILE": str(mounted / "user"),
                        "PAIJU_NATS__PASSWORD_FILE": str(mounted / "{user}-password"),
                        "PAIJU_NATS__CREDENTIALS_POLL_SECONDS": "0.2"})
        return load_config("test", environ=env)

    cfg = cfg_for("records")
    records = await start_records(replace(cfg, records=replace(
        cfg.records, database_url=f"sqlite+aiosqlite:///{tmp / 'records.db'}")),
        port=0, metrics_port=-1)
    arbiter = await start_arbiter(cfg_for("arbiter"), port=0, metrics_port=-1)
    table = await start_table(cfg_for("table"), port=0, metrics_port=-1)
    cfg = cfg_for("lobby")
    lobby = await start_lobby(replace(
        cfg, records=replace(cfg.records, address=f"127.0.0.1:{records.port}"),
        lobby=replace(cfg.lobby, token_secret=SECRET_TOKEN)), port=0, metrics_port=-1)
    try:
        yield {"records": records, "lobby": lobby}
    finally:
        await lobby.stop(0.5)
        await table.stop(0)
        await arbiter.stop(0)
        await records.stop(0)


async def test_every_service_moves_to_its_second_user_while_robots_play(
        server: Server, tmp_path: Path) -> None:
    from clients.robot.robot import run_tables
    from paiju.v1 import records_pb2, records_pb2_grpc

    async with stack(server, tmp_path) as running:
        olds = sorted(u for u in server.users_connected())
        assert set(olds) == set(SERVICE_USERS), olds
        play = asyncio.ensure_future(run_tables(
            f"127.0.0.1:{running['lobby'].port}", "xuezhan", 2, SECRET_TOKEN, hands=HANDS,
            first_uid=740001))
        await asyncio.sleep(0.5)           # rooms created, hands in play
        assert not play.done()
        # 1. the second users' passwords renewed (both Secrets); the servers reload
        passwords = dict(PASSWORDS)
        reloads = server.reloaded()
        server.configure(passwords := {**passwords, **{f"{u}-b": SECOND[u]
                                                      for u in SERVICE_USERS}})
        for user in SERVICE_USERS:
            update_secret_volume(tmp_path / "secrets" / user, {f"{user}-password": PASSWORDS[user],
                                                f"{user}-b-password": SECOND[user]})
        server.reload()
        await eventually(lambda: server.reloaded() > reloads, "the server reloaded", seconds=30)
        # 2. every service's user file names its second user
        started = time.monotonic()
        for user in SERVICE_USERS:
            update_secret_volume(tmp_path / "secrets" / user, {"user": f"{user}-b",
                                                f"{user}-password": PASSWORDS[user],
                                                f"{user}-b-password": SECOND[user]})
        await eventually(lambda: all(u.endswith("-b") for u in server.users_connected()),
                         "every connection on a second user", seconds=30)
        switched = time.monotonic() - started
        assert set(server.users_connected()) == {f"{u}-b" for u in olds}   # none on an old user
        # 3. the old passwords replaced by ones nobody knows
        reloads = server.reloaded()
        server.configure({**passwords, **{u: f"dead-{u}-{time.time_ns()}"
                                          for u in SERVICE_USERS}})
        server.reload()
        await eventually(lambda: server.reloaded() > reloads, "the server reloaded", seconds=30)
        stats = await asyncio.wait_for(play, 180)
        # every hand played to its end; a command in flight while a connection switched may
        # have been answered with an error frame (its reply lost across the reconnect, the
        # move already made: "... is not in your hand"), a few at most, never a lost hand
        assert all(s.hands == HANDS for s in stats), stats
        errors = [e for s in stats for e in s.errors]
        assert len(errors) <= 4, errors
        assert set(server.users_connected()) == {f"{u}-b" for u in olds}   # none on an old user
        rooms = {room for s in stats for room in s.rooms}
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running['records'].port}") as ch:
            stub = records_pb2_grpc.RecordsStub(ch)

            async def all_written() -> bool:
                for room in rooms:
                    listed = await stub.ListHands(records_pb2.ListHandsRequest(room_id=room))
                    if {h.hand_no for h in listed.hands} < set(range(1, HANDS + 1)):
                        return False
                return True

            deadline = time.monotonic() + 30
            while not await all_written():
                assert time.monotonic() < deadline, "records wrote every hand"
                await asyncio.sleep(0.1)
    # nats-server forgets, when it reloads, which replies a connection may send
    # (allow_responses): a table's answer to a lobby's command, or an arbiter's to a table's
    # window, in flight across a reload may be refused, as a lost reply (the lobby's command
    # path copes: no robot saw an error; the table decides that window itself). Anything
    # else would be a permission the rotation broke.
    refused = server.violations()
    assert all("Publish Violation" in v and (
        ('Subject "_INBOX_lobby.' in v and '"$G/user:table' in v) or
        ('Subject "_INBOX_table.' in v and '"$G/user:arbiter' in v)) for v in refused), refused
    print(f"\nevery connection on its second user {switched:.2f} s after the files changed; "
          f"{len(rooms)} rooms, {HANDS} hands each; replies refused across reloads: "
          f"{len(refused)}; robots' error frames: {errors}")
