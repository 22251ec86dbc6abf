"""The lobby's read-only operator console (services/lobby/console.py) on a real stack: a
nats-server, records (SQLite), a table and a lobby on loopback, players logged in over
Lobby.Connect. The API refuses a missing or wrong token, reflects the live table and the
rooms created through the lobby, never shows a VIP room's password, answers bad ids with 400,
unknown ones with 404 and a NATS outage with 503; the page and its script are served, and
the script, run in node against the same console, renders what the API returns."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import nats
import pytest

from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.common.bus import SETTLE_SUBJECT, ensure_streams
from services.common.config import Config, ConfigError, load_config
from services.common.natsd import EmbeddedNats
from services.common.server import ServiceHost
from services.lobby.console.http import WEB_ROOT, Console, start_console
from services.lobby.server import LobbyHost
from services.lobby.server import start as start_lobby
from services.records.server import start as start_records
from services.table.server import start as start_table
from tests.service.test_records_support import encode, hand_message
from tests.support.lobbyworld import SECRET, Client
from tests.support.waiting import eventually

TOKEN = "console-test-token-0123456789"
TABLE = "table-console"
PASSWORD = "hunter2"


@dataclass
class Stack:
    cfg: Config
    nats: EmbeddedNats
    lobby: LobbyHost
    console: Console
    http: aiohttp.ClientSession
    clients: list[Client]
    records: ServiceHost
    records_running: bool = True

    @property
    def lobby_address(self) -> str:
        return f"127.0.0.1:{self.lobby.port}"

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.console.port}{path}"

    async def get(self, path: str, token: str | None = TOKEN,
                  **headers: str) -> tuple[int, Any, str]:
        """(status, decoded JSON or None, raw text) of one GET."""
        if token is not None:
            headers.setdefault("Authorization", f"Bearer {token}")
        async with self.http.get(self.url(path), headers=headers) as response:
            text = await response.text()
            try:
                body = json.loads(text)
            except ValueError:
                body = None
            return response.status, body, text

    async def ok(self, path: str) -> Any:
        status, body, text = await self.get(path)
        assert status == 200, (path, status, text)
        return body

    async def player(self, user_id: int, nickname: str) -> Client:
        client = Client(self.lobby_address)
        self.clients.append(client)
        await client.login(user_id, nickname=nickname)
        return client


@contextlib.asynccontextmanager
async def console_stack(server: EmbeddedNats, db: Path, environ: dict[str, str] | None = None,
                        **lobby: Any) -> AsyncIterator[Stack]:
    """``environ``: more PAIJU_* overrides; ``lobby``: more lobby keys."""
    cfg = load_config("test", environ={"NATS_URL": server.url, "PAIJU_TABLE__INSTANCE": TABLE,
                                       **(environ or {})})
    records = await start_records(replace(cfg, records=replace(
        cfg.records, database_url=f"sqlite+aiosqlite:///{db}")), port=0, metrics_port=-1)
    cfg = replace(cfg, records=replace(cfg.records, address=f"127.0.0.1:{records.port}"),
                  lobby=replace(cfg.lobby, token_secret=SECRET, console_port=0,
                                console_token=TOKEN, **lobby))
    table = await start_table(cfg, port=0, metrics_port=-1)
    lobby = await start_lobby(cfg, port=0, metrics_port=-1)
    console: Console = lobby.console  # the lobby starts it
    assert console.port > 0
    http = aiohttp.ClientSession()
    stack = Stack(cfg, server, lobby, console, http, [], records)
    try:
        yield stack
    finally:
        await http.close()
        for client in stack.clients:
            await client.close()
        await lobby.stop(0.5)  # closes the console too
        await table.stop(0)
        if stack.records_running:
            await records.stop(0)


@pytest.fixture
async def stack(fresh_nats: EmbeddedNats, tmp_path: Path) -> AsyncIterator[Stack]:
    async with console_stack(fresh_nats, tmp_path / "records.db") as running:
        yield running


async def create_room(client: Client, game: int, hands: int, password: str = "") -> int:
    reply = await client.request(lobby_msgs_pb2.CreateRoom(
        game=game, base_score=1, total_hands=hands, password=password))
    assert reply.WhichOneof("payload") == "room_joined", reply
    return int(reply.room_joined.room.room_id)


async def two_rooms(stack: Stack) -> tuple[int, int]:
    """Alice's VIP XueZhan room and Bob's public Dadun room, each with its creator seated,
    as the console sees them."""
    alice = await stack.player(7001, "alice")
    bob = await stack.player(7002, "bob")
    vip = await create_room(alice, common_pb2.XUEZHAN, 4, PASSWORD)
    plain = await create_room(bob, common_pb2.DADUN, 2)

    async def both_seated() -> bool:
        rooms = (await stack.ok("/api/rooms"))["rooms"]
        return sorted((r["room_id"], r["players"]) for r in rooms) == sorted([(vip, 1),
                                                                              (plain, 1)])
    await eventually(both_seated, seconds=15)
    return vip, plain


# -- access ---------------------------------------------------------------------------------

async def test_the_api_refuses_a_missing_or_wrong_token(stack: Stack) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {TOKEN}"},
                    {"Authorization": "Bearer "}, {"Authorization": TOKEN},
                    {"Authorization": f"Bearer {TOKEN}x"}):
        for path in ("/api/overview", "/api/rooms", "/api/rooms/1", "/api/no-such-thing"):
            status, body, text = await stack.get(path, token=None, **headers)
            assert status == 401, (path, headers, text)
            assert body["error"] == "unauthorized" and "Bearer" in body["message"]
    async with stack.http.get(stack.url("/api/tables")) as response:
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert response.headers["Cache-Control"] == "no-store"
    assert (await stack.get("/api/tables", token=None,
                            Authorization=f"bearer {TOKEN}"))[0] == 200
    status, body, _ = await stack.get("/api/no-such-thing")
    assert status == 404 and body["error"] == "not_found"
    async with stack.http.post(stack.url("/api/overview"),
                               headers={"Authorization": f"Bearer {TOKEN}"}) as response:
        assert response.status == 405 and (await response.json())["error"] == "bad_request"


async def test_the_page_and_its_script_and_style_are_served(stack: Stack) -> None:
    pages = {}
    for path, ctype in (("/", "text/html"), ("/console.js", "text/javascript"),
                        ("/console.css", "text/css")):
        async with stack.http.get(stack.url(path)) as response:   # no token: the page asks
            assert response.status == 200, path
            assert response.content_type == ctype
            assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
            assert response.headers["X-Content-Type-Options"] == "nosniff"
            pages[path] = await response.text()
    html, js = pages["/"], pages["/console.js"]
    assert '<script src="/console.js">' in html and 'href="/console.css"' in html
    assert "<script>" not in html           # the CSP allows no inline script
    # strings from the server are set as text only, and the token lives in this tab only
    assert "innerHTML" not in js and "outerHTML" not in js and "insertAdjacentHTML" not in js
    assert "sessionStorage" in js and "localStorage" not in js
    ids = set(re.findall(r'\sid="([^"]+)"', html))
    used = set(re.findall(r'\$\("([^"]+)"\)', js))
    assert used and used <= ids, used - ids
    # the player's web client is not served on the console port
    async with stack.http.get(stack.url("/static/app.js")) as response:
        assert response.status == 404


async def test_start_console_needs_a_token_and_stays_off_with_port_minus_one(
        stack: Stack) -> None:
    app = stack.lobby.app
    off = await start_console(app, replace(stack.cfg, lobby=replace(
        stack.cfg.lobby, console_port=-1, console_token="")))
    assert off.port == -1
    await off.close()
    for token in ("", "dev-console-token"):
        cfg = replace(stack.cfg, env="prod", lobby=replace(
            stack.cfg.lobby, console_port=0, console_token=token))
        with pytest.raises(ConfigError, match="lobby.console_token"):
            await start_console(app, cfg)


# -- what operators see ----------------------------------------------------------------------

async def test_overview_tables_and_rooms_reflect_the_table_and_the_rooms(stack: Stack) -> None:
    vip, plain = await two_rooms(stack)

    async def table_counts_both() -> Any:
        tables = (await stack.ok("/api/tables"))["tables"]
        return tables if tables and tables[0]["rooms"] == 2 else None
    # the count comes with the next heartbeat
    tables = await eventually(table_counts_both, seconds=15)
    assert [t["instance"] for t in tables] == [TABLE]
    table = tables[0]
    assert table["address"].startswith("127.0.0.1:") and table["players"] == 2
    assert table["linked_here"] is True       # this lobby placed the rooms there
    assert 0 <= table["heartbeat_age_seconds"] < 60 and table["uptime_seconds"] >= 0

    overview = await stack.ok("/api/overview")
    assert overview["tables"] == {"live": 1, "rooms": 2, "players": 2}
    assert overview["rooms"] == {"total": 2, "by_status": {"waiting": 2},
                                 "by_game": {"dadun": {"waiting": 1},
                                             "xuezhan": {"waiting": 1}}}
    assert overview["sessions"] == {"connections": 2, "logged_in": 2, "in_rooms": 2}
    assert overview["lobby"]["nats_connected"] is True
    assert overview["lobby"]["version"] and overview["lobby"]["uptime_seconds"] >= 0

    rooms = {r["room_id"]: r for r in (await stack.ok("/api/rooms"))["rooms"]}
    assert rooms[vip] == {"room_id": vip, "game": "xuezhan", "status": "waiting", "hand": 0,
                          "total_hands": 4, "base_score": 1, "players": 1, "free_seats": 3,
                          "has_password": True, "owner": TABLE, "address": table["address"]}
    assert rooms[plain]["game"] == "dadun" and rooms[plain]["has_password"] is False
    dadun = (await stack.ok("/api/rooms?game=dadun"))["rooms"]
    assert [r["room_id"] for r in dadun] == [plain]
    assert (await stack.ok("/api/rooms?status=playing"))["rooms"] == []
    assert len((await stack.ok("/api/rooms?status=WAITING&game=XueZhan"))["rooms"]) == 1
    for query in ("?game=chess", "?status=sleeping", "?game=%3Cscript%3E"):
        status, body, _ = await stack.get(f"/api/rooms{query}")
        assert status == 400 and body["error"] == "bad_request", query


async def test_room_detail_shows_the_seats_but_never_a_password(stack: Stack) -> None:
    vip, _ = await two_rooms(stack)
    detail = await stack.ok(f"/api/rooms/{vip}")
    assert detail["has_password"] is True and detail["game"] == "xuezhan"
    assert detail["seats"] == [{"seat": 0, "user_id": 7001, "nickname": "alice",
                                "online": True, "ready": False, "entrusted": False,
                                "total_score": 0, "coins": detail["seats"][0]["coins"],
                                "session_here": True}]
    assert isinstance(detail["options"], dict)
    # a careless writer puts the password (and an IP) into the directory entry itself
    kv = await (await nats.connect(stack.nats.url)).jetstream().key_value("rooms")
    raw = json.loads((await kv.get(str(vip))).value)
    raw["password"] = raw["room"]["password"] = PASSWORD
    raw["room"]["players"][0]["ip"] = "10.9.8.7"
    raw["room"]["options_json"] = json.dumps({"vip_password": PASSWORD, "hu": "any"})
    await kv.put(str(vip), json.dumps(raw).encode())
    for path in (f"/api/rooms/{vip}", "/api/rooms", "/api/overview", "/api/users/7001"):
        status, _, text = await stack.get(path)
        assert status == 200, (path, text)
        assert PASSWORD not in text and "10.9.8.7" not in text, path
    assert (await stack.ok(f"/api/rooms/{vip}"))["options"] == {"hu": "any"}


async def test_users_history_and_bad_or_unknown_ids(stack: Stack) -> None:
    vip, _ = await two_rooms(stack)
    alice = await stack.ok("/api/users/7001")
    assert alice["seat"] == {"room_id": vip, "seat": 0, "owner": TABLE,
                             "address": alice["seat"]["address"]}
    assert alice["session_here"]["room_id"] == vip and alice["session_here"]["seat"] == 0
    assert alice["profile"]["nickname"] == "alice"

    for path in ("/api/rooms/abc", "/api/rooms/0", "/api/rooms/-3", "/api/rooms/1.5",
                 "/api/rooms/99999999999999999999", "/api/rooms/%EF%BC%91",
                 "/api/users/x", "/api/users/0", "/api/history/%3Cb%3E"):
        status, body, text = await stack.get(path)
        assert status == 400 and body["error"] == "bad_request", (path, text)
        assert "Traceback" not in text
    for path in ("/api/rooms/987654321", "/api/users/424242", f"/api/history/{vip}"):
        status, body, text = await stack.get(path)
        assert status == 404 and body["error"] == "not_found", (path, text)

    # a settled hand of the room, as a table publishes it, reaches records and the console
    nc = await nats.connect(stack.nats.url)
    js = nc.jetstream()
    await ensure_streams(js)
    seats = [7001, 7002, 7003, 7004]
    await js.publish(SETTLE_SUBJECT, encode(hand_message(vip, 1, seats, [3, -1, -1, -1])),
                     headers={"Nats-Msg-Id": f"{vip}:1"})
    await nc.close()

    async def history() -> Any:
        status, body, _ = await stack.get(f"/api/history/{vip}")
        return body if status == 200 else None
    scores = await eventually(history, seconds=15)
    assert scores["room_id"] == vip
    assert {p["user_id"]: (p["scores"], p["total"]) for p in scores["players"]} == {
        7001: ([3], 3), 7002: ([-1], -1), 7003: ([-1], -1), 7004: ([-1], -1)}

    # records down: history is a 503, a user lookup still shows the directory and the session
    stack.records_running = False
    await stack.records.stop(0)
    status, body, text = await stack.get(f"/api/history/{vip}")
    assert status == 503 and body["error"] == "unavailable" and "records" in body["message"]
    alice = await stack.ok("/api/users/7001")
    assert alice["seat"]["room_id"] == vip and alice["session_here"] is not None
    assert alice["profile"] is None and alice["profile_error"]


async def test_nats_down_is_a_503_and_the_console_recovers(stack: Stack) -> None:
    await two_rooms(stack)
    app = stack.lobby.app
    stack.nats.stop()

    async def disconnected() -> bool:
        return not app.nc.is_connected
    await eventually(disconnected, seconds=15)
    for path in ("/api/overview", "/api/tables", "/api/rooms", "/api/rooms/1",
                 "/api/users/7001"):
        status, body, text = await stack.get(path)
        assert status == 503, (path, text)
        assert body["error"] == "unavailable" and "NATS" in body["message"]
        assert "Traceback" not in text
    stack.nats.start()

    async def answers() -> bool:
        return (await stack.get("/api/rooms"))[0] == 200
    await eventually(answers, seconds=15)
    assert len((await stack.ok("/api/rooms"))["rooms"]) == 2


# -- the page, run in node against the console -------------------------------------------------

# A stub DOM with the elements of console.html (by id), console.js loaded into it with node's
# fetch and a sessionStorage; one JSON command per stdin line, one JSON answer per line.
HARNESS = r"""
const fs = require("fs");
const readline = require("readline");
const [port, webRoot] = process.argv.slice(2);
const elements = new Map();
function element(id, tag) {
  const el = {id, tagName: tag || "", nodeType: 1, textContent: "", hidden: false, value: "",
    checked: false, className: "", type: "", children: [], onclick: null, onsubmit: null,
    onchange: null,
    appendChild(c) { this.children.push(c); return c; },
    replaceChildren(...cs) { this.children = cs; }};
  if (id) elements.set(id, el);
  return el;
}
for (const tag of fs.readFileSync(`${webRoot}/console.html`, "utf8").match(/<[a-z0-9]+\s[^>]*>/gi)) {
  const id = /\sid="([^"]+)"/.exec(tag);
  if (id) {
    const el = element(id[1], /<([a-z0-9]+)/i.exec(tag)[1]);
    el.hidden = /\shidden[\s>]/.test(tag);
    el.checked = /\schecked[\s>]/.test(tag);
  }
}
const $ = (id) => { if (!elements.has(id)) throw new Error(`no #${id}`); return elements.get(id); };
const store = new Map();
globalThis.sessionStorage = {getItem: (k) => (store.has(k) ? store.get(k) : null),
  setItem: (k, v) => store.set(k, String(v)), removeItem: (k) => store.delete(k)};
