"""Waiting in a test for what the code under test does in its own time: polled, not timed,
since a loaded machine is slow (a fixed sleep that is enough here is not enough in CI)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(done: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Poll ``done()`` every 10 ms until it holds or ``seconds`` pass; what it says last."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return done()
        await asyncio.sleep(0.01)
    return True
