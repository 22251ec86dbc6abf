"""``python -m services.<svc>``: load config, set up logs, start, serve until SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import Histogram

from paiju.loop import run, running_loop_name
from services.common.config import Config, load_config
from services.common.logs import setup_logging
from services.common.server import ServiceHost, run_until_signalled

Starter = Callable[[Config], Awaitable[ServiceHost]]
log = logging.getLogger(__name__)

# a collection stops the whole process (every room and session of it): its pauses are the
# first suspect when a p99 grows before the CPU is used up
GC_PAUSES = Histogram("paiju_gc_pause_seconds", "Garbage collector pauses, by generation",
                      ["generation"], buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1))


def main(name: str, start: Starter) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m services.{name}")
    parser.add_argument("--env", default=None,
                        help="dev, test or prod (default: $PAIJU_ENV or dev)")
    args = parser.parse_args()
    cfg = load_config(args.env)
    setup_logging(name, cfg.log.level)

    async def serve() -> None:
        log.info("event loop", extra={"event_loop": running_loop_name()})
        svc = await start(cfg)
        tune_gc()
        time_gc()
        freezing = asyncio.ensure_future(freeze_gc(
            float(os.environ.get("PAIJU_GC_FREEZE_SECONDS", FREEZE_SECONDS)),
            float(os.environ.get("PAIJU_GC_FULL_SECONDS", FULL_SECONDS))))
        try:
            await run_until_signalled(svc)
        finally:
            freezing.cancel()

    run(serve())


def tune_gc() -> None:
    """After start: what was made to start (modules, protos, config) is never collected
    (gc.freeze), and young collections run less often, so a full collection of a large heap
    of sessions and rooms (tens of ms, a p99 spike for every player) comes rarely.
    ``PAIJU_GC_THRESHOLD=0`` keeps Python's defaults."""
    threshold = int(os.environ.get("PAIJU_GC_THRESHOLD", "20000"))
    if threshold <= 0:
        return
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(threshold, second, third)


# what survived this long leaves the collector's view (gc.freeze); everything is collected
# once every FULL_SECONDS. Short, because a young collection walks everything tracked since
# the last freeze: gc.freeze() zeroes the young count, and the count is net of the frozen
# objects freed meanwhile, so with a 10 s period a young collection came only every 20 s or
# so at 800 tables but walked up to 10 s of survivors, 50-70 ms with every room stopped;
# every second, none comes at all there (bench/reports/capacity_freeze10.md against
# capacity.md, "Garbage collection").
FREEZE_SECONDS = 1.0
FULL_SECONDS = 300.0


async def freeze_gc(every: float, full_every: float) -> None:
    """Keep the long-lived heap (rooms, sessions) out of the collector's automatic passes:
    every ``every`` seconds what is tracked is frozen (gc.freeze), so an automatic
    collection walks only what was made since, instead of every room of the process (at 900
    tables a full pass of the table's heap stopped every room for 100-200 ms, the p99
    outliers of bench/reports/capacity.md). Objects frozen are still freed by reference counting the
    moment they are dropped; only garbage in reference cycles waits, for the full
    collection every ``full_every`` seconds (unfreeze, collect, freeze again): the engines
    and rooms make none per action (tests/unit/games/test_no_reference_cycles.py), nor does
    a room the table stops (tests/unit/services/test_table_actor.py). ``every`` <= 0 turns
    this off."""
    if every <= 0:
        return
    last_full = time.monotonic()
    while True:
        await asyncio.sleep(every)
        if time.monotonic() - last_full >= full_every:
            gc.unfreeze()
            gc.collect()
            last_full = time.monotonic()
        gc.freeze()


def time_gc() -> None:
    """Every collection's pause in GC_PAUSES (a callback at its start and stop)."""
    started = [0.0]
    children = [GC_PAUSES.labels(str(g)) for g in range(3)]

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            children[info["generation"]].observe(time.perf_counter() - started[0])

    gc.callbacks.append(callback)