globalThis.location = {origin: `http://127.0.0.1:${port}`};
globalThis.document = {getElementById: $, createElement: (tag) => element("", tag)};
require(`${webRoot}/console.js`);

const text = (el) => [el.textContent, ...el.children.map(text)].filter(Boolean).join(" ");
function buttons(el, out = []) {
  if (el.onclick) out.push(el);
  for (const c of el.children) buttons(c, out);
  return out;
}
const state = (id) => ({text: text($(id)), rows: $(id).children.length, hidden: $(id).hidden});
const met = (c) => { const s = state(c.id);
  return (c.rows === undefined || s.rows >= c.rows) &&
    (c.contains === undefined || s.text.includes(c.contains)) &&
    (c.hidden === undefined || s.hidden === c.hidden); };
const ops = {
  set(c) { $(c.id).value = c.value; },
  submit(c) { $(c.id).onsubmit({preventDefault() {}}); },
  press(c) {   // the button labelled c.label in the row of #id whose text has c.row
    const row = $(c.id).children.find((r) => text(r).split(" ").includes(String(c.row)));
    if (!row) throw new Error(`no row ${c.row} in #${c.id}`);
    const b = buttons(row).find((x) => x.textContent === c.label);
    if (!b) throw new Error(`no button ${c.label} in #${c.id}`);
    b.onclick();
  },
  click(c) { $(c.id).onclick(); },
  stored() { return {stored: store.get("paiju-console-token") || null}; },
  wait(c) {
    return new Promise((resolve) => {
      const until = Date.now() + 20000;
      const poll = setInterval(() => {
        if (met(c) || Date.now() > until) { clearInterval(poll); resolve({met: met(c)}); }
      }, 20);
    });
  },
};
readline.createInterface({input: process.stdin}).on("line", async (line) => {
  const c = JSON.parse(line);
  let answer;
  try {
    answer = {ok: true, ...(await ops[c.op](c)), ...(c.id ? state(c.id) : {})};
  } catch (err) {
    answer = {ok: false, error: String(err)};
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}).on("close", () => process.exit(0));
"""


class Page:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def close(self) -> None:
        """End the page's node process: its input closed, killed if it does not exit."""
        if self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()

    async def do(self, op: str, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        assert line, "the page's node process ended"
        answer: dict[str, Any] = json.loads(line)
        assert answer["ok"], answer
        return answer

    async def wait(self, element: str, **cond: Any) -> dict[str, Any]:
        answer = await self.do("wait", id=element, **cond)
        assert answer["met"], (element, cond, answer, await self.do("wait", id="error"))
        return answer


async def test_the_page_renders_the_api_in_node(stack: Stack, tmp_path: Path) -> None:
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node to run clients/web/console.js")
    vip, _ = await two_rooms(stack)
    harness = tmp_path / "harness.js"
    harness.write_text(HARNESS)
    proc = await asyncio.create_subprocess_exec(
        node, str(harness), str(stack.console.port), str(WEB_ROOT),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    page = Page(proc)
    try:
        await page.wait("console", hidden=True)
        await page.do("set", id="token", value="wrong")
        await page.do("submit", id="token-form")
        await page.wait("error", contains="refused the token", hidden=False)
        assert (await page.do("stored"))["stored"] is None
        await page.wait("console", hidden=True)

        await page.do("set", id="token", value=TOKEN)
        await page.do("submit", id="token-form")
        assert (await page.do("stored"))["stored"] == TOKEN
        await page.wait("rooms", rows=2)
        await page.wait("tables", rows=1, contains=TABLE)
        await page.wait("overview", contains="2 logged in")

        await page.do("press", id="rooms", row=vip, label="Open")
        seats = await page.wait("room-seats", rows=1, contains="alice")
        info = await page.wait("room-info", contains="VIP (password) yes")
        assert PASSWORD not in seats["text"] + info["text"]
        await page.wait("room", hidden=False)
        assert (await page.wait("room-title", contains="Room"))["text"] == f"Room {vip}"

        await page.do("set", id="user-id", value="7002")
        await page.do("submit", id="user-form")
        await page.wait("user-info", contains="bob")
        await page.do("set", id="user-id", value="12ab")
        await page.do("submit", id="user-form")
        await page.wait("error", contains="positive number", hidden=False)
    finally:
        await page.close()


async def test_the_lobby_runs_its_console_and_closes_it_when_it_stops(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    async with console_stack(fresh_nats, tmp_path / "records.db") as running:
        assert (await running.ok("/api/overview"))
        port = running.console.port
    with pytest.raises(aiohttp.ClientConnectionError):
        async with aiohttp.ClientSession() as http:
            await http.get(f"http://127.0.0.1:{port}/api/overview")
