"""Robots play real hands of every game through the lobby: every hand is settled exactly once
in records with zero-sum deltas, and no robot ever receives another seat's private event."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import grpc
import pytest

from clients.robot.robot import RobotStats, run_tables
from clients.verify_deal import main as verify_from_records
from games import registry
from games.tools.verify_deal import verify
from paiju.v1 import client_pb2, records_pb2, records_pb2_grpc
from tests.system.conftest import SECRET, Stack

GAMES = [spec.name for spec in registry.all()]   # every game of the registry
ROOMS, HANDS = 3, 7          # 21 hands per game


async def private_owner_map(stub: records_pb2_grpc.RecordsStub, room_id: int, hand_no: int,
                            seats: list[int]) -> dict[str, int | None]:
    """event_uid -> the seat it was addressed to (None = public), from the stored replay."""
    owners: dict[str, int | None] = {}
    for seat, user_id in enumerate(seats):
        replay = await stub.GetReplay(records_pb2.ReplayRequest(room_id=room_id, hand_no=hand_no,
                                                                user_id=user_id))
        for cell in replay.cells:
            uid = client_pb2.ServerFrame.FromString(cell.event_data).event_uid
            to = json.loads(cell.json).get("to")
            assert to in (None, seat), f"replay for seat {seat} holds an event for seat {to}"
            owners[uid] = to
    return owners


@pytest.mark.parametrize("game", GAMES)
async def test_robots_finish_hands_settled_once_without_leaks(stack: Stack, game: str) -> None:
    results: list[RobotStats] = await asyncio.wait_for(
        run_tables(stack.lobby_address, game, ROOMS, SECRET, hands=HANDS,
                   first_uid=10_000 + 100 * GAMES.index(game)), timeout=400)
    # answers the game overtook (Return.overtaken) are counted apart, never errors
    assert all(not r.errors for r in results), [r.errors for r in results if r.errors]
    rooms = {room for r in results for room in r.rooms}
    assert len(rooms) == ROOMS

    async with grpc.aio.insecure_channel(stack.records.address) as channel:
        stub = records_pb2_grpc.RecordsStub(channel)
        hands = []
        for _ in range(100):  # records consumes asynchronously
            listing = await stub.ListHands(records_pb2.ListHandsRequest(limit=1000))
            hands = [h for h in listing.hands if h.room_id in rooms]
            if sum(1 for h in hands if not h.final) >= ROOMS * HANDS and \
                    sum(1 for h in hands if h.final) == ROOMS:
                break
            await asyncio.sleep(0.2)
        per_hand = Counter((h.room_id, h.hand_no) for h in hands if not h.final)
        assert len(per_hand) == ROOMS * HANDS >= 20
        assert set(per_hand.values()) == {1}, "every hand is stored exactly once"
        for h in hands:
            if not h.final:
                assert sum(h.deltas) == 0
                assert len(h.user_ids) == registry.get(game).seats
        # privacy: every frame a robot got is public or its own
        owners: dict[str, int | None] = {}
        seat_of: dict[tuple[int, int], int] = {}
        verified = 0
        for h in hands:
            if h.final:
                continue
            owners.update(await private_owner_map(stub, h.room_id, h.hand_no, list(h.user_ids)))
            # fair deals: the hand is checked from its replay alone (games.tools.verify_deal)
            replay = await stub.GetReplay(records_pb2.ReplayRequest(
                room_id=h.room_id, hand_no=h.hand_no, user_id=h.user_ids[0]))
            report = verify(json.loads(replay.fair_json))
            assert report.ok, report.text()
            verified += 1
            for seat, uid in enumerate(h.user_ids):
                seat_of[(h.room_id, uid)] = seat
    assert verified == ROOMS * HANDS
    first = next(h for h in hands if not h.final)
    # the same check from the command line, fetching the hand from records
    code = await asyncio.to_thread(verify_from_records, [
        "--records", stack.records.address, "--room", str(first.room_id),
        "--hand", str(first.hand_no), "--user", str(first.user_ids[2])])
    assert code == 0
    # each robot checked every revealed server seed against the commitment it was shown
    assert all(not r.fair_failed for r in results), [r.fair_failed for r in results]
    assert sum(r.fair_checked for r in results) >= ROOMS * HANDS * registry.get(game).seats * 0.9
    checked = 0
    for robot in results:
        for frame in robot.received:
            if not frame.event_uid:
                continue
            room = int(frame.event_uid.split(":")[0])
            to = owners.get(frame.event_uid)
            own = seat_of.get((room, robot.user_id))
            assert to is None or to == own, f"user {robot.user_id} got {frame.event_uid} of seat {to}"
            checked += 1
    assert checked > ROOMS * HANDS * 20
