"""The mahjong hand's records (games/mahjong/flow_records.py) serialize to exactly the JSON
the hand wrote when they were plain dicts, so serialized hands read and write the same bytes."""

from __future__ import annotations

import json

from games.arbitration import Response
from games.bots import mahjong as bots
from games.mahjong import changsha, xuezhan
from games.mahjong.flow_records import (
    Birds,
    HaidiOffer,
    Kong,
    MidwayWin,
    OpeningWins,
    OpenWindow,
    PassBlock,
    TurnContext,
)


def test_records_write_the_dict_schema_of_before() -> None:
    window = OpenWindow(3, 1, 8, "rob_kong", [8], {2: ["hu", "pass"]}, {2: 8},
                        {2: Response("hu")}, kong_kind="bugang")
    assert window.to_dict() == {
        "id": 3, "source": 1, "tile": 8, "trigger": "rob_kong", "tiles": [8],
        "candidates": {"2": ["hu", "pass"]}, "responses": {"2": {"kind": "hu", "tiles": []}},
        "hu_tiles": {"2": 8}, "extra": {"kind": "bugang"}}
    assert OpenWindow(1, 0, 5, "discard", [5], {}, {}).to_dict()["extra"] == {}
    ctx = TurnContext([True] * 4, start_stage="play")
    assert ctx.to_dict() == {"kong": None, "shot": None, "first": [True] * 4, "claimed": False,
                             "discards_made": 0, "start_stage": "play"}
    ctx.haidi_draw = True
    assert ctx.to_dict()["haidi_draw"] is True
    assert Kong(0, 1, "zhigang", 4, 2, "claimed", False, [7]).to_dict() == {
        "id": 0, "seat": 1, "kind": "zhigang", "tile": 4, "source": 2, "origin": "claimed",
        "fresh": False, "payments": [7], "transferred": False}
    assert PassBlock("all").to_dict() == {"mode": "all"}
    assert PassBlock("tile", (3, 4)).to_dict() == {"mode": "tile", "tiles": [3, 4]}
    assert PassBlock("value", worth=2).to_dict() == {"mode": "value", "worth": 2}
    assert HaidiOffer(2).to_dict() == {"first": 2, "offered": 1, "taker": None}
    assert Birds(("1m", "5p"), 0, (2, 0, 0, 0), True).to_dict() == {
        "tiles": ["1m", "5p"], "origin": 0, "hits": [2, 0, 0, 0], "from_wall": True}
    opening = OpeningWins({1: ["opening_four"]})
    assert opening.to_dict() == {"pending": {"1": ["opening_four"]}, "declared": {}}
    opening.midway[3] = [MidwayWin("midway_four", ("5m",))]
    assert opening.to_dict()["midway"] == {"3": [{"type": "midway_four", "tiles": ["5m"]}]}


def test_records_read_back_what_they_write() -> None:
    records = [
        OpenWindow(3, 1, 8, "discard", [8], {2: ["chi", "pass"], 0: ["hu", "pass"]}, {0: 8},
                   {2: Response("chi", (6, 7))}),
        Kong(1, 0, "bugang", 9, None, "added", True, [1, 2, 3], True),
        PassBlock("tile", (5,)), HaidiOffer(1, 3, 2), Birds(("9s",), 1, (0, 1, 0, 0), False),
        OpeningWins({}, {0: ["opening_no_258"]}, {0: [MidwayWin("midway_two_triplets",
                                                                ("2m", "7p"))]}),
    ]
    for record in records:
        data = json.loads(json.dumps(record.to_dict()))
        assert type(record).from_dict(data) == record
    ctx = TurnContext([False, True, True, True], 2, None, True, 5, "play", True)
    assert TurnContext.from_dict(json.loads(json.dumps(ctx.to_dict()))) == ctx


def test_a_serialized_hand_keeps_its_json_shape_through_a_round_trip() -> None:
    for variant in (xuezhan, changsha):
        state = variant.new_hand({}, 7, 0)
        while not state.is_over():
            seat = state.to_act()[0]
            state.apply(seat, bots.greedy_policy(state, seat))
            text = state.serialize()
            data = json.loads(text)
            assert isinstance(data["ctx"], dict) and "start_stage" in data["ctx"]
            assert data["window"] is None or set(data["window"]) == {
                "id", "source", "tile", "trigger", "tiles", "candidates", "responses",
                "hu_tiles", "extra"}
            assert isinstance(data["opening"], dict)
            assert variant.deserialize(text).serialize() == text
