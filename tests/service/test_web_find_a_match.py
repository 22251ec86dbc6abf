"""The browser's "Find a match" (clients/web/match.js), driven for real: clients/web/app.js
in node (the harness of test_web_client_features.py) against a real lobby, table, arbiter
and records on a real nats-server. The page asks, shows that it waits, cancels, asks
again; three robots ask for the same queue; the page is told it was matched and sits in
the room with them."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from clients.robot.robot import run_matched
from services.common.natsd import EmbeddedNats
from tests.service.test_web_client_features import HARNESS, Page, full_stack, room_of
from tests.support.lobbyworld import SECRET


async def test_a_browser_finds_a_match_waits_cancels_and_is_seated(
        fresh_nats: EmbeddedNats, tmp_path: Path, node: list[str]) -> None:
    harness = tmp_path / "harness.js"
    harness.write_text(HARNESS)
    async with full_stack(fresh_nats.url, tmp_path / "records.db") as (address, port, _):
        page = await Page.open(node, harness, port, 451, "carol")
        robots: asyncio.Task[Any] | None = None
        try:
            await page.wait("lobby-panel", hidden=False)
            await page.type("game", "DADUN")
            await page.type("match-stake", "2")
            await page.click("match")
            await page.wait("match-status", contains="waiting for a dadun match (stake 2)")
            await page.wait("match-cancel", hidden=False)
            assert (await page.state("match"))["hidden"] is True
            await page.click("match-cancel")
            await page.wait("match-status", contains="match request cancelled")
            await page.wait("match-cancel", hidden=True)

            await page.click("match")
            await page.wait("match-status", contains="1 in the queue")
            robots = asyncio.create_task(run_matched(
                address, "dadun", 3, SECRET, hands=1, first_uid=452,
                match={"stake": 2}))
            status = await page.wait("match-status", contains="matched: room ")
            room_id = int(status["text"].split("room ")[1].split(",")[0])
            assert room_of(await page.wait("room-title", contains=f"Room {room_id} ")) == room_id
            await page.wait("players", contains="robot452")
            assert (await page.state("match"))["hidden"] is False
            assert (await page.do("missing"))["missing"] == []   # every id is in index.html
        finally:
            if robots is not None:
                robots.cancel()
                with contextlib.suppress(BaseException):
                    await robots
            await page.close()
