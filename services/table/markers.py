"""Sweeping old delete markers out of the ``rooms`` and ``seats`` buckets.

A closed room's entry, and a seat given up, are deleted: NATS keeps a delete marker in the
key's place, for ever, so that watchers see the delete. Without a sweep the buckets hold one
marker for every room ever closed: memory in every NATS node (about 250 bytes of live heap
a closed room, bench/reports/kv_markers.md) and disk, growing with the rooms played. Once a
marker is older than MARKER_AGE_SECONDS every watcher has long seen it, so it goes: the
key's messages up to the marker are purged (a value written after it, a user seated again,
stays).

What the markers guard still holds without them: a late directory write reads no entry and
makes none (directory.py), a compare-and-set on an old revision fails, and room ids are never
reused (the ``room_ids`` bucket is not swept). A watch that resumes after a break misses the
deletes whose markers went meanwhile: a table re-reads the whole directory every 30 s
(lease.py), and a lobby drops the cached rooms that a reopened watch's first values do not
hold (services/lobby/app.py).

A sweep is bounded: SWEEP_TIMEOUT seconds, at most SWEEP_MOST purges (the rest wait for the
next one, as after a long time without sweeps).

One table sweeps, the balancer (the live, non-draining table with the least instance name,
lease.py), every SWEEP_SECONDS.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from typing import Any

from nats.js.kv import KV_DEL, KV_PURGE

from services.common import bus

log = logging.getLogger("paiju.table.markers")

SWEEP_SECONDS = 600.0
SWEEP_TIMEOUT = 120.0
SWEEP_MOST = 20_000
MARKER_AGE_SECONDS = 3600.0
BUCKETS = (bus.ROOMS_BUCKET, bus.SEATS_BUCKET)


async def sweep(js: Any, bucket: str, older_than: float) -> int:
    """Purge the delete markers of ``bucket`` older than ``older_than`` seconds; how many."""
    markers = await old_markers(js, bucket, older_than)
    await purge(js, bucket, markers)
    return len(markers)


async def old_markers(js: Any, bucket: str, older_than: float) -> list[tuple[str, int]]:
    """The keys of ``bucket`` whose last message is a delete marker older than
    ``older_than`` seconds, with its revision."""
    kv = await js.key_value(bucket)
    old: list[tuple[str, int]] = []
    now = datetime.datetime.now(datetime.UTC)
    async with bus.KeyWatch.opened(kv, meta_only=True) as watch:
        async for entry in watch:
            if entry is None:   # the end of the keys' last values
                break
            if entry.operation in (KV_DEL, KV_PURGE) and entry.created is not None \
                    and (now - entry.created).total_seconds() >= older_than:
                old.append((entry.key, entry.revision))
                if len(old) >= SWEEP_MOST:
                    break
    return old


async def purge(js: Any, bucket: str, markers: list[tuple[str, int]]) -> None:
    """Purge each key's messages up to its marker (``seq`` is exclusive): a value put
    since the marker was read stays."""
    for key, revision in markers:
        await js.purge_stream(f"KV_{bucket}", subject=f"$KV.{bucket}.{key}", seq=revision + 1)


async def sweep_forever(js: Any, sweeper: Callable[[], bool],
                        period: float = SWEEP_SECONDS,
                        older_than: float = MARKER_AGE_SECONDS) -> None:
    """Every ``period`` seconds, while ``sweeper()`` says this table is the one, sweep the
    buckets; a failure (NATS away) waits for the next time."""
    while True:
        await asyncio.sleep(period)
        if not sweeper():
            continue
        for bucket in BUCKETS:
            try:
                async with asyncio.timeout(SWEEP_TIMEOUT):
                    swept = await sweep(js, bucket, older_than)
            except Exception as exc:   # NATS away, or a watch that never ended (timeout)
                log.warning("delete markers not swept", extra={"bucket": bucket,
                                                               "error": repr(exc)})
                continue
            if swept:
                log.info("delete markers swept", extra={"bucket": bucket, "markers": swept})
