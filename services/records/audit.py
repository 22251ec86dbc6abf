"""The operator audit log (table ``audit_log``, migration 0002): the console's write actions
appended once, listed newest first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.records.db import uncancellable
from services.records.models import AuditEntry
from services.records.store import utcnow

MAX_LIST = 1000


@dataclass(frozen=True, slots=True)
class AuditView:
    id: int
    at: str              # ISO 8601, UTC
    operator: str
    action: str
    target_kind: str
    target_id: int
    detail: str
    result: str
    source: str


def _view(row: Row[Any]) -> AuditView:
    return AuditView(row.id, row.at.isoformat(timespec="seconds") + "Z", row.operator,
                     row.action, row.target_kind, row.target_id, row.detail, row.result,
                     row.source)


class AuditLog:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @uncancellable
    async def append(self, operator: str, action: str, target_kind: str, target_id: int,
                     detail: str, result: str, source: str) -> AuditView:
        at = utcnow()
        values = {"at": at, "operator": operator, "action": action,
                  "target_kind": target_kind, "target_id": target_id, "detail": detail,
                  "result": result, "source": source}
        async with self.engine.begin() as conn:
            new_id = (await conn.execute(insert(AuditEntry).values(**values)
                                         .returning(AuditEntry.id))).scalar_one()
        return AuditView(new_id, at.isoformat(timespec="seconds") + "Z", operator,
                         action, target_kind, target_id, detail, result, source)

    @uncancellable
    async def list(self, limit: int, target_kind: str = "", target_id: int = 0,
                   ) -> tuple[AuditView, ...]:
        query = select(AuditEntry).order_by(AuditEntry.id.desc())
        if target_kind:
            query = query.where(AuditEntry.target_kind == target_kind)
        if target_id:
            query = query.where(AuditEntry.target_id == target_id)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query.limit(min(limit, MAX_LIST)))).all()
        return tuple(_view(r) for r in rows)
