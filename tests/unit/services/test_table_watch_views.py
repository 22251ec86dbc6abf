"""A watcher's (观战) snapshot (services/table/views.py ``watch_snapshot``), taken at every
step of a whole hand of each game, like the seats' views: the room as seat -1 with nobody's
IP, and the engine's public view only: never a concealed tile or card, never a prompt."""

from __future__ import annotations

import json

import pytest

from games.arbitration import resolve
from paiju.v1 import client_pb2
from services.table import logrec as lr
from services.table import views
from tests.unit.services.test_table_fold import profile, seated

# what only a seat may see of its own hand (games/mahjong/flow_view.py, games/dadun/views.py)
SEAT_ONLY = {"hand", "drawn", "exchange", "candidates", "token", "my_partner"}


def check(frames: list[client_pb2.ServerFrame], over: bool) -> None:
    kinds = [f.WhichOneof("payload") for f in frames]
    assert kinds[0] == "room_joined" and "prompt" not in kinds, kinds
    joined = frames[0].room_joined
    assert joined.seat == -1 and not any(p.ip for p in joined.room.players)
    for f in frames:
        if f.HasField("mj_game_info"):
            seen = json.loads(f.mj_game_info.observation_json)
            assert not SEAT_ONLY & set(seen), sorted(SEAT_ONLY & set(seen))
            assert seen["seat"] is None
        if f.HasField("dd_game_info"):
            info = f.dd_game_info
            assert not info.hand and not info.out_token and not info.can_out
            assert over or not any(h.cards for h in info.all_hands) or info.is_alone


@pytest.mark.parametrize("game", ["xuezhan", "changsha", "dadun"])
def test_a_watcher_never_sees_a_concealed_tile_or_card(game: str) -> None:
    log = seated(game, total_hands=1)
    room = log.room
    log.add(lr.Join(0, 11, profile(11, ip="10.0.0.1")))   # a re-join: an IP to hide
    check(views.watch_snapshot(room, 0), over=False)
    for seat in range(4):
        log.add(lr.Ready(seat, True))
    log.add(lr.Start(1, (7).to_bytes(32, "big").hex(), 0))
    steps = 0
    while room.in_hand():
        check(views.watch_snapshot(room, 5), over=False)
        assert room.state is not None
        seat = room.to_act()[0]
        response = room.is_response(seat)
        log.add(lr.Act(seat, room.spec.greedy_policy(room.state, seat), "entrust", response))
        window, rules = room.pending_window(), room.arbitration_rules()
        if response and window is not None and rules is not None:
            decision = resolve(window, rules)
            if decision.final:
                log.add(lr.Resolve(decision))
        steps += 1
        assert steps < 3000
    check(views.watch_snapshot(room, 0), over=True)
    assert steps > 10
