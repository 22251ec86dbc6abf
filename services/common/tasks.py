"""Stopping asyncio tasks for sure.

On Python 3.11 a cancellation can be lost: ``asyncio.wait_for`` swallows it when the
awaited future completes at the same moment, and library code (nats-py requests, JetStream
publishes) uses ``wait_for``. A task that loops (a room actor reading its inbox, a watcher)
then never ends, and whoever awaits it hangs. So cancel again until the task is done.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None, every: float = 1.0) -> None:
    """Cancel ``tasks`` (None entries are skipped) and return once all have ended,
    cancelling again every ``every`` seconds any that is still running."""
    pending = {t for t in tasks if t is not None and not t.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=every)
    for given in tasks:  # their results and errors are not wanted: mark them retrieved
        if given is not None and not given.cancelled():
            with contextlib.suppress(BaseException):
                given.exception()
