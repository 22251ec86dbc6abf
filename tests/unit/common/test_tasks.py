"""cancel_and_wait ends a task even when a cancellation is lost (as asyncio.wait_for can
lose one on Python 3.11), and never raises the tasks' own errors."""

from __future__ import annotations

import asyncio

from services.common.tasks import cancel_and_wait


async def test_a_task_that_swallows_a_cancel_is_cancelled_again_until_it_ends() -> None:
    swallowed = 0

    async def stubborn() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed += 1  # a lost cancel: the loop goes on

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    await asyncio.wait_for(cancel_and_wait(task, every=0.05), 5)
    assert task.cancelled() and swallowed == 1


async def test_finished_failed_and_missing_tasks_are_fine() -> None:
    async def fail() -> None:
        raise RuntimeError("boom")

    done = asyncio.create_task(asyncio.sleep(0))
    failed = asyncio.create_task(fail())
    await asyncio.sleep(0.01)
    await cancel_and_wait(done, failed, None)  # no error, nothing pending
    assert done.done() and failed.done()
