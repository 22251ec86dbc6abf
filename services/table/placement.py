"""Where a room goes when its table dies or drains: pure choices over the ``tables`` entries.

- **Adoption** (the owner stopped heartbeating): every live table computes the same
  rendezvous-hash order of the candidates for a room, so the rooms of a dead table spread
  over the survivors instead of all landing on the first table whose scan runs; the first
  in that order adopts at once, any other only once the room has waited longer
  (``fallback`` seconds), in case the preferred one is itself gone.
- **Drain** (a table stopping on SIGTERM): its rooms go to tables started after it (in a
  rolling update, the pods of the new version), the least loaded first, so a rolling update
  moves each room once, never onto an old pod that is about to drain in turn. With no newer
  table, the least loaded other one.

Draining tables are never candidates for either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from paiju.contracts.directory import TableEntry as Entry  # a ``tables`` entry


def candidates(tables: Iterable[Entry]) -> list[Entry]:
    """Tables that may take rooms: listed with an address and not draining."""
    return [t for t in tables if t.address and not t.draining]


def _score(room_id: int, instance: str) -> bytes:
    return hashlib.blake2b(f"{room_id}/{instance}".encode(), digest_size=8).digest()


def adoption_order(room_id: int, tables: Iterable[Entry]) -> list[str]:
    """The candidates' instances in the order they should adopt ``room_id`` (highest random
    weight first): the same on every table for the same set of live tables."""
    names = [t.instance for t in candidates(tables) if t.instance]
    return sorted(names, key=lambda name: _score(room_id, name), reverse=True)


def should_adopt(room_id: int, me: str, tables: Iterable[Entry], waited: float,
                 fallback: float) -> bool:
    """May table ``me`` claim the orphaned room now? The preferred adopter at once, any
    other candidate after ``fallback`` seconds of waiting."""
    order = adoption_order(room_id, tables)
    if me not in order:
        return False
    return order[0] == me or waited >= fallback


def drain_target(me: Entry, tables: Iterable[Entry],
                 assigned: Mapping[str, int] | None = None) -> Entry | None:
    """The table a draining ``me`` hands its next room to, or None if none can take it.
    ``assigned`` counts the rooms already handed to each instance during this drain."""
    assigned = assigned or {}
    others = [t for t in candidates(tables) if t.instance != me.instance]
    if not others:
        return None
    newer = [t for t in others if t.started_at > me.started_at]
    pool = newer or others

    def load(t: Entry) -> tuple[int, float, str]:
        return (t.rooms + assigned.get(t.instance, 0), -t.started_at, t.instance)

    return min(pool, key=load)
