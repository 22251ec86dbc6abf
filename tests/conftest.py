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

# On a failure, what the test's own processes said: the warnings and errors (and the last
# lines) of every log under its tmp_path. A flaky failure on a clean CI machine is then
# read from its report, not guessed at; the files themselves do not outlive the machine.
LOG_WARNINGS_SHOWN = 25
LOG_LAST_SHOWN = 5
LOG_LINE_CHARS = 400
LOG_TAIL_BYTES = 1 << 20     # what is read of a log: its last MiB


def _log_excerpt(path: Path) -> str:
    with path.open("rb") as f:
        f.seek(max(0, f.seek(0, 2) - LOG_TAIL_BYTES))
        lines = f.read().decode("utf-8", errors="replace").splitlines()
    loud = [line for line in lines
            if any(mark in line for mark in ('"level": "WARNING"', '"level": "ERROR"',
                                             '"level": "CRITICAL"', "[ERR]", "[WRN]",
                                             "Traceback"))]
    shown = loud[-LOG_WARNINGS_SHOWN:] + ["..."] + lines[-LOG_LAST_SHOWN:]
    return "\n".join(line[:LOG_LINE_CHARS] for line in shown)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[pytest.TestReport]:
    report: pytest.TestReport = yield
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if report.failed and report.when in ("setup", "call") and isinstance(tmp, Path):
        try:   # the test's processes may still be running: files come and go meanwhile
            for path in sorted(tmp.rglob("*.log")):
                if path.is_file():
                    report.sections.append((f"log {path.relative_to(tmp)} (warnings, last "
                                            "lines)", _log_excerpt(path)))
        except OSError as exc:
            report.sections.append(("service logs", f"not read: {exc!r}"))
    return report


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
