// Paiju browser client: the lobby's Connect protocol as proto3 JSON text frames over
// /ws?format=json. A frame is {seq, <payload name>: {...}} with the .proto field names;
// replies carry reply_to = our seq. proto3 JSON omits default values (0, "", false, the
// first enum value) and writes int64 as strings, so every read below has a default.
// Every text that comes from other players (chat, nicknames, alerts) is set with
// textContent, never innerHTML.
"use strict";

const $ = (id) => document.getElementById(id);
const TERMS = {discard: "打", chi: "吃", peng: "碰", zhigang: "明杠", angang: "暗杠",
  bugang: "补杠", kaigang: "开杠", buzhang: "补张", hu: "胡", pass: "过",
  exchange_three: "换三张", declare_void: "定缺", opening_hu: "起手胡", midway_hu: "中途胡", haidi_take: "要海底",
  haidi_refuse: "不要海底", choose_alone: "打独", choose_friend_card: "叫朋友", play: "出牌"};
const FRAME_KEYS = new Set(["seq", "event_id", "reply_to", "event_uid"]);
const REASONS = {PLAYER_VOTE: "the players voted", PLAYER_LEFT: "a player left",
  ALL_HANDS_PLAYED: "all hands played", NEGATIVE_COINS: "a player ran out of coins",
  IDLE_TOO_LONG: "idle too long"};
// Refusals of an answer to our own prompt that only mean the game moved on before the answer
// arrived (a window decided early, a turn played by the timer, the hand won meanwhile): for
// the player a note, not an error. ErrorCode values of protos/paiju/v1/common.proto.
const OVERTAKEN = new Set([
  9690,   // MJ_NOT_YOUR_TURN: the turn was played by the timer or entrust
  9692,   // MJ_STALE_WINDOW: the response window was already decided
  9695,   // MJ_HAND_OVER
  9890,   // DD_NOT_YOUR_TURN: the turn was played by the timer or entrust
  9892,   // DD_STALE_TOKEN: the out-token was already used
  9895,   // DD_HAND_OVER
]);
// A socket that closes without a kick (the lobby stopped, or it sent a Reconnect frame
// because it is draining) is opened again on the same origin, where the load balancer
// picks a live lobby, and the client logs in again with the token it has: the lobby resumes
// its seat (login_ok.room, then the room's snapshot). Pauses: the lobby's after_ms first,
// then FIRST ms doubling up to LONGEST, each a random half to all of that; after GIVE_UP ms
// without a login the client stops and says so.
const RECONNECT = {FIRST: 200, LONGEST: 3000, GIVE_UP: 60000};
// a login refused for these reasons is not retried (ERR_BAD_TOKEN, ERR_TOKEN_EXPIRED)
const FINAL_LOGIN_CODES = new Set([1003, 1004]);
const app = {ws: null, seq: 0, me: 0, seat: -1, room: null, rooms: new Map(),
  deadline: 0, beat: null, payments: [], onRet: new Map(), names: new Map(),
  lastRoom: 0, dismissDeadline: 0, prompt: null, answers: new Set(),
  login: null, loginSeq: 0, kicked: false, reconnectAfter: 0,
  retry: {attempt: 0, since: 0, timer: null}};

// ------------------------------------------------------------------ connection
function connect(token, nickname) {
  clearTimeout(app.retry.timer);
  app.retry = {attempt: 0, since: 0, timer: null};
  app.login = {token, nickname};
  app.kicked = false;
  app.reconnectAfter = 0;
  open();
}

