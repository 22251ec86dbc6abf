"""The records schema as a release step: ``python -m services.records.migrate`` migrates
(waiting for the database), records migrates at start only where configured, a records that
does not migrate stays unready until the schema is its own (or newer), and on PostgreSQL the
roles of deploy/sql/roles.sql give the migration DDL rights and the services rows only."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from services.common.config import load_config
from services.records import migrate as m
from services.records.db import make_engine
from services.records.reads import PlayerView, RecordsReader
from services.records.settlement import parse_settlement
from services.records.store import SettlementWriter
from tests.service.test_records_support import PG_ADMIN_URL, encode, hand_message

ROOT = Path(__file__).resolve().parents[3]
ROLES_SQL = ROOT / "deploy" / "sql" / "roles.sql"


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'records.db'}"


# ------------------------------------------------------------------ who migrates when
@pytest.mark.parametrize(("env", "value", "expected"), [
    ("dev", None, True), ("test", None, True), ("prod", None, False),
    ("prod", "true", True), ("dev", "false", False), ("test", "0", False), ("prod", "1", True),
])
def test_records_migrates_at_start_in_dev_and_test_not_in_prod(env, value, expected) -> None:
    environ = {} if value is None else {m.ENV_VAR: value}
    assert m.migrate_on_start(load_config(env, environ={}), environ) is expected


def test_a_bad_switch_is_an_error_not_a_guess() -> None:
    with pytest.raises(ValueError, match=m.ENV_VAR):
        m.migrate_on_start(load_config("prod", environ={}), {m.ENV_VAR: "maybe"})


def test_usable_schemas() -> None:
    """The code's head, or a revision it does not know (the next release's, backward
    compatible for one release); not an older known one, nor none."""
    head, known = m.code_head(), m.known_revisions()
    assert head in known
    assert m.usable(head, head, known)
    assert m.usable("9999_next_release", head, known)
    assert not m.usable(None, head, known)
    assert not m.usable("0000_older", "0002", {"0000_older", "0002"})


# ------------------------------------------------------------------ the migrate command
async def test_migrate_then_check_on_sqlite(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    assert await m.check(url) is False, "an empty database needs the migration"
    assert await m.run(url, wait_seconds=5) == m.code_head()
    assert await m.check(url) is True
    assert await m.run(url, wait_seconds=5) == m.code_head(), "idempotent"


def test_the_module_runs_as_the_job_does(tmp_path: Path) -> None:
    """python -m services.records.migrate (the Job's command) with DATABASE_URL."""
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": sqlite_url(tmp_path), "PAIJU_ENV": "prod"}
    check = [sys.executable, "-m", "services.records.migrate", "--check"]
    before = subprocess.run(check, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert before.returncode == 1 and "behind" in before.stdout
    run = subprocess.run([sys.executable, "-m", "services.records.migrate", "--wait", "5"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and f"schema at {m.code_head()}" in run.stdout, run.stderr
    after = subprocess.run(check, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert after.returncode == 0 and "usable" in after.stdout


async def test_migrate_waits_for_the_database_then_gives_up(tmp_path: Path) -> None:
    url = "postgresql+asyncpg://nobody@127.0.0.1:1/none"    # nothing listens on port 1
    started = asyncio.get_running_loop().time()
    with pytest.raises(OSError):
        await m.run(url, wait_seconds=1.0)
    assert asyncio.get_running_loop().time() - started >= 1.0


async def test_a_records_that_does_not_migrate_is_unready_until_the_schema_is_its_own(
        tmp_path: Path) -> None:
    engine = make_engine(sqlite_url(tmp_path))
    try:
        gate = m.SchemaGate(engine)
        assert await gate.check() is False
        await m.run(sqlite_url(tmp_path), wait_seconds=5)
        assert await gate.check() is True
        async with engine.begin() as conn:   # the next release migrated further
            await conn.execute(text("UPDATE alembic_version SET version_num = '9999_next'"))
        assert await m.SchemaGate(engine).check() is True
    finally:
        await engine.dispose()


# ------------------------------------------------------------------ roles on PostgreSQL
async def _admin(database: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{database}", timeout=3)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture
def roles_database():
    """A fresh database with the roles of deploy/sql/roles.sql under unique names; yields
    (migrator URL, services URL); drops both roles and the database afterwards."""
    tag = uuid.uuid4().hex[:10]
    database, migrator, app = f"paiju_roles_{tag}", f"paiju_migrator_{tag}", f"paiju_{tag}"
    try:
        asyncio.run(_admin(PG_ADMIN_URL.rsplit("/", 1)[1], f'CREATE DATABASE "{database}"'))
    except Exception as exc:  # refused, timed out, no such role, asyncpg missing...
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN_URL}: {exc!r}")
    sql = ROLES_SQL.read_text(encoding="utf-8")
    sql = sql.replace("paiju_migrator", migrator)
    sql = re.sub(r"\bpaiju\b(?=[;\s])", app, sql)
    sql = sql.replace(":migrator_password", "'m-secret'").replace(":app_password", "'a-secret'")
    sql = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://postgres@",
                                                   "postgresql+asyncpg://{user}:{pw}@")
    try:
        asyncio.run(_admin(database, sql))
        yield (base.format(user=migrator, pw="m-secret") + f"/{database}",
               base.format(user=app, pw="a-secret") + f"/{database}")
    finally:
        admin_db = PG_ADMIN_URL.rsplit("/", 1)[1]
        asyncio.run(_admin(admin_db, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        asyncio.run(_admin(admin_db, f'DROP ROLE IF EXISTS "{migrator}"; DROP ROLE IF EXISTS "{app}"'))


@pytest.mark.postgres
async def test_the_migration_role_migrates_and_the_services_role_has_no_ddl(roles_database):
    migrator_url, app_url = roles_database
    assert await m.run(migrator_url, wait_seconds=5) == m.code_head()
    engine = make_engine(app_url)
    try:
        # the services' role does the services' work on the migrated tables
        assert await SettlementWriter(engine).write(
            parse_settlement(encode(hand_message(7, 1, [11, 12, 13, 14], [3, -1, -1, -1]))))
        reader = RecordsReader(engine)
        assert [i.user_id for i in await reader.history(7)] == [11, 12, 13, 14]
        await reader.ensure_player(PlayerView(99, "n", "", 0, 0))
        assert await m.SchemaGate(engine).check() is True
        # and nothing else
        for ddl in ("CREATE TABLE spy (i int)", "ALTER TABLE players ADD COLUMN spy int",
                    "DROP TABLE ledger", "ALTER TABLE hands DROP CONSTRAINT uq_hands_room_hand",
                    "CREATE INDEX ix_spy ON ledger (delta)", "TRUNCATE hands"):
            with pytest.raises(Exception, match="(?i)permission denied|must be owner"):
                async with engine.begin() as conn:
                    await conn.execute(text(ddl))
        with pytest.raises(Exception, match="(?i)permission denied"):
            await _create_as(app_url)
    finally:
        await engine.dispose()


async def _create_as(url: str) -> None:
    """Create a table as the given role (what any migration at start would need)."""
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE alembic_version_probe (v text)"))
    finally:
        await engine.dispose()


# ------------------------------------------------------------------ records at start, in prod mode
async def _health(port: int) -> int:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=2)
        return reply.status


async def _start_records(nats_url: str, database_url: str, monkeypatch):
    from dataclasses import replace

    from services.records.server import start

    monkeypatch.setenv(m.ENV_VAR, "false")          # as in prod: the Job migrates
    cfg = load_config("test")
    cfg = replace(cfg, nats=replace(cfg.nats, url=nats_url),
                  records=replace(cfg.records, database_url=database_url))
    return await start(cfg, port=0, metrics_port=-1)


async def _until(predicate, timeout: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "not reached in time"
        await asyncio.sleep(0.1)


async def test_records_starts_with_its_database_down_and_stays_unready(fresh_nats, monkeypatch):
    from grpc_health.v1 import health_pb2

    svc = await _start_records(fresh_nats.url, "postgresql+asyncpg://nobody@127.0.0.1:1/none",
                               monkeypatch)
    try:
        await asyncio.sleep(2.5)   # a couple of dependency polls
        assert await _health(svc.port) == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        await svc.stop(0)


async def test_records_turns_ready_once_the_job_has_migrated(fresh_nats, monkeypatch, tmp_path):
    """An empty database: records (not migrating) runs but is unready (dependency schema);
    the migration command runs; records turns ready without a restart."""
    from grpc_health.v1 import health_pb2

    url = sqlite_url(tmp_path)
    svc = await _start_records(fresh_nats.url, url, monkeypatch)
    try:
        await asyncio.sleep(2.5)
        assert await _health(svc.port) == health_pb2.HealthCheckResponse.NOT_SERVING
        assert await m.check(url) is False, "records did not migrate by itself"
        await m.run(url, wait_seconds=5)

        async def serving() -> bool:
            return await _health(svc.port) == health_pb2.HealthCheckResponse.SERVING

        await _until(serving)
    finally:
        await svc.stop(0)
