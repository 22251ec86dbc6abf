"""Waiting in a test for what the code under test does in its own time: polled, not timed,
since a loaded machine is slow (a fixed sleep that is enough here is not enough in CI)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any


class NeverHappened(AssertionError):
    """What a test waited for did not happen in time (not an error the check raised)."""


async def eventually(check: Callable[[], Any | Awaitable[Any]], what: str = "never happened",
                     seconds: float = 10.0, every: float = 0.05, retry: bool = False) -> Any:
    """Call ``check()`` (a function or a coroutine function) every ``every`` seconds until it
    gives something truthy, and return that. After ``seconds`` (a check still running then
    is cut off) fail with ``what`` and the last value. With ``retry`` a check that raises is
    tried again (an election, a node catching up) and the failure names its last error;
    without it the error goes up at once."""
    last = "not checked yet"
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            while True:
                try:
                    value = check()
                    if inspect.isawaitable(value):
                        value = await value
                except Exception as exc:
                    if not retry:
                        raise
                    value, last = None, f"last error {exc!r}"
                else:
                    if value:
                        return value
                    last = f"last {value!r}"
                await asyncio.sleep(every)
    except TimeoutError:
        if not deadline.expired():   # the check's own, raised without retry
            raise
        raise NeverHappened(f"{what} ({last}, {seconds:g} s)") from None


async def until(done: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Poll ``done()`` every 10 ms until it holds or ``seconds`` pass, and say which (for
    ``assert await until(...)``); an error ``done()`` raises goes up."""
    try:
        await eventually(done, seconds=seconds, every=0.01)
    except NeverHappened:
        return False
    return True
