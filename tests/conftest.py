"""Shared fixtures: an embedded nats-server per test session (never the machine's NATS),
and helpers to run services as real processes."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from services.common.natsd import EmbeddedNats  # noqa: E402
from tests.support.lobbyworld import World, open_world  # noqa: E402
from tests.support.pgctl import PrivatePostgres, private_postgres  # noqa: E402

os.environ.setdefault("PAIJU_ENV", "test")


@pytest.fixture(scope="session")
def nats_server() -> Iterator[EmbeddedNats]:
    """A private nats-server with JetStream on a free port for the whole session."""
    with EmbeddedNats() as server:
        yield server


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    """A private PostgreSQL for one test (``pg_ctl``: tests that stop, restart or lock it
    down), never the machine's shared one."""
    with private_postgres() as pg:
        yield pg


@pytest.fixture
def fresh_nats() -> Iterator[EmbeddedNats]:
    """A private nats-server for one test (tests that kill and restart it)."""
    with EmbeddedNats() as server:
        yield server


@pytest.fixture
async def world(fresh_nats: EmbeddedNats) -> AsyncIterator[World]:
    """The lobby's test world (tests/support/lobbyworld.py) on a private nats-server."""
    async with open_world(fresh_nats) as w:
        yield w
