"""Back up and restore the records database of any PostgreSQL (``make db-backup``,
``make db-restore``; runbook: docs/runbooks.md, "Restore the records database").

    DATABASE_URL=postgresql+asyncpg://... python deploy/db_backup.py backup [--out DIR]
    DATABASE_URL=postgresql+asyncpg://... python deploy/db_backup.py restore DUMP [--create]

``backup`` writes ``records-<UTC time>.dump`` (``pg_dump --format=custom``) and beside it
``records-<UTC time>.json``, the manifest: the Alembic revision and the row count of every
table, read in the dump's own snapshot (``pg_dump --snapshot``), the dump's sha256, and, when
``NATS_URL`` is set, the SETTLE position the records consumer had acknowledged before the dump
began (``settle.ack_floor``: every settlement up to it is in the dump;
``python -m services.records.reconcile --manifest`` replays from the next one).

``restore`` checks the dump against its manifest (checksum, revision inside the dump, the
revision this code knows), restores it into the empty database of ``DATABASE_URL``
(``--create`` creates it) with ``pg_restore --single-transaction``, and checks the restored
revision and row counts against the manifest.

Credentials as files, as the services take them: ``DATABASE_PASSWORD_FILE`` (the password
when the URL carries none) and ``NATS_USER`` with ``NATS_PASSWORD_FILE`` (``NATS_URL`` then
names the servers only).

Errors end the command with exit status 2 and one line ``db_backup: <CODE>: <message>``;
the codes are in :data:`CODES`. The PostgreSQL tools are looked up in ``PG_BIN``, then
``PATH``, then ``/usr/lib/postgresql/<version>/bin`` (newest first).
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
MANIFEST_FORMAT = 1

CODES = {
    "NO_DATABASE_URL": "DATABASE_URL is not set",
    "NOT_POSTGRESQL": "DATABASE_URL is not a PostgreSQL URL",
    "TOOL_MISSING": "pg_dump / pg_restore not found",
    "DB_UNREACHABLE": "the database cannot be reached",
    "SECRET_UNREADABLE": "a password file (DATABASE_PASSWORD_FILE, NATS_PASSWORD_FILE) is "
                         "unreadable",
    "NOT_RECORDS": "the database has no records schema (no alembic_version)",
    "DUMP_FAILED": "pg_dump failed",
    "MANIFEST_MISSING": "the dump has no readable manifest",
    "DUMP_CORRUPT": "the dump does not match its manifest's checksum",
    "SCHEMA_MISMATCH": "the dump's schema revision does not match",
    "TARGET_NOT_EMPTY": "the target database already has tables",
    "RESTORE_FAILED": "pg_restore failed",
    "RESTORE_MISMATCH": "the restored database does not match the manifest",
}


class BackupError(Exception):
    def __init__(self, code: str, message: str) -> None:
        assert code in CODES, code
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}/{self.database}"

    def env(self) -> dict[str, str]:
        """libpq's variables: the password never appears on a command line."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(PGHOST=self.host, PGPORT=str(self.port), PGUSER=self.user,
                   PGDATABASE=self.database, PGCONNECT_TIMEOUT="5")
        if self.password:
            env["PGPASSWORD"] = self.password
        return env

    def dsn(self, database: str | None = None) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "user": self.user,
                "password": self.password or None, "database": database or self.database}


def read_file(path: str) -> str:
    """A mounted secret's value (one trailing newline dropped)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BackupError("SECRET_UNREADABLE", f"cannot read the secret file {path}: "
                          f"{exc.strerror or exc}") from None
    return text[:-1] if text.endswith("\n") else text


def parse_url(url: str | None) -> Target:
    """``postgresql[+driver]://user:password@host:port/database`` (as records takes it)."""
    if not url:
        raise BackupError("NO_DATABASE_URL", "set DATABASE_URL=postgresql+asyncpg://"
                          "user:password@host:port/database")
    parts = urlsplit(url)
    if parts.scheme.split("+", 1)[0] not in ("postgresql", "postgres"):
        raise BackupError("NOT_POSTGRESQL", f"scheme {parts.scheme!r}: this tool backs up "
                          "PostgreSQL (a SQLite file is copied with sqlite3 .backup)")
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise BackupError("NOT_POSTGRESQL", "the URL names no database")
    return Target(host=parts.hostname or "127.0.0.1", port=parts.port or 5432,
                  user=unquote(parts.username or "postgres"),
                  password=unquote(parts.password or ""), database=database)


def _version(path: str) -> tuple[int, ...]:
    m = re.search(r"/postgresql/(\d+)(?:\.(\d+))?/", path)
    return tuple(int(g) for g in m.groups() if g) if m else (0,)


def find_tool(name: str) -> str:
    """``PG_BIN/<name>``, else ``<name>`` on PATH, else the newest
    ``/usr/lib/postgresql/*/bin/<name>``."""
    pg_bin = os.environ.get("PG_BIN")
    if pg_bin:
        tool = Path(pg_bin) / name
        if os.access(tool, os.X_OK):
            return str(tool)
        raise BackupError("TOOL_MISSING", f"{tool} is not an executable (PG_BIN)")
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=_version,
                            reverse=True):
        if os.access(candidate, os.X_OK):
            return candidate
    raise BackupError("TOOL_MISSING", f"{name} not found in PG_BIN, PATH or "
                      "/usr/lib/postgresql/*/bin: install the PostgreSQL client "
                      "(Debian: postgresql-client) of the server's major version or newer")


