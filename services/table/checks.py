"""What a command may do in a room (verify/can): reads a :class:`Room`, never changes it.
A refusal is a :class:`RoomError` with the ErrorCode the player gets."""

from __future__ import annotations

import hashlib

from paiju.v1 import common_pb2
from services.table.room import Room, RoomError


def password_hash(room_id: int, password: str) -> str:
    return "" if not password else hashlib.sha256(f"{room_id}:{password}".encode()).hexdigest()


def check_join(room: Room, user_id: int, password: str) -> int:
    """The seat a join takes (the current one for a rejoin); RoomError if refused."""
    if room.closed:
        raise RoomError(common_pb2.ERR_NO_SUCH_ROOM, f"room {room.room_id} is closed")
    seat = room.seat_of(user_id)
    if seat is not None:
        return seat
    if room.password and password_hash(room.room_id, password) != room.password:
        raise RoomError(common_pb2.ERR_BAD_PASSWORD, "wrong room password")
    if room.status not in (common_pb2.ROOM_WAITING, common_pb2.ROOM_HAND_OVER):
        raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS, "the room is playing a hand")
    for i, s in enumerate(room.seats):
        if s is None:
            return i
    raise RoomError(common_pb2.ERR_ROOM_FULL, f"room {room.room_id} is full")


def require_seat(room: Room, user_id: int) -> int:
    seat = room.seat_of(user_id)
    if seat is None:
        raise RoomError(common_pb2.ERR_NOT_IN_ROOM, f"you are not in room {room.room_id}")
    return seat


def can_start(room: Room) -> bool:
    return (not room.closed and room.dismiss is None and not room.in_hand()
            and room.hand_no < room.total_hands
            and all(s is not None and s.ready for s in room.seats))


def needs_commitment(room: Room) -> bool:
    """The room will play another hand and has not committed to its server seed yet."""
    nxt = room.fair.next
    return (not room.closed and not room.in_hand() and room.hand_no < room.total_hands
            and (nxt is None or nxt.hand_no != room.hand_no + 1))


def next_hand_seedable(room: Room) -> int:
    """The hand a client seed sent now is for; RoomError when none can be taken now."""
    nxt = room.fair.next
    if room.in_hand() or nxt is None or nxt.hand_no != room.hand_no + 1:
        raise RoomError(common_pb2.ERR_HAND_IN_PROGRESS,
                        "client seeds are taken between hands, after the commitment")
    return nxt.hand_no


def dismiss_outcome(room: Room, timed_out: bool = False) -> bool | None:
    """True: dismissed (a strict majority agrees; at the countdown's end silent players
    count as agreeing); False: refused (a majority can no longer be reached); None: open."""
    assert room.dismiss is not None
    n = len(room.seated())
    need = n // 2 + 1
    votes = room.dismiss.votes
    agree = sum(1 for v in votes.values() if v)
    refuse = sum(1 for v in votes.values() if not v)
    if timed_out:
        agree += n - len(votes)
    if agree >= need:
        return True
    if n - refuse < need or timed_out:
        return False
    return None
