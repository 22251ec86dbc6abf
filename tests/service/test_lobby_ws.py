"""The lobby's WebSocket front door: the Connect protocol over ``/ws`` in protobuf binary and
in proto3 JSON text, malformed messages, kicks across transports, offline on close, the
static web client, and a whole hand played over JSON frames against three robots on a real
table. The in-test table and records of tests/support/lobbyworld.py stand in where a real one is not
needed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import selectors
import socket
import struct
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import aiohttp
import pytest
from google.protobuf import json_format

from clients.robot.robot import Robot
from games import registry
from paiju.frames import client_frame, hand_over_data, server_frame
from paiju.v1 import client_pb2, common_pb2, lobby_msgs_pb2
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.lobby import tokens
from services.lobby.server import start as start_lobby
from services.lobby.ws import WsFront
from services.table import variants
from tests.support.lobbykit import FrameReader, wait_cached
from tests.support.lobbyworld import SECRET, World, code_of, game_servers

E = common_pb2


class WsClient(FrameReader):
    """A WebSocket client of the lobby that speaks binary frames or JSON text frames and
    keeps every frame it receives (decoded to a ServerFrame) and the raw JSON objects."""

    def __init__(self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse,
                 as_json: bool) -> None:
        self.http, self.ws, self.as_json = http, ws, as_json
        self.seq = 0
        self.seen: list[client_pb2.ServerFrame] = []
        self.raw_json: list[dict[str, Any]] = []
        self.batches: list[int] = []     # frames in each batch message received
        self._unread: list[client_pb2.ServerFrame] = []   # the rest of a batch

    @classmethod
    async def open(cls, port: int, *, as_json: bool = False) -> WsClient:
        http = aiohttp.ClientSession()
        ws = await http.ws_connect(f"http://127.0.0.1:{port}/ws")
        return cls(http, ws, as_json)

    async def send(self, payload: Any) -> int:
        self.seq += 1
        frame = client_frame(payload, seq=self.seq)
        if self.as_json:
            await self.ws.send_str(json_format.MessageToJson(frame, indent=None))
        else:
            await self.ws.send_bytes(frame.SerializeToString())
        return self.seq

    async def recv(self, timeout: float = 10.0) -> client_pb2.ServerFrame | None:
        if self._unread:
            return self._seen(self._unread.pop(0))
        msg = await self.ws.receive(timeout)
        if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING,
                        aiohttp.WSMsgType.CLOSED):
            return None
        if msg.type == aiohttp.WSMsgType.TEXT:
            assert self.as_json, "a text reply to a binary client"
            data = json.loads(msg.data)
            self.raw_json.append(data)
            frame = json_format.ParseDict(data, client_pb2.ServerFrame())
        else:
            assert msg.type == aiohttp.WSMsgType.BINARY and not self.as_json, msg
            frame = client_pb2.ServerFrame.FromString(msg.data)
            if frame.WhichOneof("payload") == "batch":   # Login.accept_batches: in order
                assert frame.seq == 0 and len(frame.batch.frames) > 1, frame
                self.batches.append(len(frame.batch.frames))
                frame, *self._unread = frame.batch.frames
        return self._seen(frame)

    def _seen(self, frame: client_pb2.ServerFrame) -> client_pb2.ServerFrame:
        assert not self.seen or frame.seq == self.seen[-1].seq + 1, "seq must increase by 1"
        self.seen.append(frame)
        return frame

    async def next(self, timeout: float = 10.0) -> client_pb2.ServerFrame:
        frame = await self.recv(timeout)
        assert frame is not None, "socket closed"
        return frame

    async def login(self, user_id: int, *, batches: bool = False) -> client_pb2.ServerFrame:
        reply = await self.request(lobby_msgs_pb2.Login(token=tokens.mint(user_id, SECRET, 600),
                                                        accept_batches=batches))
        assert reply.WhichOneof("payload") == "login_ok", reply
        return reply

    async def closed(self, timeout: float = 10.0) -> bool:
        async def drain() -> bool:
            while await self.recv(timeout) is not None:
                pass
            return True
        return await asyncio.wait_for(drain(), timeout)

    async def close(self) -> None:
        await self.ws.close()
        await self.http.close()


@contextlib.asynccontextmanager
async def ws_clients() -> AsyncIterator[list[WsClient]]:
    clients: list[WsClient] = []
    try:
        yield clients
    finally:
        for c in clients:
            await c.close()


async def ws_lobby(world: World) -> tuple[str, int]:
    """A lobby with its WebSocket port on a free port: (gRPC address, ws port)."""
    address = await world.lobby(ws_port=0)
    port = world.lobbies[-1].ws_port
    assert port > 0
    return address, port


# -- the protocol over the socket -------------------------------------------------------------

async def test_login_and_requests_with_binary_frames(world: World) -> None:
    _, port = await ws_lobby(world)
    async with ws_clients() as clients:
        c = await WsClient.open(port)
        clients.append(c)
        ok = (await c.login(101)).login_ok
        assert ok.player.user_id == 101
        assert ok.player.ip == "127.0.0.1"          # the socket's peer
        beat = await c.request(lobby_msgs_pb2.HeartBeat(client_time_ms=77))
        assert beat.heartbeat.client_time_ms == 77
        room = await world.table.add_room()
        joined = await c.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
        assert joined.room_joined.room.room_id == room.room_id
        assert world.table.of_kind("join_room", 101)[0].profile.ip == "127.0.0.1"


async def test_login_and_requests_with_json_text_frames(world: World) -> None:
    _, port = await ws_lobby(world)
    room = await world.table.add_room()
    async with ws_clients() as clients:
        c = await WsClient.open(port, as_json=True)
        clients.append(c)
        token = tokens.mint(102, SECRET, 600)
        # written by hand, as a browser would, with the .proto field names
        await c.ws.send_str(json.dumps({"seq": 1, "login": {"token": token}}))
        ok = await c.until(lambda f: f.reply_to == 1)
        assert ok.login_ok.player.user_id == 102
        raw = c.raw_json[-1]
        assert raw["login_ok"]["player"]["user_id"] == "102"   # proto3 JSON: int64 as text
        assert raw["reply_to"] == "1" and raw["event_id"] == 1003
        await c.ws.send_str(json.dumps({"seq": 2, "join_room": {"room_id": str(room.room_id)}}))
        joined = await c.until(lambda f: f.reply_to == 2)
        assert joined.room_joined.room.room_id == room.room_id
        assert c.raw_json[-1]["room_joined"]["room"]["game"] == "XUEZHAN"
        c.seq = 2
        await wait_cached(world.lobbies[-1].app, room.room_id)   # the list reads the cache
        listed = await c.request(lobby_msgs_pb2.AskRoomList())
        assert room.room_id in [r.room_id for r in listed.room_list.items]


async def test_a_binary_client_that_asks_gets_frames_queued_together_in_one_message(
        world: World) -> None:
    """Login.accept_batches over the socket: the frames of one room message leave as one
    ``batch`` message (one write) to a binary client that asked, one message per frame to
    one that did not and to a JSON client (which has no batches); all see the same frames
    in the same order, numbered without a gap."""
    _, port = await ws_lobby(world)
    room = await world.table.add_room()
    async with ws_clients() as clients:
        batched, single = await WsClient.open(port), await WsClient.open(port)
        as_json = await WsClient.open(port, as_json=True)
        clients += [batched, single, as_json]
        await batched.login(611, batches=True)
        await single.login(612)
        await as_json.login(613, batches=True)
        for c in clients:
            joined = await c.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
            assert joined.WhichOneof("payload") == "room_joined", joined
        for n in range(0, 40, 4):
            await world.emit(room, [server_frame(lobby_msgs_pb2.InEntrust(seat=0, count=n + i))
                                    for i in range(4)])
        for c in clients:
            await c.until(lambda f: f.HasField("in_entrust") and f.in_entrust.count == 39)

        def marks(c: WsClient) -> list[int]:
            return [f.in_entrust.count for f in c.seen if f.HasField("in_entrust")]

        assert marks(batched) == marks(single) == marks(as_json) == list(range(40))
        assert batched.batches and sum(batched.batches) >= 10, batched.batches
        assert single.batches == [] and as_json.batches == []


async def test_malformed_messages_get_bad_frame_and_the_session_goes_on(world: World) -> None:
    _, port = await ws_lobby(world)
    async with ws_clients() as clients:
        c = await WsClient.open(port)
        clients.append(c)
        await c.ws.send_bytes(b"\xff\xff\xff")                           # not protobuf
        assert code_of(await c.next()) == E.ERR_BAD_FRAME
        await c.login(103)
        await c.ws.send_bytes(client_pb2.ClientFrame(seq=50).SerializeToString())  # no payload
        assert code_of(await c.until(lambda f: f.reply_to == 50)) == E.ERR_BAD_FRAME
        c.as_json = True
        for text in ("not json", '{"seq": 60, "no_such_field": {}}', '[1, 2]',
                     '{"seq": "x", "heartbeat": {}}'):
            await c.ws.send_str(text)
            bad = await c.next()
            assert code_of(bad) == E.ERR_BAD_FRAME, text
            assert bad.ret.message.startswith("bad JSON frame")
        await c.ws.send_str('{"seq": 61}')                               # JSON, no payload
        assert code_of(await c.until(lambda f: f.reply_to == 61)) == E.ERR_BAD_FRAME
        c.seq = 70
        assert (await c.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")
        c.as_json = False
        assert (await c.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")


async def test_commands_before_login_are_refused_over_the_socket(world: World) -> None:
    _, port = await ws_lobby(world)
    async with ws_clients() as clients:
        c = await WsClient.open(port, as_json=True)
        clients.append(c)
        reply = await c.request(lobby_msgs_pb2.AskReady(is_ready=True))
        assert code_of(reply) == E.ERR_NOT_LOGGED_IN
        bad = await c.request(lobby_msgs_pb2.Login(token="1.2.3"))
        assert code_of(bad) == E.ERR_BAD_TOKEN
        assert await c.closed()


# -- one session per user, offline ------------------------------------------------------------

async def test_a_grpc_login_kicks_the_websocket_session(world: World) -> None:
    address, port = await ws_lobby(world)
    async with ws_clients() as clients:
        browser = await WsClient.open(port, as_json=True)
        clients.append(browser)
        await browser.login(104)
        native = await world.client(address)
        await native.login(104)
        kick = await browser.until(lambda f: f.HasField("kick_out"))
        assert kick.kick_out.user_id == 104
        assert await browser.closed()
        assert (await native.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")


async def test_a_websocket_login_kicks_the_grpc_session(world: World) -> None:
    address, port = await ws_lobby(world)
    native = await world.client(address)
    await native.login(105)
    async with ws_clients() as clients:
        browser = await WsClient.open(port)
        clients.append(browser)
        await browser.login(105)
        assert (await native.until(lambda f: f.HasField("kick_out"))).kick_out.user_id == 105
        assert await native.closed()
        assert (await browser.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")


async def test_closing_the_socket_sends_offline_for_a_seated_user(world: World) -> None:
    _, port = await ws_lobby(world)
    room = await world.table.add_room()
    browser = await WsClient.open(port)
    await browser.login(106)
    await browser.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
    await browser.close()
    offline = await world.table.wait_for("offline", 106)
    assert offline.room_id == room.room_id
    hub = world.lobbies[-1].app.hub
    for _ in range(100):
        if 106 not in hub.by_user:
            break
        await asyncio.sleep(0.02)
    assert 106 not in hub.by_user and not hub.sessions


async def test_stopping_the_lobby_closes_its_sockets(world: World) -> None:
    _, port = await ws_lobby(world)
    async with ws_clients() as clients:
        c = await WsClient.open(port)
        clients.append(c)
        await c.login(107)
        closed = asyncio.create_task(c.closed())     # reading, as a browser does
        host = world.lobbies.pop()
        await host.stop(0.5)
        assert await closed


def _connect_at_once(port: int, n: int, within: float) -> int:
    """Open ``n`` TCP connections to ``port`` at once and wait ``within`` seconds without
    yielding: how many the kernel established. Called from a test coroutine it holds the
    event loop, so an in-process lobby accepts none of them meanwhile."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        with selectors.DefaultSelector() as sel:
            for s in socks:
                s.setblocking(False)
                s.connect_ex(("127.0.0.1", port))
                sel.register(s, selectors.EVENT_WRITE)
            ready: list[socket.socket] = []
            deadline = time.monotonic() + within
            while len(ready) < n and (left := deadline - time.monotonic()) > 0:
                for key, _ in sel.select(left):
                    sel.unregister(key.fileobj)
                    ready.append(key.fileobj)  # type: ignore[arg-type]
        return sum(1 for s in ready if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
    finally:
        for s in socks:
            s.close()


async def test_a_crowd_connecting_while_the_lobby_is_busy_waits_in_its_listen_queue(
        world: World) -> None:
    """A restarted lobby gets thousands of players at once, before its loop takes them: the
    kernel queues them (``ws.LISTEN_BACKLOG``) instead of dropping connections that their
    kernels would try again only after 1, 3 and 7 s."""
    with open("/proc/sys/net/core/somaxconn", encoding="ascii") as f:
        crowd = min(300, int(f.read()) - 1)   # the kernel's cap on any listen queue
    if crowd <= 128:
        pytest.skip("net.core.somaxconn leaves no queue above aiohttp's default to test")
    _, port = await ws_lobby(world)
    established = _connect_at_once(port, crowd, within=0.5)
    assert established == crowd, f"{crowd - established} of {crowd} connections not queued"
    async with ws_clients() as clients:   # the lobby then takes them, and serves on
        c = await WsClient.open(port)
        clients.append(c)
        await c.login(108)


@pytest.mark.parametrize("gone", ["reset", "closing"])
async def test_a_client_gone_before_its_upgrade_is_answered_logs_no_error(
        world: World, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        gone: str) -> None:
    """``reset``: the connection is gone when the upgrade is answered; ``closing``: it goes
    as the upgrade is answered (its transport closing, not yet lost)."""
    _, port = await ws_lobby(world)
    arrived: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    release, served = asyncio.Event(), asyncio.Event()
    serve = WsFront._serve

    async def held(front: WsFront, request: Any, ip: str) -> Any:
        arrived.set_result(request)
        await release.wait()
        if gone == "closing":
            request.transport.close()   # what a peer's reset does, before it is noticed
        try:
            return await serve(front, request, ip)
        finally:
            served.set()

    monkeypatch.setattr(WsFront, "_serve", held)
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET /ws HTTP/1.1\r\nHost: lobby\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                 b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    request = await asyncio.wait_for(arrived, 10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    if gone == "reset":
        sock.close()                               # the client gave up
        for _ in range(200):
            if request.transport is None:
                break
            await asyncio.sleep(0.01)
        assert request.transport is None
    caplog.clear()                                 # the lobby's start-up is not the subject
    with caplog.at_level(logging.INFO):
        release.set()
        await asyncio.wait_for(served.wait(), 10)
        await asyncio.sleep(0.1)                   # aiohttp's own handling of the return
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not errors, [r.getMessage() for r in errors]
    sock.close()
    monkeypatch.setattr(WsFront, "_serve", serve)
    async with ws_clients() as clients:
        c = await WsClient.open(port)
        clients.append(c)
        await c.login(109)


# -- http ----------------------------------------------------------------------------------

async def test_page_static_files_and_health(world: World) -> None:
    _, port = await ws_lobby(world)
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/") as r:
            page = await r.text()
            assert r.status == 200 and "text/html" in r.headers["Content-Type"]
        assert "<html" in page.lower() and "/static/app.js" in page
        async with http.get(f"{base}/static/app.js") as r:
            assert r.status == 200
            script = await r.text()
        # the client opens the WebSocket in app.js or in a module it imports (ES modules)
        sources = [script]
        for module in re.findall(r'from "\./([\w.-]+\.js)"', script):
            async with http.get(f"{base}/static/{module}") as r:
                assert r.status == 200, module
                sources.append(await r.text())
        assert any("new WebSocket" in source for source in sources)
        async with http.get(f"{base}/healthz") as r:
            assert r.status == 200
        for missing in ("/static/nope.js", "/static/../../pyproject.toml", "/nope"):
            async with http.get(f"{base}{missing}") as r:
                assert r.status in (403, 404), missing


async def test_the_socket_is_off_with_port_minus_one(world: World) -> None:
    await world.lobby()
    assert load_config("test").lobby.ws_port == -1
    assert world.lobbies[-1].ws_port == -1


# -- a whole hand over JSON frames against three robots ---------------------------------------

def answer(game: str, spec: Any) -> Any:
    """The client frame payload of a Prompt action, as clients/web/app.js builds it."""
    from paiju.v1 import game_msgs_pb2 as g

    family = registry.get(game).family
    if family not in ("mahjong", "dadun"):   # a game without typed actions: GameAction
        return g.GameAction(kind=spec.kind, cards=list(spec.tiles), ref=spec.ref,
                            choice=spec.choice)
    if family == "mahjong":
        return g.MahjongAction(kind=spec.kind, tiles=list(spec.tiles), choice=spec.choice,
                               window_id=int(spec.ref or 0))
    if spec.kind == "choose_alone":
        return g.DdAskAlone(is_alone=spec.choice == "yes")
    if spec.kind == "choose_friend_card":
        return g.DdChooseFriend(card=spec.tiles[0] if spec.tiles else "")
    return g.DdAskOut(token=spec.ref, cards=list(spec.tiles), is_skip=spec.kind == "pass")


@contextlib.asynccontextmanager
async def real_stack(nats_url: str, **lobby: Any) -> AsyncIterator[tuple[str, int]]:
    """Arbiter, table and lobby (WebSocket on) for real, records in-test: (lobby, ws port);
    ``lobby`` sets other lobby keys."""
    async with game_servers(nats_url, "table-ws") as cfg:
        lobby_cfg = replace(cfg, lobby=replace(cfg.lobby, ws_port=0, **lobby))
        host = await start_lobby(lobby_cfg, port=0, metrics_port=-1)
        try:
            yield f"127.0.0.1:{host.port}", host.ws_port
        finally:
            await host.stop(0.5)


# every family of the registry: XueZhan for mahjong, then every other game
GAMES = [(s.name, s.game_type) for s in registry.all() if s.name not in ("changsha",)]


@pytest.mark.parametrize("game,enum", GAMES)
async def test_a_browser_plays_a_hand_against_three_robots(
        fresh_nats: EmbeddedNats, game: str, enum: Any) -> None:
    async with real_stack(fresh_nats.url) as (address, port), ws_clients() as clients:
        me = await WsClient.open(port, as_json=True)
        clients.append(me)
        await me.login(201)
        created = await me.request(lobby_msgs_pb2.CreateRoom(game=enum, base_score=1,
                                                              total_hands=1))
        room_id = created.room_joined.room.room_id
        robots = [Robot(address, 202 + i, game, SECRET, room_id=room_id)
                  for i in range(registry.get(game).seats - 1)]
        tasks = [asyncio.create_task(r.run(max_hands=1)) for r in robots]
        try:
            assert code_of(await me.request(lobby_msgs_pb2.AskReady(is_ready=True))) == E.OK
            prompts, over = await play_until_hand_over(me, game)
            stats = await asyncio.wait_for(asyncio.gather(*tasks), 60)
        finally:
            for task in tasks:
                task.cancel()
    assert prompts > 0
    assert len(over["deltas"]) == registry.get(game).seats and sum(over["deltas"]) == 0
    assert all(s.hands == 1 for s in stats)


# a prompt overtaken by a timeout, a window decided early or the hand's last decision may be
# refused as stale or too late; any other refusal is a bug
OVERTAKEN = {v.error_code(reason) for v in variants.all_games()
             for reason in ("not_your_turn", "stale_ref", "hand_over")}


async def play_until_hand_over(me: WsClient, game: str) -> tuple[int, dict[str, Any]]:
    """Answer every Prompt with its first legal action until the hand-over frame."""
    prompts = 0
    answers: set[int] = set()
    while True:
        frame = await me.recv(timeout=60)
        assert frame is not None, "socket closed before the hand was over"
        if (over := hand_over_data(frame)) is not None:
            return prompts, over
        if frame.HasField("prompt"):
            prompts += 1
            answers.add(await me.send(answer(game, frame.prompt.actions[0])))
        elif frame.reply_to in answers and frame.HasField("ret"):
            assert frame.ret.code == E.OK or frame.ret.code in OVERTAKEN, frame


# -- the browser client itself, in node with a stub DOM -----------------------------------------

# Loads clients/web/app.js with just enough DOM for it, logs in, creates a one-hand room,
# readies, clicks the first action button of every prompt and prints the settlement.
# The stub DOM both harnesses load app.js into: every element app.js asks for, by id.
STUB_DOM = r"""
const elements = new Map();
function element(id) {
  const el = {id, textContent: "", hidden: false, value: "", children: [], onclick: null,
    appendChild(c) { this.children.push(c); return c; },
    replaceChildren(...cs) { this.children = cs; },
    querySelector() { return this.tbody || (this.tbody = element("")); },
    scrollIntoView() {}};
  if (id) elements.set(id, el);
  return el;
}
const $ = (id) => elements.get(id) || element(id);
// node has no animation frames: a drawing app.js asks for runs right after the current task
globalThis.requestAnimationFrame = (fn) => { queueMicrotask(() => fn(0)); return 1; };
"""

HARNESS = r"""
const [port, token, appPath, game] = process.argv.slice(2);
""" + STUB_DOM + r"""globalThis.location = {protocol: "http:", host: `127.0.0.1:${port}`};
globalThis.document = {getElementById: $, createElement: () => element(""),
  querySelectorAll: () => []};
for (const id of ["error", "lobby-panel", "room-panel", "play-panel", "settlement-panel"]) {
  $(id).hidden = true;   // as in index.html
}
$("game").value = game;
$("hands").value = "1";
require(appPath);
$("token").value = token;
$("login").onclick();
let step = "login";
const printed = new Set();
setInterval(() => {
  for (const li of $("log").children) {
    if (!printed.has(li)) { printed.add(li); console.log("LOG " + li.textContent); }
  }
  if (step === "login" && !$("lobby-panel").hidden) { step = "create"; $("create").onclick(); }
  if (step === "create" && !$("room-panel").hidden) {
    step = "play";
    console.log("ROOM " + $("room-title").textContent.split(" ")[1]);
    $("ready").onclick();
  }
  const actions = $("actions").children;
  if (actions.length) { console.log("ACT " + actions[0].textContent); actions[0].onclick(); }
  if (!$("settlement-panel").hidden) {
    console.log("SETTLEMENT " + JSON.stringify($("settlement").textContent));
    process.exit(0);
  }
}, 20);
setTimeout(() => { console.log("TIMEOUT"); process.exit(1); }, 60000);
"""


@pytest.mark.parametrize("game", ["xuezhan", "dadun"])
async def test_the_web_client_plays_a_hand_in_node(fresh_nats: EmbeddedNats, tmp_path: Any,
                                                   game: str, node: list[str]) -> None:
    from services.lobby.ws import WEB_ROOT

    harness = tmp_path / "harness.js"
    harness.write_text(HARNESS)
    async with real_stack(fresh_nats.url) as (address, port):
        proc = await asyncio.create_subprocess_exec(
            *node, str(harness), str(port), tokens.mint(301, SECRET, 600),
            str(WEB_ROOT / "app.js"), game.upper(), stdout=asyncio.subprocess.PIPE)
        assert proc.stdout is not None
        lines: list[str] = []
        tasks: list[asyncio.Task[Any]] = []
        try:
            async with asyncio.timeout(90):
                while line := (await proc.stdout.readline()).decode():
                    lines.append(line.rstrip("\n"))
                    if line.startswith("ROOM "):
                        room_id = int(line.split()[1])
                        tasks = [asyncio.create_task(Robot(address, 302 + i, game, SECRET,
                                                           room_id=room_id).run(max_hands=1))
                                 for i in range(3)]
                assert await proc.wait() == 0, lines
            stats = await asyncio.wait_for(asyncio.gather(*tasks), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            for task in tasks:
                task.cancel()
    acts = [x for x in lines if x.startswith("ACT ")]
    assert acts and acts[0].startswith("ACT 1) "), lines
    settlement = json.loads(lines[-1].removeprefix("SETTLEMENT "))
    deltas = [int(d.split()[-1]) for d in settlement.split("\n")[1].removeprefix("deltas: ")
              .split(", ")]
    assert len(deltas) == 4 and sum(deltas) == 0, settlement
    assert not [x for x in lines if x.startswith("LOG error")], lines
    assert all(s.hands == 1 for s in stats)


# Loads clients/web/app.js with a stub DOM and a stand-in WebSocket, feeds it server frames
# by hand and prints, after each step, what the page shows: the action buttons, the error
# box and the event log.
OVERTAKEN_HARNESS = r"""
const [appPath] = process.argv.slice(2);
""" + STUB_DOM + r"""globalThis.location = {protocol: "http:", host: "127.0.0.1:1"};
globalThis.document = {getElementById: $, createElement: () => element(""),
  querySelectorAll: () => []};
$("error").hidden = true;
const sent = [];
let socket = null;
globalThis.WebSocket = class {
  static OPEN = 1;
  constructor() { this.readyState = 1; socket = this; }
  send(text) { sent.push(JSON.parse(text)); }
  close() {}
};
globalThis.setInterval = () => 0;   // no heartbeat or countdown timers in this test
require(appPath);
$("token").value = "token";
$("login").onclick();
socket.onopen();
const feed = (frame) => socket.onmessage({data: JSON.stringify(frame)});
const view = (step) => console.log(JSON.stringify({step,
  actions: $("actions").children.map((b) => b.textContent),
  error: $("error").hidden ? null : $("error").textContent,
  log: $("log").children.map((li) => li.textContent)}));
const prompt = (game, actions) => feed({seq: "9", prompt: {game, seat: 1, seconds: 3,
  observation_json: "{}", actions}});
const lastSeq = () => sent[sent.length - 1].seq;

feed({seq: "1", reply_to: "1", login_ok: {player: {user_id: "7"}}});
feed({seq: "2", room_joined: {room: {room_id: "100001"}, seat: 1}});
prompt("xuezhan", [{kind: "pass", ref: "4"}, {kind: "peng", tiles: ["5m", "5m"], ref: "4"}]);
view("window prompt");
$("actions").children[0].onclick();
view("answered");
feed({seq: "3", reply_to: String(lastSeq()), ret: {code: 9692, message: "window '4' is closed",
                                                   overtaken: true}});
view("answer refused as stale");
$("ready").onclick();
feed({seq: "4", reply_to: String(lastSeq()), ret: {code: 9692, message: "not an answer"}});
view("other request refused");
$("error").hidden = true;
prompt("xuezhan", [{kind: "pass", ref: "5"}]);
feed({seq: "5", mj_window_closed: {window_id: "6"}});
view("another window closed");
feed({seq: "6", mj_window_closed: {window_id: "5", action: "hu"}});
view("its window closed");
prompt("xuezhan", [{kind: "discard", tiles: ["9p"]}]);
feed({seq: "7", mj_discard: {seat: 2, tile: "1m"}});
view("another seat discarded");
feed({seq: "8", mj_discard: {seat: 1, tile: "9p"}});
view("our turn played for us");
prompt("dadun", [{kind: "pass", ref: "t1.3"}]);
feed({seq: "9", dd_use_out: {seat: 1, is_skip: true}});
view("our dadun turn played for us");
prompt("xuezhan", [{kind: "hu", ref: "8"}]);
feed({seq: "10", mj_hand_over: {hand_no: 1, deltas: ["3", "-1", "-1", "-1"]}});
view("hand over");
"""


async def test_the_web_client_takes_an_overtaken_answer_as_a_note_and_drops_stale_buttons(
        tmp_path: Any, node: list[str]) -> None:
    from services.lobby.ws import WEB_ROOT

    harness = tmp_path / "overtaken.js"
    harness.write_text(OVERTAKEN_HARNESS)
    proc = await asyncio.create_subprocess_exec(
        *node, str(harness), str(WEB_ROOT / "app.js"), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    views = {v["step"]: v for v in map(json.loads, out.decode().splitlines())}
    assert len(views["window prompt"]["actions"]) == 2
    assert views["answered"]["actions"] == []
    refused = views["answer refused as stale"]
    assert refused["error"] is None
    assert refused["log"][-1] == "too late, the game moved on: window '4' is closed"
    # the same code in reply to something that is not an answer stays an error
    assert views["other request refused"]["error"] == "error 9692: not an answer"
    assert views["another window closed"]["actions"] == ["1) pass (过)"]
    assert views["its window closed"]["actions"] == []
    assert views["another seat discarded"]["actions"] == ["1) discard (打) 9p"]
    assert views["our turn played for us"]["actions"] == []
    assert views["our dadun turn played for us"]["actions"] == []
    assert views["hand over"]["actions"] == []
    assert all(v["error"] is None for k, v in views.items() if k != "other request refused")


async def test_a_socket_that_does_not_read_is_dropped_without_blocking_others(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.lobby.sessions.OUTBOX_LIMIT", 4)
    address, port = await ws_lobby(world)
    room = await world.table.add_room()
    reader = await world.client(address)
    await reader.login(111)
    await reader.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
    async with ws_clients() as clients:
        sleeper = await WsClient.open(port)
        clients.append(sleeper)
        await sleeper.login(112)
        await sleeper.request(lobby_msgs_pb2.JoinRoom(room_id=room.room_id))
        big = server_frame(lobby_msgs_pb2.Chat(content="x" * 200_000))
        for _ in range(60):   # 12 MB: beyond what the sleeper's socket buffers absorb
            await world.emit(room, [big])
            await reader.until(lambda f: f.HasField("chat"))
        hub = world.lobbies[-1].app.hub
        for _ in range(100):
            if 112 not in hub.by_user:
                break
            await asyncio.sleep(0.05)
        assert 112 not in hub.by_user and 111 in hub.by_user
        assert (await reader.request(lobby_msgs_pb2.HeartBeat())).HasField("heartbeat")
        assert (await world.table.wait_for("offline", 112)).room_id == room.room_id
