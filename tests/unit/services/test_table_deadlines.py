"""A room's deadlines (services/table/automation.py, Deadlines): named, armed and cleared one
by one, and the earliest armed one is when the room's timer fires."""

from __future__ import annotations

from services.table.automation import Deadlines, Timer


def test_the_earliest_armed_deadline_wakes_the_room() -> None:
    d = Deadlines()
    assert d.earliest() is None
    d.set(Timer.IDLE, 50.0)
    d.set(Timer.DECISION, 20.0)
    d.set(Timer.ENTRUST, 30.0)
    assert d.earliest() == 20.0
    d.clear(Timer.DECISION)
    assert d.earliest() == 30.0 and d.at(Timer.DECISION) is None
    d.set(Timer.ENTRUST, None)          # None clears
    assert d.earliest() == 50.0
    assert d.earliest(skip=Timer.IDLE) is None   # idle counts only between hands


def test_due_and_left() -> None:
    d = Deadlines()
    assert not d.due(Timer.DISMISS, 100.0) and d.left(Timer.DISMISS, 100.0) == 0.0
    d.set(Timer.DISMISS, 110.0)
    assert not d.due(Timer.DISMISS, 109.9) and d.due(Timer.DISMISS, 110.0)
    assert d.left(Timer.DISMISS, 104.0) == 6.0 and d.left(Timer.DISMISS, 120.0) == 0.0
    d.clear(Timer.DISMISS, Timer.READY)  # clearing what is not armed is nothing
    assert d.at(Timer.DISMISS) is None
