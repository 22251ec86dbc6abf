"""The whole system as real processes: an embedded nats-server, records (SQLite), arbiter,
table and lobby, wired by environment variables exactly as ``make run`` wires them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.common.natsd import EmbeddedNats
from tests.support.procs import ServiceProc, make_service, start_together, stop_together

SECRET = "system-test-secret"


@dataclass
class Stack:
    nats: EmbeddedNats
    records: ServiceProc
    arbiter: ServiceProc
    table: ServiceProc
    lobby: ServiceProc
    tmp: Path

    @property
    def lobby_address(self) -> str:
        return self.lobby.address

    @property
    def db_path(self) -> Path:
        return self.tmp / "records.db"


def start_stack(tmp: Path, nats_args: Sequence[str] = (), **extra: str) -> Stack:
    nats = EmbeddedNats(args=nats_args).start()
    env = {"PAIJU_LOBBY__TOKEN_SECRET": SECRET, "PAIJU_TABLE__INSTANCE": "table-sys", **extra}
    records = make_service("records", nats.url, tmp, **env)
    arbiter = make_service("arbiter", nats.url, tmp, **env)
    planned = (records.port, arbiter.port)

    def dialling() -> tuple[ServiceProc, ServiceProc]:
        wired = {**env, "PAIJU_RECORDS__PORT": str(records.port),
                 "PAIJU_ARBITER__PORT": str(arbiter.port)}
        return make_service("table", nats.url, tmp, **wired), \
            make_service("lobby", nats.url, tmp, **wired)

    table, lobby = dialling()
    try:
        start_together(records, arbiter, table, lobby)     # none waits for another to start
        if (records.port, arbiter.port) != planned:
            # a port was taken meanwhile and re-picked: the dialling ones again, on the new
            # ports
            stop_together(lobby, table)
            table, lobby = dialling()
            start_together(table, lobby)
    except BaseException:
        stop_stack(Stack(nats, records, arbiter, table, lobby, tmp))   # what did start
        raise
    return Stack(nats, records, arbiter, table, lobby, tmp)


def stop_stack(stack: Stack) -> None:
    try:
        stop_together(stack.lobby, stack.table)     # the dialling ones first
        stop_together(stack.arbiter, stack.records)
    finally:
        stack.nats.close()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    s = start_stack(tmp_path)
    try:
        yield s
    finally:
        stop_stack(s)
