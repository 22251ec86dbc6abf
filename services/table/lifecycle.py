"""A room's life at this table: one :class:`RoomState` per room id, changed only by the
events of :data:`TRANSITIONS`, all through one :class:`Rooms` (held by the core as
``TableCore.rooms``). The diagram is in docs/architecture.md, "A room's life at a table".

What each state means to the rest of the table:

- commands for a room in a :data:`MOVING` state are answered ERR_ROOM_MOVING (the lobby
  retries); a LIVE or HANDING_OVER room has its actor, which answers them;
- the adoption scan rebuilds a room the directory gives this table only when it is GONE
  or FAILED, or LOGLESS for less than :data:`LOGLESS_RETRY_SECONDS` (:meth:`Rooms.rebuild_due`);
- commands for a room LOGLESS for longer are answered ERR_NO_SUCH_ROOM (:meth:`Rooms.lost`)
  and the scan deletes its directory entry: its players leave it rather than wait for ever;
  once the table's view no longer holds the entry the room is GONE here too;
- the heartbeat purges the logs of CLOSED rooms.

Rooms change tables under failures and races (two rebuilds of one room, a stall, an append
in flight while the room is handed away), so some events leave a state as it is: each such
row says why. An event the table does not name for a state is refused: logged, counted
(``paiju_table_room_transitions_refused_total``) and raised as :class:`IllegalTransition`.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, NoReturn

from services.table import metrics as m

if TYPE_CHECKING:
    from services.table.actor import RoomActor

log = logging.getLogger("paiju.table.lifecycle")

LOGLESS_RETRY_SECONDS = 60.0   # a room found without a log is read again this long


class RoomState(enum.Enum):
    GONE = "gone"                  # not held here: never was, purged, or another table's
    CREATING = "creating"          # being made here: its directory entry is being written
    REBUILDING = "rebuilding"      # claimed by, handed to or restarted on this table: its
    #                                log is to be folded (a rebuild pending or under way)
    FAILED = "failed"              # its rebuild failed, or its tenure or log did while it
    #                                ran: the scans rebuild it from its log
    LIVE = "live"                  # its actor runs here and answers its commands
    HANDING_OVER = "handing_over"  # draining: its actor pauses, its entry moves to another table
    HANDED_AWAY = "handed_away"    # draining: given to another table, which rebuilds it
    LOGLESS = "logless"            # the directory names this table, but the room has no log:
    #                                read again by the scans for a while (a stream that
    #                                elects or heals may show none), then taken for gone
    CLOSED = "closed"              # closed here, its directory entry deleted: its log waits
    #                                for its purge (settlements out first; the heartbeat retries)


class Event(enum.Enum):
    CREATE = "create"        # a new room id, its entry about to be written (TableCore.create_room)
    ABANDON = "abandon"      # its entry could not be written: the room was not made
    CLAIM = "claim"          # to be rebuilt here: a restart, an adoption, a hand-over to us
    RUN = "run"              # its actor registered: made, or rebuilt from its log
    FAIL = "fail"            # a rebuild raised: the scans retry it
    LAPSE = "lapse"          # its tenure was not confirmed after a stall, or its log took no
    #                          append: the actor stops, the next scan rebuilds it from the log
    DROP = "drop"            # another table has it (a fenced append, a stall check), or it
    #                          was handed away: the actor stops
    HAND_OVER = "hand_over"  # the drain starts handing it to another table
    NO_LOG = "no_log"        # its rebuild found no log
    CLOSE = "close"          # its last record closed it (or its rebuild found it closed)
    PURGE = "purge"          # its log is purged
    LEFT = "left"            # its entry left the directory before its rebuild (the room
    #                          closed, or was let go for lost): nothing to rebuild

S = RoomState   # short, for the table below

# event -> {state before: state after}; a state not named is refused
TRANSITIONS: dict[Event, dict[RoomState, RoomState]] = {
    Event.CREATE: {S.GONE: S.CREATING},
    Event.ABANDON: {S.CREATING: S.GONE},
    Event.CLAIM: {
        S.GONE: S.REBUILDING,
        S.LOGLESS: S.REBUILDING,       # handed to us or adopted again: its log is read again
        S.REBUILDING: S.REBUILDING,    # claimed twice (a hand-over request and a scan)
        S.FAILED: S.FAILED,            # a retry: failed until a rebuild succeeds
        S.LIVE: S.LIVE,                # a rebuild that finds it running does nothing
        S.CLOSED: S.CLOSED,            # closed by a rebuild meanwhile: found closed again
    },
    Event.RUN: {S.CREATING: S.LIVE, S.REBUILDING: S.LIVE, S.FAILED: S.LIVE},
    Event.FAIL: {
        S.REBUILDING: S.FAILED,
        S.FAILED: S.FAILED,
        S.GONE: S.FAILED,              # dropped while it was rebuilt (its first append fenced)
        # another rebuild of the same room finished first: its outcome stands
        S.LIVE: S.LIVE, S.HANDING_OVER: S.HANDING_OVER, S.HANDED_AWAY: S.HANDED_AWAY,
        S.LOGLESS: S.LOGLESS, S.CLOSED: S.CLOSED,
    },
    Event.LAPSE: {
        S.LIVE: S.FAILED,
        S.HANDING_OVER: S.FAILED,      # its last item's append failed as it paused
        S.REBUILDING: S.FAILED,        # its rebuild's first append failed
        S.FAILED: S.FAILED,
        # an append still in flight from an actor already stopped
        S.HANDED_AWAY: S.FAILED, S.GONE: S.FAILED,
    },
    Event.DROP: {
        S.LIVE: S.GONE,
        S.HANDING_OVER: S.HANDED_AWAY,
        # no actor registered: a rebuild under way fails on its own (its append is refused)
        S.REBUILDING: S.REBUILDING, S.FAILED: S.FAILED,
        S.HANDED_AWAY: S.HANDED_AWAY, S.GONE: S.GONE,
    },
    Event.HAND_OVER: {S.LIVE: S.HANDING_OVER},   # and only while draining (Rooms.hand_over)
    Event.NO_LOG: {
        S.REBUILDING: S.LOGLESS, S.FAILED: S.LOGLESS,
        S.GONE: S.LOGLESS,             # closed and purged by another rebuild meanwhile
    },
    Event.CLOSE: {
        S.LIVE: S.CLOSED,
        S.HANDING_OVER: S.CLOSED,      # its last item closed it as it paused
        S.REBUILDING: S.CLOSED, S.FAILED: S.CLOSED,   # its log ends with the room closed
        S.GONE: S.CLOSED,              # dropped by a stall check while it closed
        S.CLOSED: S.CLOSED,            # another rebuild found it closed too
    },
    Event.PURGE: {S.CLOSED: S.GONE},
    Event.LEFT: {
        S.REBUILDING: S.GONE, S.FAILED: S.GONE,
        S.LOGLESS: S.GONE,             # its directory entry deleted (let go for lost, say)
        # another rebuild of the same room finished first: its outcome stands
        S.LIVE: S.LIVE, S.HANDING_OVER: S.HANDING_OVER, S.HANDED_AWAY: S.HANDED_AWAY,
        S.CLOSED: S.CLOSED, S.GONE: S.GONE,
    },
}

# commands for these (without an actor of their own) are answered ERR_ROOM_MOVING
MOVING = frozenset({S.CREATING, S.REBUILDING, S.FAILED, S.HANDING_OVER, S.HANDED_AWAY})
# these have their actor registered: commands reach it
RUNNING = frozenset({S.LIVE, S.HANDING_OVER})


class IllegalTransition(Exception):
    def __init__(self, room_id: int, state: RoomState, event: Event, why: str = "") -> None:
        super().__init__(f"room {room_id}: {event.value} refused in state {state.value}"
                         + (f" ({why})" if why else ""))
        self.room_id, self.state, self.event = room_id, state, event


class Rooms(Mapping[int, "RoomActor"]):
    """Every room this table knows and its state; as a mapping, the rooms it runs (LIVE or
    HANDING_OVER) and their actors. Also whether the table drains (SIGTERM): from then on
    it takes no room (TableService.CreateRoom, the adoption scan, hand-over requests) and
    hands its own away."""

    def __init__(self) -> None:
        self._states: dict[int, RoomState] = {}     # GONE is not stored
        self._actors: dict[int, RoomActor] = {}     # the rooms in a RUNNING state
        self._logless_since: dict[int, float] = {}  # LOGLESS rooms: first found so
        self._draining = False

    # -- the mapping: the rooms this table runs -----------------------------------------
    def __getitem__(self, room_id: int) -> RoomActor:
        return self._actors[room_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._actors)

    def __len__(self) -> int:
        return len(self._actors)

    # -- reading ------------------------------------------------------------------------
    @property
    def draining(self) -> bool:
        return self._draining

    def state(self, room_id: int) -> RoomState:
        return self._states.get(room_id, RoomState.GONE)

    def in_state(self, state: RoomState) -> list[int]:
        """The rooms in ``state`` (not GONE: those are not kept), in id order."""
        return sorted(rid for rid, s in self._states.items() if s is state)

    def moving(self, room_id: int) -> bool:
        """Commands for the room are answered ERR_ROOM_MOVING when it has no actor here."""
        return self.state(room_id) in MOVING

    def rebuild_due(self, room_id: int, now: float | None = None) -> bool:
        """The directory gives the room to this table: should a scan rebuild it? Not while
        it runs, is made, rebuilt or handed away here, nor when it closed here (a directory
        view that lags behind the deletion of its entry); when its log was missing, again
        for :data:`LOGLESS_RETRY_SECONDS` (the stream's count of the room's records read
        during an election or a heal can be wrong for a moment)."""
        state = self.state(room_id)
        return state in (RoomState.GONE, RoomState.FAILED) or (
            state is RoomState.LOGLESS and not self.lost(room_id, now))

    def lost(self, room_id: int, now: float | None = None) -> bool:
        """The room has had no log for :data:`LOGLESS_RETRY_SECONDS`: it cannot go on."""
        since = self._logless_since.get(room_id)
        now = time.monotonic() if now is None else now
        return since is not None and now - since >= LOGLESS_RETRY_SECONDS

    # -- the events ---------------------------------------------------------------------
    def create(self, room_id: int) -> None:
        self._move(room_id, Event.CREATE)

    def abandon(self, room_id: int) -> None:
        self._move(room_id, Event.ABANDON)

    def claim(self, room_id: int) -> None:
        self._move(room_id, Event.CLAIM)

    def run(self, room_id: int, actor: RoomActor) -> None:
        self._move(room_id, Event.RUN)
        self._actors[room_id] = actor
        m.ROOMS.set(len(self._actors))

    def fail(self, room_id: int) -> None:
        self._move(room_id, Event.FAIL)

    def lapse(self, room_id: int) -> RoomActor | None:
        """Returns the actor that ran the room, if any (to be stopped)."""
        return self._move(room_id, Event.LAPSE)

    def drop(self, room_id: int) -> RoomActor | None:
        """Returns the actor that ran the room, if any (to be stopped)."""
        return self._move(room_id, Event.DROP)

    def hand_over(self, room_id: int) -> None:
        if not self._draining:
            self._refuse(room_id, Event.HAND_OVER, "the table is not draining")
        self._move(room_id, Event.HAND_OVER)

    def no_log(self, room_id: int, now: float | None = None) -> bool:
        """Whether the room's log is found missing for the first time (not on a re-read)."""
        self._move(room_id, Event.NO_LOG)
        first = room_id not in self._logless_since
        self._logless_since.setdefault(room_id, time.monotonic() if now is None else now)
        return first

    def close(self, room_id: int) -> RoomActor | None:
        """Returns the actor that ran the room, if any (to be stopped)."""
        return self._move(room_id, Event.CLOSE)

    def purged(self, room_id: int) -> None:
        self._move(room_id, Event.PURGE)

    def left(self, room_id: int) -> None:
        self._move(room_id, Event.LEFT)

    def drain(self) -> None:
        """The table drains, for good (a process stops once drained)."""
        self._draining = True

    # -- the one place a state changes --------------------------------------------------
    def _move(self, room_id: int, event: Event) -> RoomActor | None:
        """Apply ``event`` to the room; returns the actor it no longer runs, if any."""
        before = self.state(room_id)
        after = TRANSITIONS[event].get(before)
        if after is None:
            self._refuse(room_id, event)
        if after is RoomState.GONE:
            self._states.pop(room_id, None)
        else:
            self._states[room_id] = after
        if after not in (RoomState.LOGLESS, RoomState.REBUILDING):   # read again: still missing
            self._logless_since.pop(room_id, None)
        released = self._actors.pop(room_id, None) if after not in RUNNING else None
        m.ROOMS.set(len(self._actors))
        if RoomState.CLOSED in (before, after):
            m.PENDING.labels("purge").set(len(self.in_state(RoomState.CLOSED)))
        return released

    def _refuse(self, room_id: int, event: Event, why: str = "") -> NoReturn:
        state = self.state(room_id)
        m.ROOM_TRANSITIONS_REFUSED.labels(event.value, state.value).inc()
        log.error("room transition refused", extra={"room": room_id, "event": event.value,
                                                    "state": state.value, "why": why})
        raise IllegalTransition(room_id, state, event, why)
