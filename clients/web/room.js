// The lobby and the room around the table: the room list, the room bar (title, players,
// ready / leave / dismiss / distances), chat, the dismiss vote, entrust and the same-IP and
// distance alerts. One alert per room for each group of players found together, not one per
// pair (a DistanceAlert names its players; a repeat for the same players is not shown again).
import {gameOfEnum, rendererOf} from "./games.js";
import {$, button, cell, el, fill, show} from "./dom.js";
import {app, ui} from "./state.js";
import {command, request, send} from "./conn.js";
import {log, userName} from "./log.js";

const REASONS = {PLAYER_VOTE: "the players voted", PLAYER_LEFT: "a player left",
  ALL_HANDS_PLAYED: "all hands played", NEGATIVE_COINS: "a player ran out of coins",
  IDLE_TOO_LONG: "idle too long"};
const GAMES = {XUEZHAN: "XueZhan 血战", CHANGSHA: "Changsha 长沙", DADUN: "Dadun 打盾"};
const gameTitle = (g) => GAMES[g] || (rendererOf(gameOfEnum(g)) || {}).title || g || "?";
const STATUS = {ROOM_WAITING: "waiting 等待", ROOM_PLAYING: "playing 游戏中", ROOM_HAND_OVER: "hand over 小局结束",
  ROOM_FINISHED: "finished 已结束", ROOM_DISMISSING: "dismissing 解散中", ROOM_CHOOSING_ALONE: "choosing alone 选择打独"};
const alerted = new Set();      // distance alerts shown, by their players
const sameIp = {users: new Set(), line: null};   // the room's one same-IP alert

export function setRoom(room, seat) {
  const entered = room && (!app.room || app.room.room_id !== room.room_id);
  app.room = room;
  app.seat = room ? seat : -1;
  app.watching = !!room && seat < 0;   // a spectator (观战): seat -1, public view only
  show("lobby-panel", !room);
  show("room-panel", !!room);
  if (!room) { clearRoomViews(); return; }
  if (entered) enterRoom(room.room_id);
  for (const p of room.players || []) app.names.set(String(p.user_id), p.nickname || "");
  $("room-title").textContent = `Room ${room.room_id} · ${gameTitle(room.game)} · ` +
    `hand ${room.cur_hand || 0}/${room.total_hands || 0} · ${STATUS[room.status || "ROOM_WAITING"] || room.status}`;
  const items = (room.players || []).map((p) => {
    const flags = [p.robot && "robot", p.ready && "ready", !p.robot && !p.online && "offline",
      p.entrusted && "托管"]
      .filter(Boolean).join(", ");
    const you = String(p.user_id) === app.me ? " (you)" : "";
    return `seat ${p.seat || 0}: ${p.nickname || p.user_id}${you} score ${p.total_score || 0}` +
      (flags ? ` [${flags}]` : "");
  });
  fill($("players"), items, "li");
  const inHand = room.status === "ROOM_PLAYING" || room.status === "ROOM_CHOOSING_ALONE";
  $("room-panel").className = [inHand ? "in-hand" : "", app.watching ? "watching" : ""].join(" ");
  // the creator fills the free seats with robots before the first hand (AddRobots)
  show("fill-robots", String(room.room_id) === app.ownRoom && !inHand && !(room.cur_hand > 0) &&
    (room.players || []).length < (room.seats || 4));
  ui.render();
}

// A new room: the last room's vote result goes away; history defaults to this room.
function enterRoom(roomId) {
  app.lastRoom = roomId;
  $("history-room").value = String(roomId);
  show("dismiss-panel", false);
  $("dismiss-title").textContent = "";
  $("dismiss-votes").replaceChildren();
}

// Out of the room: its chat, alerts and distances go (they may arrive before the join's
// reply, so they are cleared on the way out, not on the way in).
function clearRoomViews() {
  $("chat-log").replaceChildren();
  $("geo").replaceChildren();
  $("alert-list").replaceChildren();
  alerted.clear();
  sameIp.users.clear();
  sameIp.line = null;
  show("alerts", false);
  show("play-panel", false);
  ui.clearActions();
  showEntrust(false, 0);
}

export function leaveRoom() {
  setRoom(null, -1);
  send("ask_room_list", {});
}

// A hand starts: nobody is "ready" any more, and its payments are collected afresh.
export function startOfHand(handNo) {
  app.payments = [];
  app.birds = null;
  show("settlement-panel", false);
  if (app.room) {
    const cur = handNo || (app.room.cur_hand || 0) + 1;
    setRoom({...app.room, status: "ROOM_PLAYING", cur_hand: cur,
      players: (app.room.players || []).map((p) => ({...p, ready: false}))}, app.seat);
  }
}

// A hand ended: the room waits for the next ready (the scores come with the next change).
export function endOfHand(deltas) {
  if (!app.room) return;
  const players = (app.room.players || []).map((p) =>
    ({...p, total_score: Number(p.total_score || 0) + Number(deltas[p.seat || 0] || 0)}));
  setRoom({...app.room, status: "ROOM_HAND_OVER", players}, app.seat);
}

