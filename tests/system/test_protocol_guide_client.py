"""A client written from docs/protocol.md alone: plain JSON over the lobby's WebSocket
(aiohttp), no protobuf and nothing of clients/. One per seat fill a room (the creator and
the "robots" that join it by number; the room says how many seats it has), ready, answer every Prompt by the guide's mapping
from an action to its request, ignore the refusals the guide calls "overtaken", ready again
after each settlement until the room is dismissed (all hands played), then read the room's
history and a replay. Every step's frame names and fields are the ones the guide shows."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from games import registry
from services.common.natsd import free_port
from services.lobby import tokens
from tests.system.conftest import SECRET, start_stack, stop_stack

# docs/protocol.md, "Errors": refusals that only mean the game moved on
HANDS = 2
TRANSCRIPT = os.environ.get("PAIJU_PROTOCOL_TRANSCRIPT", "")   # a file: every frame, for the guide


class GuideClient:
    """One player: a WebSocket, the frames it got, the requests it sent."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, name: str, rng: random.Random) -> None:
        self.ws, self.name, self.rng = ws, name, rng
        self.seq = 0
        self.frames: list[dict[str, Any]] = []
        self.room_id = ""
        self.seat = 0
        self.hands_over = 0
        self.errors: list[tuple[int, str]] = []
        self.answers: set[int] = set()
        self.dismissed: dict[str, Any] | None = None

    async def send(self, name: str, body: dict[str, Any]) -> int:
        self.seq += 1
        await self.ws.send_str(json.dumps({"seq": self.seq, name: body}))
        return self.seq

    async def next_frame(self, timeout: float = 60) -> tuple[str, dict[str, Any], dict[str, Any]]:
        msg = await self.ws.receive(timeout=timeout)
        assert msg.type == aiohttp.WSMsgType.TEXT, msg
        frame = json.loads(msg.data)
        kind = next(k for k in frame if k not in ("seq", "event_id", "reply_to", "event_uid"))
        self.frames.append(frame)
        return kind, frame[kind], frame

    async def until(self, wanted: str, reply_to: int = 0) -> dict[str, Any]:
        """Frames until one of kind ``wanted`` (answering ``reply_to`` when given); a ``ret``
        with a code for that request fails."""
        while True:
            kind, body, frame = await self.next_frame()
            if reply_to and int(frame.get("reply_to", "0")) == reply_to and kind == "ret" \
                    and body.get("code", 0):
                raise AssertionError(f"{self.name}: request {reply_to} refused: {body}")
            if kind == wanted and (not reply_to or int(frame.get("reply_to", "0")) == reply_to):
                return body

    async def login(self, user_id: int) -> dict[str, Any]:
        seq = await self.send("login", {"token": tokens.mint(user_id, SECRET, 600),
                                        "nickname": self.name})
        return await self.until("login_ok", seq)

    async def heartbeat(self, seconds: int) -> None:
        """The guide's heartbeat: every heartbeat_seconds of login_ok."""
        while True:
            await asyncio.sleep(seconds)
            await self.send("heartbeat", {"client_time_ms": str(int(time.time() * 1000))})

    async def answer(self, game: str, a: dict[str, Any]) -> None:
        """The guide's table "From a Prompt action to its request"."""
        kind, tiles, ref, choice = a["kind"], a.get("tiles", []), a.get("ref", ""), a.get("choice", "")
        if game in ("xuezhan", "changsha"):
            seq = await self.send("mahjong_action", {"kind": kind, "tiles": tiles,
                                                     "window_id": ref or "0", "choice": choice})
        elif game != "dadun":   # any other game: game_action
            seq = await self.send("game_action", {"kind": kind, "cards": tiles, "ref": ref,
                                                  "choice": choice})
        elif kind == "choose_alone":
            seq = await self.send("dd_ask_alone", {"is_alone": choice == "yes"})
        elif kind == "choose_friend_card":
            seq = await self.send("dd_choose_friend", {"card": tiles[0]})
        else:   # play or pass
            seq = await self.send("dd_ask_out", {"token": ref, "cards": tiles,
                                                 "is_skip": kind == "pass"})
        self.answers.add(seq)

    def choose(self, actions: list[dict[str, Any]]) -> dict[str, Any]:
        wins = [a for a in actions if a["kind"] == "hu"]
        if wins:
            return wins[0]
        return self.rng.choice(actions) if self.rng.random() < 0.3 else actions[0]

    async def play_room(self) -> None:
        """Answer prompts; ready after each hand; stop when the room is dismissed."""
        while self.dismissed is None:
            kind, body, frame = await self.next_frame()
            if kind == "prompt":
                await self.answer(body["game"], self.choose(body["actions"]))
            elif kind == "ret" and body.get("code", 0):
                code = int(body["code"])
                to = int(frame.get("reply_to", "0"))
                if not (to in self.answers and body.get("overtaken")):
                    self.errors.append((code, body.get("message", "")))
            elif kind in ("mj_hand_over", "dd_small_settlement") or (
                    kind == "game_event" and body.get("kind") == "hand_over"):
                self.hands_over += 1
                if self.hands_over < HANDS:
                    await self.send("ask_ready", {"is_ready": True})
            elif kind == "notice_dismiss" and body.get("dismissed"):
                self.dismissed = body


