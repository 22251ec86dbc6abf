"""The browser client's room features, driven for real: clients/web/app.js runs in node (one
process per browser, a stub DOM built from index.html's ids) against a real lobby, table,
arbiter and records (SQLite) on loopback with a real nats-server. Two browsers chat, see the
same-IP alert, vote a dismiss down and then through; one of them plays a hand against
robots, goes into entrust and takes control back until the lobby refuses (no cancels
left), then reads the room's history scores and the replay of the hand."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc

from clients.robot.robot import Robot
from paiju.v1 import records_pb2, records_pb2_grpc
from services.arbiter.server import start as start_arbiter
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from services.lobby import tokens
from services.lobby.server import start as start_lobby
from services.lobby.ws import WEB_ROOT
from services.records.server import start as start_records
from services.table.server import start as start_table
from tests.support.lobbyworld import SECRET

# A stub DOM with every element of index.html (ids and initial `hidden`), app.js loaded into
# it, and a line protocol on stdin/stdout: one JSON command in, one JSON answer out.
HARNESS = r"""
const fs = require("fs");
const readline = require("readline");
const [port, token, webRoot, nickname] = process.argv.slice(2);
const elements = new Map();
const missing = new Set();
function element(id) {
  const el = {id, textContent: "", hidden: false, value: "", children: [], onclick: null,
    onkeydown: null,
    appendChild(c) { this.children.push(c); return c; },
    replaceChildren(...cs) { this.children = cs; },
    querySelector() {
      if (!this.tbody) { this.tbody = element(""); this.children.push(this.tbody); }
      return this.tbody;
    },
    scrollIntoView() {}};
  if (id) elements.set(id, el);
  return el;
}
for (const tag of fs.readFileSync(`${webRoot}/index.html`, "utf8").match(/<[a-z0-9]+\s[^>]*>/gi)) {
  const id = /\sid="([^"]+)"/.exec(tag);
  if (id) element(id[1]).hidden = /\shidden[\s>]/.test(tag);
}
const $ = (id) => elements.get(id) || (missing.add(id), element(id));
// node has no animation frames: a drawing app.js asks for runs right after the current task
globalThis.requestAnimationFrame = (fn) => { queueMicrotask(() => fn(0)); return 1; };
globalThis.location = {protocol: "http:", host: `127.0.0.1:${port}`};
globalThis.document = {getElementById: $, createElement: () => element(""),
  querySelectorAll: () => []};
require(`${webRoot}/app.js`);

const text = (el) => [el.textContent, ...el.children.map(text)].filter(Boolean).join(" ");
function state(id) {
  const el = $(id);
  return {text: text(el), lines: el.children.map(text), hidden: el.hidden, value: el.value};
}
function buttons(el, out = []) {
  if (el.onclick) out.push(el);
  for (const c of el.children) buttons(c, out);
  return out;
}
function met(c) {
  const s = state(c.id);
  return (c.contains === undefined || s.text.includes(c.contains)) &&
    (c.hidden === undefined || s.hidden === c.hidden) &&
    (c.lines === undefined || s.lines.length >= c.lines) &&
    (c.value === undefined || s.value === c.value);
}
let autoplay = false;
setInterval(() => {
  const first = $("actions").children[0];
  if (autoplay && first) first.onclick();
}, 20);

