"""The web client (clients/web/conn.js, app.js) never shows an error for a command answered
"a moment" (ERR_ROOM_MOVING, ERR_UNAVAILABLE: docs/protocol.md §8): it shows a quiet
"reconnecting… a moment" (#moment), sends the same command again after a short growing pause,
and goes on as usual once it is served; the command counts once. An answer whose first try
did count (the page was told "a moment" all the same) is not applied twice: the page sees
its move played and drops the retry, or the retry is refused as overtaken, quietly.

Chromium on the page the lobby serves; records, arbiter, table and lobby real and in this
process, a real nats-server; the table's own robots fill the room. The faults are in the
lobby's link to the table (tests/service/test_cli_retry.py, ``Faults``)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from services.common.natsd import EmbeddedNats
from services.lobby import tokens
from tests.browser.conftest import chromium_path
from tests.service.test_cli_retry import Faults, Try, retry_stack
from tests.support.lobbyworld import SECRET

DESKTOP = {"width": 1280, "height": 800}
USER = 4401


async def shows_a_moment(page: Any) -> None:
    """"a moment" is on screen while a command waits for its next try, and no error."""
    await page.wait_for_selector("#moment:not([hidden])", timeout=10_000)
    assert "a moment" in (await page.text_content("#moment") or "")
    assert await page.is_hidden("#error")


async def no_moment(page: Any) -> None:
    await page.wait_for_selector("#moment", state="hidden", timeout=20_000)


async def click_first_action(page: Any) -> bool:
    """Press the first button of the decision bar (a dialog may cover it: a DOM click)."""
    return bool(await page.evaluate("""() => {
        const b = document.querySelector("#actions button");
        if (b) b.click();
        return !!b;
    }"""))


async def next_prompt(page: Any) -> None:
    await page.wait_for_selector("#actions button", state="attached", timeout=30_000)


def served_once(tries: list[Try]) -> None:
    """The real table applied the command exactly once; every other delivery of it was
    refused as overtaken (a repeat of a move already played)."""
    replies = [r for t in tries for r in t.table]
    assert [code for code, _ in replies].count(0) == 1, tries
    assert all(overtaken for code, overtaken in replies if code), tries


async def test_a_command_answered_a_moment_is_sent_again_quietly_and_counts_once(
        browser: Any, fresh_nats: EmbeddedNats, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if chromium_path() is None:
        pytest.skip("no Chromium: run scripts/install_browser.sh")
    faults = Faults(monkeypatch, USER)
    async with retry_stack(fresh_nats.url, tmp_path / "records.db") as stack:
        context = await browser.new_context(viewport=DESKTOP, locale="en-US")
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        try:
            await page.goto(f"http://127.0.0.1:{stack.ws_port}/")
            await page.evaluate("document.getElementById('token-login').open = true")
            await page.fill("#token", tokens.mint(USER, SECRET))
            await page.fill("#nickname", "wen")
            await page.click("#login")
            await page.wait_for_selector("#lobby-panel:not([hidden])")
            await page.select_option("#game", "CHANGSHA")
            await page.fill("#hands", "1")
            await page.click("#create")
            await page.wait_for_selector("#room-panel:not([hidden])")
            await page.click("#fill-robots")
            await page.wait_for_function(
                "document.querySelectorAll('#players li').length === 4")

            # ready: "a moment" three times (moving, a busy room, moving), then served
            faults.plan["ask_ready"] = ["moving", "unavailable", "moving"]
            await page.click("#ready")
            await shows_a_moment(page)
            await next_prompt(page)        # all four ready: the hand runs, we are asked
            await no_moment(page)
            ready = faults.logical("ask_ready")
            assert [t.fault for t in ready] == ["moving", "unavailable", "moving", "ok"]
            served_once(ready)

            # our first answer: "a moment" three times, then served, once
            faults.plan["mahjong_action"] = ["moving", "unavailable", "moving"]
            assert await click_first_action(page)
            await shows_a_moment(page)
            await no_moment(page)
            first = faults.logical("mahjong_action")
            assert [t.fault for t in first] == ["moving", "unavailable", "moving", "ok"]
            served_once(first)
            assert await page.is_hidden("#error")

            # the next answer counts at once, yet the page is told "a moment": it has seen
            # its move played and does not send it again (or a retry is refused as stale)
            await next_prompt(page)
            done = len(faults.tries["mahjong_action"])
            faults.plan["mahjong_action"] = ["applied"]
            assert await click_first_action(page)
            started = time.monotonic()
            while len(faults.tries["mahjong_action"]) == done or not any(
                    t.table for t in faults.tries["mahjong_action"][done:]):
                assert time.monotonic() - started < 20, "the answer never reached the table"
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)       # the page's pause, a retry if it were sent
            applied = faults.tries["mahjong_action"][done:]
            assert applied[0].fault == "applied", applied
            served_once([t for t in applied if t.frame == applied[0].frame])
            log = await page.locator("#log li").all_text_contents()
            # dropped (the page saw its move played first), or sent and refused as stale
            quiet = ("not sent again:", "too late, the game moved on:", "not taken again:")
            assert [line for line in log if line.startswith(quiet)], log[-20:]

            # the hand plays on to its settlement, and no error was ever shown
            started = time.monotonic()
            while await page.is_hidden("#settlement-panel"):
                assert time.monotonic() - started < 90, "the hand did not end"
                await click_first_action(page)
                await asyncio.sleep(0.1)
            assert await page.is_hidden("#error"), await page.text_content("#error")
            log = await page.locator("#log li").all_text_contents()
            assert not [line for line in log if line.startswith("error ")], log
            assert await page.is_hidden("#moment")
        finally:
            await context.close()
    assert errors == [], errors
