"""Fair deals through the real table (docs/fairness.md): every hand is committed before any
client seed is taken, mixes the seats' seeds in, and is checked from its settlement alone by
games.tools.verify_deal; nothing of the server seed reaches a player before the hand ends."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from games import fair
from games.tools.verify_deal import verify
from paiju import frames
from paiju.v1 import common_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.common.natsd import EmbeddedNats
from tests.service.test_table import new_table, running_stack, settlements
from tests.support.tablekit import hand_overs
from tests.support.waiting import eventually


@pytest.mark.parametrize("game", [common_pb2.XUEZHAN, common_pb2.CHANGSHA, common_pb2.DADUN])
async def test_a_hand_is_committed_seeded_by_the_players_and_verified(
        fresh_nats: EmbeddedNats, game: int) -> None:
    async with running_stack(fresh_nats) as stack:
        t = await new_table(stack, game, hands=1)
        seeds = {21: b"\x01" * 32, 23: b"seat two's own words"}   # 22 and 24 send none
        for uid in (21, 22, 23, 24):
            player, reply = await t.seat(uid)
            assert reply.code == 0
            # the joining player sees the commitment for the first hand in his snapshot
            shown = [f.hand_commitment for f in reply.frames
                     if f.WhichOneof("payload") == "hand_commitment"]
            assert [c.hand_no for c in shown] == [1] and len(shown[0].commitment) == 64
            if uid in seeds:
                sent = await t.link.send(t.room_id, uid, frames.client_frame(
                    lm.SetClientSeed(client_seed=seeds[uid])))
                assert sent.code == 0, sent.message
        too_long = await t.link.send(t.room_id, 22, frames.client_frame(
            lm.SetClientSeed(client_seed=b"x" * 65)))
        assert too_long.code == common_pb2.ERR_TOO_LONG
        t.play()
        await t.ready_all()
        hand, _final = await settlements(stack["nats"].url, 2, timeout=60)
        record: dict[str, Any] = hand["details"]["fair"]
        report = verify(record)
        assert report.ok, report.text()
        assert record["client_seeds"] == [seeds[21].hex(), "", seeds[23].hex(), ""]
        assert record["commitment"] == shown[0].commitment
        assert record["dealer_from_seed"] and record["dealer"] == fair.first_dealer(
            bytes.fromhex(record["hand_seed"]))
        # one changed tile of the stored wall or deck is caught
        tampered = copy.deepcopy(record)
        key = "deck" if "deck" in tampered else "wall"
        tampered[key][0], tampered[key][-1] = tampered[key][-1], tampered[key][0]
        if tampered[key] != record[key]:
            assert not verify(tampered).ok
        await eventually(lambda: all(hand_overs(p) for p in t.players), "the hand's end", 10)
        server_seed = record["server_seed"]
        for p in t.players:
            reveals = p.of_kind("fair_reveal")
            assert [r.server_seed for r in reveals] == [server_seed]
            # before the reveal no frame this player got carries the server seed
            before = p.received[:next(i for i, f in enumerate(p.received)
                                      if f.WhichOneof("payload") == "fair_reveal")]
            assert all(server_seed not in str(f) and bytes.fromhex(server_seed)
                       not in f.SerializeToString() for f in before)
        await t.close()
