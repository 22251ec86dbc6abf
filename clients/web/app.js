// Paiju browser client: the lobby's Connect protocol as proto3 JSON text frames over
// /ws?format=json. A frame is {seq, <payload name>: {...}} with the .proto field names;
// replies carry reply_to = our seq. proto3 JSON omits default values (0, "", false, the
// first enum value) and writes int64 as strings, so every read below has a default.
"use strict";

const $ = (id) => document.getElementById(id);
const TERMS = {discard: "打", chi: "吃", peng: "碰", zhigang: "明杠", angang: "暗杠",
  bugang: "补杠", kaigang: "开杠", buzhang: "补张", hu: "胡", pass: "过",
  exchange_three: "换三张", declare_void: "定缺", opening_hu: "起手胡", haidi_take: "要海底",
  haidi_refuse: "不要海底", choose_alone: "打独", choose_friend_card: "叫朋友", play: "出牌"};
const FRAME_KEYS = new Set(["seq", "event_id", "reply_to", "event_uid"]);
const app = {ws: null, seq: 0, me: 0, seat: -1, room: null, rooms: new Map(),
  deadline: 0, beat: null, exitSeq: -1, payments: []};

// ------------------------------------------------------------------ connection
function connect(token, nickname) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws?format=json`);
  app.ws = ws;
  ws.onopen = () => { status("connected"); send("login", {token, nickname}); };
  ws.onmessage = (ev) => handle(JSON.parse(ev.data));
  ws.onclose = () => {
    status("disconnected");
    clearInterval(app.beat);
    show("login-panel", true);
  };
}

function send(name, body) {
  if (!app.ws || app.ws.readyState !== WebSocket.OPEN) { error("not connected"); return 0; }
  app.seq += 1;
  app.ws.send(JSON.stringify({seq: app.seq, [name]: body || {}}));
  return app.seq;
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
    if (r.code) error(`error ${r.code}: ${r.message || ""}`);
    else if (Number(frame.reply_to) === app.exitSeq) { setRoom(null, -1); send("ask_room_list", {}); }
  },
  login_ok(ok, frame) {
    app.me = Number(ok.player.user_id);
    status(`user ${app.me} (${ok.player.nickname || "no nickname"})`);
    show("login-panel", false);
    show("lobby-panel", true);
    const every = (ok.heartbeat_seconds || 15) * 1000;
    app.beat = setInterval(() => send("heartbeat", {client_time_ms: String(Date.now())}), every);
    if (ok.room) setRoom(ok.room, ok.player.seat ?? 0);   // seat 0 is omitted in JSON
    send("ask_room_list", {});
  },
  heartbeat() {},
  kick_out() { error("logged in elsewhere: this session was closed (顶号)"); },
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
    log(`${seatName(p.seat ?? 0, app.seat)} ${(p.reason || "JOIN").toLowerCase()}`);
    if (app.room) setRoom({...app.room, players: p.players || []}, app.seat);
  },
  mj_deal(b) { app.payments = []; log(describe("mj_deal", b)); },
  dd_assign(b) { app.payments = []; log(describe("dd_assign", b)); },
  mj_payment(b) { app.payments.push(b.payment || {}); log(describe("mj_payment", b)); },
  mj_game_info() {},   // a snapshot: the Prompt that follows carries the observation
  dd_game_info() {},
  notice_dismiss(n) {
    log(`room dismissed: ${(n.reason || "PLAYER_VOTE").toLowerCase()} ${n.doc || ""}`);
    if (n.dismissed) { setRoom(null, -1); send("ask_room_list", {}); }
  },
  chat(c) { log(`chat from ${c.author_id}: ${c.content || ""}`); },
  prompt(p) { app.seat = p.seat ?? 0; renderPrompt(p); },
  mj_hand_over(m) { renderSettlement(m, JSON.parse(m.details_json || "{}")); },
  dd_small_settlement(m) { renderSettlement(m, JSON.parse(m.details_json || "{}")); },
};

// ------------------------------------------------------------------ rooms
function setRoom(room, seat) {
  app.room = room;
  app.seat = room ? seat : -1;
  show("lobby-panel", !room);
  show("room-panel", !!room);
  if (!room) { show("play-panel", false); return; }
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
  (p.actions || []).forEach((a, i) => box.appendChild(
    button(`${i + 1}) ${actionLabel(a)}`, () => answer(p.game, a))));
  app.deadline = Date.now() + (p.seconds || 0) * 1000;
  show("settlement-panel", false);
  show("play-panel", true);
}

function answer(game, a) {
  $("actions").replaceChildren();
  $("countdown").textContent = "";
  const tiles = a.tiles || [];
  if (game !== "dadun") {
    send("mahjong_action", {kind: a.kind, tiles, window_id: a.ref || "0", choice: a.choice || ""});
  } else if (a.kind === "choose_alone") {
    send("dd_ask_alone", {is_alone: a.choice === "yes"});
  } else if (a.kind === "choose_friend_card") {
    send("dd_choose_friend", {card: tiles[0] || ""});
  } else {
    send("dd_ask_out", {token: a.ref || "", cards: tiles, is_skip: a.kind === "pass"});
  }
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
  show("play-panel", false);
  show("settlement-panel", true);
  log("hand over: press Ready for the next hand");
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
    case "in_entrust": return `${s(b.seat)} is played by entrust (托管)`;
    case "game_event": return null;   // the engine's extra events; the prompt says enough
    case "mj_window_opened": case "mj_window_closed": case "mj_candidates": return null;
    default: return `${kind} ${JSON.stringify(b)}`;
  }
}

// ------------------------------------------------------------------ small helpers
// Tiles and cards come as a list of names or as one string in notation ("123m55p").
function tiles(v) { return Array.isArray(v) ? v.join(" ") : (v || ""); }
function seatName(seat, me) { return seat === me ? "you" : `seat ${seat}`; }
// Subject and verb that agree, seen from our seat: "you discard" / "seat 2 discards".
function does(seat, verb, third) {
  seat = seat ?? 0;
  return seat === app.seat ? `you ${verb}` : `seat ${seat} ${third || verb + "s"}`;
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
$("refresh-list").onclick = () => send("ask_room_list", {});
$("ready").onclick = () => { $("error").hidden = true; send("ask_ready", {is_ready: true}); };
$("unready").onclick = () => send("ask_ready", {is_ready: false});
$("leave").onclick = () => { app.exitSeq = send("ask_exit", {}); };
setInterval(() => {
  const left = Math.max(0, Math.ceil((app.deadline - Date.now()) / 1000));
  $("countdown").textContent = $("actions").children.length ? `${left} s left` : "";
}, 250);
