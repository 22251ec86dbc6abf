"""The browser client (clients/web/app.js) comes back by itself: a Reconnect frame or a socket
that closes without a kick opens the socket again on the same origin after a pause (the
lobby's after_ms, then a growing backoff with jitter) and logs in again with the same token;
a kick or a refused token does not; after a minute without a login it stops and says so.

First with a stand-in WebSocket and clock (every step visible), then against a real lobby
that tells the page's session to reconnect."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from services.lobby import tokens
from tests.service.test_lobby_ws import STUB_DOM
from tests.support.lobbyworld import SECRET, World

HARNESS = r"""
const [appPath] = process.argv.slice(2);
""" + STUB_DOM + r"""globalThis.location = {protocol: "http:", host: "127.0.0.1:1"};
globalThis.document = {getElementById: $, createElement: () => element(""),
  querySelectorAll: () => []};
for (const id of ["error", "lobby-panel", "room-panel", "play-panel"]) $(id).hidden = true;
const sockets = [];
const timers = [];
globalThis.WebSocket = class {
  static OPEN = 1;
  constructor(url) { this.url = url; this.readyState = 1; this.sent = []; sockets.push(this); }
  send(text) { this.sent.push(JSON.parse(text)); }
  close() {}
};
globalThis.setTimeout = (fn, ms) => { timers.push({fn, ms}); return timers.length; };
globalThis.clearTimeout = () => {};
globalThis.setInterval = () => 0;
globalThis.clearInterval = () => {};
require(appPath);
const sock = () => sockets[sockets.length - 1];
const feed = (frame) => sock().onmessage({data: JSON.stringify(frame)});
const loginSeq = () => String(sock().sent.find((f) => f.login).seq);
const loginOk = (room) => feed({seq: "1", reply_to: loginSeq(),
  login_ok: {player: {user_id: "7", seat: 1}, ...(room ? {room} : {})}});
const ROOM = {room_id: "100001", players: []};
const view = (step) => console.log(JSON.stringify({step, sockets: sockets.length,
  urls: [...new Set(sockets.map((s) => s.url))],
  pauses: timers.map((t) => t.ms), status: $("status").textContent,
  loginPanel: !$("login-panel").hidden, error: $("error").hidden ? null : $("error").textContent,
  logins: sockets.map((s) => s.sent.filter((f) => f.login).map((f) => f.login.token).join()),
  inRoom: !$("room-panel").hidden, log: $("log").children.map((li) => li.textContent),
  asked: sock().sent.filter((f) => !f.login && !f.heartbeat).map((f) => Object.keys(f).find(
    (k) => k !== "seq") + " " + JSON.stringify(Object.values(f).find((v) => typeof v === "object")))}));
const fire = () => { timers.shift().fn(); };

