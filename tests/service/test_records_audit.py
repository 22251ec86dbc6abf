"""The operator audit log in records (migration 0002, AppendAudit / ListAudit) with a real
records process on SQLite and a real nats-server: appended entries come back newest first
with their time, filtered by target; bad entries are refused; a database made by the
previous release (revision 0001) with hands in it migrates to the head and keeps them."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from sqlalchemy import text

from paiju.v1 import records_pb2, records_pb2_grpc
from services.common.server import ServiceHost
from services.records import migrate as m
from services.records.db import make_engine
from tests.service.test_records import service, stub  # noqa: F401  (fixtures)


async def test_entries_are_appended_and_listed_newest_first(
        service: ServiceHost, stub: records_pb2_grpc.RecordsStub) -> None:  # noqa: F811
    first = await stub.AppendAudit(records_pb2.AuditRecord(
        operator="alice", action="dismiss_room", target_kind="room", target_id=12345678,
        detail_json=json.dumps({"reason": "stuck"}), result="ok", source="lobby-1 10.0.0.5"))
    assert first.id > 0 and first.at.endswith("Z")
    await stub.AppendAudit(records_pb2.AuditRecord(
        operator="bob", action="mute_user", target_kind="user", target_id=1001,
        detail_json=json.dumps({"minutes": 10}), result="ok"))
    listed = (await stub.ListAudit(records_pb2.ListAuditRequest())).entries
    assert [e.operator for e in listed] == ["bob", "alice"]
    assert listed[1].detail_json == json.dumps({"reason": "stuck"})
    rooms = (await stub.ListAudit(records_pb2.ListAuditRequest(target_kind="room"))).entries
    assert [e.action for e in rooms] == ["dismiss_room"]
    one = (await stub.ListAudit(records_pb2.ListAuditRequest(target_id=1001, limit=5))).entries
    assert [e.target_id for e in one] == [1001]
    for bad in (records_pb2.AuditRecord(action="x", target_kind="room", target_id=1),
                records_pb2.AuditRecord(operator="a", action="x", target_kind="table",
                                        target_id=1),
                records_pb2.AuditRecord(operator="a", action="x", target_kind="user"),
                records_pb2.AuditRecord(operator="a\x00", action="x", target_kind="user",
                                        target_id=1)):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.AppendAudit(bad)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_a_database_of_the_previous_release_migrates_to_the_audit_log(
        tmp_path: Path) -> None:
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
    try:
        from alembic import command
        from alembic.config import Config as AlembicConfig

        def to(revision: str):  # type: ignore[no-untyped-def]
            def upgrade(connection) -> None:  # type: ignore[no-untyped-def]
                cfg = AlembicConfig(str(m.ALEMBIC_INI))
                cfg.attributes["connection"] = connection
                command.upgrade(cfg, revision)
            return upgrade

        async with engine.begin() as conn:
            await conn.run_sync(to("0001"))
            await conn.execute(text(
                "INSERT INTO players (user_id, nickname, head_url, sex, coins, created_at, "
                "updated_at) VALUES (7, 'old', '', 0, 5, '2026-11-30', '2026-11-30')"))
        async with engine.begin() as conn:
            await conn.run_sync(to("head"))
            assert (await conn.execute(text("SELECT nickname FROM players"))).scalar() == "old"
            assert (await conn.execute(text("SELECT count(*) FROM audit_log"))).scalar() == 0
        assert m.code_head() >= "0002"   # (0003: ratings)
    finally:
        await engine.dispose()
