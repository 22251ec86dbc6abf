"""Where rooms go when a table dies or drains (services/table/placement.py)."""

from __future__ import annotations

from collections import Counter

from paiju.contracts.directory import TableEntry
from services.table.placement import adoption_order, drain_target, should_adopt


def table(name: str, rooms: int = 0, started: float = 0.0,
          draining: bool = False) -> TableEntry:
    return TableEntry(instance=name, address=f"{name}:1", rooms=rooms, players=0,
                      started_at=started, draining=draining)


def test_every_table_computes_the_same_adoption_order() -> None:
    tables = [table("a"), table("b"), table("c")]
    for room in range(10_000_000, 10_000_050):
        assert adoption_order(room, tables) == adoption_order(room, list(reversed(tables)))


def test_the_rooms_of_a_dead_table_spread_over_the_survivors() -> None:
    tables = [table("a"), table("b"), table("c")]
    first = Counter(adoption_order(room, tables)[0] for room in range(10_000_000, 10_003_000))
    assert set(first) == {"a", "b", "c"}
    assert min(first.values()) > 800   # about a third each, not all on one table


def test_only_the_preferred_table_adopts_at_once_the_others_after_the_fallback() -> None:
    tables = [table("a"), table("b"), table("c")]
    room = 12345678
    order = adoption_order(room, tables)
    assert should_adopt(room, order[0], tables, waited=0.0, fallback=5.0)
    assert not should_adopt(room, order[1], tables, waited=0.0, fallback=5.0)
    assert should_adopt(room, order[1], tables, waited=5.0, fallback=5.0)


def test_draining_tables_never_adopt() -> None:
    tables = [table("a", draining=True), table("b")]
    for room in range(10_000_000, 10_000_020):
        assert adoption_order(room, tables) == ["b"]
        assert not should_adopt(room, "a", tables, waited=60.0, fallback=5.0)


def test_a_drain_hands_rooms_to_newer_tables_least_loaded_first() -> None:
    me = table("old-1", started=100.0)
    tables = [me, table("old-2", rooms=0, started=90.0), table("new-1", rooms=5, started=200.0),
              table("new-2", rooms=2, started=210.0), table("gone", started=300.0, draining=True)]
    assert drain_target(me, tables).instance == "new-2"
    # rooms handed during this drain count as load
    assert drain_target(me, tables, {"new-2": 4}).instance == "new-1"


def test_without_a_newer_table_a_drain_takes_the_least_loaded_other() -> None:
    me = table("t1", started=500.0)
    tables = [me, table("t2", rooms=3, started=10.0), table("t3", rooms=1, started=20.0)]
    assert drain_target(me, tables).instance == "t3"
    assert drain_target(me, [me, table("t4", draining=True)]) is None
