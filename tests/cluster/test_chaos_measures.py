"""The chaos harness's measures, on made-up timelines: the longest silence after a fault,
quantiles, event uids, and which fault a moment follows."""

from __future__ import annotations

from tests.support.cluster import FaultRecord, longest_gap, quantile, since_fault, uid_parts


def test_longest_gap_runs_from_the_fault_to_the_first_event_after_it_is_over() -> None:
    times = [1.0, 2.0, 2.1, 9.0, 9.1, 9.2, 30.0]
    assert longest_gap(times, 2.05, 3.0) == 9.0 - 2.1        # the first event after 3.0 counts
    # a silence that began before the fault was over counts whole
    assert longest_gap(times, 2.05, 9.5) == 30.0 - 9.2
    assert longest_gap(times, 9.15, 9.3) == 30.0 - 9.2
    assert longest_gap([1.0, 2.0, 2.1, 9.0], 2.05, 9.5) == 9.0 - 2.1   # then the room ended
    assert longest_gap(times, 31.0, 40.0) is None            # nothing after the fault at all
    assert longest_gap([], 0.0, 1.0) is None


def test_quantile_interpolates_between_ranks() -> None:
    assert quantile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert quantile([1.0, 2.0], 0.5) == 1.5
    assert quantile([4.0], 0.5) == 4.0
    assert quantile([1.0, 2.0, 3.0, 4.0, 5.0], 1.0) == 5.0


def test_event_uids_and_fault_attribution() -> None:
    assert uid_parts("12345678:3:77") == (12345678, 3, 77)
    assert uid_parts("") is None and uid_parts("a:b:c") is None and uid_parts("1:2") is None
    faults = [FaultRecord("table-kill", "table-b (owned 2 rooms)", 10.0, []),
              FaultRecord("lobby-kill", "lobby-1 (4 seated robots)", 20.0, [])]
    assert since_fault(5.0, faults) == "before any fault"
    assert since_fault(12.5, faults) == "2.5 s after table-kill table-b"
    assert since_fault(21.0, faults) == "1.0 s after lobby-kill lobby-1"
