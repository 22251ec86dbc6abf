"""A room's limits on players asking too often: wrong VIP passwords (brute force) and
distance queries. Kept by the room's commands (commands.py) in memory only, used from the
room's task; a rebuilt room (another table, a restart) starts them afresh."""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

from paiju.v1 import common_pb2
from services.table.room import RoomError

# PASSWORD_TRIES wrong guesses in a row lock the guesser out of the room for
# PASSWORD_LOCK_SECONDS, doubled each time it happens again (up to the cap); the room
# forgets the oldest guessers first beyond PASSWORD_GUESSERS
PASSWORD_TRIES = 5
PASSWORD_LOCK_SECONDS = 60.0
PASSWORD_LOCK_MAX_SECONDS = 3600.0
PASSWORD_GUESSERS = 1000


@dataclass(slots=True)
class Guesses:
    """One user's wrong passwords: in a row, how many lockouts so far, locked until when
    (monotonic seconds; 0: not locked)."""

    wrong: int = 0
    locks: int = 0
    until: float = 0.0


class PasswordLockout:
    """Wrong VIP passwords per user: :meth:`check` before a guess, :meth:`wrong` or
    :meth:`right` after it."""

    def __init__(self, tries: int = PASSWORD_TRIES, lock_seconds: float = PASSWORD_LOCK_SECONDS,
                 max_lock_seconds: float = PASSWORD_LOCK_MAX_SECONDS,
                 remembered: int = PASSWORD_GUESSERS) -> None:
        self.tries, self.lock_seconds = tries, lock_seconds
        self.max_lock_seconds, self.remembered = max_lock_seconds, remembered
        self._users: OrderedDict[int, Guesses] = OrderedDict()   # the oldest guesser first

    def __len__(self) -> int:
        return len(self._users)

    def check(self, user_id: int, now: float) -> None:
        """RoomError ERR_RATE_LIMITED while ``user_id`` is locked out (even a right
        password is refused then, so that guessing cannot go on)."""
        g = self._users.get(user_id)
        if g is not None and g.until > now:
            raise RoomError(common_pb2.ERR_RATE_LIMITED, "too many wrong passwords: try again "
                            f"in {math.ceil(g.until - now)} s")

    def wrong(self, user_id: int, now: float) -> None:
        g = self._users.pop(user_id, None) or Guesses()
        g.wrong += 1
        if g.wrong >= self.tries:
            g.until = now + min(self.max_lock_seconds, self.lock_seconds * 2 ** g.locks)
            g.wrong, g.locks = 0, g.locks + 1
        self._users[user_id] = g   # (re-)inserted last: the oldest guessers go first
        while len(self._users) > self.remembered:
            self._users.popitem(last=False)

    def right(self, user_id: int) -> None:
        self._users.pop(user_id, None)


K = TypeVar("K")


class RateLimit(Generic[K]):
    """At most one request per key every ``seconds`` (monotonic)."""

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds, self.what = seconds, what
        self._last: dict[K, float] = {}

    def take(self, key: K, now: float) -> None:
        """Counts a request of ``key`` at ``now``, or RoomError ERR_RATE_LIMITED (not
        counted) when its last one was less than ``seconds`` ago."""
        last = self._last.get(key)
        if last is not None and now - last < self.seconds:
            raise RoomError(common_pb2.ERR_RATE_LIMITED,
                            f"{self.what} at most once every {self.seconds:g} s")
        self._last[key] = now

    def forget(self, key: K) -> None:
        self._last.pop(key, None)
