"""Dou Dizhu (斗地主) in a real browser: Chromium (Playwright) logs a guest in, creates a
Dou Dizhu room, fills its two free seats with the table's robots ("Fill with robots") and
plays a whole hand by clicking - the bid buttons (叫地主 / 抢地主), the hint and play or pass
bar, the cards - until the settlement: three seats, deltas summing to zero, the deal
verified in the page (fair.js, the game's deck from its renderer, doudizhu.js). The table
has three seats (no one at the top), our hand is shown, the other two never. Any console
error or page error fails the test. Screenshots mid-hand and at the settlement go to the
pytest tmp path and to docs/screenshots/ (PAIJU_NO_DOC_SCREENSHOTS=1: not copied)."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Any

from tests.browser.test_table_in_chromium import (
    DESKTOP,
    DOCS,
    RECORDS_DEFECT,
    Console,
    click_something,
    create_room,
)

HAND_SECONDS = 100


async def test_a_hand_of_doudizhu_clicked_in_chromium(browser: Any, web_stack: Any,
                                                      shots: Path) -> None:
    _stack, ws_port = web_stack
    context = await browser.new_context(viewport=DESKTOP, locale="en-US")
    context.set_default_timeout(15_000)
    page = await context.new_page()
    console = Console(page)
    try:
        await page.goto(f"http://127.0.0.1:{ws_port}/")
        await page.fill("#nickname", "Lan")
        await page.click("#guest-login")
        await page.wait_for_selector("#lobby-panel:not([hidden])")
        await create_room(page, "doudizhu")
        assert "Dou Dizhu" in (await page.text_content("#room-title") or "")
        await page.click("#fill-robots")
        await page.wait_for_selector("#fill-robots", state="hidden")
        await page.wait_for_function(
            "document.querySelectorAll('#seat-left .plate:not(.vacant), "
            "#seat-right .plate:not(.vacant)').length === 2", timeout=30_000)
        await page.click("#ready")
        await page.wait_for_selector("#my-hand .card")
        assert await page.locator("#seat-top .plate").count() == 0, "three seats: none on top"
        seen: set[str] = set()
        mid = False
        deadline = time.monotonic() + HAND_SECONDS
        while not await page.is_visible("#settlement-panel"):
            assert time.monotonic() < deadline, (
                f"no settlement in {HAND_SECONDS} s; clicked {seen}; log: "
                f"{await page.locator('#log li').all_inner_texts()}")
            clicked = await click_something(page, lambda kind: _nothing())
            if clicked:
                seen.add(clicked)
            else:
                await page.wait_for_timeout(80)
            if not mid and {"dd-play", "dd-pass"} & seen:
                mid = True
                # the other seats' cards are never drawn during play, only counted
                assert await page.locator("#seat-left .card, #seat-right .card").count() <= 40
                await page.screenshot(path=str(shots / "doudizhu-mid-hand-desktop.png"))
        assert "action" in seen, seen       # a bid: 叫地主 / 不叫 / 抢地主 / 不抢
        deltas = [int(x) for x in await page.locator(
            "#settlement-table tr.total td").all_inner_texts()]
        assert len(deltas) == 3 and sum(deltas) == 0, deltas
        await page.wait_for_function(
            "document.getElementById('fair').textContent.includes('verified')", timeout=10_000)
        fair = await page.text_content("#fair") or ""
        assert "NOT" not in fair and "17 cards are the shuffle's" in fair, fair
        await page.screenshot(path=str(shots / "doudizhu-settlement-desktop.png"))
        await page.wait_for_selector("#lobby-panel:not([hidden])", timeout=20_000)
        await page.click("#settlement-close")
        replayed = await replay_the_hand(page, _stack, shots)
    finally:
        await context.close()
    assert not console.errors, console.errors
    assert replayed, "records refused the guest's settlement: no replay"
    if not os.environ.get("PAIJU_NO_DOC_SCREENSHOTS"):
        DOCS.mkdir(parents=True, exist_ok=True)
        for shot in shots.iterdir():
            shutil.copy(shot, DOCS / shot.name)


async def replay_the_hand(page: Any, stack: Any, shots: Path) -> bool:
    """The room's history and its hand on the replay table: three seats, our cards, stepped
    to the end and back; False when records refused the guest's settlement (the defect
    tests/browser/test_table_in_chromium.py names)."""
    for _ in range(40):   # records writes the hand a moment after its settlement
        await page.click("#history-ask")
        with contextlib.suppress(Exception):
            await page.wait_for_selector("#history li button", timeout=500)
            break
        if RECORDS_DEFECT in stack.records.log_path.read_text(errors="replace"):
            return False
    else:
        raise AssertionError(f"no history: {await page.text_content('#history-title')!r}")
    await page.click("#history li button")
    await page.wait_for_selector("#replay-view:not([hidden])")
    await page.click("#replay-last")
    step = await page.text_content("#replay-step") or ""
    done, total = (int(x) for x in step.split(" / "))
    assert done == total > 20, step
    await page.click("#replay-first")
    for _ in range(3):
        await page.click("#replay-next")
    assert await page.locator("#replay-table .plate").count() == 3
    assert await page.locator("#replay-seat-top .plate").count() == 0
    assert await page.locator("#replay-my-hand .card").count() == 17   # our cards, dealt
    await page.locator("#replay-view").scroll_into_view_if_needed()
    await page.screenshot(path=str(shots / "doudizhu-replay-desktop.png"))
    return True


async def _nothing() -> None:
    return None