GAMES = [spec.name for spec in registry.all()]   # every game of the registry


@pytest.mark.parametrize("game", GAMES)
async def test_a_client_from_the_guide_plays_a_whole_room(tmp_path: Path, game: str) -> None:
    ws_port = free_port()
    stack = await asyncio.to_thread(start_stack, tmp_path, PAIJU_LOBBY__WS_PORT=str(ws_port))
    players: list[GuideClient] = []
    beats: list[asyncio.Task[None]] = []
    try:
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{ws_port}/ws?format=json"
            seats = registry.get(game).seats
            sockets = [await http.ws_connect(url) for _ in range(seats)]
            rng = random.Random(7)
            players = [GuideClient(ws, f"guide{i}", rng) for i, ws in enumerate(sockets)]
            first = 7000 + 10 * GAMES.index(game)
            for i, p in enumerate(players):
                ok = await p.login(first + i)
                assert int(ok["player"]["user_id"]) == first + i
                assert "room" not in ok   # not seated anywhere yet
                beats.append(asyncio.create_task(p.heartbeat(ok.get("heartbeat_seconds", 15))))

            owner = players[0]
            seq = await owner.send("create_room", {"game": game.upper(), "base_score": 1,
                                                   "total_hands": HANDS, "options_json": "{}"})
            joined = await owner.until("room_joined", seq)
            owner.room_id, owner.seat = joined["room"]["room_id"], joined.get("seat", 0)
            assert joined["room"]["game"] == game.upper()
            assert joined["room"]["seats"] == seats   # the guide: room.seats
            for p in players[1:]:   # the "robots": join by number
                seq = await p.send("join_room", {"room_id": owner.room_id})
                j = await p.until("room_joined", seq)
                p.room_id, p.seat = j["room"]["room_id"], j.get("seat", 0)
            assert sorted(p.seat for p in players) == list(range(seats))
            for p in players:
                await p.send("ask_ready", {"is_ready": True})
            await asyncio.wait_for(asyncio.gather(*(p.play_room() for p in players)), 240)

            for p in players:
                assert p.hands_over == HANDS, (p.name, p.hands_over)
                assert p.dismissed is not None and p.dismissed.get("reason") == "ALL_HANDS_PLAYED"
                assert not p.errors, (p.name, p.errors)
            await history_and_replay(owner, game)
            for ws in sockets:
                await ws.close()
    finally:
        for task in beats:
            task.cancel()
        await asyncio.to_thread(stop_stack, stack)
        if TRANSCRIPT:
            with open(TRANSCRIPT, "a") as out:
                for p in players[:1]:
                    for frame in p.frames:
                        out.write(json.dumps(frame, ensure_ascii=False) + "\n")


async def history_and_replay(owner: GuideClient, game: str) -> None:
    """History scores and the replay of hand 1 (records writes them a moment later)."""
    for _ in range(50):
        seq = await owner.send("ask_history_score", {"room_id": owner.room_id})
        history = await owner.until("history_score", seq)
        items = history.get("items", [])
        if items and all(len(i.get("scores", [])) == HANDS for i in items):
            break
        await asyncio.sleep(0.2)
    assert len(items) == registry.get(game).seats
    for hand in range(HANDS):
        assert sum(int(i["scores"][hand]) for i in items) == 0
    seq = await owner.send("ask_replay", {"room_id": owner.room_id, "hand_no": 1})
    replay = await owner.until("replay", seq)
    assert replay["game"] == game and replay["cells"]
    events = [json.loads(c["json"]) for c in replay["cells"]]
    assert events[0]["kind"] == "deal"
    assert all(e.get("to") in (None, owner.seat) for e in events)   # public or our own