# ------------------------------------------------------------------ database reads

async def _connect(target: Target, database: str | None = None) -> Any:
    import asyncpg

    try:
        return await asyncpg.connect(**target.dsn(database), timeout=5)
    except Exception as exc:
        raise BackupError("DB_UNREACHABLE", f"{target.host}:{target.port}/"
                          f"{database or target.database}: {exc}") from exc


async def _tables(conn: Any) -> list[str]:
    rows = await conn.fetch("SELECT table_name FROM information_schema.tables "
                            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE' "
                            "ORDER BY table_name")
    return [r["table_name"] for r in rows]


async def _describe(conn: Any) -> dict[str, Any]:
    """Revision and row counts, as the connection's snapshot sees them."""
    tables = await _tables(conn)
    if "alembic_version" not in tables:
        raise BackupError("NOT_RECORDS", "no table alembic_version: is this the records "
                          "database, migrated (python -m services.records.migrate)?")
    revision = await conn.fetchval("SELECT version_num FROM alembic_version")
    counts = {t: int(await conn.fetchval(f'SELECT count(*) FROM "{t}"')) for t in tables}
    return {"alembic_revision": revision, "row_counts": counts}


def code_revisions() -> tuple[str, set[str]]:
    """The head revision of the records migrations this code carries, and all of them."""
    sys.path.insert(0, str(ROOT))
    from services.records.migrate import code_head, known_revisions

    return code_head(), known_revisions()


async def settle_position(nats_url: str) -> dict[str, Any]:
    """The records consumer's acknowledged floor on SETTLE and the stream's extent."""
    sys.path.insert(0, str(ROOT))
    import nats

    from services.common.bus import SETTLE_STREAM, server_urls
    from services.records.consumer import DURABLE

    async def quiet(_exc: Exception) -> None:   # the failure is raised below, once
        return None

    # the user and password apart from the URL, from a file (as the services take them)
    auth: dict[str, Any] = {}
    if os.environ.get("NATS_USER"):
        password_file = os.environ.get("NATS_PASSWORD_FILE", "")
        auth = {"user": os.environ["NATS_USER"],
                "password": read_file(password_file) if password_file else ""}
    # nats-py retries a refused first connection without end: bounded here
    nc = await asyncio.wait_for(nats.connect(
        servers=server_urls(nats_url), connect_timeout=3, max_reconnect_attempts=1,
        reconnect_time_wait=0.5, error_cb=quiet, **auth), timeout=8)
    try:
        js = nc.jetstream()
        info = await js.consumer_info(SETTLE_STREAM, DURABLE)
        stream = await js.stream_info(SETTLE_STREAM)
    finally:
        await nc.close()
    assert info.ack_floor is not None
    return {"stream": SETTLE_STREAM, "durable": DURABLE,
            "ack_floor": info.ack_floor.stream_seq, "first_seq": stream.state.first_seq,
            "last_seq": stream.state.last_seq,
            "read_at": datetime.now(UTC).isoformat(timespec="seconds")}


# ------------------------------------------------------------------ backup

def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _run(cmd: list[str], target: Target, code: str) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(cmd, env=target.env(), capture_output=True, text=True, check=False)
    if run.returncode != 0:
        err = run.stderr.strip()
        if "could not connect" in err or "Connection refused" in err or "timeout" in err:
            code = "DB_UNREACHABLE"
        raise BackupError(code, f"{Path(cmd[0]).name} exited {run.returncode}: {err[-2000:]}")
    return run