const ops = {
  set(c) { $(c.id).value = c.value; },
  click(c) { $(c.id).onclick(); },
  key(c) { $(c.id).onkeydown({key: c.key}); },
  press(c) {   // a button inside `id` by its label, e.g. a room's Replay button
    const b = buttons($(c.id)).find((x) => x.textContent === c.label);
    if (!b) throw new Error(`no button ${JSON.stringify(c.label)} in #${c.id}`);
    b.onclick();
  },
  autoplay(c) { autoplay = c.on; },
  missing() { return {missing: [...missing]}; },
  state() {},
  wait(c) {
    return new Promise((resolve) => {
      const until = Date.now() + c.timeout * 1000;
      const poll = setInterval(() => {
        if (met(c) || Date.now() > until) { clearInterval(poll); resolve({met: met(c)}); }
      }, 20);
    });
  },
};
$("token").value = token;
$("nickname").value = nickname;
$("login").onclick();
readline.createInterface({input: process.stdin}).on("line", async (line) => {
  const c = JSON.parse(line);
  let answer;
  try {
    answer = {ok: true, ...(await ops[c.op](c)), ...(c.id ? state(c.id) : {})};
  } catch (err) {
    answer = {ok: false, error: String(err), ...(c.id ? state(c.id) : {})};
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}).on("close", () => process.exit(0));
"""


class Page:
    """One browser: app.js in a node process, driven over its stdin and stdout."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def open(cls, node: list[str], harness: Path, port: int, user_id: int,
                   nickname: str) -> Page:
        proc = await asyncio.create_subprocess_exec(
            *node, str(harness), str(port), tokens.mint(user_id, SECRET, 600), str(WEB_ROOT),
            nickname, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        return cls(proc)

    async def do(self, op: str, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), args.get("timeout", 0) + 20)
        assert line, "the page's node process ended"
        answer: dict[str, Any] = json.loads(line)
        assert answer["ok"], answer
        return answer

    async def wait(self, element: str, *, contains: str | None = None,
                   hidden: bool | None = None, lines: int | None = None,
                   value: str | None = None) -> dict[str, Any]:
        """The element once it contains the text / is (not) hidden / has that many children /
        has that value; the deadline is for a broken page, not a measure of speed."""
        cond = {k: v for k, v in (("contains", contains), ("hidden", hidden), ("lines", lines),
                                  ("value", value)) if v is not None}
        answer = await self.do("wait", id=element, timeout=30, **cond)
        assert answer["met"], (element, cond, answer, (await self.state("log"))["lines"][-15:])
        return answer

    async def state(self, element: str) -> dict[str, Any]:
        return await self.do("state", id=element)

    async def click(self, element: str) -> None:
        await self.do("click", id=element)

    async def type(self, element: str, value: str) -> None:
        await self.do("set", id=element, value=value)

    async def close(self) -> None:
        if self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


@contextlib.asynccontextmanager
async def full_stack(nats_url: str, db: Path) -> AsyncIterator[tuple[str, int, str]]:
    """Records, arbiter, table and lobby (WebSocket on), all real: (lobby, ws port, records).
    Long timers so that nothing times out while the test clicks; entrust waits before it
    plays, so a player can take control back; one cancel of entrust per player."""
    env = {"NATS_URL": nats_url, "PAIJU_TABLE__INSTANCE": "table-web",
           "PAIJU_TABLE__TURN_SECONDS": "120", "PAIJU_TABLE__WINDOW_SECONDS": "120",
           "PAIJU_TABLE__ENTRUST_DELAY_SECONDS": "60", "PAIJU_TABLE__ENTRUST_CANCELS": "1",
           "PAIJU_LOBBY__DISMISS_VOTE_SECONDS": "120"}
    cfg = load_config("test", environ=env)
    records = await start_records(replace(cfg, records=replace(
        cfg.records, database_url=f"sqlite+aiosqlite:///{db}")), port=0, metrics_port=-1)
    arbiter = await start_arbiter(cfg, port=0, metrics_port=-1)
    cfg = replace(cfg, records=replace(cfg.records, address=f"127.0.0.1:{records.port}"))
    table = await start_table(cfg, port=0, metrics_port=-1)
    lobby = await start_lobby(replace(cfg, lobby=replace(cfg.lobby, token_secret=SECRET,
                                                         ws_port=0)), port=0, metrics_port=-1)
    try:
        yield f"127.0.0.1:{lobby.port}", lobby.ws_port, f"127.0.0.1:{records.port}"  # type: ignore[attr-defined]
    finally:
        await lobby.stop(0.5)
        await table.stop(0)
        await arbiter.stop(0)
        await records.stop(0)


