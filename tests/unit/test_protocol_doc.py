"""docs/protocol.md against the code: every frame of the protos and every field of each is
named on the page, and what the page says a client receives in a mahjong hand is what the table's codec makes of
the engine's events (hands played by the greedy bots, every event turned into the frame the
table sends, ``services.table.codec.event_frame``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from games import registry
from games.engine import Event
from paiju.v1 import client_pb2
from services.table import codec_dadun
from services.table.codec import event_frame
from services.table.wire import InfoSeats

DOC = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text(encoding="utf-8")
NEVER_SENT = ("mj_exchange", "mj_haidi", "dd_replay_game")   # the page's section 9 says so
SEEDS = range(8)


def play(game: str, seed: int, options: dict[str, Any] | None = None,
         ) -> list[tuple[Event, client_pb2.ServerFrame]]:
    """One hand, dealer 0, every decision the greedy bot's: each event with its frame."""
    spec = registry.get(game)
    state = spec.new_hand(spec.parse_options(options or {}), seed, 0)
    events = list(state.deal_events())
    for _ in range(5000):
        if state.is_over():
            break
        seat = state.to_act()[0]
        events += state.apply(seat, spec.greedy_policy(state, seat))
    assert state.is_over(), f"{game} seed {seed} did not end"
    return [(e, event_frame(game, e, f"1:1:{i}")) for i, e in enumerate(events)]


def mahjong_hands() -> Iterator[tuple[str, list[tuple[Event, client_pb2.ServerFrame]]]]:
    for game in ("xuezhan", "changsha"):
        for seed in SEEDS:
            yield game, play(game, seed)


def payload(frame: client_pb2.ServerFrame) -> str:
    return frame.WhichOneof("payload") or ""


@pytest.mark.parametrize("message", [client_pb2.ServerFrame, client_pb2.ClientFrame],
                         ids=lambda m: m.DESCRIPTOR.name)
def test_every_frame_is_named_in_the_guide(message: Any) -> None:
    names = [f.name for f in message.DESCRIPTOR.oneofs_by_name["payload"].fields]
    missing = [n for n in names if not re.search(rf"\b{n}\b", DOC)]
    assert missing == []


def code_words(text: str) -> set[str]:
    """Every word inside the page's code spans (backticks, across a line break too) and
    code blocks: where the guide names a field."""
    spans = re.findall(r"```.*?```|`[^`]+`", text, re.S)
    return {w for span in spans for w in re.findall(r"\w+", span)}


@pytest.mark.parametrize("message", [client_pb2.ServerFrame, client_pb2.ClientFrame],
                         ids=lambda m: m.DESCRIPTOR.name)
def test_every_field_of_every_frame_is_named_in_the_guide(message: Any) -> None:
    """Each field of each payload message (the proto descriptors), named as code on the
    page: a field nobody documented (DdUseOut's pai_mask, Login's secret_string) fails."""
    named = code_words(DOC)
    missing = [f"{payload.name}.{f.name}"
               for payload in message.DESCRIPTOR.oneofs_by_name["payload"].fields
               if payload.message_type is not None
               for f in payload.message_type.fields if f.name not in named]
    assert missing == []


def test_a_field_only_in_prose_is_not_named() -> None:
    assert "extend" not in code_words("the room list may extend to `room_list {items}`")
    assert {"items", "extend"} <= code_words("`room_list {items,\n extend}`")


def test_the_dadun_snapshot_carries_the_desk() -> None:
    """dd_game_info's ``desktop`` is the trick on the desk (the guide, §5 Dadun)."""
    spec = registry.get("dadun")
    seats = InfoSeats(user_ids=(1, 2, 3, 4), entrusted=(False,) * 4, cancels_left=3)
    for seed in SEEDS:
        state = spec.new_hand(spec.parse_options({}), seed, 0)
        list(state.deal_events())
        while not state.is_over():
            observation, _ = state.view_and_actions(0)
            if observation.get("desk"):
                info = codec_dadun.game_info(observation, 0, 10.0, seats)
                assert [(p.seat, list(p.cards), p.pai_class) for p in info.desktop] == \
                    [(p["seat"], p["cards"].split(), p["class"]) for p in observation["desk"]]
                return
            seat = state.to_act()[0]
            state.apply(seat, spec.greedy_policy(state, seat))
    pytest.fail("no Dadun hand of these seeds put a play on the desk")


def test_frames_the_guide_says_are_never_sent_are_not_made() -> None:
    made = {payload(f) for game in ("xuezhan", "changsha", "dadun") for seed in SEEDS
            for _, f in play(game, seed)}
    assert "mj_draw" in made and "dd_use_out" in made   # the hands did play
    assert made.isdisjoint(NEVER_SENT)


def test_one_mj_hand_per_seat_per_hand() -> None:
    for game, hand in mahjong_hands():
        dealt = [e.to for e, f in hand if payload(f) == "mj_hand" and e.to is not None]
        assert sorted(dealt) == [0, 1, 2, 3], (game, dealt)


def test_the_drawer_gets_each_draw_twice_public_then_private_with_the_tile() -> None:
    draws = 0
    for game, hand in mahjong_hands():
        for (e, f), (e2, f2) in zip(hand, hand[1:], strict=False):
            if payload(f) != "mj_draw" or e.to is not None:
                continue
            draws += 1
            assert f.mj_draw.tile == ""                      # the public one shows no tile
            assert payload(f2) == "mj_draw" and e2.to == f.mj_draw.seat, game
            assert f2.mj_draw.tile != ""
            assert (f2.mj_draw.seat, f2.mj_draw.wall_remaining, f2.mj_draw.from_back) == \
                (f.mj_draw.seat, f.mj_draw.wall_remaining, f.mj_draw.from_back)
    assert draws > 100


def test_mj_birds_hits_count_birds_per_seat() -> None:
    birds = [f.mj_birds for _, hand in mahjong_hands() for _, f in hand
             if payload(f) == "mj_birds"]
    assert birds, "no Changsha hand of these seeds drew birds"
    for b in birds:
        assert len(b.hits) == 4 and sum(b.hits) == len(b.tiles) > 0


def test_an_opening_win_with_dice_sends_its_dice_and_no_tiles() -> None:
    for seed in range(200):
        dice = [(e, f) for e, f in play("changsha", seed, {"opening_hu_birds": "two_dice"})
                if payload(f) == "mj_birds" and "dice" in e.data]
        if dice:
            break
    else:
        pytest.fail("no opening win with dice in 200 hands")
    event, frame = dice[0]
    assert list(frame.mj_birds.tiles) == [] and sum(frame.mj_birds.hits) == 2
    assert list(frame.mj_birds.dice) == event.data["dice"]
    assert len(frame.mj_birds.dice) == 2 and all(1 <= p <= 6 for p in frame.mj_birds.dice)


def test_mj_hand_over_details_json_keys() -> None:
    for game, hand in mahjong_hands():
        over = [f.mj_hand_over for _, f in hand if payload(f) == "mj_hand_over"]
        assert len(over) == 1
        keys = set(json.loads(over[0].details_json))
        assert keys == {"reason", "deltas", "winners", "next_dealer", "hands"}, (game, keys)
