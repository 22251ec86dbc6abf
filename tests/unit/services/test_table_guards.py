"""A room's limits (services/table/guards.py, watchers.py): wrong VIP passwords lock a user
out for longer each time, the room forgets its oldest guessers first, distance queries are
rate limited per seat, and watchers are counted once per session up to a limit."""

from __future__ import annotations

import pytest

from paiju.v1 import common_pb2
from services.table.guards import PasswordLockout, RateLimit
from services.table.room import RoomError
from services.table.watchers import Watchers


def locked(lockout: PasswordLockout, user: int, now: float) -> str | None:
    try:
        lockout.check(user, now)
    except RoomError as err:
        assert err.code == common_pb2.ERR_RATE_LIMITED
        return str(err)
    return None


def test_tries_wrong_passwords_in_a_row_lock_out_for_twice_as_long_each_time() -> None:
    lockout = PasswordLockout(tries=3, lock_seconds=10, max_lock_seconds=25)
    for _ in range(2):
        lockout.wrong(7, 0.0)
    assert locked(lockout, 7, 0.0) is None
    lockout.wrong(7, 0.0)
    assert locked(lockout, 7, 9.5) == "too many wrong passwords: try again in 1 s"
    assert locked(lockout, 7, 10.0) is None
    assert locked(lockout, 8, 0.0) is None            # per user
    for _ in range(3):
        lockout.wrong(7, 10.0)
    assert locked(lockout, 7, 29.0) is not None       # 20 s the second time
    assert locked(lockout, 7, 30.0) is None
    for _ in range(3):
        lockout.wrong(7, 30.0)
    assert locked(lockout, 7, 54.0) is not None       # 40 s capped at 25
    assert locked(lockout, 7, 55.0) is None


def test_a_right_password_forgets_the_wrong_ones() -> None:
    lockout = PasswordLockout(tries=3)
    lockout.wrong(7, 0.0)
    lockout.wrong(7, 0.0)
    lockout.right(7)
    lockout.wrong(7, 0.0)
    lockout.wrong(7, 0.0)
    assert locked(lockout, 7, 0.0) is None and len(lockout) == 1


def test_the_oldest_guessers_are_forgotten_first() -> None:
    lockout = PasswordLockout(tries=1, lock_seconds=60, remembered=2)
    lockout.wrong(1, 0.0)
    lockout.wrong(2, 0.0)
    lockout.wrong(1, 0.0)     # 1 guessed again: 2 is now the oldest
    lockout.wrong(3, 0.0)
    assert len(lockout) == 2
    assert locked(lockout, 2, 1.0) is None
    assert locked(lockout, 1, 1.0) is not None and locked(lockout, 3, 1.0) is not None


def test_a_rate_limit_allows_one_request_per_key_per_period() -> None:
    limit: RateLimit[int] = RateLimit(2.0, "distances")
    limit.take(0, 100.0)
    with pytest.raises(RoomError, match="distances at most once every 2 s") as err:
        limit.take(0, 101.9)
    assert err.value.code == common_pb2.ERR_RATE_LIMITED
    limit.take(1, 101.9)      # per key
    limit.take(0, 102.0)      # a refused request did not count
    limit.forget(0)
    limit.take(0, 102.5)


def test_watchers_count_each_session_once_up_to_the_limit() -> None:
    watchers = Watchers(limit=2)
    assert watchers.watch("s1", 5) and not watchers.watch("s1", 5)   # a resync
    assert watchers.watch("", 6)                                     # no session: the user
    with pytest.raises(RoomError, match="too many watchers") as err:
        watchers.watch("s3", 7)
    assert err.value.code == common_pb2.ERR_ROOM_FULL
    assert not watchers.watch("", 6) and len(watchers) == 2
    assert watchers.unwatch("s1", 5) and not watchers.unwatch("s1", 5)
    assert watchers.watch("s3", 7) and len(watchers) == 2
