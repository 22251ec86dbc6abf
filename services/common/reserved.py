"""User ids no token minter hands out: robots seated by a table and dev guests.

- **robots** (``ROBOT_LOW`` and up): a table's robot players, one id per room and seat
  (:func:`robot_id`). No login is ever accepted for them (the lobby refuses the token), so no
  session can receive what is addressed to them; the table sends them nothing private.
- **guests** (``GUEST_LOW`` .. ``ROBOT_LOW - 1``): dev guest logins (the lobby's
  ``POST /guest`` when ``lobby.guest_login`` is on), drawn at random.

Both ranges sit above every id an account service hands out (keep yours below ``GUEST_LOW``).
"""

from __future__ import annotations

import secrets

GUEST_LOW = 8_000_000_000_000_000_000
ROBOT_LOW = 9_000_000_000_000_000_000
INT64_MAX = 2 ** 63 - 1
SEATS_PER_ROOM = 10   # robot ids leave room for this many seats per room


def robot_id(room_id: int, seat: int) -> int:
    """The robot of ``seat`` in ``room_id`` (the same id for the same seat)."""
    if room_id <= 0 or not 0 <= seat < SEATS_PER_ROOM:
        raise ValueError(f"no robot id for room {room_id} seat {seat}")
    return ROBOT_LOW + room_id * SEATS_PER_ROOM + seat


def is_robot(user_id: int) -> bool:
    return user_id >= ROBOT_LOW


def is_guest(user_id: int) -> bool:
    return GUEST_LOW <= user_id < ROBOT_LOW


def new_guest_id() -> int:
    """A fresh guest id (random in the guest range: collisions are negligible)."""
    return GUEST_LOW + 1 + secrets.randbelow(ROBOT_LOW - GUEST_LOW - 1)
