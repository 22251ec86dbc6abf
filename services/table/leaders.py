"""Keeping the room log's stream leaders spread over the NATS nodes (roomlog.spread_leaders),
soon after they gather, not only at the table's periodic resync.

Leaders gather on a node when the streams are created (the first election may well pick
one node for all three), when a node dies (its streams elect on the two others) and stay
there when it comes back. A node lost while it leads all three pauses every room, not a
third. So one table, the balancer (the live, non-draining table with the least instance
name: every table reads the same ``tables`` bucket, so they agree, and no two move leaders
at once), looks at the streams:

- at start, once its view of the other tables is read;
- at once when JetStream announces a new leader of a log stream
  (``$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.<stream>``: a node lost, a step-down);
- every UNSETTLED_SECONDS while the streams are not settled (a stream without a leader, a
  replica offline or catching up: a node that comes back is counted once it is current,
  and announces nothing), and after each move (one at a time: the next look sees its
  result);
- every SETTLED_SECONDS otherwise (a node lost that led nothing announces nothing either).

Each look moves at most one leader (roomlog.spread_leaders), and only when a node leads
more than its share; a move is one step-down with a preferred node, a pause of a fraction of
a second for that stream's rooms, whose appends are retried through it (roomlog.append).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from services.common import bus
from services.table.roomlog import spread_leaders

log = logging.getLogger("paiju.table.leaders")

ADVISORY = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."
SETTLED_SECONDS = 30.0      # between two looks while the leaders are spread and all current
UNSETTLED_SECONDS = 1.0     # between two looks otherwise, and after a move
ADVISORY_DELAY = 0.5        # after an advisory: the other streams' elections show too


class LeaderWatch:
    """The balancer's loop (see the module docstring); on every table, acting only while
    ``balancer()`` says this table is the one."""

    def __init__(self, nc: Any, js: Any, balancer: Callable[[], bool], *,
                 first_look: float = 0.0) -> None:
        self.nc = nc
        self.js = js
        self.balancer = balancer
        self.first_look = first_look
        self.wake = asyncio.Event()
        self.moves = 0
        self._subs: list[Any] = []

    async def _subscribe(self) -> None:
        async def elected(msg: Any) -> None:
            self.wake.set()

        for name in bus.ROOM_LOG_STREAMS:
            try:
                self._subs.append(await self.nc.subscribe(ADVISORY + name, cb=elected))
            except Exception as exc:   # polling still spreads them, later
                log.warning("leader advisories not followed",
                            extra={"stream": name, "error": repr(exc)})

    async def run(self) -> None:
        await self._subscribe()
        try:
            wait = self.first_look
            while True:
                try:
                    await asyncio.wait_for(self.wake.wait(), wait)
                except TimeoutError:
                    pass
                if self.wake.is_set():
                    self.wake.clear()
                    await asyncio.sleep(ADVISORY_DELAY)
                    self.wake.clear()
                wait = await self.look()
        finally:
            for sub in self._subs:
                try:
                    await sub.unsubscribe()
                except Exception:
                    log.debug("advisory subscription not closed", exc_info=True)

    async def look(self) -> float:
        """One look (a move at most, when this table is the balancer); the seconds until
        the next."""
        if not self.balancer():
            return SETTLED_SECONDS
        try:
            moved, settled = await spread_leaders(self.nc, self.js)
        except Exception as exc:   # NATS away, an election of the metadata leader
            log.warning("room log leaders not balanced", extra={"error": repr(exc)})
            return UNSETTLED_SECONDS
        if moved is not None:
            self.moves += 1
            return UNSETTLED_SECONDS
        return SETTLED_SECONDS if settled else UNSETTLED_SECONDS
