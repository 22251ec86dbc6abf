"""services/lobby/login: a room its snapshot found closed after LoginOk named it is left out of
the user's next LoginOk for a while, whatever the lobby's room cache still holds, so a client
is sent round at most once; the record is the user's own, of that room, and expires."""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

from services.lobby import login


def app() -> Any:
    return SimpleNamespace(gone_seats=OrderedDict())


def test_found_gone_for_that_user_and_room_only() -> None:
    a = app()
    assert not login._found_gone(a, 7, 100, now=1000.0)
    login._remember_gone(a, 7, 100, now=1000.0)
    assert login._found_gone(a, 7, 100, now=1000.0)
    assert not login._found_gone(a, 7, 101, now=1000.0)   # another room of his: not this one
    assert not login._found_gone(a, 8, 100, now=1000.0)   # another user


def test_the_record_expires_and_old_ones_are_dropped() -> None:
    a = app()
    login._remember_gone(a, 7, 100, now=1000.0)
    later = 1000.0 + login.GONE_SEAT_SECONDS
    assert login._found_gone(a, 7, 100, now=later - 1)
    assert not login._found_gone(a, 7, 100, now=later)
    login._remember_gone(a, 9, 300, now=later)
    login._remember_gone(a, 8, 200, now=later)           # a later record prunes the expired one
    assert list(a.gone_seats) == [9, 8]
