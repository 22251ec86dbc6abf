"""bench.ab reads bench_system's report: the figures it compares come out of the report as
bench_system writes them, and the two sides run in turns."""

from __future__ import annotations

import pytest

from bench import ab
from bench.bench_system import Floor, Latency, SystemRun, floor_lines, report

NO_LATENCY = {name: Latency(0.0, 0.0, 0, 0.0)
              for name in ("action", "log append", "fan-out", "arbiter")}


def run(game: str, actions: int, cpu: dict[str, float]) -> SystemRun:
    return SystemRun(game=game, rooms=16, expected=256, hands=256, actions=actions,
                     seconds=10.0, refused=0, failed=[], latency=NO_LATENCY, cpu=cpu)


def test_the_figures_of_bench_systems_report_are_read_back() -> None:
    runs = [run("changsha", 8_000, {"lobby": 4.0, "table": 8.0, "nats-server": 2.0,
                                    "robots (this process)": 5.12}),
            run("xuezhan", 16_000, {"lobby": 4.0, "table": 8.0, "nats-server": 4.0,
                                    "robots (this process)": 2.56})]
    floor = Floor(bidi=100.0, append=150.0, publish=10.0, request=190.0)   # total 500
    text = "\n".join(report(runs, {"changsha": (1.0, 100), "xuezhan": (1.0, 100)}, 1.0, "cmd")
                     + floor_lines(runs, floor))

    figures = ab.parse_system(text)

    assert figures == {
        # server CPU: every process but the robots, per action; robots per hand
        "changsha": ab.Figures(server_us=1750.0, floor_us=500.0, actions_per_s=800.0,
                               robots_ms=20.0),
        "xuezhan": ab.Figures(server_us=1000.0, floor_us=500.0, actions_per_s=1600.0,
                              robots_ms=10.0)}


@pytest.mark.parametrize(("rounds", "sides"), [(1, [0, 1]), (3, [0, 1, 1, 0, 0, 1])])
def test_the_sides_run_in_turns_as_often_each(rounds: int, sides: list[int]) -> None:
    assert ab.order(rounds) == sides
