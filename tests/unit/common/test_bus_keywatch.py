"""bus.KeyWatch: the None that ends a bucket's first values comes once, after the last of
them, even when nats-py's watcher sends its own None first (its consumer had handed every
value over before the client read any: a loaded process). The watcher's order of arrival
is scripted here, since that race cannot be made to happen on demand; the watch itself runs
on a real nats-server in tests/service/test_table_markers.py and test_lobby_rooms.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.common.bus import KeyWatch


@dataclass
class Entry:
    key: str
    delta: int


class Status:
    def __init__(self, values: int) -> None:
        self.values = values


class Bucket:
    """What KeyWatch reads of a nats-py KeyValue: its message count, and a watcher."""

    def __init__(self, counts: list[int], arrivals: list[Entry | None]) -> None:
        self.counts, self.arrivals = counts, arrivals
        self.stopped = False

    async def status(self) -> Status:
        return Status(self.counts.pop(0))

    async def watchall(self, **options: Any) -> Bucket:
        return self

    def __aiter__(self) -> Any:
        return self._arrive()

    async def _arrive(self) -> Any:
        for item in self.arrivals:
            yield item

    async def stop(self) -> None:
        self.stopped = True


async def seen(bucket: Bucket) -> list[str | None]:
    watch = await KeyWatch.open(bucket)  # type: ignore[arg-type]
    out = [e if e is None else e.key async for e in watch]
    await watch.stop()
    assert bucket.stopped
    return out


async def test_an_early_none_of_nats_py_waits_for_the_last_value() -> None:
    bucket = Bucket([2, 2], [None, Entry("a", 1), Entry("b", 0), Entry("c", 0), None])
    assert await seen(bucket) == ["a", "b", None, "c"]


async def test_in_order_the_values_come_then_one_none() -> None:
    bucket = Bucket([2], [Entry("a", 1), Entry("b", 0), None, Entry("c", 0)])
    assert await seen(bucket) == ["a", "b", None, "c"]


async def test_an_empty_bucket_ends_its_first_values_at_once() -> None:
    bucket = Bucket([0], [None, Entry("new", 0)])
    assert await seen(bucket) == [None, "new"]


async def test_a_bucket_emptied_as_the_watch_opened_ends_them_too() -> None:
    bucket = Bucket([3, 0], [None, Entry("new", 0)])
    assert await seen(bucket) == [None, "new"]


async def test_a_none_after_a_value_is_trusted() -> None:
    """nats-py's early None is the watch's first item; one after a value is its own end of
    the first values (the last value dropped, say an unknown marker): taken, not waited past."""
    bucket = Bucket([2], [Entry("a", 1), None, Entry("b", 0)])
    assert await seen(bucket) == ["a", None, "b"]
