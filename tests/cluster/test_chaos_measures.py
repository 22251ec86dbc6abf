"""The chaos harness's measures, on made-up timelines: the longest silence after a fault,
quantiles, event uids, which fault a moment follows, and which rooms a fault left stuck."""

from __future__ import annotations

from types import SimpleNamespace
from unittest.mock import patch

from paiju.v1 import table_pb2
from tests.support.cluster import (
    ALL_HANDS_PLAYED,
    ChaosPlan,
    ChaosResult,
    ChaosRun,
    FaultRecord,
    Observer,
    RoomRun,
    TimedRobot,
    came_back_to_no_room,
    figures,
    longest_gap,
    quantile,
    since_fault,
    uid_parts,
)


def test_longest_gap_runs_from_the_fault_to_the_first_event_after_it_is_over() -> None:
    times = [1.0, 2.0, 2.1, 9.0, 9.1, 9.2, 30.0]
    assert longest_gap(times, 2.05, 3.0) == 9.0 - 2.1        # the first event after 3.0 counts
    # a silence that began before the fault was over counts whole
    assert longest_gap(times, 2.05, 9.5) == 30.0 - 9.2
    assert longest_gap(times, 9.15, 9.3) == 30.0 - 9.2
    assert longest_gap([1.0, 2.0, 2.1, 9.0], 2.05, 9.5) == 9.0 - 2.1   # then the room ended
    assert longest_gap(times, 31.0, 40.0) is None            # nothing after the fault at all
    assert longest_gap([], 0.0, 1.0) is None


def test_quantile_interpolates_between_ranks() -> None:
    assert quantile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert quantile([1.0, 2.0], 0.5) == 1.5
    assert quantile([4.0], 0.5) == 4.0
    assert quantile([1.0, 2.0, 3.0, 4.0, 5.0], 1.0) == 5.0


def test_event_uids_and_fault_attribution() -> None:
    assert uid_parts("12345678:3:77") == (12345678, 3, 77)
    assert uid_parts("") is None and uid_parts("a:b:c") is None and uid_parts("1:2") is None
    faults = [FaultRecord("table-kill", "table-b (owned 2 rooms)", 10.0, []),
              FaultRecord("lobby-kill", "lobby-1 (4 seated robots)", 20.0, [])]
    assert since_fault(5.0, faults) == "before any fault"
    assert since_fault(12.5, faults) == "2.5 s after table-kill table-b"
    assert since_fault(21.0, faults) == "1.0 s after lobby-kill lobby-1"


def _robot(uid: int, home: int, prompts: list[float], *, dismissed: bool = False,
           ended_away: bool = False) -> TimedRobot:
    robot = TimedRobot("127.0.0.1:1", uid, "xuezhan", "secret", home=home)
    robot.prompt_times = prompts
    robot.stats.closed_reason = ALL_HANDS_PLAYED if dismissed else None
    robot.stats.ended_away = ended_away
    robot.ended_at = 20.0
    return robot


def _measured(robots: list[TimedRobot], events: list[float], fault_at: float) -> FaultRecord:
    """A lobby fault (lobby 1 SIGTERM at ``fault_at``) measured on one made-up room."""
    chaos = ChaosRun(SimpleNamespace(nats=None), ChaosPlan())  # type: ignore[arg-type]
    run = RoomRun("xuezhan", 0, 200_000, 4, room_id=42, robots=robots, started=0.0, ended=20.0)
    chaos.rooms.append(run)
    chaos.observer.times[42] = events
    rec = FaultRecord("rolling-lobbies", "lobby-2 (SIGTERM, 1 rooms in play)", fault_at, [42],
                      homes={1}, until=fault_at + 5.0)
    chaos.measure(rec)
    return rec


def test_a_room_that_ended_as_its_lobby_went_is_not_counted_stuck() -> None:
    """The room's last frames (its last hand, its NoticeDismiss) went out as lobby 2 was
    stopped: its robots there missed them and, logged in again, found no seat (the room was
    over). The room was not hit: neither stuck nor its players lost (the chaos report of
    5c9f299 counted such a room as "never had an event again" and its two players as "never
    got a prompt again")."""
    robots = [_robot(1, 0, [1.0, 5.0], dismissed=True), _robot(2, 1, [2.0, 6.0], ended_away=True),
              _robot(3, 0, [3.0, 7.0], dismissed=True), _robot(4, 1, [4.0, 8.0], ended_away=True)]
    rec = _measured(robots, [1.0, 4.0, 8.0, 9.0], fault_at=9.05)
    assert rec.rooms == [] and rec.recovery == {} and rec.players_lost == []


