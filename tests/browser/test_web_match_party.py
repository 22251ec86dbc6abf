"""The web "Find a match" with friends, in a real browser: two Chromium pages (Playwright),
logged in as two players, ask for one match naming each other in the Friends field
(AskMatch.party); two robots (clients/robot) ask for the same queue; the four are seated in
one room, the two friends together. Before that, the page says clearly why an ask is
refused: a friend field naming yourself (nothing sent), a friend who is not online
(ERR_PARTY_OFFLINE), a friend who waits for another match (ERR_PARTY_BUSY, in Chinese).
Any console error or page error fails the test.

The stack is real processes (tests/system/conftest.py): nats-server, records, arbiter,
table, lobby with its WebSocket port serving clients/web/."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from clients.robot.robot import run_matched
from services.lobby import tokens
from tests.system.conftest import SECRET

LEAD, FRIEND, ROBOTS = 9201, 9202, 9203


class Console:
    """Console errors and uncaught page errors of one page."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))


async def logged_in(context: Any, ws_port: int, user_id: int) -> tuple[Any, Console]:
    page = await context.new_page()
    console = Console(page)
    await page.goto(f"http://127.0.0.1:{ws_port}/")
    await page.click("#token-login summary")   # "Log in with a token" opens
    await page.fill("#token", tokens.mint(user_id, SECRET, 600))
    await page.click("#login")
    await page.wait_for_selector("#lobby-panel:not([hidden])")
    await page.wait_for_function(   # the page shows the player's own id for his friends
        f"document.getElementById('match-me').textContent.includes('{user_id}')")
    return page, console


async def status_has(page: Any, text: str) -> str:
    await page.wait_for_function(
        "t => document.getElementById('match-status').textContent.includes(t)", arg=text)
    line: str = await page.text_content("#match-status")
    return line


async def test_two_friends_are_matched_into_one_room(browser: Any, web_stack: Any) -> None:
    stack, ws_port = web_stack
    lead_ctx = await browser.new_context(locale="en-US")
    friend_ctx = await browser.new_context(locale="en-US")
    for context in (lead_ctx, friend_ctx):
        context.set_default_timeout(20_000)   # a step that cannot happen fails, never hangs
    robots: asyncio.Task[Any] | None = None
    try:
        lead, lead_console = await logged_in(lead_ctx, ws_port, LEAD)
        # a friend field naming yourself: said at once, nothing sent
        await lead.fill("#match-party", str(LEAD))
        await lead.click("#match")
        await status_has(lead, "friends: up to two user ids, each once, not your own")
        # a friend who is not logged in
        await lead.fill("#match-party", str(FRIEND))
        await lead.click("#match")
        await status_has(lead, f"friend {FRIEND} is not online: friends must be logged in")
        assert await lead.is_hidden("#match-cancel")
        # online, but waiting for another match: refused as busy (the page in Chinese)
        friend, friend_console = await logged_in(friend_ctx, ws_port, FRIEND)
        await friend.select_option("#game", "CHANGSHA")
        await friend.click("#match")
        await status_has(friend, "waiting for a changsha match")
        await lead.click("#lang")
        await lead.click("#match")
        await status_has(lead, f"好友 {FRIEND} 正忙：正在等待其他匹配或已在房间中")
        await lead.click("#lang")
        await friend.click("#match-cancel")
        await status_has(friend, "match request cancelled")
        # the party: each names the other, in the same queue (XueZhan, stake 1)
        await lead.click("#match")
        await status_has(lead, f"with {FRIEND} (they ask too, naming you)")
        await friend.select_option("#game", "XUEZHAN")
        await friend.fill("#match-party", str(LEAD))
        await friend.click("#match")
        await status_has(friend, f"with {LEAD} (they ask too, naming you)")
        robots = asyncio.create_task(run_matched(stack.lobby_address, "xuezhan", 2, SECRET,
                                                 hands=1, first_uid=ROBOTS,
                                                 match={"stake": 1}))
        rooms = []
        for page in (lead, friend):
            line = await status_has(page, "matched: room ")
            rooms.append(int(line.split("room ")[1].split(",")[0]))
        assert rooms[0] == rooms[1] > 0, rooms
        for page in (lead, friend):
            await page.wait_for_function(   # the room's four players, the robots among them
                "document.getElementById('room-title').textContent.includes('Room "
                f"{rooms[0]} ')")
            for uid in (LEAD, FRIEND, ROBOTS, ROBOTS + 1):
                await page.wait_for_function(
                    "t => document.getElementById('room-panel').textContent.includes(t)",
                    arg=str(uid) if uid in (LEAD, FRIEND) else f"robot{uid}")
        assert not lead_console.errors and not friend_console.errors, \
            (lead_console.errors, friend_console.errors)
    finally:
        if robots is not None:
            robots.cancel()
            with contextlib.suppress(BaseException):
                await robots
        await lead_ctx.close()
        await friend_ctx.close()