async def settled(records: str, room_id: int, hand_no: int) -> None:
    """Wait until records has written the hand (its consumer runs on its own)."""
    async with grpc.aio.insecure_channel(records) as channel:
        stub = records_pb2_grpc.RecordsStub(channel)
        async with asyncio.timeout(30):
            while True:
                hands = await stub.ListHands(records_pb2.ListHandsRequest(room_id=room_id))
                if any(h.hand_no == hand_no for h in hands.hands):
                    return
                await asyncio.sleep(0.05)


def room_of(page_state: dict[str, Any]) -> int:
    match = re.match(r"Room (\d+) ", page_state["text"])
    assert match, page_state
    return int(match.group(1))


async def test_chat_dismiss_entrust_history_and_replay_in_the_browser(
        fresh_nats: EmbeddedNats, tmp_path: Path, node: list[str]) -> None:
    harness = tmp_path / "harness.js"
    harness.write_text(HARNESS)
    async with full_stack(fresh_nats.url, tmp_path / "records.db") as (address, port, records):
        alice = await Page.open(node, harness, port, 401, "alice")
        bob = await Page.open(node, harness, port, 402, "bob")
        robots: list[asyncio.Task[Any]] = []
        try:
            await two_browsers_in_a_room(alice, bob)
            room_id = await a_hand_with_entrust(alice, address, robots)
            stats = await asyncio.wait_for(asyncio.gather(*robots), 30)
            assert all(s.hands == 1 for s in stats)
            await settled(records, room_id, 1)
            await history_and_replay(alice, room_id)
            assert (await alice.do("missing"))["missing"] == []   # every id is in index.html
        finally:
            for task in robots:
                task.cancel()
            await alice.close()
            await bob.close()


async def two_browsers_in_a_room(alice: Page, bob: Page) -> None:
    # alice creates a room, bob joins it by number
    await alice.wait("lobby-panel", hidden=False)
    await alice.type("game", "XUEZHAN")   # a browser's select starts on its first option
    await alice.type("hands", "1")
    await alice.click("create")
    room_id = room_of(await alice.wait("room-title", contains="Room "))
    await bob.wait("lobby-panel", hidden=False)
    await bob.type("join-id", str(room_id))
    await bob.click("join")
    await bob.wait("room-title", contains=f"Room {room_id} ")
    await alice.wait("players", contains="bob")

    # both browsers connect from 127.0.0.1: the same-IP alert is shown on top of the page
    for page in (alice, bob):
        await page.wait("alerts", hidden=False)
        await page.wait("alert-list", contains="bob and alice share an IP address")
    await alice.click("ask-geo")
    await alice.wait("geo", contains="bob: unknown · SAME IP")

    # chat both ways; user text is shown as text, markup and all
    await alice.type("chat-input", "hello <b>bob</b> & 你好")
    await alice.click("chat-send")
    await bob.wait("chat-log", contains="alice: hello <b>bob</b> & 你好")
    await alice.wait("chat-log", contains="you: hello <b>bob</b> & 你好")
    await alice.wait("chat-input", value="")   # cleared once the lobby took it
    await bob.type("chat-input", "hi alice")
    await bob.do("key", id="chat-input", key="Enter")
    await alice.wait("chat-log", contains="bob: hi alice")

    # alice applies to dismiss; bob gets the vote with its countdown and refuses
    await alice.click("dismiss-apply")
    await bob.wait("dismiss-panel", hidden=False)
    await bob.wait("dismiss-title", contains="alice applies to dismiss the room")
    assert re.search(r"\d+ s left", (await bob.wait("dismiss-countdown", contains=" s left"))["text"])
    await bob.wait("dismiss-vote", hidden=False)
    assert (await alice.state("dismiss-vote"))["hidden"]   # the applicant agreed by applying
    await bob.click("dismiss-refuse")
    for page in (alice, bob):
        await page.wait("dismiss-result", contains="Dismiss refused")
    await alice.wait("room-panel", hidden=False)

    # bob applies; alice agrees; the room is dismissed on both pages
    await bob.click("dismiss-apply")
    await alice.wait("dismiss-vote", hidden=False)
    await alice.wait("dismiss-title", contains="bob applies")
    await alice.click("dismiss-agree")
    for page in (alice, bob):
        await page.wait("dismiss-result", contains=f"Room {room_id} dismissed (the players voted)")
        await page.wait("room-panel", hidden=True)
        await page.wait("lobby-panel", hidden=False)
        await page.wait("alerts", hidden=True)


