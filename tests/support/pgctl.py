"""A private PostgreSQL for one test: ``initdb`` into a temporary directory, ``pg_ctl start``
on a free loopback port, ``pg_ctl stop`` and the directory removed at the end. It never
touches the machine's shared server (its own data directory, port and socket directory).

The server binaries come from ``PG_BIN``, ``PATH`` or ``/usr/lib/postgresql/<version>/bin``
(deploy/db_backup.py's ``find_tool``). PostgreSQL refuses to run as root: as root the
commands run as the ``postgres`` user (``runuser``), who owns the directory."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.db_backup import BackupError, find_tool
from services.common.natsd import free_port


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries, or no user to run them as."""


class PrivatePostgres:
    def __init__(self) -> None:
        try:
            self.initdb, self.pg_ctl = find_tool("initdb"), find_tool("pg_ctl")
        except BackupError as exc:
            raise PostgresUnavailable(exc.message) from exc
        self.as_user: list[str] = []
        self.owner: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            try:
                self.owner = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise PostgresUnavailable("running as root and no user postgres") from exc
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.dir = Path(tempfile.mkdtemp(prefix="paiju-pg-"))
        self.data = self.dir / "data"
        self.port = 0
        self.log = self.dir / "server.log"

    def _run(self, *cmd: str, timeout: float = 60) -> None:
        run = subprocess.run([*self.as_user, *cmd], capture_output=True, text=True,
                             timeout=timeout, check=False)
        if run.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(cmd[:2])} exited {run.returncode}: "
                               f"{run.stderr.strip()}\n{log}")

    def start(self) -> PrivatePostgres:
        if self.owner is not None:
            os.chown(self.dir, self.owner.pw_uid, self.owner.pw_gid)
        self._run(self.initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--no-sync", "-E", "UTF8", "--locale=C")
        for attempt in range(3):
            self.port = free_port()
            try:
                self.resume()
                return self
            except RuntimeError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def halt(self) -> None:
        """Stop the server (``-m fast``: sessions cut, as a restart does); :meth:`resume` brings
        it back on the same port and data."""
        self._run(self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} "
                "-c fsync=off -c full_page_writes=off -c max_connections=40")
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-o", opts,
                  "-w", "-t", "30", "start")

    def url(self, database: str, driver: str = "postgresql+asyncpg") -> str:
        return f"{driver}://postgres@127.0.0.1:{self.port}/{database}"

    def createdb(self, name: str) -> str:
        psql = find_tool("psql")
        run = subprocess.run([psql, "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                              "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c",
                              f'CREATE DATABASE "{name}"'], capture_output=True, text=True,
                             check=False)
        if run.returncode != 0:
            raise RuntimeError(f"createdb {name}: {run.stderr.strip()}")
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.port and (self.data / "postmaster.pid").exists():
                self.halt()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started private PostgreSQL, stopped and removed at the end; the test is skipped
    where there are no server binaries (or no user to run them as)."""
    try:
        pg = PrivatePostgres()
    except PostgresUnavailable as exc:
        pytest.skip(f"no private PostgreSQL: {exc}")
    pg.start()
    try:
        yield pg
    finally:
        pg.stop()
