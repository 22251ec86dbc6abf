"""A lobby's link to a table keeps a bounded number of commands on their way: beyond
``MAX_IN_FLIGHT`` (the table does not answer) a command is refused at once with
ERR_UNAVAILABLE instead of queueing without end."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from paiju.v1 import common_pb2, table_pb2
from services.lobby import table_link
from services.lobby.errors import Unavailable
from services.lobby.table_link import TableLink


class SilentNats:
    """A NATS connection whose table takes every command and never answers."""

    def new_inbox(self) -> str:
        return "_INBOX.test"

    async def subscribe(self, subject: str, cb: Any) -> Any:
        return self

    async def unsubscribe(self) -> None:
        pass

    async def publish(self, subject: str, payload: bytes, reply: str) -> None:
        pass


class Channel:
    def unary_unary(self, *args: Any, **kwargs: Any) -> Any:
        return lambda *a, **kw: None

    async def close(self) -> None:
        pass


async def test_commands_beyond_the_bound_are_refused_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_link, "MAX_IN_FLIGHT", 3)
    link = TableLink("table:1", channel=Channel(), nc=SilentNats())  # type: ignore[arg-type]
    waiting = [asyncio.ensure_future(link.command(table_pb2.TableCommand(room_id=1), 30))
               for _ in range(3)]
    await asyncio.sleep(0.01)
    with pytest.raises(Unavailable) as refused:
        await asyncio.wait_for(link.command(table_pb2.TableCommand(room_id=1), 30), 1)
    assert refused.value.code == common_pb2.ERR_UNAVAILABLE
    assert "3 commands on their way" in refused.value.message
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    assert link.idle
    await link.close()
