"""The pure parts of the clients' reconnect: lobby address lists, their rotation over the
robots, the backoff with jitter, and how a robot tells one hand's end from another's."""

from __future__ import annotations

import random

import pytest

from clients.robot.robot import Robot, hand_number
from clients.session import Backoff, lobby_addresses, rotated
from paiju import frames
from paiju.v1 import common_pb2
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm


def test_lobby_addresses_from_one_a_comma_list_or_a_list() -> None:
    assert lobby_addresses("a:1") == ["a:1"]
    assert lobby_addresses(" a:1, b:2 ,") == ["a:1", "b:2"]
    assert lobby_addresses(["a:1", "b:2,c:3"]) == ["a:1", "b:2", "c:3"]
    with pytest.raises(ValueError):
        lobby_addresses(" , ")


def test_rotation_spreads_the_start_and_keeps_the_others_to_fail_over_to() -> None:
    addrs = ["a", "b"]
    assert [rotated(addrs, i)[0] for i in range(4)] == ["a", "b", "a", "b"]
    assert rotated(["a", "b", "c"], 4) == ["b", "c", "a"]


def test_backoff_doubles_up_to_its_ceiling_with_jitter() -> None:
    b = Backoff(first=0.2, longest=3.0, give_up=60.0)
    rng = random.Random(7)
    for attempt, ceiling in ((1, 0.2), (2, 0.4), (3, 0.8), (4, 1.6), (5, 3.0), (12, 3.0)):
        pauses = [b.pause(attempt, rng) for _ in range(200)]
        assert all(ceiling / 2 <= p <= ceiling for p in pauses), attempt
        assert max(pauses) - min(pauses) > ceiling / 4, "jittered, not fixed"


def test_a_hand_is_known_by_its_event_uid_or_its_payload() -> None:
    over = frames.server_frame(g.MjHandOver(hand_no=2), event_uid="300001:3:88")
    assert hand_number(over) == 3   # the room log's hand wins
    assert hand_number(frames.server_frame(g.MjHandOver(hand_no=2))) == 2
    assert hand_number(frames.server_frame(g.DdSmallSettlement(now=4))) == 4
    assert hand_number(frames.server_frame(g.MjHandOver())) is None
    assert hand_number(frames.server_frame(g.MjHandOver(), event_uid="x:\u00b2:1")) is None


def over(hand: int) -> object:
    return frames.server_frame(g.MjHandOver(hand_no=hand, details_json="{}"),
                               event_uid=f"300001:{hand}:9")


def test_a_robot_counts_each_hand_once_whatever_it_sees_again() -> None:
    robot = Robot("a:1,b:2", 7, "xuezhan", "s")
    assert robot.addresses == ["a:1", "b:2"] and robot.address == "a:1"
    assert robot._count_hand(over(1)) and robot.stats.hands == 1
    assert not robot._count_hand(over(1)) and robot.stats.hands == 1
    robot.room_id = 300001
    # a snapshot after a reconnect: hand 3 is running, so hands 1 and 2 are over
    robot._resumed(lm.RoomJoined(room=common_pb2.RoomInfo(
        room_id=300001, cur_hand=3, status=common_pb2.ROOM_PLAYING), seat=0))
    assert robot.stats.hands == 2
    assert not robot._count_hand(over(2)) and robot._count_hand(over(3))
    assert robot.stats.hands == 3
