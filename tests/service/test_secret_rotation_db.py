"""Database password rotation without downtime, on a private PostgreSQL (``pg_ctl``, the
project's tests/support/pgctl.py) with password authentication (scram-sha-256 in its
pg_hba.conf), records' own engine (services/records/db.py) and settlement writer, and the
password in mounted files (docs/runbooks.md, "Rotate the database password").

PostgreSQL holds one password per role and checks it only when a session starts. So:

1. the Secret gets the new password, and the old one as the previous password: new
   connections try the new one, are refused (the role still has the old one) and open with
   the previous one;
2. ``ALTER ROLE paiju PASSWORD '<new>'``: new connections open with the new one at once;
   sessions opened before go on;
3. the previous password is removed from the Secret; the old password opens nothing.

Throughout, settlements are written through the pool, whose connections are invalidated
every few writes so that new ones keep being opened: not one write fails, and the ledger
holds every hand once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import text

from services.common.config import RecordsConfig
from services.records.db import engine_for, migrate
from services.records.settlement import parse_settlement
from services.records.store import SettlementWriter
from tests.service.test_records_support import encode, hand_message
from tests.support.pgctl import PrivatePostgres

OLD, NEW = "old-db-password-0123456789", "new-db-password-9876543210"
ROOT = Path(__file__).resolve().parents[2]
SEATS = [3001, 3002, 3003, 3004]


async def superuser(pg: PrivatePostgres, sql: str) -> None:
    conn = await asyncpg.connect(host="127.0.0.1", port=pg.port, user="postgres",
                                 database="postgres")
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def password_auth(pg: PrivatePostgres) -> None:
    """The role ``paiju`` owning database ``paiju``; everyone but the superuser (the test's
    own hand) authenticates with a password over TCP."""
    await superuser(pg, f"CREATE ROLE paiju LOGIN PASSWORD '{OLD}'")
    await superuser(pg, "CREATE DATABASE paiju OWNER paiju")
    (pg.data / "pg_hba.conf").write_text(
        "local all all trust\n"
        "host all postgres 127.0.0.1/32 trust\n"
        "host all all 127.0.0.1/32 scram-sha-256\n", encoding="utf-8")
    pg._run(pg.pg_ctl, "-D", str(pg.data), "reload")
    # the rule is in force once the postmaster has read the file again: a wrong password is
    # refused (asked again until then, at most 10 s)
    for _ in range(100):
        try:
            conn = await asyncpg.connect(host="127.0.0.1", port=pg.port, user="paiju",
                                         database="paiju", password="wrong")
        except asyncpg.InvalidPasswordError:
            return
        await conn.close()
        await asyncio.sleep(0.1)
    raise AssertionError("pg_hba.conf's password rule never came in force")


def write_secret(path: Path, value: str | None) -> None:
    """As the kubelet updates a Secret volume: the new content appears at once (rename)."""
    if value is None:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(value + "\n", encoding="utf-8")
    tmp.replace(path)


async def test_database_password_rotates_under_load(
        postgres: PrivatePostgres, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    await password_auth(postgres)
    password, previous = tmp_path / "database-password", tmp_path / "database-previous-password"
    write_secret(password, OLD)
    cfg = RecordsConfig(database_url=f"postgresql+asyncpg://paiju@127.0.0.1:{postgres.port}/paiju",
                        database_password_file=str(password),
                        database_previous_password_file=str(previous))
    engine = engine_for(cfg)
    await migrate(engine)
    writer = SettlementWriter(engine)
    written: list[int] = []
    failures: list[BaseException] = []
    stop = asyncio.Event()

    async def play() -> None:
        """Settle hands one after another; every third write on a new connection."""
        room = 500000
        while not stop.is_set():
            room += 1
            deltas = [3, -1, -1, -1]
            random.shuffle(deltas)
            try:
                assert await writer.write(parse_settlement(encode(
                    hand_message(room, 1, SEATS, deltas))))
                written.append(room)
            except BaseException as exc:   # noqa: BLE001 - any failure fails the test
                failures.append(exc)
            if room % 3 == 0:
                async with engine.connect() as conn:
                    await conn.invalidate()   # the pool opens a new connection next time
            await asyncio.sleep(0.01)

    async def new_session_user() -> str:
        """A brand-new connection of the pool (the others are held meanwhile)."""
        async with engine.connect() as conn:
            await conn.invalidate()
        async with engine.connect() as conn:
            return str((await conn.execute(text("SELECT current_user"))).scalar())

    caplog.set_level(logging.WARNING, logger="paiju.records.db")
    async with engine.connect() as long_session:   # opened with the old password
        await long_session.execute(text("SELECT 1"))
        player = asyncio.ensure_future(play())
        try:
            await asyncio.sleep(0.5)
            # 1. the Secret: the new password, the old one as previous
            write_secret(previous, OLD)
            write_secret(password, NEW)
            await asyncio.sleep(0.5)
            assert await new_session_user() == "paiju"
            assert "previous one" in caplog.text   # the new one was refused, the old one used
            # 2. the role's password changes
            await superuser(postgres, f"ALTER ROLE paiju PASSWORD '{NEW}'")
            caplog.clear()
            await asyncio.sleep(0.5)
            assert await new_session_user() == "paiju"
            assert "previous one" not in caplog.text   # the new password, first time
            # 3. the previous password leaves the Secret
            write_secret(previous, None)
            await asyncio.sleep(0.5)
            assert await new_session_user() == "paiju"
            # the session opened with the old password still works
            assert (await long_session.execute(text("SELECT 2"))).scalar() == 2
        finally:
            stop.set()
            await asyncio.wait_for(player, 30)
    try:
        assert not failures, failures[:3]
        assert len(written) > 20   # hands settled throughout (about 2 s of play)
        async with engine.connect() as conn:
            hands = (await conn.execute(text("SELECT count(*) FROM hands"))).scalar()
            off = (await conn.execute(text(
                "SELECT count(*) FROM (SELECT room_id FROM ledger GROUP BY room_id, hand_no "
                "HAVING sum(delta) <> 0) AS o"))).scalar()
        assert hands == len(written) and off == 0
        with pytest.raises(asyncpg.InvalidPasswordError):
            await asyncpg.connect(host="127.0.0.1", port=postgres.port, user="paiju",
                                  database="paiju", password=OLD)
    finally:
        with contextlib.suppress(Exception):
            await engine.dispose()


async def test_an_absent_password_file_leaves_the_urls_password(
        postgres: PrivatePostgres, tmp_path: Path) -> None:
    """The Secret key is optional (a URL that carries its password, SQLite in dev): absent,
    the URL's password is used, and a wrong one is refused as such."""
    await password_auth(postgres)
    base = f"127.0.0.1:{postgres.port}/paiju"
    for url, works in ((f"postgresql+asyncpg://paiju:{OLD}@{base}", True),
                       (f"postgresql+asyncpg://paiju@{base}", False)):
        engine = engine_for(RecordsConfig(database_url=url,
                                          database_password_file=str(tmp_path / "absent")))
        try:
            if works:
                async with engine.connect() as conn:
                    assert (await conn.execute(text("SELECT 1"))).scalar() == 1
            else:
                with pytest.raises(Exception, match="password"):
                    async with engine.connect():
                        pass
        finally:
            await engine.dispose()


