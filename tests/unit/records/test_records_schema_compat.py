"""Migrations are backward compatible for one release: the previous release's code keeps
working on the schema the new release migrates to (it runs beside it during a rollout).

How: ``schema_compat/<revision>.<dialect>.json`` holds the SQL statements (with their
parameters) that the records code issued, for a fixed workload (settlements written, history,
replays, players, hand lists), when ``<revision>`` was its Alembic head. It is recorded from
the code itself and kept in git:

- the snapshot of the current head must equal what the current code issues now (a change to
  the queries without a new migration updates it: ``PAIJU_WRITE_SCHEMA_SNAPSHOTS=1``);
- every statement of the previous revision's snapshot (the release before, old code) and of
  the head's is replayed, in order, on an empty database migrated to the head: each must run.

When a migration 0002 lands, 0001's snapshot stays as the old code's queries and 0002's is
recorded: a migration that drops or renames what 0001's queries use fails here.
What this proves, and not: the old release's exact SQL still executes on the new schema
(columns, tables, constraints it names exist; what it inserts satisfies new NOT NULL and
CHECK constraints), for the statements this workload makes. It does not prove the old code
reads the new data with the same meaning, nor cover statements outside the workload.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from services.records import migrate as m
from services.records.db import make_engine, migrate
from services.records.reads import PlayerView, RecordsReader
from services.records.settlement import parse_settlement
from services.records.store import SettlementWriter
from tests.service.test_records_support import (
    encode,
    final_message,
    hand_message,
    postgres_database,
)
from tests.service.test_records_support import (
    event as replay_event,
)

SNAPSHOTS = Path(__file__).with_name("schema_compat")
WRITE = os.environ.get("PAIJU_WRITE_SCHEMA_SNAPSHOTS") == "1"


# ------------------------------------------------------------------ parameters as JSON
def _dump(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return {"bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dt.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {"dict": {k: _dump(v) for k, v in value.items()}}
    return value


def _load(value: Any) -> Any:
    if isinstance(value, dict):
        if "bytes" in value:
            return base64.b64decode(value["bytes"])
        if "datetime" in value:
            return dt.datetime.fromisoformat(value["datetime"])
        if "date" in value:
            return dt.date.fromisoformat(value["date"])
        return {k: _load(v) for k, v in value["dict"].items()}
    if isinstance(value, list):
        return tuple(_load(v) for v in value)
    return value


# ------------------------------------------------------------------ the workload
async def workload(url: str) -> list[dict[str, Any]]:
    """Run the records code's writes and reads on a migrated, empty database; the statements
    it sends (DDL and Alembic's own excluded), in order."""
    engine = make_engine(url)
    await migrate(engine)
    seen: list[dict[str, Any]] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith(("PRAGMA", "SELECT 1", "BEGIN", "COMMIT")):
            return
        seen.append({"sql": statement, "many": bool(executemany), "params": _dump(parameters)})

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        writer, reader = SettlementWriter(engine), RecordsReader(engine)
        seats = [11, 12, 13, 14]
        frames = [replay_event(0, None, b"public"), replay_event(1, 2, b"seat 2 only")]
        await writer.write(parse_settlement(encode(hand_message(7, 1, seats, [3, -1, -1, -1],
                                                                events=frames))))
        await writer.write(parse_settlement(encode(hand_message(7, 2, seats, [-2, 2, 0, 0]))))
        await writer.write(parse_settlement(encode(hand_message(7, 2, seats, [-2, 2, 0, 0]))))
        await writer.write(parse_settlement(encode(final_message(7, seats, [1, 1, -1, -1], 2))))
        await reader.history(7)
        await reader.sat_in(7, 12)
        await reader.replay(7, 1, 12)
        await reader.list_hands(7, 10)
        await reader.list_hands(0, 10)
        await reader.ensure_player(PlayerView(11, "p11", "", 1, 0))
        await reader.ensure_player(PlayerView(99, "new", "u", 2, 0))
        await reader.get_player(99)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)
        await engine.dispose()
    return seen


def snapshot_path(revision: str, dialect: str) -> Path:
    return SNAPSHOTS / f"{revision}.{dialect}.json"


def previous_revision(head: str) -> str | None:
    script = m.scripts().get_revision(head)
    down = script.down_revision if script else None
    return down if isinstance(down, str) else None


async def replay(url: str, statements: list[dict[str, Any]]) -> None:
    engine = make_engine(url)
    await migrate(engine)
    try:
        async with engine.begin() as conn:
            for item in statements:
                params = _load(item["params"])
                if item["many"]:
                    params = list(params)
                await conn.exec_driver_sql(item["sql"], params)
    finally:
        await engine.dispose()


# ------------------------------------------------------------------ the checks
@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        yield "sqlite", f"sqlite+aiosqlite:///{tmp_path / 'compat.db'}"
        return
    gen = postgres_database()
    url = next(gen)
    try:
        yield "postgresql", url
    finally:
        gen.close()


async def test_the_heads_snapshot_is_what_the_code_issues(database, tmp_path: Path) -> None:
    dialect, url = database
    path = snapshot_path(m.code_head(), dialect)
    seen = await workload(url)
    assert len(seen) >= 10
    if WRITE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(json.dumps({"revision": m.code_head(), "dialect": dialect,
                                    "statements": seen}, indent=1) + "\n", encoding="utf-8")
    recorded = json.loads(path.read_text(encoding="utf-8"))["statements"]
    assert [s["sql"] for s in seen] == [s["sql"] for s in recorded], (
        f"the records code's SQL changed: record it with PAIJU_WRITE_SCHEMA_SNAPSHOTS=1 "
        f"(and keep the previous revision's snapshot: {path.name})")


async def test_the_previous_releases_queries_run_on_the_head_schema(database, tmp_path) -> None:
    dialect, url = database
    head = m.code_head()
    revisions = [r for r in (previous_revision(head), head) if r]
    for revision in revisions:
        path = snapshot_path(revision, dialect)
        assert path.is_file(), f"{path.name}: every revision keeps its snapshot"
    if dialect == "sqlite":
        for i, revision in enumerate(revisions):   # a fresh database for each replay
            data = json.loads(snapshot_path(revision, dialect).read_text(encoding="utf-8"))
            await replay(f"sqlite+aiosqlite:///{tmp_path / f'replay{i}.db'}", data["statements"])
    else:
        data = json.loads(snapshot_path(revisions[0], dialect).read_text(encoding="utf-8"))
        await replay(url, data["statements"])


def test_every_migration_after_the_first_only_expands() -> None:
    """A migration's upgrade() adds; dropping or renaming is a contract step, allowed only
    once no supported release uses the object (mark it ``# contract: <reason>`` on the
    call, reviewed against the previous release's snapshot above)."""
    import ast

    versions = Path(m.ALEMBIC_INI).with_name("migrations") / "versions"
    forbidden = {"drop_table", "drop_column", "rename_table", "drop_constraint", "drop_index"}
    for path in sorted(versions.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        revision = next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
                        and getattr(n.targets[0], "id", "") == "down_revision"
                        and isinstance(n.value, ast.Constant))
        if revision is None:
            continue   # the first migration creates everything
        lines = path.read_text(encoding="utf-8").splitlines()
        upgrade = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                       and n.name == "upgrade")
        for node in ast.walk(upgrade):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in forbidden:
                assert "# contract:" in lines[node.lineno - 1], (path.name, node.func.attr)
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "alter_column":
                names = {k.arg for k in node.keywords}
                assert not names & {"new_column_name", "nullable", "type_"} or \
                    "# contract:" in lines[node.lineno - 1], (path.name, "alter_column")
