"""Database engine and schema migration for records: SQLite (aiosqlite) or PostgreSQL
(asyncpg), chosen by the URL; ``alembic upgrade head`` runs from the migration Job
(``python -m services.records.migrate``) or, in dev and test, at service start."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import event, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from services.common.config import RecordsConfig, read_secret_file

ALEMBIC_INI = Path(__file__).with_name("alembic.ini")
SUPPORTED = ("sqlite", "postgresql")
# Any fixed number: serialises concurrent migrations of replicas on PostgreSQL.
_MIGRATION_LOCK = 0x7061696A


log = logging.getLogger("paiju.records.db")

P = ParamSpec("P")
T = TypeVar("T")
_running: set[asyncio.Task[Any]] = set()   # database work whose caller went away


def uncancellable(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Run a database method to its end even when its caller is cancelled (a gRPC deadline,
    a client gone, a stop): the caller stops waiting, the transaction still commits or rolls
    back. A transaction cancelled midway can leave its connection, and with SQLite the
    database's write lock, held (every later write then fails "database is locked")."""

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        task: asyncio.Task[T] = asyncio.ensure_future(fn(*args, **kwargs))
        _running.add(task)
        task.add_done_callback(_running.discard)
        return await asyncio.shield(task)

    return run


async def finish_running(timeout: float = 10.0) -> None:
    """Wait (bounded) for database work whose callers were cancelled, before the engine
    is disposed of."""
    if _running:
        await asyncio.wait(set(_running), timeout=timeout)


_INSERTS: dict[str, Callable[..., Any]] = {"sqlite": sqlite.insert,
                                           "postgresql": postgresql.insert}


def utcnow() -> datetime:
    """Naive UTC, as every time column stores it."""
    return datetime.now(UTC).replace(tzinfo=None)


def insert_ignore(conn: AsyncConnection, model: type, index: list[str]) -> Any:
    """``INSERT ... ON CONFLICT (index) DO NOTHING`` in the connection's dialect."""
    return _INSERTS[conn.dialect.name](model).on_conflict_do_nothing(index_elements=index)


class DatabaseConfigError(ValueError):
    """A database URL records cannot use."""


def make_engine(url: str, *, password: str = "", password_file: str = "",
                previous_password_file: str = "") -> AsyncEngine:
    """An async engine for ``url``; a SQLite file's directory is created if missing.

    PostgreSQL's password may come apart from the URL: ``password``, or ``password_file``
    (a mounted Secret) read each time the pool opens a connection, so a rotated password
    reaches every new connection while the ones open go on (PostgreSQL checks a password when
    a session starts only). During a rotation ``previous_password_file`` (optional: absent =
    none) holds the password still in force: a new connection refused with the new one
    (28P01, ``ALTER ROLE`` not run yet) is opened with it, so the order of the file change and
    the ``ALTER ROLE`` does not matter (docs/runbooks.md, "Rotate the database password")."""
    parsed = make_url(url)
    if parsed.get_backend_name() not in SUPPORTED:
        raise DatabaseConfigError(f"database_url {parsed.render_as_string()!r}: "
                                  f"records supports {', '.join(SUPPORTED)}")
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, connect_args={"timeout": 30})
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    engine = create_async_engine(url, pool_pre_ping=True)
    if password or password_file:
        event.listen(engine.sync_engine, "do_connect",
                     functools.partial(_connect, password, password_file,
                                       previous_password_file))
    return engine


def engine_for(records: RecordsConfig | str) -> AsyncEngine:
    """records' engine from its configuration (URL, and password or password files), or
    from a bare URL."""
    if isinstance(records, str):
        return make_engine(records)
    return make_engine(records.database_url, password=records.database_password,
                       password_file=records.database_password_file,
                       previous_password_file=records.database_previous_password_file)


WRONG_PASSWORD = "28P01"   # invalid_password


def _connect(password: str, password_file: str, previous_file: str, dialect: Any,
             _record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
    """Open a new connection with the password the file holds now (None: SQLAlchemy opens
    it with ``cparams``); refused as a wrong password, with the previous one if any. A
    password file that does not exist (an optional Secret key not set: the URL carries the
    password, or none is needed) leaves the URL's password."""
    if password_file and Path(password_file).exists():
        cparams["password"] = read_secret_file(password_file, "records.database_password_file")
    elif not password_file:
        cparams["password"] = password
    previous = read_secret_file(previous_file, "records.database_previous_password_file") \
        if previous_file and Path(previous_file).exists() else ""
    if not previous or previous == cparams.get("password"):
        return None
    try:
        return dialect.connect(*cargs, **cparams)
    except Exception as exc:
        if getattr(exc, "sqlstate", None) != WRONG_PASSWORD:
            raise
        log.warning("database refused the new password: connecting with the previous one "
                    "(run ALTER ROLE ... PASSWORD to finish the rotation)")
        tried, cparams["password"] = cparams.get("password"), previous
        try:
            return dialect.connect(*cargs, **cparams)
        except Exception as again:
            if getattr(again, "sqlstate", None) != WRONG_PASSWORD:
                raise
            # the role's password changed between the two tries: the new one works now
            cparams["password"] = tried
            return dialect.connect(*cargs, **cparams)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Write-ahead log: readers do not block the writer, one fsync per commit; FULL sync
    keeps a committed (and then acknowledged) settlement across a power loss."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.close()


def _upgrade(connection: Connection) -> None:
    cfg = AlembicConfig(str(ALEMBIC_INI))
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, "head")


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest Alembic revision (idempotent)."""
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"),
                               {"k": _MIGRATION_LOCK})
        await conn.run_sync(_upgrade)