function open() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws?format=json`);
  app.ws = ws;
  ws.onopen = () => {
    status(app.retry.attempt ? "connected again, logging in" : "connected");
    app.loginSeq = send("login", app.login);
  };
  ws.onmessage = (ev) => handle(JSON.parse(ev.data));
  ws.onclose = () => {
    if (app.ws !== ws) return;   // a socket already replaced
    clearInterval(app.beat);
    app.answers.clear();
    app.onRet.clear();
    clearActions();
    if (app.kicked || !app.login) {
      status("disconnected");
      show("login-panel", true);
      return;
    }
    reconnectLater();
  };
}

// The next try to open the socket and log in again, or giving up after GIVE_UP ms.
function reconnectLater() {
  const r = app.retry;
  if (!r.since) r.since = Date.now();
  r.attempt += 1;
  const ceiling = Math.min(RECONNECT.LONGEST, RECONNECT.FIRST * 2 ** (r.attempt - 1));
  const pause = Math.max(app.reconnectAfter, ceiling * (0.5 + Math.random() / 2));
  app.reconnectAfter = 0;
  if (Date.now() + pause - r.since > RECONNECT.GIVE_UP) {
    app.retry = {attempt: 0, since: 0, timer: null};
    status("disconnected");
    error("the lobby cannot be reached: log in again later");
    show("login-panel", true);
    return;
  }
  status(`connection lost: reconnecting in ${(pause / 1000).toFixed(1)} s`);
  r.timer = setTimeout(open, pause);
}

function send(name, body) {
  if (!app.ws || app.ws.readyState !== WebSocket.OPEN) { error("not connected"); return 0; }
  app.seq += 1;
  app.ws.send(JSON.stringify({seq: app.seq, [name]: body || {}}));
  return app.seq;
}

// Send a request; `onRet(ret)` gets its Return (OK or refused) when the lobby answers.
function request(name, body, onRet) {
  const seq = send(name, body);
  if (seq && onRet) app.onRet.set(seq, onRet);
  return seq;
}

function handle(frame) {
  const kind = Object.keys(frame).find((k) => !FRAME_KEYS.has(k));
  const body = frame[kind] || {};
  const handler = HANDLERS[kind];
  if (handler) handler(body, frame);
  else log(describe(kind, body));
}

// ------------------------------------------------------------------ handlers
const HANDLERS = {
  ret(r, frame) {
    const code = Number(r.code || 0);
    if (Number(frame.reply_to) === app.loginSeq && FINAL_LOGIN_CODES.has(code)) {
      app.login = null;   // the token will not get better: no reconnect
    }
    const answered = app.answers.delete(Number(frame.reply_to));
    if (answered && OVERTAKEN.has(code)) log(`too late, the game moved on: ${r.message || code}`);
    else if (code) error(`error ${code}: ${r.message || ""}`);
    const onRet = app.onRet.get(Number(frame.reply_to));
    app.onRet.delete(Number(frame.reply_to));
    if (onRet) onRet(r);
  },
  login_ok(ok, frame) {
    const again = app.retry.attempt > 0;
    app.retry = {attempt: 0, since: 0, timer: null};
    app.me = Number(ok.player.user_id);
    status(`user ${app.me} (${ok.player.nickname || "no nickname"})`);
    if (again) log("reconnected: your seat is resumed");
    show("login-panel", false);
    show("lobby-panel", true);
    show("history-panel", true);
    const every = (ok.heartbeat_seconds || 15) * 1000;
    clearInterval(app.beat);
    app.beat = setInterval(() => send("heartbeat", {client_time_ms: String(Date.now())}), every);
    if (ok.room) setRoom(ok.room, ok.player.seat ?? 0);   // seat 0 is omitted in JSON
    else if (app.room) { log(`room ${app.room.room_id} ended while you were away`); setRoom(null, -1); }
    send("ask_room_list", {});
  },
  heartbeat() {},
  kick_out() {
    app.kicked = true;
    error("logged in elsewhere: this session was closed (顶号)");
  },
  reconnect(r) {   // the lobby is going away: the socket closes next, then we come back
    app.reconnectAfter = Number(r.after_ms || 0);
    log(`the lobby asks us to reconnect (${r.reason || "no reason given"})`);
  },
  room_list(list) {
    app.rooms = new Map((list.items || []).map((r) => [r.room_id, r]));
    renderRooms();
  },
  room_change(change) {
    const room = change.room || {};
    if (change.reason === "DISMISSED") app.rooms.delete(room.room_id);
    else app.rooms.set(room.room_id, room);
    renderRooms();
  },
  room_joined(joined) { setRoom(joined.room, joined.seat ?? 0); },
  player_change(p) {
    if (app.room) setRoom({...app.room, players: p.players || []}, app.seat);
    const who = Number(p.user_id) === app.me ? "you" : `${userName(p.user_id)} (seat ${p.seat ?? 0})`;
    log(`${who} ${(p.reason || "JOIN").toLowerCase()}`);
  },
  mj_deal(b) { startOfHand(); log(describe("mj_deal", b)); },
  dd_assign(b) { startOfHand(); log(describe("dd_assign", b)); },
  mj_payment(b) { app.payments.push(b.payment || {}); log(describe("mj_payment", b)); },
  // the decision our action buttons belong to can end without us: drop the buttons then
  mj_window_closed(w) {
    if (app.prompt && app.prompt.ref === String(w.window_id || 0)) clearActions();
  },
  mj_discard(d) {   // our turn, played by the timer or entrust
    if (app.prompt && !app.prompt.ref && (d.seat ?? 0) === app.seat) clearActions();
    log(describe("mj_discard", d));
  },
  dd_use_out(u) {   // our play or pass, made by the timer or entrust
    if (app.prompt && (u.seat ?? 0) === app.seat) clearActions();
    log(describe("dd_use_out", u));
  },
  // snapshots after a reconnect: the Prompt that follows carries the observation
  mj_game_info(g) {
    showEntrust(!!(g.entrusted || [])[app.seat], g.cancel_entrust_count || 0);
  },
  dd_game_info(g) {
    showEntrust(!!(g.is_entrust || [])[app.seat], g.cancel_entrust_count || 0);
  },
  in_entrust(e) {
    const seat = e.seat ?? 0;
    log(describe("in_entrust", e));
    markEntrusted(seat, true);
    if (seat === app.seat) showEntrust(true, e.count || 0);
  },
  cancel_entrust_done(e) {
    const seat = e.seat ?? 0;
    log(`${does(seat, "take", "takes")} back control from entrust`);
    markEntrusted(seat, false);
    if (seat === app.seat) showEntrust(false, 0);
  },
  query_dismiss(q) { renderDismissVote(q); },
  notice_dismiss(n) { renderDismissResult(n); },
  chat(c) { renderChat(c); },
  distance_alert(a) { addAlert(a.alert || "players too close"); },
  use_geo(g) { renderGeo(g); },
  history_score(h) { renderHistory(h); },
  replay(r) { renderReplay(r); },
  prompt(p) { app.seat = p.seat ?? 0; renderPrompt(p); },
  mj_hand_over(m) { renderSettlement(m, JSON.parse(m.details_json || "{}")); },
  dd_small_settlement(m) { renderSettlement(m, JSON.parse(m.details_json || "{}")); },
};

// ------------------------------------------------------------------ rooms
function setRoom(room, seat) {
  const entered = room && (!app.room || app.room.room_id !== room.room_id);
  app.room = room;
  app.seat = room ? seat : -1;
  show("lobby-panel", !room);
  show("room-panel", !!room);
  if (!room) { clearRoomViews(); return; }
  if (entered) enterRoom(room.room_id);
  for (const p of room.players || []) app.names.set(String(p.user_id), p.nickname || "");
  $("room-title").textContent = `Room ${room.room_id} · ${room.game || "?"} · ` +
    `hand ${room.cur_hand || 0}/${room.total_hands || 0} · ${room.status || "ROOM_WAITING"}`;
  for (const el of document.querySelectorAll(".room-id")) el.textContent = room.room_id;
  const items = (room.players || []).map((p) => {
    const flags = [p.ready && "ready", !p.online && "offline", p.entrusted && "托管"]
      .filter(Boolean).join(", ");
    const you = Number(p.user_id) === app.me ? " (you)" : "";
    return `seat ${p.seat || 0}: ${p.nickname || p.user_id}${you} score ${p.total_score || 0}` +
      (flags ? ` [${flags}]` : "");
  });
  fill($("players"), items, "li");
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
  show("alerts", false);
  show("play-panel", false);
  clearActions();
  showEntrust(false, 0);
}

function leaveRoom() {
  setRoom(null, -1);
  send("ask_room_list", {});
}

// A hand starts: nobody is "ready" any more, and its payments are collected afresh.
function startOfHand() {
  app.payments = [];
  if (app.room) {
    setRoom({...app.room, players: (app.room.players || []).map((p) => ({...p, ready: false}))},
      app.seat);
  }
}

function renderRooms() {
  const body = $("rooms").querySelector("tbody");
  body.replaceChildren();
  for (const r of app.rooms.values()) {
    const tr = document.createElement("tr");
    const cells = [r.room_id + (r.has_password ? " VIP" : ""), r.game || "?",
      `${(r.players || []).length}/4`, r.status || "ROOM_WAITING", r.total_hands || 0];
    for (const text of cells) tr.appendChild(cell(String(text)));
    const td = document.createElement("td");
    td.appendChild(button("Join", () => send("join_room",
      {room_id: r.room_id, password: $("password").value})));
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

// ------------------------------------------------------------------ play
function renderPrompt(p) {
  const obs = JSON.parse(p.observation_json || "{}");
  $("observation").textContent = observationText(p.game, obs);
  const box = $("actions");
  box.replaceChildren();
  // a window id or an out-token ("" or "0" on a mahjong turn or a simultaneous phase)
  const ref = (p.actions || []).map((a) => a.ref || "").find((r) => r && r !== "0") || "";
  app.prompt = {game: p.game, ref};
  (p.actions || []).forEach((a, i) => box.appendChild(
    button(`${i + 1}) ${actionLabel(a)}`, () => answer(p.game, a))));
  app.deadline = Date.now() + (p.seconds || 0) * 1000;
  show("settlement-panel", false);
  show("play-panel", true);
}

function answer(game, a) {
  clearActions();
  const tiles = a.tiles || [];
  let seq;
  if (game !== "dadun") {
    seq = send("mahjong_action", {kind: a.kind, tiles, window_id: a.ref || "0", choice: a.choice || ""});
  } else if (a.kind === "choose_alone") {
    seq = send("dd_ask_alone", {is_alone: a.choice === "yes"});
  } else if (a.kind === "choose_friend_card") {
    seq = send("dd_choose_friend", {card: tiles[0] || ""});
  } else {
    seq = send("dd_ask_out", {token: a.ref || "", cards: tiles, is_skip: a.kind === "pass"});
  }
  if (seq) app.answers.add(seq);
}

// No decision pending for us: no action buttons, no countdown.
function clearActions() {
  app.prompt = null;
  $("actions").replaceChildren();
  $("countdown").textContent = "";
}

function actionLabel(a) {
  const term = TERMS[a.kind] ? ` (${TERMS[a.kind]})` : "";
  return [a.kind + term, (a.tiles || []).join(" "), a.choice || ""].filter(Boolean).join(" ");
}

function observationText(game, obs) {
  const me = obs.seat ?? -1;
  const lines = [`your hand (手牌): ${tiles(obs.hand)}` +
    (obs.drawn ? `   drawn (摸到) ${obs.drawn}` : "")];
  if (game === "dadun") {
    const desk = (obs.desk || []).map((d) => `${seatName(d.seat, me)}: ${tiles(d.cards)}`);
    lines.push(`desk (桌面) ${obs.desk_points || 0} pts: ${desk.join("; ") || "empty"}`);
    if (obs.friend_card) lines.push(`friend card (朋友牌) ${obs.friend_card}`);
  } else {
    (obs.discards || []).forEach((discards, seat) => {
      const melds = ((obs.melds || [])[seat] || []).map((m) => `${m.kind}:${tiles(m.tiles)}`);
      lines.push(`${seatName(seat, me).padStart(7)} | melds ${melds.join(" ") || "-"} | ` +
        `discards ${tiles(discards) || "-"}`);
    });
    lines.push(`wall (牌墙) ${obs.wall_remaining ?? "?"} tiles`);
  }
  lines.push(`scores ${(obs.scores || []).join(" ") || "-"}; phase ${obs.phase || "?"}`);
  return lines.join("\n");
}

function renderSettlement(frame, over) {
  const deltas = over.deltas || frame.deltas || [];
  const lines = [`hand ${frame.hand_no || over.hand_no || ""} over` +
    (over.reason ? `, ${over.reason}` : "")];
  lines.push("deltas: " + deltas.map(Number)
    .map((d, s) => `${seatName(s, app.seat)} ${d >= 0 ? "+" : ""}${d}`).join(", "));
  for (const p of over.payments || app.payments) {
    lines.push(`  ${does(p.payer, "pay")} ${seatName(p.payee ?? 0, app.seat)} ` +
      `${p.amount || 0} (${p.reason || ""})`);
  }
  (over.hands || frame.hands || []).forEach((h, s) =>
    lines.push(`  ${seatName(s, app.seat)}: ${tiles(h) || "-"}`));
  for (const p of over.players || []) {   // Dadun score parts
    lines.push(`  ${seatName(p.seat, app.seat)}: win ${p.win_score || 0}, bomb ` +
      `${p.bomb_score || 0}, cards ${p.card_score || 0}, caught ${p.catch_score || 0}`);
  }
  $("settlement").textContent = lines.join("\n");
  clearActions();
  endOfHandEntrust();
  show("play-panel", false);
  show("settlement-panel", true);
  log("hand over: press Ready for the next hand");
}

// ------------------------------------------------------------------ chat
function sendChat() {
  const input = $("chat-input");
  const content = input.value.trim();
  if (!content) return;
  request("chat", {content}, (r) => { if (!r.code) input.value = ""; });
}

function renderChat(c) {
  const li = document.createElement("li");
  li.textContent = `${userName(c.author_id)}: ${c.content || ""}`;
  $("chat-log").appendChild(li);
  li.scrollIntoView({block: "nearest"});
}

// ------------------------------------------------------------------ dismiss voting (解散)
function renderDismissVote(q) {
  const votes = q.votes || [];
  const mine = votes.find((v) => Number(v.user_id) === app.me);
  $("dismiss-title").textContent =
    `${q.apply_nickname || userName(q.apply_user_id)} applies to dismiss the room (申请解散)`;
  fill($("dismiss-votes"), votes.map((v) =>
    `${v.nickname || userName(v.user_id)}: ${["not voted", "agrees", "refuses"][v.vote || 0]}`), "li");
  $("dismiss-result").textContent = "";
  show("dismiss-vote", !!mine && !mine.vote);
  app.dismissDeadline = Date.now() + (q.remaining_seconds || 0) * 1000;
  show("dismiss-panel", true);
  tick();
}

function vote(agree) {
  show("dismiss-vote", false);
  request("report_dismiss", {agree}, (r) => { if (r.code) show("dismiss-vote", true); });
}

function renderDismissResult(n) {
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
function showEntrust(on, cancelsLeft) {
  show("entrust", on);
  if (!on) return;
  const left = cancelsLeft === 1 ? "1 cancel left" : `${cancelsLeft || "no"} cancels left`;
  $("entrust-text").textContent = `Entrust (托管) is playing for you: ${left}`;
  $("entrust-msg").textContent = "";
}

function cancelEntrust() {
  request("cancel_entrust", {}, (r) => {
    $("entrust-msg").textContent = r.code ? `refused: ${r.message || r.code}` : "";
  });
}

// The room's player list shows who is entrusted; the server does not resend it.
function markEntrusted(seat, on) {
  if (!app.room) return;
  const players = (app.room.players || []).map((p) =>
    (p.seat || 0) === seat ? {...p, entrusted: on} : p);
  setRoom({...app.room, players}, app.seat);
}

// Entrust ends with the hand for players who are online.
function endOfHandEntrust() {
  showEntrust(false, 0);
  if (!app.room) return;
  const players = (app.room.players || []).map((p) => p.online ? {...p, entrusted: false} : p);
  setRoom({...app.room, players}, app.seat);
}

// ------------------------------------------------------------------ geo and same-IP alerts
function addAlert(text) {
  const li = document.createElement("li");
  li.textContent = text;
  $("alert-list").appendChild(li);
  show("alerts", true);
  log(`ALERT: ${text}`);
}

function renderGeo(g) {
  const items = (g.items || []).map((i) =>
    `${userName(i.src_uid)} - ${userName(i.dest_uid)}: ${i.distance || "unknown"}` +
    (i.same_ip ? " · SAME IP (同IP)" : ""));
  fill($("geo"), items.length ? items : ["fewer than two players in the room"], "li");
}

// ------------------------------------------------------------------ history and replays
function askHistory() {
  const roomId = Number($("history-room").value) || app.lastRoom;
  if (!roomId) { error("enter a room number for its history"); return; }
  $("history-title").textContent = `asking for the history of room ${roomId}...`;
  send("ask_history_score", {room_id: String(roomId)});
}

function renderHistory(h) {
  const roomId = Number(h.room_id || 0);
  const items = h.items || [];
  const hands = Math.max(0, ...items.map((i) => (i.scores || []).length));
  $("history-title").textContent = hands
    ? `Room ${roomId}: ${hands} hand${hands > 1 ? "s" : ""} settled`
    : `Room ${roomId}: no settled hand yet`;
  const rows = [];
  for (let hand = 1; hand <= hands; hand++) {
    const li = document.createElement("li");
    li.appendChild(span(`hand ${hand}: ` + items.map((i) =>
      `${userName(i.user_id)} ${signed((i.scores || [])[hand - 1])}`).join(", ")));
    li.appendChild(button(`Replay hand ${hand}`, () => askReplay(roomId, hand)));
    rows.push(li);
  }
  if (hands) {
    const total = document.createElement("li");
    total.appendChild(span("total: " + items.map((i) => `${userName(i.user_id)} ` +
      signed((i.scores || []).reduce((a, b) => a + Number(b), 0))).join(", ")));
    rows.push(total);
  }
  $("history").replaceChildren(...rows);
}

function askReplay(roomId, hand) {
  $("replay-title").textContent = `asking for the replay of hand ${hand}...`;
  $("replay").replaceChildren();
  send("ask_replay", {room_id: String(roomId), hand_no: hand});
}

function renderReplay(r) {
  const cells = (r.cells || []).map((c) => parseOr(c.json, {kind: c.kind || "?"}));
  const own = cells.find((e) => e.to !== undefined);   // private events are our seat's
  const mySeat = own ? own.to : -1;
  $("replay-title").textContent = `Replay: room ${r.room_id || 0}, hand ${r.hand_no || 0}` +
    ` (${r.game || "?"}), ${cells.length} events`;
  fill($("replay"), cells.map((e) => replayLine(e, mySeat)), "li");
}

// One engine event of a replay ({kind, data, to}) as a line of text, seats seen from ours.
function replayLine(e, mySeat) {
  const d = {...(e.data || {})};
  const term = TERMS[e.kind] ? ` (${TERMS[e.kind]})` : "";
  const to = e.to !== undefined ? " [private]" : "";
  if (e.kind === "payment") {
    return `payment: ${does(d.payer, "pay", "pays", mySeat)} ${seatName(d.payee, mySeat)} ` +
      `${d.amount} (${d.reason})${to}`;
  }
  const who = d.seat !== undefined ? seatName(d.seat, mySeat) + " " : "";
  delete d.seat;
  const rest = Object.entries(d)
    .filter(([, v]) => v !== null && v !== undefined && !(Array.isArray(v) && !v.length))
    .map(([k, v]) => replayValue(k, v, mySeat)).join(", ");
  return `${who}${e.kind}${term}${rest ? ": " + rest : ""}${to}`;
}

const TILE_KEYS = new Set(["tile", "tiles", "cards"]);
const SEAT_KEYS = new Set(["from", "source", "dealer", "winners", "payer", "payee"]);
function replayValue(key, v, mySeat) {
  if (TILE_KEYS.has(key)) return tiles(v);
  if (SEAT_KEYS.has(key) && typeof v === "number") return `${key} ${seatName(v, mySeat)}`;
  if (SEAT_KEYS.has(key) && Array.isArray(v)) {
    return `${key} ${v.map((x) => seatName(x, mySeat)).join(", ")}`;
  }
  return `${key} ${plain(v)}`;
}

// ------------------------------------------------------------------ event log
function describe(kind, b) {
  const s = (n) => seatName(n ?? 0, app.seat);
  switch (kind) {
    case "mj_hand": return `your tiles: ${(b.tiles || []).join(" ")}`;
    case "mj_deal": return `--- new hand ${b.hand_no || ""}: dealer ${s(b.dealer)}`;
    case "mj_draw": return b.tile ? `you draw ${b.tile}` : null;
    case "mj_discard": return `${does(b.seat, "discard")} ${b.tile}`;
    case "mj_meld": return `${s(b.seat)} ${b.kind} (${TERMS[b.kind] || ""}) ${tiles(b.tiles) || "(concealed)"}`;
    case "mj_hu": return `${s(b.seat)} HU (胡) with ${b.tile}: ${(b.patterns || []).join(", ")}`;
    case "mj_void": return `void suits (定缺): ${(b.voids || []).join(" ")}`;
    case "mj_payment": return `payment: ${does(b.payment.payer, "pay")} ${s(b.payment.payee)} ` +
      `${b.payment.amount || 0} (${b.payment.reason || ""})`;
    case "dd_assign": return `your cards: ${(b.cards || []).join(" ")}`;
    case "dd_use_out": return b.is_skip ? `${does(b.seat, "pass", "passes")}`
      : `${does(b.seat, "play")} ${tiles(b.cards)}`;
    case "dd_clear_desktop": return `${s(b.seat)} wins the trick, ${b.desktop_score || 0} pts`;
    case "dd_use_alone": return `${s(b.seat)} ${b.is_alone ? "plays alone (打独)" : "does not play alone"}`;
    case "dd_use_friend": return `friend card (叫朋友) ${b.friend_card}`;
    case "in_entrust": return `${does(b.seat, "are", "is")} played by entrust (托管)`;
    case "game_event": return null;   // the engine's extra events; the prompt says enough
    case "mj_window_opened": case "mj_window_closed": case "mj_candidates": return null;
    default: return `${kind} ${JSON.stringify(b)}`;
  }
}

// ------------------------------------------------------------------ small helpers
// Tiles and cards come as a list of names or as one string in notation ("123m55p").
function tiles(v) { return Array.isArray(v) ? v.join(" ") : (v || ""); }
function seatName(seat, me) { return seat === me ? "you" : `seat ${seat}`; }
// A user by nickname as far as we know it: "you", "alice", or "user 1002".
function userName(uid) {
  if (Number(uid) === app.me) return "you";
  return app.names.get(String(uid)) || `user ${uid || 0}`;
}
// JSON text from the server, or `fallback` when it is missing or malformed.
function parseOr(text, fallback) {
  try { return text ? JSON.parse(text) : fallback; } catch { return fallback; }
}
function signed(n) { n = Number(n || 0); return n > 0 ? `+${n}` : String(n); }
// A value of an event's data as short text: lists joined, objects as JSON.
function plain(v) {
  if (Array.isArray(v) && v.every((x) => typeof x !== "object")) return v.join(" ");
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}
// Subject and verb that agree, seen from our seat: "you discard" / "seat 2 discards".
function does(seat, verb, third, me = app.seat) {
  seat = seat ?? 0;
  return seat === me ? `you ${verb}` : `seat ${seat} ${third || verb + "s"}`;
}
function status(text) { $("status").textContent = text; }
function show(id, on) { $(id).hidden = !on; }

function error(text) {
  const box = $("error");
  box.textContent = text;
  box.hidden = false;
  log(text);
}

function log(text) {
  if (!text) return;
  const li = document.createElement("li");
  li.textContent = text;
  $("log").appendChild(li);
  li.scrollIntoView({block: "nearest"});
}

function fill(list, items, tag) {
  list.replaceChildren(...items.map((text) => {
    const el = document.createElement(tag);
    el.textContent = text;
    return el;
  }));
}

function cell(text) {
  const td = document.createElement("td");
  td.textContent = text;
  return td;
}

function span(text) {
  const el = document.createElement("span");
  el.textContent = text;
  return el;
}

function button(label, onclick) {
  const b = document.createElement("button");
  b.textContent = label;
  b.onclick = onclick;
  return b;
}

// ------------------------------------------------------------------ wiring
$("login").onclick = () => {
  const token = $("token").value.trim();
  if (!token) { error("paste a login token first"); return; }
  $("error").hidden = true;
  connect(token, $("nickname").value.trim());
};
$("create").onclick = () => send("create_room", {game: $("game").value, base_score: 1,
  total_hands: Number($("hands").value) || 4, options_json: "{}", password: $("password").value});
$("quick").onclick = () => send("join_room", {game: $("game").value});
$("join").onclick = () => {
  const roomId = Number($("join-id").value);
  if (!roomId) { error("enter a room number to join"); return; }
  send("join_room", {room_id: String(roomId), password: $("password").value});
};
$("refresh-list").onclick = () => send("ask_room_list", {});
$("ready").onclick = () => { $("error").hidden = true; send("ask_ready", {is_ready: true}); };
$("unready").onclick = () => send("ask_ready", {is_ready: false});
$("leave").onclick = () => request("ask_exit", {}, (r) => { if (!r.code) leaveRoom(); });
$("chat-send").onclick = sendChat;
$("chat-input").onkeydown = (ev) => { if (ev.key === "Enter") sendChat(); };
$("dismiss-apply").onclick = () => send("ask_dismiss", {});
$("dismiss-agree").onclick = () => vote(true);
$("dismiss-refuse").onclick = () => vote(false);
$("cancel-entrust").onclick = cancelEntrust;
$("ask-geo").onclick = () => send("ask_geo", {});
$("alerts-hide").onclick = () => show("alerts", false);
$("history-ask").onclick = askHistory;

function tick() {
  const secondsTo = (t) => Math.max(0, Math.ceil((t - Date.now()) / 1000));
  $("countdown").textContent = $("actions").children.length ? `${secondsTo(app.deadline)} s left` : "";
  if (app.dismissDeadline) $("dismiss-countdown").textContent = `${secondsTo(app.dismissDeadline)} s left`;
}
setInterval(tick, 250);
