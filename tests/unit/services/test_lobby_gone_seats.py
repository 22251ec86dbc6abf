"""services/lobby/login: a room its snapshot found closed after LoginOk named it is left out of
the user's next LoginOk for a while, whatever the lobby's room cache still holds, so a client
is sent round at most once; the record is the user's own, of that room, and expires."""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

import pytest

from services.lobby import login


def app() -> Any:
    return SimpleNamespace(gone_seats=OrderedDict())


def test_found_gone_for_that_user_and_room_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(login.time, "monotonic", lambda: 1000.0)
    a = app()
    assert not login._found_gone(a, 7, 100)
    login._remember_gone(a, 7, 100)
    assert login._found_gone(a, 7, 100)
    assert not login._found_gone(a, 7, 101)      # another room of his: not this one
    assert not login._found_gone(a, 8, 100)      # another user


def test_the_record_expires_and_old_ones_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(login.time, "monotonic", lambda: now[0])
    a = app()
    login._remember_gone(a, 7, 100)
    now[0] += login.GONE_SEAT_SECONDS - 1
    assert login._found_gone(a, 7, 100)
    now[0] += 1
    assert not login._found_gone(a, 7, 100)
    login._remember_gone(a, 9, 300)
    login._remember_gone(a, 8, 200)               # a later record prunes the expired one
    assert list(a.gone_seats) == [9, 8]
