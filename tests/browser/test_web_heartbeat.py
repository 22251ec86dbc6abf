"""The web client (clients/web/conn.js) drops a WebSocket whose heartbeat goes unanswered for
``heartbeat_seconds`` (a frozen lobby, a cut network: the socket stays open and says nothing)
and logs in again with its token, resuming its seat, as the Python client does
(tests/service/test_client_heartbeat.py; docs/protocol.md, "Login").

Chromium on the page a real lobby serves, through a TCP relay in front of the lobby's
WebSocket port that can freeze the connections open now: they stay open and pass nothing
on, while a new connection goes through (the page's way back to a live lobby). A real
nats-server, the in-test table and records of tests/support/lobbyworld.py; the relay is
tests/support/relay.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.lobby import tokens
from tests.browser.conftest import chromium_path
from tests.support.lobbyworld import SECRET, World
from tests.support.relay import FreezingRelay

BEAT = {"heartbeat_seconds": 1, "offline_after_seconds": 30}
USER = 4501


async def test_a_socket_whose_beat_goes_unanswered_is_dropped_and_the_seat_resumed(
        browser: Any, world: World) -> None:
    if chromium_path() is None:
        pytest.skip("no Chromium: run scripts/install_browser.sh")
    await world.lobby(ws_port=0, **BEAT)
    host = world.lobbies[0]
    room = await world.table.add_room()
    relay = FreezingRelay(f"127.0.0.1:{host.ws_port}")
    address = await relay.start()
    context = await browser.new_context(viewport={"width": 1280, "height": 800},
                                        locale="en-US")
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    try:
        await page.goto(f"http://{address}/")
        await page.evaluate("document.getElementById('token-login').open = true")
        await page.fill("#token", tokens.mint(USER, SECRET, 600))
        await page.click("#login")
        await page.wait_for_selector("#lobby-panel:not([hidden])")
        await page.evaluate(f"document.getElementById('join-id').value = '{room.room_id}'")
        await page.click("#join")
        await page.wait_for_selector("#room-panel:not([hidden])")
        snapshots = len(world.table.of_kind("snapshot", USER))
        await asyncio.sleep(2.5)           # beats answered: the socket is kept
        log = await page.locator("#log li").all_text_contents()
        assert not [line for line in log if line.startswith("reconnected")], log
        assert relay.freeze() >= 1         # the page's socket (and its page loads) go quiet
        # a beat within a second, unanswered for a second: the page gives the socket up,
        # opens a new one (through the relay, to the live lobby), logs in again with its
        # token and resumes its seat from a snapshot
        await page.wait_for_function(
            "[...document.querySelectorAll('#log li')]"
            ".some((li) => li.textContent.startsWith('reconnected'))", timeout=15_000)
        assert len(world.table.of_kind("snapshot", USER)) > snapshots
        assert await page.is_visible("#room-panel")
        assert not errors, errors
    finally:
        await context.close()
        await relay.close()
