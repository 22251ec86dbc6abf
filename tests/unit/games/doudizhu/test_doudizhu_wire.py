"""Dou Dizhu on the wire: docs/protocol.md's "Dou Dizhu" table is what the table sends (every
event kind the engine emits is a GameEvent of the table's codec, named there with every
field of its data); hidden information: a seat's cards only in events addressed to it, the
bottom only once the landlord is known, the other seats' hands in no observation before the
end; the table's codec maps the frames and rule errors of the game."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from games import registry
from games.engine import Action
from paiju.v1 import client_pb2, doudizhu_pb2
from paiju.v1 import game_msgs_pb2 as g
from services.table import variants
from services.table.codec import action_from_frame, event_frame, rule_error_code
from services.table.wire import InfoSeats

DOC = (Path(__file__).resolve().parents[4] / "docs" / "protocol.md").read_text(encoding="utf-8")
SPEC = registry.get("doudizhu")


def _section() -> dict[str, set[str]]:
    """kind -> the json fields the page's Dou Dizhu table lists."""
    text = DOC.split("### Dou Dizhu", 1)[1].split("\n## ", 1)[0]
    out: dict[str, set[str]] = {}
    for kind, fields in re.findall(r"^\| `(\w+)`[^|]*\| `([^|]*)` \|", text, re.M):
        fields = re.sub(r"\[[^]]*\]", "", fields)   # "hands [{seat, cards}]": hands
        out[kind] = {f.strip(" .`") for f in fields.split(",")} - {""}
    return out


def _hands(n: int = 12) -> list[tuple[Any, list[Any]]]:
    out = []
    for seed in range(n):
        state = SPEC.new_hand({}, seed, seed % 3)
        events = list(state.deal_events())
        while not state.is_over():
            seat = state.to_act()[0]
            events += state.apply(seat, SPEC.greedy_policy(state, seat))
        out.append((state, events))
    return out


def test_every_event_is_a_documented_game_event() -> None:
    doc = _section()
    seen: set[str] = set()
    for _, events in _hands():
        for i, e in enumerate(events):
            frame = event_frame("doudizhu", e, f"1:1:{i}")
            assert frame.WhichOneof("payload") == "game_event"
            assert frame.game_event.game == "doudizhu" and frame.game_event.kind == e.kind
            assert e.kind in doc, f"{e.kind} is not in docs/protocol.md"
            keys = set(json.loads(frame.game_event.json))
            if e.kind != "hand_over":   # the summary's keys: the page names the main ones
                assert keys == doc[e.kind], (e.kind, keys, doc[e.kind])
            else:
                assert doc[e.kind] - {"..."} <= keys
            seen.add(e.kind)
    assert {"deal", "hand", "turn", "call_landlord", "landlord", "play", "pass", "new_trick",
            "show_hands", "payment", "hand_over"} <= seen


def test_cards_go_only_to_their_seat_and_the_bottom_only_once_revealed() -> None:
    for state, events in _hands():
        landlord_seen = False
        for e in events:
            if e.kind == "landlord":
                landlord_seen = True
            if e.kind == "hand":
                assert e.to in (0, 1, 2)
                continue
            assert e.to is None, e   # everything else is public: it holds no concealed card
            if e.kind == "show_hands":
                continue
            assert "cards" not in e.data or e.kind == "play"
            assert "bottom" not in e.data or landlord_seen
        assert state.is_over()


def test_an_observation_holds_its_own_hand_only() -> None:
    state = SPEC.new_hand({}, 5, 0)
    while not state.is_over():
        for seat in range(3):
            obs = state.observation(seat)
            text = json.dumps(obs)
            mine = obs["hand"].split()
            assert obs["all_hands"] is None
            for other in range(3):
                if other == seat:
                    continue
                theirs = set(state.observation(other)["hand"].split())
                assert not theirs & set(mine)
                # not one card of another hand anywhere in the view but the played ones
                played = {c for p in obs["played"] for c in p.split()}
                bottom = set(obs["bottom"] or ())
                for card in theirs - played - bottom:
                    assert re.search(rf'"[^"]*\b{card}\b', text.replace(obs["hand"], "")) is None
            if state.phase() in ("call", "rob"):
                assert obs["bottom"] is None
        view = state.public_view()
        assert "hand" not in view and view["all_hands"] is None
        seat = state.to_act()[0]
        state.apply(seat, SPEC.greedy_policy(state, seat))
    assert state.public_view()["all_hands"] is not None


def test_the_codec_reads_game_actions_and_maps_rule_errors_into_the_dz_range() -> None:
    frame = client_pb2.ClientFrame(game_action=g.GameAction(kind="play", cards=["3s", "3h"]))
    assert action_from_frame("doudizhu", frame) == Action("play", ("3s", "3h"))
    bid = client_pb2.ClientFrame(game_action=g.GameAction(kind="call_landlord", choice="yes"))
    assert action_from_frame("doudizhu", bid) == Action("call_landlord", choice="yes")
    assert rule_error_code("doudizhu", "does_not_beat") == doudizhu_pb2.DZ_DOES_NOT_BEAT
    assert rule_error_code("doudizhu", "something_new") == doudizhu_pb2.DZ_ILLEGAL_ACTION
    state = SPEC.new_hand({}, 1, 0)
    info = variants.get("doudizhu").codec.game_info(
        state.observation(2), 2, 12.5, InfoSeats((1, 2, 3), (False, True, False), 2))
    assert isinstance(info, g.GameInfo) and info.game == "doudizhu" and info.seconds == 12
    assert json.loads(info.observation_json)["hand"] == state.observation(2)["hand"]
    assert list(info.entrusted) == [False, True, False] and info.cancel_entrust_count == 2


def test_three_seats_and_the_bid_timer() -> None:
    assert SPEC.seats == 3 and SPEC.family == "doudizhu"
    assert SPEC.timer_of("call") == SPEC.timer_of("rob") == registry.ALONE
    assert SPEC.timer_of("play") == registry.TURN
    assert set(SPEC.option_timers.values()) <= set(SPEC.default_options)
