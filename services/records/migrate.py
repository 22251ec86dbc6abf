"""The records schema, apart from the service: run the migrations (a release step), and the
check a running records makes of the schema it finds.

    python -m services.records.migrate            # alembic upgrade head, then exit
    python -m services.records.migrate --check    # exit 0 when the schema is usable by
                                                  # this code (at its head, or newer)

The database URL is ``DATABASE_URL`` (or ``records.database_url`` of config/<env>.toml): in
Kubernetes the Job ``records-migrate`` (deploy/k8s/migrate) gives it the migration role,
which alone may change the schema; the services' role may only read and write rows
(deploy/sql/roles.sql). The migration waits for the database (``--wait``, 300 s) and holds a
PostgreSQL advisory lock, so two runs never migrate at once.

When records migrates itself: ``RECORDS_MIGRATE_ON_START`` (true/false) says; unset, records
migrates at start in dev and test (a laptop, the test suites and SQLite in a pod get a schema
with nothing else to run) and never in prod, where a pod that finds the schema behind its
code stays unready (dependency ``schema``) until the Job has run. A schema newer than the
code (the next release migrated while this one still runs) is fine: migrations are backward
compatible for one release (expand now, contract a release later;
tests/unit/records/test_records_schema_compat.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import Mapping

from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.config import Config, RecordsConfig, load_config
from services.records.db import ALEMBIC_INI, engine_for, migrate

log = logging.getLogger("paiju.records.migrate")

ENV_VAR = "RECORDS_MIGRATE_ON_START"
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def migrate_on_start(cfg: Config, environ: Mapping[str, str] | None = None) -> bool:
    """Whether records runs the migrations itself when it starts."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENV_VAR, "").strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    if value:
        raise ValueError(f"{ENV_VAR}={value!r}: expected true or false")
    return cfg.env != "prod"


def scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(AlembicConfig(str(ALEMBIC_INI)))


def code_head() -> str:
    """The newest revision this code knows (what it needs)."""
    head = scripts().get_current_head()
    assert head is not None, "no migration"
    return head


def known_revisions() -> set[str]:
    return {rev.revision for rev in scripts().walk_revisions()}


async def current_revision(engine: AsyncEngine) -> str | None:
    """The database's revision (alembic_version), None when it has no schema yet."""
    async with engine.connect() as conn:
        try:
            row = (await conn.execute(text("SELECT version_num FROM alembic_version"))).first()
        except (ProgrammingError, OperationalError) as exc:
            if "alembic_version" in str(exc):   # no such table: never migrated
                return None
            raise
    return row[0] if row else None


def usable(revision: str | None, head: str, known: set[str]) -> bool:
    """This code can run on a schema at ``revision``: its own head, or a revision it does not
    know (a newer release's, backward compatible by the rule above). A known older revision,
    or none, needs the migration first."""
    if revision is None:
        return False
    return revision == head or revision not in known


class SchemaGate:
    """The readiness check of a records that does not migrate: ready once the database's
    schema is usable (checked on each poll until it is, then remembered: a schema does not
    go back)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.head = code_head()
        self.known = known_revisions()
        self.ok = False
        self.warned: str | None = ""

    async def check(self) -> bool:
        if self.ok:
            return True
        revision = await current_revision(self.engine)
        self.ok = usable(revision, self.head, self.known)
        if not self.ok and revision != self.warned:
            log.warning("database schema behind this code: run the migration "
                        "(python -m services.records.migrate, the Job records-migrate)",
                        extra={"revision": revision or "none", "needs": self.head})
            self.warned = revision
        return self.ok


async def run(url: str | RecordsConfig, wait_seconds: float = 300.0) -> str:
    """Migrate the database at ``url`` to the head, waiting up to ``wait_seconds`` for it to
    answer; returns the revision reached."""
    engine = engine_for(url)
    try:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                async with engine.connect() as conn:
                    await conn.execute(text("SELECT 1"))
                break
            except (OSError, DBAPIError) as exc:
                if time.monotonic() >= deadline:
                    raise
                log.warning("database not reachable yet, retrying", extra={"error": str(exc)[:200]})
                await asyncio.sleep(2.0)
        before = await current_revision(engine)
        await migrate(engine)
        after = await current_revision(engine)
        log.info("schema migrated", extra={"from": before or "none", "to": after})
        return after or ""
    finally:
        await engine.dispose()


async def check(url: str | RecordsConfig) -> bool:
    engine = engine_for(url)
    try:
        return usable(await current_revision(engine), code_head(), known_revisions())
    finally:
        await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.records.migrate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only tell whether the schema is usable by this code (exit 0/1)")
    parser.add_argument("--wait", type=float, default=300.0,
                        help="seconds to wait for the database to answer (default 300)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(levelname)s %(name)s %(message)s")
    url = load_config().records   # the URL, and the password file when there is one
    if args.check:
        ok = asyncio.run(check(url))
        print(f"schema {'usable' if ok else 'behind'} (code head {code_head()})")
        return 0 if ok else 1
    revision = asyncio.run(run(url, args.wait))
    print(f"schema at {revision}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
