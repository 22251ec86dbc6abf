"""Rooms changing tables: adopting the rooms of a table that stopped heartbeating, and
handing this table's rooms to others when it drains (SIGTERM).

A claim is a compare-and-set on the room's ``rooms`` entry and the new owner's first log
append is fenced, so two tables never write one room. The rooms of a dead table spread over
the live ones (placement.should_adopt); a drain prefers the newest live tables
(placement.drain_target).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from nats.js.errors import KeyDeletedError, KeyNotFoundError

from paiju.contracts.directory import AdoptAnswer, AdoptRequest, RoomEntry
from services.table import metrics as m
from services.table.directory import entry_owner
from services.table.host import TableHost
from services.table.lease import Lease
from services.table.lifecycle import RoomState
from services.table.placement import drain_target, should_adopt
from services.table.roomlog import APPEND_RETRY_SECONDS, READ_TRY_SECONDS

log = logging.getLogger("paiju.table.adoption")

CLAIM_CONCURRENCY = 32   # claims (compare-and-set on a room's entry) in flight in one scan


def adopt_subject(instance: str) -> str:
    """Where a draining table asks ``instance`` to take a room now (core NATS request)."""
    return f"table.{instance.replace('.', '_')}.adopt"


class Adoption:
    def __init__(self, core: TableHost, lease: Lease) -> None:
        self.core = core
        self.lease = lease
        self.orphaned_at: dict[int, float] = {}   # when a room was first seen without owner
        self._sub: Any = None

    async def subscribe(self) -> None:
        self._sub = await self.core.nc.subscribe(adopt_subject(self.core.instance),
                                                 cb=self._on_adopt)

    async def adopt_orphans(self) -> int:
        """Rebuild the rooms the directory gives this table that it does not run (a claim or
        a hand-over whose rebuild failed or is pending), and claim rooms whose owner no
        longer heartbeats."""
        core = self.core
        if core.rooms.draining or not self.lease.current(self.lease.epoch):
            return 0   # draining, or this process has just stalled: its view is stale
        ttl = core.cfg.table.lease_ttl_seconds
        now = time.monotonic()
        live = {t.instance: t for t in core.view.live_tables()}
        if core.instance not in live:  # our own entry is what the others see of us
            live[core.instance] = self.lease.entry()
        for gone in set(self.orphaned_at) - set(core.view.rooms):
            del self.orphaned_at[gone]
        for room_id in core.rooms.in_state(RoomState.LOGLESS):
            if room_id not in core.view.rooms:   # its entry deleted (let go for lost, say)
                core.rooms.left(room_id)
        todo: list[int] = []          # this table's rooms to rebuild
        orphans: list[tuple[int, RoomEntry, int]] = []   # others' rooms to claim, then rebuild
        alive: dict[str, bool] = {}   # owners asked directly during this scan
        for room_id, (entry, revision) in list(core.view.rooms.items()):
            owner = entry.owner
            if owner == core.instance:
                if core.rooms.rebuild_due(room_id):
                    todo.append(room_id)
                elif core.rooms.lost(room_id):
                    await core.let_go_lost(room_id)
                continue
            if not owner or owner in live:
                self.orphaned_at.pop(room_id, None)
                continue
            if not self.lease.trusted(ttl):
                continue   # our own view of the leases is not to be trusted yet
            waited = now - self.orphaned_at.setdefault(room_id, now)
            if not should_adopt(room_id, core.instance, live.values(), waited, fallback=ttl):
                continue
            if owner not in alive:   # a watch can lag: ask directly, once per owner
                alive[owner] = await self._table_alive(owner)
            if alive[owner]:
                continue
            orphans.append((room_id, entry, revision))
        for room_id in todo:
            core.rooms.claim(room_id)
        claims = asyncio.Semaphore(CLAIM_CONCURRENCY)
        return sum(await asyncio.gather(
            *(self._rebuild_own(rid) for rid in todo),
            *(self._adopt(claims, *orphan) for orphan in orphans)))

    async def _rebuild_own(self, room_id: int) -> bool:
        """Rebuild a room the view gives this table, once its entry, read again now, still
        does: a view that lagged (a watch behind after a partition) can name this table for
        a room another has claimed since and not yet written to; its log would take our
        ``owner`` append, and both tables would run the room until the fence stopped one.
        An entry that cannot be read is not taken as another owner's."""
        core = self.core
        try:
            entry = await asyncio.wait_for(core.directory.kv_rooms.get(str(room_id)),
                                           READ_TRY_SECONDS)
        except (KeyNotFoundError, KeyDeletedError):
            # closed (here or elsewhere) or let go since the view read it: its log is gone
            # or going, and a rebuild would only find it missing
            log.info("room not rebuilt: it has left the directory", extra={"room": room_id})
            core.rooms.left(room_id)
            return False
        except Exception:   # not read: not taken as another owner's
            entry = None
        owner = entry_owner(entry.value) if entry is not None else None
        if owner not in (None, "", core.instance):
            log.info("room not rebuilt: another table has it now",
                     extra={"room": room_id, "owner": owner})
            core.rooms.fail(room_id)   # claimed above: the scans look again (rebuild_due)
            return False
        return await core.rebuild_safely(room_id)

    async def _adopt(self, claims: asyncio.Semaphore, room_id: int, entry: RoomEntry,
                     revision: int) -> bool:
        """Claim an orphan (``claims`` bounds those in flight) and rebuild it as soon as it is
        claimed: the first rooms play on while the others are still being claimed."""
        async with claims:
            if not await self._claim(room_id, entry, revision):
                return False
        log.info("adopting room", extra={"room": room_id, "from": entry.owner})
        m.ADOPTED.inc()
        self.core.rooms.claim(room_id)
        return await self.core.rebuild_safely(room_id)

    async def _claim(self, room_id: int, entry: RoomEntry, revision: int) -> bool:
        core = self.core
        claimed = entry.moved_to(core.instance, core.address)
        try:
            rev = await core.directory.kv_rooms.update(str(room_id), claimed.encode(),
                                                       last=revision)
        except Exception:  # another table won the claim, or the entry changed
            return False
        core.directory.room_revs[room_id] = rev
        core.view.rooms[room_id] = (claimed, rev)
        self.orphaned_at.pop(room_id, None)
        return True

    async def _table_alive(self, instance: str) -> bool:
        try:
            entry = await self.core.kv_tables.get(instance)
        except Exception:  # no such key: expired or deleted
            return False
        return bool(entry.value)

    # -- drain -------------------------------------------------------------------------
    async def drain(self) -> None:
        """SIGTERM: take no new rooms, hand every room to a live table that is not draining
        (between two actions: the new owner rebuilds from the log; players see a pause and
        ERR_ROOM_MOVING answers their lobby retries), within ``table.drain_seconds``."""
        core = self.core
        core.rooms.drain()
        try:
            await self.lease.register()
        except Exception as exc:
            log.warning("could not announce the drain", extra={"error": repr(exc)})
        deadline = time.monotonic() + core.cfg.table.drain_seconds
        assigned: dict[str, int] = {}
        moved = 0
        for room_id in sorted(core.rooms):
            if time.monotonic() >= deadline:
                log.warning("drain bound reached: the rest wait for adoption",
                            extra={"left": len(core.rooms)})
                break
            try:
                moved += await self._hand_over(room_id, assigned)
            except Exception:
                log.exception("hand-over failed", extra={"room": room_id})
        log.info("drained", extra={"moved": moved, "left": len(core.rooms)})

    async def _hand_over(self, room_id: int, assigned: dict[str, int]) -> int:
        core = self.core
        actor = core.rooms.get(room_id)
        if actor is None:
            return 0
        target = drain_target(self.lease.entry(), core.view.live_tables(), assigned)
        if target is None:
            log.warning("no table to hand the room to", extra={"room": room_id})
            return 0
        core.rooms.hand_over(room_id)
        if not await actor.pause(timeout=APPEND_RETRY_SECONDS + 2):
            # an item still in hand (an append riding out an election): stop it anyway; a
            # record that lands late fences the new owner's first append, and its rebuild
            # then includes it
            actor.paused = True
            log.warning("room not paused in time, handed over anyway", extra={"room": room_id})
        kv_rooms = core.directory.kv_rooms
        entry = await kv_rooms.get(str(room_id))
        value = RoomEntry.decode(entry.value or b"")
        if value.owner != core.instance:
            return 0   # adopted meanwhile
        await core.directory.flush()   # our last directory writes for it go out first
        await kv_rooms.update(str(room_id), value.moved_to(target.instance, target.address).encode(),
                              last=entry.revision)
        core.forget(room_id)
        await actor.stop()
        assigned[target.instance] = assigned.get(target.instance, 0) + 1
        try:  # the new owner's scan would find it too; this saves it the wait
            await core.nc.request(adopt_subject(target.instance),
                                  AdoptRequest(room_id=room_id).encode(), timeout=3)
        except Exception as exc:
            log.info("adopt request unanswered: its scan takes the room",
                     extra={"room": room_id, "error": repr(exc)})
        m.HANDED_OVER.inc()
        log.info("room handed over", extra={"room": room_id, "to": target.instance})
        return 1

    async def _on_adopt(self, msg: Any) -> None:
        """A draining table handed us a room: rebuild it now (the entry must name us)."""
        core = self.core
        try:
            room_id = AdoptRequest.decode(msg.data).room_id
            entry = await core.directory.kv_rooms.get(str(room_id))
            value = RoomEntry.decode(entry.value or b"")
            ok = value.owner == core.instance and not core.rooms.draining
            if ok:
                core.view.rooms[room_id] = (value, int(entry.revision))
                core.rooms.claim(room_id)
                ok = await core.rebuild_safely(room_id) or room_id in core.rooms
            await msg.respond(AdoptAnswer(ok=ok).encode())
        except Exception as exc:
            log.warning("adopt request failed", extra={"error": repr(exc)})
