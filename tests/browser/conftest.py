"""Browser tests: Playwright for Python driving Debian's Chromium, launched by its path
(``/usr/bin/chromium``, or ``PAIJU_CHROMIUM``); Playwright's own browser download is never
used. ``scripts/install_browser.sh`` installs Chromium with apt-get when it is missing. Every
test here skips, saying why, when Playwright or Chromium is not there."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("PAIJU_CHROMIUM", "/usr/bin/chromium")
# as root and on a closed network: no sandbox, no background connections, nothing to update
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    path = CHROMIUM if os.path.isabs(CHROMIUM) else shutil.which(CHROMIUM)
    return path if path and os.access(path, os.X_OK) else None


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    path = chromium_path()
    if path is None:
        pytest.skip(f"no Chromium at {CHROMIUM}: run scripts/install_browser.sh (apt-get install chromium)")
    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=path, args=FLAGS, headless=True)
        try:
            yield b
        finally:
            await b.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    out = tmp_path / "screenshots"
    out.mkdir()
    return out


@pytest.fixture
def web_stack(tmp_path: Path) -> Any:
    """The whole system as processes with the lobby's WebSocket port open: (stack, port).
    Decisions wait long enough for a page clicking at human-ish speed; entrust is not what
    these tests are about."""
    if chromium_path() is None:
        pytest.skip("no Chromium: run scripts/install_browser.sh")
    from services.common.natsd import free_port
    from tests.system.conftest import start_stack, stop_stack

    ws_port = free_port()
    stack = start_stack(tmp_path, PAIJU_LOBBY__WS_PORT=str(ws_port),
                        PAIJU_TABLE__TURN_SECONDS="30", PAIJU_TABLE__WINDOW_SECONDS="20",
                        PAIJU_TABLE__ALONE_SECONDS="30")
    try:
        yield stack, ws_port
    finally:
        stop_stack(stack)
