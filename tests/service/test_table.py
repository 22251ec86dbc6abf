"""The table service with a real nats-server, a real arbiter and real gRPC streams: rooms,
hands to the end, settlements on JetStream, errors that change nothing, entrust, dismiss."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import nats
import pytest
from prometheus_client import REGISTRY

from clients.robot.robot import action_frame
from clients.robot.view import choose
from games import registry
from games.mahjong import parse_tiles, tile_name
from paiju import frames
from paiju.v1 import common_pb2, table_pb2, table_pb2_grpc
from paiju.v1 import game_msgs_pb2 as g
from paiju.v1 import lobby_msgs_pb2 as lm
from services.arbiter.server import start as start_arbiter
from services.common import bus
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.table import variants
from services.table.server import start as start_table
from tests.support.tablekit import LobbyLink, Player, Table, hand_overs, notice
from tests.support.waiting import eventually


@pytest.fixture
async def stack(fresh_nats: EmbeddedNats) -> AsyncIterator[dict[str, Any]]:
    async with running_stack(fresh_nats) as running:
        yield running


@contextlib.asynccontextmanager
async def running_stack(fresh_nats: EmbeddedNats, arbiter: bool = True, **environ: str
                        ) -> AsyncIterator[dict[str, Any]]:
    """An arbiter (unless not ``arbiter``) and a table on loopback; ``environ`` adds PAIJU_*
    overrides."""
    arb = await start_arbiter(load_config("test", environ={"NATS_URL": fresh_nats.url}),
                              port=0, metrics_port=-1) if arbiter else None
    cfg = load_config("test", environ={
        "NATS_URL": fresh_nats.url,
        "PAIJU_TABLE__TURN_SECONDS": "30", "PAIJU_TABLE__WINDOW_SECONDS": "30",
        "PAIJU_TABLE__INSTANCE": "table-test", **environ})
    table = await start_table(cfg, port=0, metrics_port=-1)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{table.port}")
    link = LobbyLink(f"127.0.0.1:{table.port}", fresh_nats.url)
    yield {"nats": fresh_nats, "stub": table_pb2_grpc.TableStub(channel), "link": link,
           "table": table, "cfg": cfg}
    await link.close()
    await channel.close()
    await table.stop(0)
    if arb is not None:
        await arb.stop(0)


async def new_table(stack: dict[str, Any], game: int, hands: int = 1, **opts: Any) -> Table:
    reply = await stack["stub"].CreateRoom(table_pb2.CreateRoomRequest(
        game=game, base_score=1, total_hands=hands, options_json=json.dumps(opts)))
    name = registry.by_type(game).name
    t = Table(stack["nats"].url, stack["link"], reply.room.room_id, name)
    await t.connect()
    return t


async def settlements(url: str, count: int, timeout: float = 10) -> list[dict[str, Any]]:
    nc = await nats.connect(url)
    js = nc.jetstream()
    sub = await js.subscribe("settle.*", ordered_consumer=True)
    out = []
    try:
        while len(out) < count:
            msg = await sub.next_msg(timeout=timeout)
            out.append(json.loads(msg.data))
    finally:
        await nc.close()
    return out


@pytest.mark.parametrize("game", [common_pb2.XUEZHAN, common_pb2.CHANGSHA, common_pb2.DADUN])
async def test_four_players_finish_a_hand_and_it_is_settled(stack: dict[str, Any], game: int) -> None:
    t = await new_table(stack, game, hands=1)
    for uid in (11, 12, 13, 14):
        _, reply = await t.seat(uid)
        assert reply.code == 0 and reply.room_id == t.room_id
    t.play()
    await t.ready_all()
    msgs = await settlements(stack["nats"].url, 2, timeout=60)
    hand, final = msgs
    assert hand["room_id"] == t.room_id and hand["hand_no"] == 1 and not hand["final"]
    assert sum(hand["deltas"]) == 0
    assert sorted(hand["seats"]) == [11, 12, 13, 14]
    assert final["final"] and final["totals"] == hand["deltas"]
    # the events travel on core NATS, apart from the settlement stream: wait for them
    await eventually(lambda: all(hand_overs(p) and notice(p) for p in t.players),
                     "every player sees the end of the hand and the room's close", seconds=10)
    for p in t.players:
        assert [n.reason for n in notice(p)] == [lm.NoticeDismiss.ALL_HANDS_PLAYED]
        # a prompt can be overtaken (a window decided early, the hand won meanwhile): only
        # refusals of stale answers are fine
        stale = (common_pb2.MJ_STALE_WINDOW, common_pb2.DD_STALE_TOKEN,
                 common_pb2.MJ_HAND_OVER, common_pb2.DD_HAND_OVER)
        assert all(e.code in stale for e in p.errors), [e.message for e in p.errors]
    await t.close()


@pytest.mark.parametrize("game", [spec.game_type for spec in registry.all()])
async def test_an_answer_delivered_twice_counts_once(stack: dict[str, Any], game: int) -> None:
    """Every answer of seat 0 arrives twice, as when a reply was lost and the command was
    sent again (by the lobby following a moving room, or by the client on "a moment"): the
    second copy names a decision that is over (ClientFrame.decision = Prompt.decision), so it
    is refused as overtaken and never counts, for this decision or a later one."""
    t = await new_table(stack, game, hands=1)
    players = [(await t.seat(uid))[0]
               for uid in range(41, 41 + registry.by_type(game).seats)]
    t.play(players[1:])        # seat 0's prompts are this test's
    await t.ready_all()
    link, twice = stack["link"], players[0]
    seconds: list[table_pb2.TableReply] = []
    finished = asyncio.ensure_future(settlements(stack["nats"].url, 2, timeout=90))
    while not finished.done():
        getter = asyncio.ensure_future(twice.prompts.get())
        await asyncio.wait({getter, finished}, return_when=asyncio.FIRST_COMPLETED)
        if not getter.done():
            getter.cancel()
            break
        prompt = getter.result()
        assert prompt.decision, prompt
        frame = action_frame(t.game, choose(t.game, prompt).to_dict(), prompt.decision)
        first = await link.send(t.room_id, 41, frame)
        if first.code:   # overtaken by a faster seat or the hand's end: nothing to repeat
            assert first.overtaken, first
            continue
        seconds.append(await link.send(t.room_id, 41, frame))
    hand, _ = await finished
    assert sum(hand["deltas"]) == 0
    assert seconds, "seat 0 never answered"
    stale = {v.error_code(reason) for v in variants.all_games()
             for reason in ("stale_ref", "hand_over")}
    # the copy of the room's last answer may find the room already closed by the first
    *before_last, last = seconds
    assert all(r.code in stale and r.overtaken for r in before_last), [
        (r.code, r.message) for r in before_last if r.code not in stale or not r.overtaken]
    assert (last.code in stale and last.overtaken) or last.code == common_pb2.ERR_NO_SUCH_ROOM, (
        last.code, last.message)
    await t.close()


async def test_with_no_arbiter_hands_go_on_in_local_arbitration(fresh_nats: EmbeddedNats) -> None:
    """The one degraded mode of the arbiter path: no arbiter answers, the table decides the
    windows itself (services/table/arbiter_client.py) and counts each one."""
    def local() -> float:
        return sum(REGISTRY.get_sample_value("paiju_table_arbiter_fallback_total",
                                             {"reason": r}) or 0.0
                   for r in ("timeout", "unavailable"))

    before = local()
    async with running_stack(fresh_nats, arbiter=False) as stack:
        t = await new_table(stack, common_pb2.XUEZHAN, hands=1)
        for uid in (15, 16, 17, 18):
            await t.seat(uid)
        t.play()
        await t.ready_all()
        hand, _ = await settlements(stack["nats"].url, 2, timeout=60)
        assert sum(hand["deltas"]) == 0 and local() > before
        await t.close()


async def test_bad_input_gets_codes_and_changes_nothing(stack: dict[str, Any]) -> None:
    t = await new_table(stack, common_pb2.XUEZHAN, hands=1)
    players = [(await t.seat(uid))[0] for uid in (21, 22, 23, 24)]
    for p in players:
        p.auto = False
    await t.ready_all()
    first = await asyncio.wait_for(players[0].prompts.get(), 5)  # exchange three: all four act
    link = stack["link"]
    # a tile the player does not hold
    counts = parse_tiles(json.loads(first.observation_json)["hand"])  # e.g. "1239m44p..."
    missing = tile_name(counts.index(0))
    bad = await link.send(t.room_id, 21, frames.client_frame(
        g.MahjongAction(kind="exchange_three", tiles=[missing] * 3)))
    assert bad.code in (common_pb2.MJ_ILLEGAL_ACTION, common_pb2.MJ_TILE_NOT_IN_HAND,
                        common_pb2.MJ_BAD_INPUT), bad
    assert not bad.overtaken   # a wrong answer, not a late one
    # a Dadun frame in a mahjong room, an unknown kind, a frame without payload
    wrong = await link.send(t.room_id, 21, frames.client_frame(g.DdAskOut(token="x")))
    assert wrong.code == common_pb2.ERR_BAD_FRAME
    unknown = await link.send(t.room_id, 21, frames.client_frame(g.MahjongAction(kind="fly")))
    assert unknown.code in (common_pb2.MJ_BAD_INPUT, common_pb2.MJ_ILLEGAL_ACTION)
    # an answer to a window that is not (any more) open only came too late: flagged, so a
    # client shows a note, not an error
    stale = await link.send(t.room_id, 21, frames.client_frame(
        g.MahjongAction(kind="pass", window_id=987654)))
    assert stale.code == common_pb2.MJ_STALE_WINDOW and stale.overtaken, stale
    assert not wrong.overtaken and not unknown.overtaken
    # a stranger
    stranger = await link.send(t.room_id, 99, frames.client_frame(g.MahjongAction(kind="pass")))
    assert stranger.code == common_pb2.ERR_NOT_IN_ROOM
    # nothing changed: the same prompt is still valid and the hand plays to the end
    for p in players:
        p.auto = True
        p.prompts.put_nowait(first if p is players[0] else await p.prompts.get())
    t.play()
    msgs = await settlements(stack["nats"].url, 1, timeout=60)
    assert msgs[0]["hand_no"] == 1 and sum(msgs[0]["deltas"]) == 0
    await t.close()


async def test_timeout_entrusts_and_cancel_is_limited(fresh_nats: EmbeddedNats) -> None:
    # An entrusted seat waits 2 s before each bot move, so the cancel below always lands
    # while seat 0 is still entrusted (the hand cannot end before seat 0 moves again).
    async with running_stack(fresh_nats, PAIJU_TABLE__ENTRUST_DELAY_SECONDS="2") as stack:
        t = await new_table(stack, common_pb2.DADUN, hands=2, turn_seconds=0.3,
                            alone_seconds=0.3)
        players = [(await t.seat(uid))[0] for uid in (31, 32, 33, 34)]
        players[0].auto = False          # seat 0 never answers: the timer plays for it
        t.play()
        await t.ready_all()

        async def entrusts(count: int) -> list[Any]:
            for _ in range(100):
                if len(players[1].of_kind("in_entrust")) >= count:
                    break
                await asyncio.sleep(0.1)
            return players[1].of_kind("in_entrust")

        entrusted = await entrusts(1)
        assert entrusted and entrusted[0].seat == 0 and entrusted[0].count == 3
        link = stack["link"]
        ok = await link.send(t.room_id, 31, frames.client_frame(lm.CancelEntrust()))
        assert ok.code == 0, ok.message
        again = await link.send(t.room_id, 31, frames.client_frame(lm.CancelEntrust()))
        assert again.code == common_pb2.ERR_NOT_ENTRUSTED
        # still silent: the next timeout entrusts seat 0 again, with one cancel fewer left
        entrusted = await entrusts(2)
        assert len(entrusted) == 2 and entrusted[1].seat == 0 and entrusted[1].count == 2
        await t.close()


async def test_vip_password_and_full_room(stack: dict[str, Any]) -> None:
    reply = await stack["stub"].CreateRoom(table_pb2.CreateRoomRequest(
        game=common_pb2.DADUN, base_score=2, total_hands=2, password="8888"))
    assert reply.room.has_password and "8888" not in str(reply.room)
    t = Table(stack["nats"].url, stack["link"], reply.room.room_id, "dadun")
    await t.connect()
    _, bad = await t.seat(41, password="1234")
    assert bad.code == common_pb2.ERR_BAD_PASSWORD
    t.players.clear()
    for uid in (41, 42, 43, 44):
        _, ok = await t.seat(uid, password="8888")
        assert ok.code == 0
    _, full = await t.seat(45, password="8888")
    assert full.code == common_pb2.ERR_ROOM_FULL
    for bad in ('{"cap_fan": 99}', '{"entrust_cancels": -1}', '{"entrust_cancels": "3"}',
                '{"turn_seconds": 0}'):
        bad_opts = stack["stub"].CreateRoom(table_pb2.CreateRoomRequest(
            game=common_pb2.XUEZHAN, options_json=bad))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await bad_opts
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
    await t.close()


async def test_dismiss_vote_passes_and_fails(stack: dict[str, Any]) -> None:
    t = await new_table(stack, common_pb2.XUEZHAN, hands=4)
    players = [(await t.seat(uid))[0] for uid in (51, 52, 53, 54)]
    link = stack["link"]
    # refused: two refusals make a majority impossible
    assert (await link.send(t.room_id, 51, frames.client_frame(lm.AskDismiss()))).code == 0
    assert (await link.send(t.room_id, 52, frames.client_frame(lm.ReportDismiss(agree=False)))).code == 0
    assert (await link.send(t.room_id, 53, frames.client_frame(lm.ReportDismiss(agree=False)))).code == 0
    dup = await link.send(t.room_id, 53, frames.client_frame(lm.ReportDismiss(agree=True)))
    assert dup.code == common_pb2.ERR_NO_DISMISS_VOTE
    await eventually(lambda: notice(players[3]), "the refused vote's notice", 10)
    assert [n.dismissed for n in notice(players[3])] == [False]
    # passed: applicant + two agree = 3 of 4
    assert (await link.send(t.room_id, 52, frames.client_frame(lm.AskDismiss()))).code == 0
    assert (await link.send(t.room_id, 53, frames.client_frame(lm.ReportDismiss(agree=True)))).code == 0
    assert (await link.send(t.room_id, 54, frames.client_frame(lm.ReportDismiss(agree=True)))).code == 0
    await eventually(lambda: len(notice(players[0])) >= 2, "the passed vote's notice", 10)
    result = notice(players[0])
    assert [n.dismissed for n in result] == [False, True]
    assert result[-1].reason == lm.NoticeDismiss.PLAYER_VOTE
    votes = players[0].of_kind("query_dismiss")
    assert votes and votes[0].apply_user_id == 51
    gone = await link.send(t.room_id, 51, frames.client_frame(lm.AskReady(is_ready=True)))
    assert gone.code == common_pb2.ERR_NO_SUCH_ROOM
    await t.close()


async def test_geo_distances_and_alert(stack: dict[str, Any]) -> None:
    t = await new_table(stack, common_pb2.CHANGSHA)
    a, _ = await t.seat(61, lat=28.2282, lng=112.9388, ip="10.0.0.1")
    await t.seat(62, lat=28.2283, lng=112.9389, ip="10.0.0.2")   # ~15 m away
    await t.seat(63, lat=39.9042, lng=116.4074, ip="10.0.0.1")   # Beijing, same IP as 61

    def alerted() -> bool:
        alerts = a.of_kind("distance_alert")
        return (any(set(x.user_ids) == {61, 62} for x in alerts)
                and any(set(x.user_ids) == {61, 63} and "IP" in x.alert for x in alerts))
    await eventually(alerted, "a distance alert for 61-62 and a same-IP alert for 61-63", 10)
    reply = await stack["link"].send(t.room_id, 61, frames.client_frame(lm.AskGeo()))
    geo = reply.frames[0].use_geo
    far = next(i for i in geo.items if {i.src_uid, i.dest_uid} == {62, 63})
    near = next(i for i in geo.items if {i.src_uid, i.dest_uid} == {61, 62})
    # only coarse bands leave the table (exact meters would locate players)
    assert (far.gap, far.distance) == (1_000_000, ">1000km")    # ~1 340 km
    assert (near.gap, near.distance) == (0, "<100m")             # ~15 m
    # distances are asked at most every 2 s per seat (probing)
    hurried = await stack["link"].send(t.room_id, 61, frames.client_frame(lm.AskGeo()))
    assert hurried.code == common_pb2.ERR_RATE_LIMITED
    # a seated player re-joining from elsewhere keeps the position of his first join
    await t.seat(63, lat=28.2290, lng=112.9390, ip="10.0.0.1")
    await asyncio.sleep(2)
    again = await stack["link"].send(t.room_id, 61, frames.client_frame(lm.AskGeo()))
    still = next(i for i in again.frames[0].use_geo.items if {i.src_uid, i.dest_uid} == {62, 63})
    assert still.gap == 1_000_000
    for f in a.received:  # nobody's raw coordinates or IP reach other players
        assert "28.228" not in str(f) and "10.0.0.2" not in str(f)
    await t.close()


async def test_negative_coins_close_the_room_after_the_hand(stack: dict[str, Any]) -> None:
    t = await new_table(stack, common_pb2.XUEZHAN, hands=4)
    for uid in (91, 92, 93, 94):
        await t.seat(uid, coins=-1000 if uid == 91 else 1000)   # 91 is already broke
    t.play()
    await t.ready_all()
    msgs = await settlements(stack["nats"].url, 2, timeout=60)
    assert [m["hand_no"] for m in msgs] == [1, 0] and msgs[1]["final"]
    result = await eventually(lambda: notice(t.players[1]), "the room's close notice", 10)
    assert [n.reason for n in result] == [lm.NoticeDismiss.NEGATIVE_COINS]
    await t.close()


async def test_a_room_nobody_starts_is_dismissed(fresh_nats: EmbeddedNats) -> None:
    cfg = load_config("test", environ={"NATS_URL": fresh_nats.url,
                                       "PAIJU_LOBBY__IDLE_ROOM_SECONDS": "2",
                                       "PAIJU_TABLE__INSTANCE": "table-idle"})
    table = await start_table(cfg, port=0, metrics_port=-1)
    link = LobbyLink(f"127.0.0.1:{table.port}", fresh_nats.url)
    nc = await nats.connect(fresh_nats.url)
    try:
        # the idle countdown starts with the room: the player listens to every room (its
        # private frames come in the same messages) before the room exists, and joins right after the creation
        player = Player(95, "dadun")
        await nc.subscribe(bus.room_events("*"), cb=Table._deliver(player))
        await bus.sync(nc)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{table.port}") as channel:
            created = await table_pb2_grpc.TableStub(channel).CreateRoom(
                table_pb2.CreateRoomRequest(game=common_pb2.DADUN, total_hands=2))
        room_id = created.room.room_id
        joined = await link.send(room_id, 95, frames.client_frame(lm.JoinRoom(room_id=room_id)),
                                 profile=table_pb2.PlayerProfile(user_id=95, coins=1000))
        assert joined.code == 0, joined.message
        await eventually(lambda: notice(player), "the idle room's close notice", 15)
        assert [n.reason for n in notice(player)] == [lm.NoticeDismiss.IDLE_TOO_LONG]
    finally:
        await nc.close()
        await link.close()
        await table.stop(0)
