"""The failover watch's rule for a continued table's appends (tests/support/failover.py,
``begun_before_stop``): only the first append within a second of SIGCONT, with its retries
and none stored, is excused as one begun before the stop."""

from __future__ import annotations

from tests.support.failover import IN_FLIGHT, Append, begun_before_stop

CONTINUED = 100.0


def refused(reply: str) -> bool:
    return False


def test_an_append_begun_before_the_stop_and_its_retry_are_excused() -> None:
    late: list[Append] = [(CONTINUED + 0.01, "7:40:b:x", 40, "r1"),
                          (CONTINUED + 0.07, "7:40:b:x", 40, "r2")]   # its retry
    assert begun_before_stop(late, CONTINUED, refused) == (late, [])


def test_a_second_record_is_a_breach() -> None:
    late: list[Append] = [(CONTINUED + 0.01, "7:40:b:x", 40, "r1"),
                          (CONTINUED + 0.30, "7:41:b:y", 41, "r3")]
    assert begun_before_stop(late, CONTINUED, refused) == (late[:1], late[1:])


def test_an_append_stored_or_late_excuses_nothing() -> None:
    late: list[Append] = [(CONTINUED + 0.01, "7:40:b:x", 40, "r1"),
                          (CONTINUED + 0.07, "7:40:b:x", 40, "r2")]
    assert begun_before_stop(late, CONTINUED, lambda reply: reply == "r2") == ([], late)
    # the first try stored, its retry answered as a duplicate (not stored again)
    assert begun_before_stop(late, CONTINUED, lambda reply: reply == "r1") == ([], late)
    slow: list[Append] = [(CONTINUED + IN_FLIGHT + 0.1, "7:40:b:x", 40, "r1")]
    assert begun_before_stop(slow, CONTINUED, refused) == ([], slow)


def test_no_append_no_breach() -> None:
    assert begun_before_stop([], CONTINUED, refused) == ([], [])