async def backup(target: Target, out: Path, nats_url: str | None) -> Path:
    pg_dump = find_tool("pg_dump")
    head, _ = code_revisions()
    conn = await _connect(target)
    started = time.monotonic()
    try:
        # the consumer's floor first: everything acknowledged up to it was committed before
        # the snapshot below, so it is in the dump
        settle: dict[str, Any] | None = None
        settle_error = None
        if nats_url:
            try:
                settle = await settle_position(nats_url)
            except Exception as exc:  # the dump is still good: say why the position is missing
                settle_error = f"{type(exc).__name__}: {exc}"
        else:
            settle_error = "NATS_URL not set"
        # one snapshot for the manifest's reads and the dump
        await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = await conn.fetchval("SELECT pg_export_snapshot()")
        described = await _describe(conn)
        server = await conn.fetchval("SHOW server_version")
        out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        dump = out / f"records-{stamp}.dump"
        _run([pg_dump, "--format=custom", "--no-owner", "--no-privileges",
              f"--snapshot={snapshot}", f"--file={dump}", target.database], target,
             "DUMP_FAILED")
        await conn.execute("COMMIT")
    finally:
        await conn.close()
    version = subprocess.run([pg_dump, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()
    manifest = {
        "format": MANIFEST_FORMAT, "dump": dump.name, "sha256": _sha256(dump),
        "bytes": dump.stat().st_size, "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - started, 3), "database": target.where,
        "server_version": server, "pg_dump": version, **described,
        "code_head": head, "settle": settle, "settle_error": settle_error,
    }
    path = dump.with_suffix(".json")
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------ restore

def load_manifest(dump: Path, manifest: Path | None) -> dict[str, Any]:
    path = manifest or dump.with_suffix(".json")
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackupError("MANIFEST_MISSING", f"{path}: {exc}") from exc
    if data.get("format") != MANIFEST_FORMAT or "alembic_revision" not in data:
        raise BackupError("MANIFEST_MISSING", f"{path}: not a manifest of format "
                          f"{MANIFEST_FORMAT}")
    return data


def dump_revision(pg_restore: str, dump: Path, target: Target) -> str:
    """The revision stored in the dump itself (its alembic_version data)."""
    run = _run([pg_restore, "--data-only", "--table=alembic_version", "--file=-", str(dump)],
               target, "DUMP_CORRUPT")
    lines = run.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("COPY ") and "alembic_version" in line and i + 1 < len(lines):
            return lines[i + 1].strip()
    raise BackupError("SCHEMA_MISMATCH", f"{dump}: holds no alembic_version row")


async def restore(target: Target, dump: Path, manifest_path: Path | None, *, create: bool,
                  allow_older: bool) -> dict[str, Any]:
    pg_restore = find_tool("pg_restore")
    if not dump.is_file():
        raise BackupError("MANIFEST_MISSING", f"{dump}: no such dump")
    manifest = load_manifest(dump, manifest_path)
    if _sha256(dump) != manifest["sha256"]:
        raise BackupError("DUMP_CORRUPT", f"{dump}: sha256 differs from its manifest")
    inside = dump_revision(pg_restore, dump, target)
    if inside != manifest["alembic_revision"]:
        raise BackupError("SCHEMA_MISMATCH", f"the dump holds revision {inside}, its manifest "
                          f"says {manifest['alembic_revision']}: not the manifest of this dump")
    head, known = code_revisions()
    if inside not in known:
        raise BackupError("SCHEMA_MISMATCH", f"the dump is at revision {inside}, unknown to this "
                          f"code (head {head}): restore with the release that wrote it")
    if inside != head and not allow_older:
        raise BackupError("SCHEMA_MISMATCH", f"the dump is at revision {inside}, this code's "
                          f"head is {head}: pass --allow-older and run "
                          "python -m services.records.migrate after the restore")
    if create:
        admin = await _connect(target, "postgres")
        try:
            exists = await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1",
                                          target.database)
            if not exists:
                await admin.execute(f'CREATE DATABASE "{target.database}"')
        finally:
            await admin.close()
    conn = await _connect(target)
    try:
        if await _tables(conn):
            raise BackupError("TARGET_NOT_EMPTY", f"{target.where} has tables: restore into a "
                              "new, empty database (--create makes it)")
    finally:
        await conn.close()
    started = time.monotonic()
    _run([pg_restore, "--exit-on-error", "--single-transaction", "--no-owner",
          "--no-privileges", f"--dbname={target.database}", str(dump)], target,
         "RESTORE_FAILED")
    seconds = round(time.monotonic() - started, 3)
    conn = await _connect(target)
    try:
        restored = await _describe(conn)
    finally:
        await conn.close()
    for key in ("alembic_revision", "row_counts"):
        if restored[key] != manifest[key]:
            raise BackupError("RESTORE_MISMATCH", f"{key}: restored {restored[key]}, "
                              f"manifest {manifest[key]}")
    return {"restored": target.where, "dump": str(dump), "seconds": seconds, **restored,
            "settle": manifest.get("settle")}


# ------------------------------------------------------------------ command line

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("backup", help="pg_dump the records database with a manifest")
    b.add_argument("--out", type=Path, default=ROOT / "var" / "backups")
    r = sub.add_parser("restore", help="pg_restore a dump into a new, empty database")
    r.add_argument("dump", type=Path)
    r.add_argument("--manifest", type=Path, help="default: the dump's name with .json")
    r.add_argument("--create", action="store_true", help="create the database if missing")
    r.add_argument("--allow-older", action="store_true",
                   help="accept a dump at an older revision than this code's head")
    args = parser.parse_args(argv)
    try:
        target = parse_url(os.environ.get("DATABASE_URL"))
        if not target.password and os.environ.get("DATABASE_PASSWORD_FILE"):
            target = replace(target, password=read_file(os.environ["DATABASE_PASSWORD_FILE"]))
        if args.command == "backup":
            path = asyncio.run(backup(target, args.out, os.environ.get("NATS_URL")))
            print(path.read_text(encoding="utf-8"), end="")
            print(f"db_backup: wrote {path.with_suffix('.dump')} and {path}", file=sys.stderr)
        else:
            result = asyncio.run(restore(target, args.dump, args.manifest, create=args.create,
                                         allow_older=args.allow_older))
            print(json.dumps(result, indent=2, sort_keys=True))
    except BackupError as exc:
        print(f"db_backup: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