$("token").value = "tok-1";
$("nickname").value = "ann";
$("login").onclick();
sock().onopen();
loginOk(ROOM);
view("logged in");
feed({seq: "2", reconnect: {reason: "draining", after_ms: 700}});
sock().onclose();
view("sent away");
fire();
sock().onopen();
view("second socket");
sock().onclose();                     // refused before any login: back off further
view("failed again");
fire();
sock().onopen();
loginOk(ROOM);
view("back");
sock().onclose();                     // the lobby died: no Reconnect frame
view("lost");
fire();
sock().onopen();
loginOk(null);                        // the room ended while we were away
view("room ended");
feed({seq: "2", kick_out: {user_id: "7"}});
sock().onclose();
view("kicked");
$("token").value = "bad";
$("login").onclick();
sock().onopen();
feed({seq: "1", reply_to: loginSeq(), ret: {event_id: 1002, code: 1003, message: "bad token"}});
sock().onclose();
view("refused");
$("token").value = "tok-2";
$("login").onclick();
sock().onopen();
loginOk(ROOM);
let now = Date.now();
Date.now = () => now;
sock().onclose();
while (timers.length) { now += 10000; fire(); sock().onclose(); }
view("gave up");
"""


async def test_the_page_reconnects_with_backoff_and_stops_when_it_should(
        node: list[str], tmp_path: Any) -> None:
    from services.lobby.ws import WEB_ROOT

    harness = tmp_path / "reconnect.js"
    harness.write_text(HARNESS)
    proc = await asyncio.create_subprocess_exec(
        *node, str(harness), str(WEB_ROOT / "app.js"), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    v = {x["step"]: x for x in map(json.loads, out.decode().splitlines())}

    assert v["logged in"]["inRoom"] and v["logged in"]["pauses"] == []
    away = v["sent away"]
    assert away["pauses"] == [700], "the lobby's after_ms (above the first backoff)"
    assert away["status"].startswith("connection lost: reconnecting in 0.7 s")
    assert "the lobby asks us to reconnect (draining)" in away["log"]
    assert not away["loginPanel"]
    assert v["second socket"]["logins"] == ["tok-1", "tok-1"]   # the same token again
    assert v["second socket"]["urls"] == ["ws://127.0.0.1:1/ws?format=json"]   # same origin
    assert 200 <= v["failed again"]["pauses"][0] <= 400         # second try: up to 2 x 200 ms
    back = v["back"]
    assert back["status"] == "user 7 (no nickname)" and back["inRoom"]
    assert back["log"][-1] == "reconnected: your seat is resumed"
    assert 100 <= v["lost"]["pauses"][0] <= 200                  # a new outage starts over
    ended = v["room ended"]
    assert not ended["inRoom"] and "room 100001 ended while you were away" in ended["log"]
    assert 'ask_history_score {"room_id":"100001"}' in ended["asked"], ended["asked"]
    kicked = v["kicked"]
    assert kicked["pauses"] == [] and kicked["loginPanel"] and kicked["status"] == "disconnected"
    assert v["refused"]["pauses"] == [] and v["refused"]["loginPanel"]
    gave_up = v["gave up"]
    assert gave_up["error"] == "the lobby cannot be reached: log in again later"
    assert gave_up["loginPanel"] and gave_up["pauses"] == []
    assert 5 <= gave_up["sockets"] - v["refused"]["sockets"] <= 12   # tried for about a minute


REAL_HARNESS = r"""
const [port, token, appPath] = process.argv.slice(2);
""" + STUB_DOM + r"""globalThis.location = {protocol: "http:", host: `127.0.0.1:${port}`};
globalThis.document = {getElementById: $, createElement: () => element(""),
  querySelectorAll: () => []};
for (const id of ["error", "lobby-panel", "room-panel", "play-panel"]) $(id).hidden = true;
require(appPath);
$("token").value = token;
$("login").onclick();
const printed = new Set();
setInterval(() => {
  for (const li of $("log").children) {
    if (!printed.has(li)) { printed.add(li); console.log("LOG " + li.textContent); }
  }
  console.log("STATUS " + $("status").textContent);
}, 50);
"""


async def test_a_real_lobby_sends_the_page_away_and_it_logs_in_again(
        node: list[str], world: World, tmp_path: Any) -> None:
    from services.lobby.ws import WEB_ROOT

    await world.lobby(ws_port=0)
    host = world.lobbies[-1]
    harness = tmp_path / "real.js"
    harness.write_text(REAL_HARNESS)
    proc = await asyncio.create_subprocess_exec(
        *node, str(harness), str(host.ws_port), tokens.mint(701, SECRET, 600),
        str(WEB_ROOT / "app.js"), stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    lines: list[str] = []

    async def until(text: str) -> None:
        while not any(text in line for line in lines):
            line = (await proc.stdout.readline()).decode()   # type: ignore[union-attr]
            assert line, lines
            lines.append(line.rstrip("\n"))

    try:
        async with asyncio.timeout(30):
            await until("STATUS user 701")
            first = host.app.hub.by_user[701]
            host.app.tell_reconnect(first, "draining")   # what a drain sends each session
            await until("the lobby asks us to reconnect (draining)")
            await until("LOG reconnected: your seat is resumed")
            again = host.app.hub.by_user[701]
            assert again is not first and again.session_id != first.session_id
            assert [c[0] for c in world.records.calls].count("EnsurePlayer") == 2
    finally:
        proc.kill()
        await proc.wait()