async def a_hand_with_entrust(alice: Page, address: str,
                              robots: list[asyncio.Task[Any]]) -> int:
    """alice plays one hand against three robots; at her first decision she leaves (entrust
    takes her seat), takes control back, leaves again and is refused the second cancel."""
    await alice.click("create")
    await alice.wait("room-panel", hidden=False)
    room_id = room_of(await alice.state("room-title"))
    robots.extend(asyncio.create_task(Robot(address, 403 + i, "xuezhan", SECRET,
                                            room_id=room_id).run(max_hands=1))
                  for i in range(3))
    await alice.wait("players", contains="robot405")
    await alice.click("ready")
    await alice.wait("actions", lines=1)

    await alice.click("leave")   # mid-hand: the table keeps the seat and entrusts it
    await alice.wait("error", contains="entrust plays for you")
    await alice.wait("entrust", hidden=False)
    await alice.wait("entrust-text", contains="1 cancel left")
    await alice.wait("players", contains="托管")
    await alice.click("cancel-entrust")
    await alice.wait("entrust", hidden=True)

    await alice.click("leave")
    await alice.wait("entrust-text", contains="no cancels left")
    await alice.click("cancel-entrust")
    await alice.wait("entrust-msg", contains="refused: no cancels left")
    await alice.wait("error", contains="no cancels left")
    assert not (await alice.state("entrust"))["hidden"]

    await alice.do("autoplay", on=True)
    await alice.wait("settlement-panel", hidden=False)
    await alice.wait("settlement", contains="deltas: ")
    await alice.wait("entrust", hidden=True)   # entrust ends with the hand
    await alice.wait("dismiss-result", contains="all hands played")   # a one-hand room
    await alice.wait("lobby-panel", hidden=False)
    return room_id


async def history_and_replay(alice: Page, room_id: int) -> None:
    # the page remembers the last room for its history
    assert (await alice.state("history-room"))["value"] == str(room_id)
    await alice.wait("history-panel", hidden=False)
    await alice.click("history-ask")
    await alice.wait("history-title", contains=f"Room {room_id}: 1 hand settled")
    rows = (await alice.wait("history", lines=2))["lines"]
    assert rows[0].startswith("hand 1: ") and "you " in rows[0] and "robot403 " in rows[0], rows
    deltas = [int(x) for x in re.findall(r" ([+-]?\d+)(?:,| Replay)", rows[0])]
    assert len(deltas) == 4 and sum(deltas) == 0, rows
    assert rows[1].startswith("total: you "), rows

    await alice.do("press", id="history", label="Replay hand 1")
    title = await alice.wait("replay-title", contains=f"Replay: room {room_id}, hand 1 (xuezhan)")
    events = (await alice.wait("replay", lines=10))["lines"]
    assert str(len(events)) + " events" in title["text"], title
    assert events[0].startswith("deal: dealer "), events[:3]
    assert any(e.startswith("hand: ") and e.endswith("[private]") for e in events), events[:8]
    assert any(re.match(r"(you|seat \d) discard \(打\): [1-9][mps]", e) for e in events), events
    assert any(e.startswith("hand_over") for e in events), events[-5:]
