"""The lobby's watch of the ``tables`` bucket (Directory.follow_tables) says it knows the live
tables only once their entries are in: nats-py's watcher can send its end-of-values None
before values already on their way (a loaded process, services/common/bus.KeyWatch), and a
room created in that moment would find no table. The watcher's arrivals are scripted, 10 ms
apart, as that race cannot be made to happen on demand; the watch runs on a real
nats-server in tests/service/test_lobby_directory_start.py."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import pytest

from paiju.contracts.directory import TableEntry
from services.lobby.directory import Directory


@dataclass
class Entry:
    key: str
    value: bytes
    delta: int
    operation: str | None = None
    created: Any = None


class Status:
    def __init__(self, values: int) -> None:
        self.values = values


class Tables:
    """What the lobby reads of the ``tables`` bucket: its message count, and one watcher
    whose arrivals are ``arrivals``, then silence."""

    def __init__(self, values: int, arrivals: list[Entry | None]) -> None:
        self.values, self.arrivals = values, arrivals
        self.watches = 0

    async def status(self) -> Status:
        return Status(self.values)

    async def watchall(self, **options: Any) -> Tables:
        self.watches += 1
        return self

    def __aiter__(self) -> Any:
        return self._arrive()

    async def _arrive(self) -> Any:
        for item in self.arrivals:
            await asyncio.sleep(0.01)
            yield item
        await asyncio.Event().wait()

    async def stop(self) -> None:
        pass


def table(name: str, delta: int) -> Entry:
    value = TableEntry(instance=name, address=f"{name}:1", rooms=0, players=0,
                       started_at=0.0, draining=False).encode()
    return Entry(name, value, delta)


async def test_the_tables_are_known_once_their_entries_are_in_not_at_an_early_none() -> None:
    tables = Tables(2, [None, table("table-a", 1), table("table-b", 0)])
    directory = Directory(tables, rooms=object(), seats=object())  # type: ignore[arg-type]
    follow = asyncio.create_task(directory.follow_tables())
    try:
        await asyncio.wait_for(directory.table_cache.synced.wait(), 5)
        assert sorted(t.instance for t in await directory.live_tables()) == \
            ["table-a", "table-b"]
        assert tables.watches == 1
    finally:
        follow.cancel()


async def test_a_silent_watch_is_opened_again_without_a_word(
        caplog: pytest.LogCaptureFixture) -> None:
    """Live tables rewrite their entries five times a lease: a watch that hears nothing for
    SILENT_LEASES leases (no table, or a watch that died on the server) is opened again,
    quietly; what it had heard stays."""
    tables = Tables(1, [table("table-a", 0)])
    directory = Directory(tables, rooms=object(), seats=object(),  # type: ignore[arg-type]
                          ttl=0.05)
    follow = asyncio.create_task(directory.follow_tables())
    try:
        for _ in range(100):
            if tables.watches >= 3:
                break
            await asyncio.sleep(0.05)
        assert tables.watches >= 3
        assert [t.instance for t in directory.table_cache.live()] == ["table-a"]
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    finally:
        follow.cancel()