def test_backups_take_the_password_from_a_file(postgres: PrivatePostgres, tmp_path: Path) -> None:
    """``make db-backup`` as the services do: the URL without its password, the password in
    a file (DATABASE_PASSWORD_FILE); an unreadable file is a coded error."""
    asyncio.run(password_auth(postgres))
    url = f"postgresql+asyncpg://paiju@127.0.0.1:{postgres.port}/paiju"
    password = tmp_path / "database-password"
    write_secret(password, OLD)
    engine = engine_for(RecordsConfig(database_url=url, database_password_file=str(password)))
    asyncio.run(migrate(engine))
    asyncio.run(engine.dispose())
    env = {**os.environ, "DATABASE_URL": url, "DATABASE_PASSWORD_FILE": str(password)}
    env.pop("NATS_URL", None)
    run = subprocess.run([sys.executable, str(ROOT / "deploy" / "db_backup.py"), "backup",
                          "--out", str(tmp_path / "backups")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert list((tmp_path / "backups").glob("records-*.dump"))
    env["DATABASE_PASSWORD_FILE"] = str(tmp_path / "absent")
    run = subprocess.run([sys.executable, str(ROOT / "deploy" / "db_backup.py"), "backup",
                          "--out", str(tmp_path / "backups")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2 and "SECRET_UNREADABLE" in run.stderr, run.stderr