def test_a_room_silent_after_a_lobby_fault_is_stuck_and_its_players_lost() -> None:
    """The same timeline, but lobby 2's robots did not find their room over (they are still
    seated and wait): the room is stuck, and they are lost."""
    robots = [_robot(1, 0, [1.0, 5.0], dismissed=True), _robot(2, 1, [2.0, 6.0]),
              _robot(3, 0, [3.0, 7.0], dismissed=True), _robot(4, 1, [4.0, 8.0])]
    rec = _measured(robots, [1.0, 4.0, 8.0, 9.0], fault_at=9.05)
    assert rec.rooms == [42] and rec.recovery == {42: None}
    assert rec.players_lost == ["room 42 user 2", "room 42 user 4"]
    # a room that played on after the fault: one of lobby 2's robots came back to no room
    # (the room ended while it was away) and is not lost; the other never got a prompt again
    robots = [_robot(1, 0, [1.0, 5.0, 12.0], dismissed=True), _robot(2, 1, [2.0, 6.0]),
              _robot(3, 0, [3.0, 7.0, 13.0], dismissed=True),
              _robot(4, 1, [4.0, 8.0], ended_away=True)]
    rec = _measured(robots, [1.0, 4.0, 8.0, 9.0, 12.0, 13.0], fault_at=9.05)
    assert rec.recovery == {42: 12.0 - 9.05} and rec.players_lost == ["room 42 user 2"]


def test_a_robot_stopped_while_still_waiting_in_its_ended_room_did_not_come_back_to_it() -> None:
    """A robot cancelled at the run's end while it waited in a room that had ended without
    telling it is not "away at the end" (the verdict lists it among those that gave up),
    however late it ended; one that logged in again and found no seat is."""
    waiting = _robot(1, 0, [1.0])
    waiting.ended_at = 300.0           # cancelled by the run, long after the room's end
    assert not came_back_to_no_room(waiting)
    assert came_back_to_no_room(_robot(2, 0, [1.0], ended_away=True))
    assert not came_back_to_no_room(_robot(3, 0, [1.0], dismissed=True))


def test_a_nats_faults_pauses_are_set_against_the_election_of_each_rooms_stream() -> None:
    """Room 3's log is on ROOMLOG_0 (its id modulo three), room 4's on ROOMLOG_1: each
    pause is set against its own stream's election, a room of a stream without a measured
    election against none."""
    rec = FaultRecord("nats-leader", "paiju-n1 (leader of ROOMLOG_0, ROOMLOG_1)", 10.0,
                      [3, 4, 5], pause={3: 5.0, 4: 4.0, 5: 9.0},
                      election={"ROOMLOG_0": 4.5, "ROOMLOG_1": 4.5})
    kind = figures(ChaosResult(ChaosPlan(), faults=[rec]))["nats-leader"]
    assert kind.election == [4.5, 4.5]
    assert kind.beyond == [0.5, -0.5]


async def test_a_message_from_before_the_newest_position_seen_is_no_sign_of_life() -> None:
    """A frozen table's buffer goes out when it is continued: messages of its room's past
    (its adopter has played on and the room may have ended) arrive late; they are not the
    room's events after a pause (the chaos report counted one as a 4.3 s pause)."""
    observer = Observer(SimpleNamespace())  # type: ignore[arg-type]

    async def arrive(index: int, part: int, at: float) -> None:
        msg = table_pb2.RoomEvents(room_id=42, index=index, part=part)
        msg.frames.add().event_uid = f"42:1:{index}"
        with patch("tests.support.cluster.now", return_value=at):
            await observer._on_events(SimpleNamespace(subject="room.42.events",
                                                      data=msg.SerializeToString()))

    await arrive(7, 0, 1.0)
    await arrive(7, 1, 1.1)      # a prompt at the same record
    await arrive(8, 0, 1.5)
    await arrive(8, 0, 1.52)     # the same message through another node's connection
    await arrive(6, 0, 9.0)      # the continued table's buffer
    assert observer.times[42] == [1.0, 1.1, 1.5, 1.52]
    assert (42, 1) in observer.hands