export function renderRooms() {
  const body = $("rooms").querySelector("tbody");
  body.replaceChildren();
  for (const r of app.rooms.values()) {
    const tr = document.createElement("tr");
    const names = (r.players || []).map((p) => p.nickname || p.user_id).join(", ");
    const watchers = r.spectators ? ` · ${r.spectators} 观战` : "";
    const cells = [r.room_id + (r.has_password ? " VIP" : ""), gameTitle(r.game),
      `${(r.players || []).length}/${r.seats || 4} ${names}`, (STATUS[r.status || "ROOM_WAITING"] || r.status) + watchers,
      r.total_hands || 0];
    for (const text of cells) tr.appendChild(cell(String(text)));
    const td = document.createElement("td");
    td.appendChild(button("Join", () => send("join_room",
      {room_id: r.room_id, password: $("password").value})));
    td.appendChild(button("Watch 观战", () => send("watch_room", {room_id: r.room_id})));
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

// ------------------------------------------------------------------ chat
export function sendChat() {
  const input = $("chat-input");
  const content = input.value.trim();
  if (!content) return;
  request("chat", {content}, (r) => { if (!r.code) input.value = ""; });
}

export function renderChat(c) {
  const li = el("li", {text: `${userName(c.author_id)}: ${c.content || ""}`});
  $("chat-log").appendChild(li);
  li.scrollIntoView({block: "nearest"});
}

// ------------------------------------------------------------------ dismiss voting (解散)
export function renderDismissVote(q) {
  const votes = q.votes || [];
  const mine = votes.find((v) => String(v.user_id) === app.me);
  $("dismiss-title").textContent =
    `${q.apply_nickname || userName(q.apply_user_id)} applies to dismiss the room (申请解散)`;
  fill($("dismiss-votes"), votes.map((v) =>
    `${v.nickname || userName(v.user_id)}: ${["not voted", "agrees", "refuses"][v.vote || 0]}`), "li");
  $("dismiss-result").textContent = "";
  show("dismiss-vote", !!mine && !mine.vote);
  app.dismissDeadline = Date.now() + (q.remaining_seconds || 0) * 1000;
  show("dismiss-panel", true);
}

export function vote(agree) {
  show("dismiss-vote", false);
  // sent again on "a moment"; "already voted" (1031) to a retry: an earlier try counted
  command("report_dismiss", {agree}, {onRet: (r) => {
    if (r.code && Number(r.code) !== 1031) show("dismiss-vote", true);
  }});
}

export function renderDismissResult(n) {
  const reason = REASONS[n.reason || "PLAYER_VOTE"] || n.reason;
  const text = n.dismissed ? `Room ${n.room_id || app.lastRoom} dismissed (${reason}): ${n.doc || ""}`
    : `Dismiss refused: ${n.doc || "not enough players agreed"}`;
  app.dismissDeadline = 0;
  if ((n.reason || "PLAYER_VOTE") !== "PLAYER_VOTE") {   // no vote behind it
    $("dismiss-title").textContent = "";
    $("dismiss-votes").replaceChildren();
  }
  $("dismiss-result").textContent = text;
  $("dismiss-countdown").textContent = "";
  show("dismiss-vote", false);
  show("dismiss-panel", true);
  log(text);
  if (n.dismissed) leaveRoom();
}

// ------------------------------------------------------------------ entrust (托管)
export function showEntrust(on, cancelsLeft) {
  show("entrust", on);
  if (!on) return;
  const left = cancelsLeft === 1 ? "1 cancel left" : `${cancelsLeft || "no"} cancels left`;
  $("entrust-text").textContent = `Entrust (托管) is playing for you: ${left}`;
  $("entrust-msg").textContent = "";
}

export function cancelEntrust() {
  command("cancel_entrust", {}, {onRet: (r) => {
    $("entrust-msg").textContent = r.code ? `refused: ${r.message || r.code}` : "";
  }});
}

// The room's player list shows who is entrusted; the server does not resend it.
export function markEntrusted(seat, on) {
  if (!app.room) return;
  const players = (app.room.players || []).map((p) =>
    (p.seat || 0) === seat ? {...p, entrusted: on} : p);
  setRoom({...app.room, players}, app.seat);
}

// Entrust ends with the hand for players who are online.
export function endOfHandEntrust() {
  showEntrust(false, 0);
  if (!app.room) return;
  const players = (app.room.players || []).map((p) => p.online ? {...p, entrusted: false} : p);
  setRoom({...app.room, players}, app.seat);
}

// ------------------------------------------------------------------ geo and same-IP alerts
export function addAlert(a) {
  const text = a.alert || "players too close";
  const who = (a.user_ids || []).map(String);
  if (/\bIP\b/.test(text) && who.length) {   // one line for everyone on the same address
    const before = sameIp.users.size;
    for (const uid of who) sameIp.users.add(uid);
    if (sameIp.line && sameIp.users.size === before) return;
    if (!sameIp.line) {
      sameIp.line = el("li", {cls: "same-ip", text});
      $("alert-list").appendChild(sameIp.line);
    } else {
      const names = [...sameIp.users].map(userName);
      sameIp.line.textContent = `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]} ` +
        "share an IP address (同IP)";
    }
  } else {
    const key = who.sort().join(",");
    if (key && alerted.has(key)) return;
    alerted.add(key);
    $("alert-list").appendChild(el("li", {text}));
  }
  show("alerts", true);
  log(`ALERT: ${text}`);
}

export function renderGeo(g) {
  const items = (g.items || []).map((i) =>
    `${userName(i.src_uid)} - ${userName(i.dest_uid)}: ${i.distance || "unknown"}` +
    (i.same_ip ? " · SAME IP (同IP)" : ""));
  fill($("geo"), items.length ? items : ["fewer than two players in the room"], "li");
}
