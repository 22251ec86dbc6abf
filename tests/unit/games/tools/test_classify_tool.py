"""The Dadun rules tool, run as a subprocess: ``python -m games.tools.classify``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]

# rules/dadun.md §7: (play, hand size or None, previous, class, beats); None class = invalid
SECTION_7 = [
    ("5h", None, "4s", 1, True),
    ("Kh Kd", 10, "Qs Qs", 2, True),
    ("2c 2c", 10, "Ah Ad", 2, True),
    ("SJ SJ", 10, "2h 2d", 15, True),
    ("SJ BJ", 10, "2h 2s", 27, True),
    ("SJ BJ", 10, "SJ SJ", 27, False),
    ("BJ BJ", 10, "SJ SJ", 15, True),
    ("3h 3d 3c", 10, None, None, None),
    ("3h 3d 3c", 3, "9s 9h 9d 4c 5c", 3, False),
    ("Ts Td Tc", None, "9s 9h 9d 4c 5c", 3, True),
    ("7h 7d 7c 9s 4d", 10, "6s 6h 6d Ks Kd", 5, True),
    ("8s 8h 8d 8c 3d", 10, "7h 7d 7c 9s 4d", 5, True),
    ("4s 5h 6d 7c 8s", 10, "3s 4h 5d 6c 7s", 6, True),
    ("9s Th Jd Qc Ks Ah", 10, "3s 4h 5d 6c 7s", 6, False),
    ("Ts Jh Qd Kc As 2h", 10, None, None, None),
    ("5s 5h 6d 6c", 10, "4s 4h 5d 5c", 7, True),
]


def run_tool(lines: list[str]) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "games.tools.classify"],
        input="".join(line + "\n" for line in lines),
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=True,
    )
    return [json.loads(line) for line in proc.stdout.splitlines()]


def request(play: str, hand: int | None, previous: str | None) -> str:
    data: dict = {"cards": play, "previous": previous}
    if hand is not None:
        data["hand_size"] = hand
    return json.dumps(data)


def test_section_7_vectors_through_the_tool():
    out = run_tool([request(p, h, prev) for p, h, prev, _, _ in SECTION_7])
    assert len(out) == len(SECTION_7)
    for (play, _, _prev, cls, wins), got in zip(SECTION_7, out, strict=True):
        if cls is None:
            assert got["valid"] is False and got["reason"], (play, got)
            assert got["beats"] is None
        else:
            assert (got["valid"], got["class"], got["beats"]) == (True, cls, wins), (play, got)


def test_example_line_of_the_rules_readme():
    [got] = run_tool(['{"cards": "5h Td Ks", "previous": "Ah Ad", "hand_size": 10}'])
    assert got == {"valid": True, "class": 9, "class_name": "five_ten_king", "pure": False,
                   "beats": True}


def test_pure_510k_and_null_beats_without_previous():
    [got] = run_tool(['{"cards": "5s Ts Ks"}'])
    assert got == {"valid": True, "class": 9, "class_name": "five_ten_king", "pure": True,
                   "beats": None}


def test_bad_lines_get_an_error_and_the_tool_goes_on():
    lines = ["not json", "[1, 2]", '{"cards": "5h Xx"}', '{"previous": "5h"}',
             '{"cards": "5h 5d", "hand_size": 1}', '{"cards": "5h", "previous": "5h 6d"}',
             '{"cards": "6h", "previous": "5h"}']
    out = run_tool(lines)
    assert [("error" in o) for o in out] == [True] * 6 + [False]
    assert "Xx" in out[2]["error"]
    assert out[6]["beats"] is True


@pytest.mark.timeout(60)
def test_each_answer_is_flushed_before_the_next_line_arrives():
    proc = subprocess.Popen(
        [sys.executable, "-m", "games.tools.classify"], cwd=ROOT, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:
        for play, cls in (("5h", 1), ("SJ SJ BJ BJ", 21)):
            proc.stdin.write(json.dumps({"cards": play}) + "\n")
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["class"] == cls
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_room_options_decide_pure_510k_against_pure_510k():
    line = {"cards": "5s Ts Ks", "previous": "5h Th Kh", "hand_size": 10}
    lines = [json.dumps(line),
             json.dumps({**line, "options": {"pure510k_suit_order": False}}),
             json.dumps({**line, "options": {"pure510k_suit_order": True}}),
             json.dumps({**line, "cards": "5d Td Kd", "options": {"pure510k_suit_order": True}}),
             json.dumps({**line, "cards": "5d Th Ks", "previous": "5c Tc Kh",
                         "options": {"pure510k_suit_order": True}}),
             json.dumps({**line, "options": {"pure510k_suit_order": "yes"}}),
             json.dumps({**line, "options": {"no_such_option": 1}}),
             json.dumps({**line, "options": [True]}),
             json.dumps({"cards": "5s Ts Ks", "options": {"pure510k_suit_order": True}})]
    out = run_tool(lines)
    assert [o.get("beats") for o in out[:5]] == [False, False, True, False, False]
    assert all(o["pure"] for o in out[:4]) and out[4]["pure"] is False
    assert ["error" in o for o in out[5:8]] == [True, True, True]
    assert "pure510k_suit_order" in out[5]["error"] and "no_such_option" in out[6]["error"]
    assert out[8] == {"valid": True, "class": 9, "class_name": "five_ten_king", "pure": True,
                      "beats": None}
