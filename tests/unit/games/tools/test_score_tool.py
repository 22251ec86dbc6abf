"""``python -m games.tools.score`` as a subprocess: the §A12 and §B9 vectors in the format of
../shared/rules/README.md, waits, and bad lines that get an error while the tool goes on.
Expected replies are written by hand from the rules documents."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
TOOL = [sys.executable, "-m", "games.tools.score"]


def run_tool(lines: list[str]) -> list[dict]:
    done = subprocess.run(
        TOOL, input="".join(line + "\n" for line in lines), capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def xz(concealed, win_tile, win="discard", melds=(), **extra):
    request = {
        "variant": "xuezhan",
        "concealed": concealed,
        "melds": [{"kind": "peng", "tiles": t * 3} for t in melds],
        "win_tile": win_tile,
        "win": win,
        "flags": [],
        "void": "s",
        "options": {},
    }
    return {**request, **extra}


def cs(concealed, win_tile, win="discard", melds=(), **extra):
    request = {"variant": "changsha", "concealed": concealed, "win_tile": win_tile, "win": win}
    request["melds"] = [{"kind": k, "tiles": t} for k, t in melds]
    return {**request, **extra}


def xz_out(patterns, roots, fan, per_payer):
    return {
        "winning": True,
        "patterns": patterns,
        "roots": roots,
        "fan": fan,
        "per_payer": per_payer,
    }


def cs_out(patterns, big_hu, per_payer):
    return {"winning": True, "patterns": patterns, "big_hu": big_hu, "per_payer": per_payer}


QQR = [("chi", "123m"), ("peng", "555p"), ("chi", "789s"), ("peng", "333s")]

CASES = [
    ("XZ-01", xz("123456789m234p5p", "5p"), xz_out(["basic"], 0, 0, 1)),
    ("XZ-02", xz("111333m555777p9p", "9p"), xz_out(["all_pungs"], 0, 1, 2)),
    ("XZ-03", xz("123345678999m2m", "2m"), xz_out(["basic", "full_flush"], 0, 2, 4)),
    ("XZ-04", xz("113355m224466p8p", "8p"), xz_out(["seven_pairs"], 0, 2, 4)),
    ("XZ-05", xz("1111335m224466p", "5m"), xz_out(["seven_pairs", "root"], 1, 3, 8)),
    (
        "XZ-06",
        xz("1122445566889m", "9m", "self_draw"),
        xz_out(["seven_pairs", "full_flush", "self_draw"], 0, 5, 16),
    ),
    ("XZ-07", xz("1111224455668m", "8m"), xz_out(["seven_pairs", "full_flush", "root"], 1, 5, 16)),
    (
        "XZ-08",
        xz("5557779m", "9m", melds=("1m", "3m")),
        xz_out(["all_pungs", "full_flush"], 0, 3, 8),
    ),
    (
        "XZ-09",
        xz("8p", "8p", melds=("1m", "4m", "2p", "6p")),
        xz_out(["all_pungs", "single_wait"], 0, 2, 4),
    ),
    ("XZ-10", xz("222555m222888p5p", "5p"), xz_out(["all_pungs", "all_258"], 0, 3, 8)),
    ("XZ-11", xz("1278999m111999p", "3m"), xz_out(["basic", "terminals"], 0, 2, 4)),
    ("XZ-12", xz("111123m456789p5p", "5p"), xz_out(["basic", "root"], 1, 1, 2)),
    (
        "XZ-07 uncapped",
        xz("1111224455668m", "8m", options={"cap_fan": "none"}),
        xz_out(["seven_pairs", "full_flush", "root"], 1, 5, 32),
    ),
    (
        "XZ heavenly",
        xz("123456789m234p5p", "5p", "self_draw", flags=["heavenly"]),
        xz_out(["heavenly", "basic"], 0, 5, 16),
    ),
    (
        "XZ void",
        xz("123456789m234p5p", "5p", void="m"),
        {
            "winning": False,
            "patterns": [],
            "roots": 0,
            "fan": 0,
            "per_payer": 0,
            "reason": "void suit tile held",
        },
    ),
    ("CS-01", cs("123456m789p234s5s", "5s", "self_draw"), cs_out(["small_hu"], 0, 2)),
    ("CS-02", cs("123456m789p234s5s", "5s"), cs_out(["small_hu"], 0, 1)),
    (
        "CS-03",
        cs("123456m789p234s1s", "1s", "self_draw"),
        {
            "winning": False,
            "patterns": [],
            "big_hu": 0,
            "per_payer": 0,
            "reason": "small hu needs a 2/5/8 pair",
        },
    ),
    ("CS-04", cs("111m333p666s999s7m", "7m"), cs_out(["all_pungs"], 1, 6)),
    ("CS-05", cs("2225588m22555p8s", "8s", "self_draw"), cs_out(["all_258"], 1, 6)),
    ("CS-06", cs("111234456789m9m", "9m"), cs_out(["full_flush"], 1, 6)),
    (
        "CS-07",
        cs("111333555777m9m", "9m", "self_draw"),
        cs_out(["all_pungs", "full_flush"], 2, 12),
    ),
    ("CS-08", cs("1133m5577p99224s", "4s"), cs_out(["seven_pairs"], 1, 6)),
    ("CS-09", cs("111133m5577p992s", "2s", "self_draw"), cs_out(["luxury_seven_pairs"], 2, 12)),
    ("CS-10", cs("1122335566889m", "9m"), cs_out(["seven_pairs", "full_flush"], 2, 12)),
    ("CS-11", cs("7m", "7m", melds=QQR), cs_out(["all_melded"], 1, 6)),
    (
        "CS-12",
        cs("456m789p234s5s", "5s", "self_draw", [("kaigang", "1111m")], flags=["kong_bloom"]),
        cs_out(["kong_bloom"], 1, 6),
    ),
    (
        "waits",
        {
            "op": "waits",
            "variant": "xuezhan",
            "concealed": "2223344m112233p",
            "melds": [],
            "void": "s",
        },
        {"waits": ["2m", "3m", "4m", "5m"], "best_fan": 3},
    ),
]


@pytest.fixture(scope="module")
def replies() -> list[dict]:
    return run_tool([json.dumps(request) for _, request, _ in CASES])


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_vectors_through_the_tool(replies, index):
    assert len(replies) == len(CASES)
    assert replies[index] == CASES[index][2]


GOOD = json.dumps(xz("123456789m234p5p", "5p"))
BAD_LINES = [
    ("not json", "bad JSON"),
    (json.dumps({"variant": "riichi", "concealed": "1m"}), "unknown variant"),
    (json.dumps(xz("123456789m2x4p5p", "5p")), "bad tile notation"),
    (json.dumps(xz("123456789m24p", "5p")), "expected 13"),
    (json.dumps(xz("123456789m234p5p", "5p", flags=["lucky"])), "unknown flags"),
    (json.dumps(xz("123456789m234p5p", "5p", extra=1)), "unknown keys"),
    (json.dumps(cs("456789m234p5p", "5p", melds=[("pong", "111m")])), "unknown meld kind"),
    (json.dumps(cs("123456m789p234s5s", "5s", void="s")), "XueZhan"),
    (json.dumps(xz("123456789m234p5p", "5p", options={"cap_fan": 9})), "cap_fan"),
    ("[1, 2]", "JSON object"),
]


def test_each_bad_line_gets_an_error_and_the_next_line_is_answered():
    lines = [line for bad, _ in BAD_LINES for line in (bad, GOOD)]
    out = run_tool(lines)
    assert len(out) == len(lines)
    for (_, message), error, good in zip(BAD_LINES, out[0::2], out[1::2], strict=True):
        assert set(error) == {"error"} and message in error["error"]
        assert good == xz_out(["basic"], 0, 0, 1)


def test_replies_are_flushed_line_by_line():
    with subprocess.Popen(
        TOOL, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    ) as proc:
        for _ in range(2):
            proc.stdin.write(GOOD + "\n")
            proc.stdin.flush()
            # A hang guard, not a speed check: the reply must come before stdin closes.
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, "no reply while stdin is still open"
            assert json.loads(proc.stdout.readline())["per_payer"] == 1
        proc.stdin.close()
        assert proc.wait() == 0
