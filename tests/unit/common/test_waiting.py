"""The tests' one poll helper (tests/support/waiting.py): what it returns, when it fails,
and that a check that hangs is cut off at the deadline."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.waiting import eventually, until


async def test_the_first_truthy_value_is_returned_from_a_plain_or_async_check() -> None:
    calls = iter([0, "", "got"])
    assert await eventually(lambda: next(calls), every=0) == "got"

    async def later() -> int:
        return 7
    assert await eventually(later) == 7


async def test_a_check_that_never_holds_fails_with_what_and_its_last_value() -> None:
    with pytest.raises(AssertionError, match=r"the door opened \(last 0, 0.1 s\)"):
        await eventually(lambda: 0, "the door opened", seconds=0.1)
    assert await until(lambda: False, 0.05) is False


async def test_a_check_that_hangs_is_cut_off_at_the_deadline() -> None:
    async def hangs() -> bool:
        await asyncio.sleep(3600)
        return True
    with pytest.raises(AssertionError, match="hung"):
        await asyncio.wait_for(eventually(hangs, "hung", seconds=0.1), 5)


async def test_errors_go_up_unless_retried() -> None:
    def broken() -> bool:
        raise ConnectionError("no leader")
    with pytest.raises(ConnectionError):
        await eventually(broken)
    with pytest.raises(AssertionError, match="last error ConnectionError"):
        await eventually(broken, "elected", seconds=0.1, retry=True)


async def test_a_checks_own_assertion_or_timeout_is_not_taken_for_the_deadline() -> None:
    def asserts() -> bool:
        assert 1 == 2, "the room's seat count"
        return True
    with pytest.raises(AssertionError, match="the room's seat count"):
        await until(asserts, 5)

    def times_out() -> bool:
        raise TimeoutError("the table's own request")
    with pytest.raises(TimeoutError, match="the table's own request"):
        await eventually(times_out, seconds=5)
