"""The room lifecycle at a table (services/table/lifecycle.py): every event in every state
is allowed or refused exactly as TRANSITIONS says; a refusal is raised, logged and counted
and changes nothing; the mapping holds the actors of the rooms that run."""

from __future__ import annotations

import itertools
import logging
import re
from pathlib import Path
from typing import Any, cast

import pytest

from services.table import metrics as m
from services.table.actor import RoomActor
from services.table.lifecycle import (
    LOGLESS_RETRY_SECONDS,
    MOVING,
    RUNNING,
    TRANSITIONS,
    Event,
    IllegalTransition,
    Rooms,
    RoomState,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"
ROOM = 12345678
ACTOR = cast(RoomActor, object())   # the lifecycle only holds it

S, E = RoomState, Event
# the events that bring a new room to each state
PATHS: dict[RoomState, list[Event]] = {
    S.GONE: [],
    S.CREATING: [E.CREATE],
    S.REBUILDING: [E.CLAIM],
    S.FAILED: [E.CLAIM, E.FAIL],
    S.LIVE: [E.CLAIM, E.RUN],
    S.HANDING_OVER: [E.CLAIM, E.RUN, E.HAND_OVER],
    S.HANDED_AWAY: [E.CLAIM, E.RUN, E.HAND_OVER, E.DROP],
    S.LOGLESS: [E.CLAIM, E.NO_LOG],
    S.CLOSED: [E.CLAIM, E.RUN, E.CLOSE],
}


def fire(rooms: Rooms, event: Event, room_id: int = ROOM) -> Any:
    """The Rooms method of ``event``."""
    if event is Event.RUN:
        return rooms.run(room_id, ACTOR)
    method = {Event.PURGE: "purged"}.get(event, event.value)
    return getattr(rooms, method)(room_id)


def rooms_in(state: RoomState) -> Rooms:
    rooms = Rooms()
    rooms.drain()   # HAND_OVER is refused otherwise (its own test below)
    for event in PATHS[state]:
        fire(rooms, event)
    assert rooms.state(ROOM) is state
    return rooms


def refused(event: Event, state: RoomState) -> float:
    return m.ROOM_TRANSITIONS_REFUSED.labels(event.value, state.value)._value.get()


def test_every_state_is_reached_and_every_event_has_a_row() -> None:
    assert set(PATHS) == set(RoomState)
    assert set(TRANSITIONS) == set(Event)
    targets = {after for row in TRANSITIONS.values() for after in row.values()}
    assert targets == set(RoomState)


@pytest.mark.parametrize("state, event", list(itertools.product(RoomState, Event)),
                         ids=lambda x: x.value)
def test_each_event_in_each_state_is_as_the_table_says(
        state: RoomState, event: Event, caplog: pytest.LogCaptureFixture) -> None:
    rooms = rooms_in(state)
    after = TRANSITIONS[event].get(state)
    if after is not None:
        fire(rooms, event)
        assert rooms.state(ROOM) is after
        assert (ROOM in rooms) == (after in RUNNING)
        return
    before = refused(event, state)
    with caplog.at_level(logging.ERROR, logger="paiju.table.lifecycle"), \
            pytest.raises(IllegalTransition) as err:
        fire(rooms, event)
    assert err.value.state is state and err.value.event is event
    assert rooms.state(ROOM) is state                     # nothing changed
    assert (ROOM in rooms) == (state in RUNNING)
    assert refused(event, state) == before + 1
    assert any(r.getMessage() == "room transition refused" for r in caplog.records)


def test_a_room_is_handed_over_only_while_the_table_drains() -> None:
    rooms = Rooms()
    rooms.claim(ROOM)
    rooms.run(ROOM, ACTOR)
    with pytest.raises(IllegalTransition, match="not draining"):
        rooms.hand_over(ROOM)
    assert rooms.state(ROOM) is RoomState.LIVE and not rooms.draining
    rooms.drain()
    rooms.hand_over(ROOM)
    assert rooms.draining and rooms.state(ROOM) is RoomState.HANDING_OVER


def test_the_mapping_holds_the_actors_of_running_rooms_and_lets_them_go() -> None:
    rooms = Rooms()
    rooms.create(1)
    rooms.run(1, ACTOR)
    rooms.claim(2)
    assert dict(rooms) == {1: ACTOR} and len(rooms) == 1 and rooms.get(2) is None
    assert rooms.close(1) is ACTOR                       # the caller stops it
    assert len(rooms) == 0 and rooms.in_state(RoomState.CLOSED) == [1]
    rooms.purged(1)
    assert rooms.state(1) is RoomState.GONE and rooms.in_state(RoomState.CLOSED) == []
    rooms.run(2, ACTOR)
    assert rooms.lapse(2) is ACTOR and rooms.state(2) is RoomState.FAILED
    assert rooms.drop(2) is None                          # no actor left to let go


def test_what_commands_and_scans_see_in_each_state() -> None:
    moving = {s for s in RoomState if rooms_in(s).moving(ROOM)}
    assert moving == MOVING == {S.CREATING, S.REBUILDING, S.FAILED, S.HANDING_OVER,
                                S.HANDED_AWAY}
    due = {s for s in RoomState if rooms_in(s).rebuild_due(ROOM)}
    assert due == {S.GONE, S.FAILED, S.LOGLESS}     # LOGLESS: for a while (below)


def test_a_room_without_a_log_is_read_again_for_a_while_then_taken_for_lost() -> None:
    """A stream electing or healing can count none of a room's records for a moment: the
    scans read the log again for LOGLESS_RETRY_SECONDS from when it was first missing;
    then commands get ERR_NO_SUCH_ROOM (Rooms.lost), not "moving" for ever."""
    rooms = Rooms()
    rooms.claim(ROOM)
    assert rooms.no_log(ROOM, now=100.0)                 # first found missing
    assert rooms.rebuild_due(ROOM, now=100.5) and not rooms.lost(ROOM, now=100.5)
    rooms.claim(ROOM)                                    # a scan reads it again: still none
    assert not rooms.no_log(ROOM, now=130.0)             # the window runs from the first
    assert rooms.rebuild_due(ROOM, now=159.9)
    assert not rooms.rebuild_due(ROOM, now=100.0 + LOGLESS_RETRY_SECONDS)
    assert rooms.lost(ROOM, now=100.0 + LOGLESS_RETRY_SECONDS)
    assert not rooms.moving(ROOM)
    # found on a later read (handed to this table again): it runs, and the clock is gone
    rooms.claim(ROOM)
    rooms.run(ROOM, ACTOR)
    assert not rooms.lost(ROOM, now=1e9)
    rooms.lapse(ROOM)
    rooms.claim(ROOM)
    assert rooms.no_log(ROOM, now=2e9)                   # missing again: a new window
    # lost, and its directory entry deleted: nothing of it is kept
    rooms.left(ROOM)
    assert rooms.state(ROOM) is S.GONE and not rooms.lost(ROOM, now=3e9)
    assert rooms.in_state(S.LOGLESS) == []


def test_the_gauges_follow_the_rooms() -> None:
    rooms = Rooms()
    rooms.claim(1)
    rooms.run(1, ACTOR)
    assert m.ROOMS._value.get() == 1
    rooms.close(1)
    assert m.ROOMS._value.get() == 0 and m.PENDING.labels("purge")._value.get() == 1
    rooms.purged(1)
    assert m.PENDING.labels("purge")._value.get() == 0


def test_the_diagram_in_the_architecture_doc_is_the_table() -> None:
    """Every change of state the table allows is an arrow of the diagram, and no more (the
    rows that leave a state as it is are not drawn)."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## A room's life at a table", 1)[1].split("\n## ", 1)[0]
    diagram = re.search(r"```mermaid\nstateDiagram-v2\n(.*?)```", section, re.S)
    assert diagram is not None
    drawn = {(RoomState[a], Event(e.strip()), RoomState[b])
             for a, b, events in re.findall(r"^ *(\w+) --> (\w+): (.+)$", diagram[1], re.M)
             for e in events.split(",")}
    table = {(before, event, after) for event, row in TRANSITIONS.items()
             for before, after in row.items() if before is not after}
    assert drawn == table
