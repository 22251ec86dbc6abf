"""services/common/runner.freeze_gc: the long-lived heap leaves the collector's view every
few seconds, and garbage in reference cycles is still collected, at the periodic full
collection."""

from __future__ import annotations

import asyncio
import gc
import weakref

from services.common.runner import freeze_gc


class Node:
    def __init__(self) -> None:
        self.me = self   # a reference cycle: only the collector frees it


async def test_survivors_are_frozen_and_frozen_cycles_are_collected_at_the_full_pass() -> None:
    gc.unfreeze()
    kept = [Node() for _ in range(100)]          # long-lived: must stay
    cycle = Node()
    gone = weakref.ref(cycle)
    task = asyncio.ensure_future(freeze_gc(0.05, 0.4))
    try:
        await asyncio.sleep(0.12)
        assert gc.get_freeze_count() > len(kept), "nothing was frozen"
        del cycle                                 # garbage now, but frozen: kept for now
        gc.collect()
        assert gone() is not None, "a frozen object was collected by a normal pass"
        for _ in range(40):                       # the full pass comes within 0.4 s
            await asyncio.sleep(0.05)
            if gone() is None:
                break
        assert gone() is None, "the full collection did not free a frozen cycle"
        assert all(isinstance(k, Node) for k in kept)
    finally:
        task.cancel()
        gc.unfreeze()


async def test_zero_turns_it_off() -> None:
    gc.unfreeze()
    await asyncio.wait_for(freeze_gc(0, 300), 1)
    assert gc.get_freeze_count() == 0
