// Paiju browser client: the entry module. It wires the page's controls, turns server frames
// into state changes (state.js) and drawing (table.js, dialogs.js, settle.js, room.js,
// history.js), and turns clicks on the table into requests (conn.js). Plain ES modules, no
// build step: the lobby serves this directory as it is.
//
// The protocol, frame by frame, is in docs/protocol.md. The decision bar (#actions) always
// lists every legal action of the pending Prompt as a numbered button; the table covers the
// common ones with pictures (click a tile to discard, select cards to play) and dialogs.
import {$, el, show} from "./dom.js";
import {command, commandAnswered, conn, connect, dropStale, FINAL_LOGIN_CODES, loggedIn,
  send} from "./conn.js";
import {app, ddInfoObservation, fromObservation, hand, onEvent, ui} from "./state.js";
import {i18n, initLang, setLang, t, TERMS} from "./i18n.js";
import {describe, does, error, log, seatName, status, tiles, userName} from "./log.js";
import {renderTable, tickTimers} from "./table.js";
import {closeDialog, DIALOG_PHASES, dialogFor} from "./dialogs.js";
import {renderSettlement} from "./settle.js";
import {sortedHand} from "./dadun.js";
import {sortTiles} from "./tiles.js";
import * as room from "./room.js";
import * as history from "./history.js";
import * as ratings from "./ratings.js";
import * as match from "./match.js";
import {wireReplay} from "./replay.js";
import {gameOfEnum, rendererOf} from "./games.js";
import {checkReveal, clientSeed, observe, onCommitment} from "./fair.js";

// Action kinds the table or a dialog offers in pictures: their buttons in the decision bar
// are kept (keyboard, screen readers, tests) but drawn small.
const PICTURED = new Set(["discard", "play", "exchange_three", "declare_void", "choose_alone",
  "choose_friend_card", "haidi"]);

// ------------------------------------------------------------------ frames
function onFrame(kind, body, frame) {
  observe(kind, body, room_game(), app.seat);   // the deal as this seat saw it (fair.js)
  const handler = HANDLERS[kind];
  if (handler) handler(body, frame);
  else {
    log(describe(kind, body));
    if (onEvent(kind, body)) render();
  }
}

const HANDLERS = {
  ret(r, frame) {
    const code = Number(r.code || 0);
    const to = Number(frame.reply_to);
    if (to === conn.loginSeq && FINAL_LOGIN_CODES.has(code)) {
      conn.login = null;   // the token will not get better: no reconnect
    }
    // "a moment" (the room is moving, a backend did not answer) to a command of ours: it is
    // sent again after a short pause, or dropped when its decision is gone; never an error
    const sent = commandAnswered(to, code);
    if (sent === "retry" || sent === "dropped") {
      if (sent === "dropped") log(`not sent again: ${r.message || code}`);
      return;
    }
    const answered = conn.answers.delete(to);
    if (conn.quiet.delete(to)) { if (code) log(`not taken: ${r.message || code}`); }
    // the server flags an answer that only came too late (the game moved on): a note
    else if (answered && r.overtaken) log(`too late, the game moved on: ${r.message || code}`);
    // a refused retry: the first try, answered "a moment", may have counted after all (the
    // room's frames say what happened); it was legal when it was sent, so a note
    else if (sent && sent.tries > 1 && code) log(`not taken again: ${r.message || code}`);
    else if (code) {
      error(`error ${code}: ${r.message || ""}`);
      if (answered && app.lastPrompt && !app.prompt) renderPrompt(app.lastPrompt);   // try again
    }
    const onRet = conn.onRet.get(to);
    conn.onRet.delete(to);
    if (onRet) onRet(r);
  },
  login_ok(ok) {
    const again = loggedIn(ok.heartbeat_seconds);
    app.me = String(ok.player.user_id || "");   // int64 as text: guest ids exceed 2^53
    const who = app.me.length >= 19 && app.me[0] === "8" ? "guest" : `user ${app.me}`;  // the guest id range
    status(`${who} (${ok.player.nickname || "no nickname"})`);
    if (again) log("reconnected: your seat is resumed");
    show("login-panel", false);
    show("lobby-panel", true);
    show("history-panel", true);
    show("ratings-panel", true);
    if (ok.room) room.setRoom(ok.room, ok.player.seat ?? 0);   // seat 0 is omitted in JSON
    else if (app.room) {   // ended while we were away: show how, from its history scores
      const ended = String(app.room.room_id);
      log(`room ${ended} ended while you were away`);
      room.setRoom(null, -1);
      send("ask_history_score", {room_id: ended});
    }
    send("ask_room_list", {});
  },
  heartbeat() {},
  kick_out() {
    conn.kicked = true;
    error("logged in elsewhere: this session was closed (顶号)");
  },
  reconnect(r) {   // the lobby is going away: the socket closes next, then we come back
    conn.reconnectAfter = Number(r.after_ms || 0);
    log(`the lobby asks us to reconnect (${r.reason || "no reason given"})`);
  },
  room_list(list) {
    app.rooms = new Map((list.items || []).map((r) => [r.room_id, r]));
    room.renderRooms();
  },
  room_change(change) {
    const r = change.room || {};
    if (change.reason === "DISMISSED") app.rooms.delete(r.room_id);
    else app.rooms.set(r.room_id, r);
    room.renderRooms();
  },
  room_joined(joined, frame) {
    if (Number(frame.reply_to) && Number(frame.reply_to) === app.createSeq) {
      app.ownRoom = String(joined.room.room_id);   // the creator may fill it with robots
    }
    room.setRoom(joined.room, joined.seat ?? 0);
  },
  player_change(p) {
    if (app.room) room.setRoom({...app.room, players: p.players || []}, app.seat);
    const who = String(p.user_id) === app.me ? "you" : `${userName(p.user_id)} (seat ${p.seat ?? 0})`;
    log(`${who} ${(p.reason || "JOIN").toLowerCase()}`);
  },
  mj_deal(b) { room.startOfHand(b.hand_no); onEvent("mj_deal", b); log(describe("mj_deal", b)); render(); },
  dd_assign(b) {
    if (!hand || hand.family !== "dadun" || hand.phase === "over" || hand.tiles.length) room.startOfHand();
    onEvent("dd_assign", b);
    log(describe("dd_assign", b));
    render();
  },
  game_event(e) {
    if (e.kind === "deal" && e.game === "dadun") room.startOfHand();   // a Dadun hand starts
    const own = rendererOf(e.game);   // a game drawn by its own module (games.js)
    if (own && own.startsHand(e.kind || "", JSON.parse(e.json || "{}"))) room.startOfHand();
    if (own && own.decisionEnds(e.kind || "") && (e.seat ?? -1) === app.seat) {
      decisionOver();   // our move, made by us, the timer or entrust
      if (app.prompt) clearActions();
    }
    if (own && e.kind === "hand_over") {
      onEvent("game_event", e);
      settle({...e, hand_no: (app.room && app.room.cur_hand) || ""}, JSON.parse(e.json || "{}"));
      return;
    }
    if (onEvent("game_event", e)) render();
  },
  game_info(g) {   // the snapshot of a game without its own (GameInfo)
    fromObservation(g.game || room_game(), JSON.parse(g.observation_json || "{}"));
    room.showEntrust(!!(g.entrusted || [])[app.seat], g.cancel_entrust_count || 0);
    render();
  },
  mj_payment(b) { app.payments.push(b.payment || {}); onEvent("mj_payment", b); log(describe("mj_payment", b)); render(); },
  // the decision our action buttons belong to can end without us: drop the buttons then
  mj_window_closed(w) {
    decisionOver();
    if (app.prompt && app.prompt.ref === String(w.window_id || 0)) clearActions();
    onEvent("mj_window_closed", w);
    render();
  },
  mj_discard(d) {   // our turn, played by the timer or entrust (or our own discard)
    if ((d.seat ?? 0) === app.seat) decisionOver();
    if (app.prompt && !app.prompt.ref && (d.seat ?? 0) === app.seat) clearActions();
    log(describe("mj_discard", d));
    onEvent("mj_discard", d);
    render();
  },
  dd_use_out(u) {   // our play or pass, made by the timer or entrust (or our own)
    if ((u.seat ?? 0) === app.seat) decisionOver();
    if (app.prompt && (u.seat ?? 0) === app.seat) clearActions();
    log(describe("dd_use_out", u));
    onEvent("dd_use_out", u);
    render();
  },
  dd_hint_out(h) { app.seatDeadline[h.seat ?? 0] = Date.now() + (h.countdown || 0) * 1000; onEvent("dd_hint_out", h); render(); },
  dd_hint_alone(h) { app.seatDeadline[h.seat ?? 0] = Date.now() + (h.countdown || 0) * 1000; onEvent("dd_hint_alone", h); render(); },
  // snapshots after a reconnect: the Prompt that follows carries the observation
  mj_game_info(g) {
    fromObservation(room_game(), JSON.parse(g.observation_json || "{}"));
    room.showEntrust(!!(g.entrusted || [])[app.seat], g.cancel_entrust_count || 0);
    render();
  },
  dd_game_info(g) {
    fromObservation("dadun", ddInfoObservation(g));
    room.showEntrust(!!(g.is_entrust || [])[app.seat], g.cancel_entrust_count || 0);
    render();
  },
  in_entrust(e) {
    const seat = e.seat ?? 0;
    log(describe("in_entrust", e));
    room.markEntrusted(seat, true);
    if (seat === app.seat) room.showEntrust(true, e.count || 0);
  },
  cancel_entrust_done(e) {
    const seat = e.seat ?? 0;
    log(`${does(seat, "take", "takes")} back control from entrust`);
    room.markEntrusted(seat, false);
    if (seat === app.seat) room.showEntrust(false, 0);
  },
  query_dismiss(q) { room.renderDismissVote(q); tick(); },
  notice_dismiss(n) { room.renderDismissResult(n); },
  chat(c) { room.renderChat(c); },
  distance_alert(a) { room.addAlert(a); },
  use_geo(g) { room.renderGeo(g); },
  history_score(h) { history.renderHistory(h); },
  replay(r) { history.renderReplay(r); },
  match_queued(q) { match.onQueued(q); },
  match_found(f) { match.onFound(f); log(match.foundText(f)); },
  match_cancelled(c) { match.onCancelled(c); log(match.cancelledText(c)); },
  rating_info(r) { ratings.renderRating(r); },
  leaderboard(b) { ratings.renderLeaderboard(b); },
  prompt(p) { app.seat = p.seat ?? 0; decisionOver(); renderPrompt(p); },
  // provably fair deals (docs/fairness.md, fair.js): the commitment before the deal, our own
  // seed for it, and at the hand's end the check that the revealed seed gives the commitment
  hand_commitment(c) {
    onCommitment(c);
    fairLine(`hand ${c.hand_no || ""}: deal committed ${String(c.commitment || "").slice(0, 12)}…`, "");
    if (app.room && app.seat >= 0 && globalThis.crypto && crypto.getRandomValues) {
      quietly("set_client_seed", {client_seed: clientSeed(Number(c.hand_no || 0))});
    }
  },
  fair_reveal(r) {
    const roomId = (app.room && app.room.room_id) || app.lastRoom;
    if (!(globalThis.crypto && crypto.subtle)) {
      fairLine(`hand ${r.hand_no || ""}: seed revealed (checking needs https or localhost)`, "");
      return;
    }
    checkReveal(roomId, r).then((v) => { fairLine(v.text, v.ok ? "ok" : "bad"); log(v.text); },
      (e) => fairLine(`hand ${r.hand_no || ""}: cannot check the deal: ${e}`, "bad"));
  },
  mj_hand_over(m) { onEvent("mj_hand_over", m); settle(m, JSON.parse(m.details_json || "{}")); },
  dd_small_settlement(m) { settle(m, JSON.parse(m.details_json || "{}")); },
};

function room_game() {
  const g = app.room && app.room.game;
  return {XUEZHAN: "xuezhan", CHANGSHA: "changsha", DADUN: "dadun"}[g] || gameOfEnum(g) || "xuezhan";
}

// ------------------------------------------------------------------ the pending decision
function renderPrompt(p) {
  const obs = JSON.parse(p.observation_json || "{}");
  fromObservation(p.game, obs);
  const box = $("actions");
  box.replaceChildren();
  // a window id or an out-token ("" or "0" on a mahjong turn or a simultaneous phase)
  const ref = (p.actions || []).map((a) => a.ref || "").find((r) => r && r !== "0") || "";
  const sameDecision = app.prompt && app.prompt.ref === ref && app.prompt.phase === p.phase;
  app.prompt = {game: p.game, ref, phase: p.phase || "", actions: p.actions || [],
                decision: p.decision || ""};
  app.lastPrompt = p;
  if (!sameDecision) { app.selected = []; app.hint = -1; }
  const own = rendererOf(p.game);
  const covered = DIALOG_PHASES.has(p.phase) || (p.game === "dadun") || !!(own && own.pictured(p.phase));
  (p.actions || []).forEach((a, i) => box.appendChild(el("button", {
    text: `${i + 1}) ${actionLabel(a)}`, onclick: () => answer(p.game, a),
    cls: `act k-${a.kind}${PICTURED.has(a.kind) || covered ? " pictured" : ""}`,
    attrs: {"data-kind": a.kind}})));
  app.deadline = Date.now() + (p.seconds || 0) * 1000;
  show("play-panel", true);
  render();
}

function answer(game, a) {
  // the prompt's decision travels with the answer: a resent answer never counts twice
  const envelope = app.prompt && app.prompt.decision ? {decision: String(app.prompt.decision)} : {};
  clearActions();
  const tiles = a.tiles || [];
  // sent again on "a moment" while this decision stands: a new prompt, our move seen played
  // (by this answer, the timer or entrust), a window closed or the hand over drop it. A
  // retry of an answer that did count is refused as stale (window id, out-token, turn),
  // "overtaken", or as already answered: a note, not an error (HANDLERS.ret)
  const decision = app.decision;
  const sendAnswer = (name, body) => command(name, body,
    {answer: true, still: () => app.decision === decision, envelope});
  if (rendererOf(game)) {   // a game without typed actions: GameAction
    sendAnswer("game_action", {kind: a.kind, cards: tiles, ref: a.ref || "", choice: a.choice || ""});
  } else if (game !== "dadun") {
    sendAnswer("mahjong_action", {kind: a.kind, tiles, window_id: a.ref || "0", choice: a.choice || ""});
  } else if (a.kind === "choose_alone") {
    sendAnswer("dd_ask_alone", {is_alone: a.choice === "yes"});
  } else if (a.kind === "choose_friend_card") {
    sendAnswer("dd_choose_friend", {card: tiles[0] || ""});
  } else {
    sendAnswer("dd_ask_out", {token: a.ref || "", cards: tiles, is_skip: a.kind === "pass"});
  }
  render();
}

// The decision an answer of ours was for is over or replaced (a new prompt): its answer is
// no longer sent again.
function decisionOver() {
  app.decision = (app.decision || 0) + 1;
  dropStale();
}

// No decision pending for us: no action buttons, no countdown, no dialog.
function clearActions() {
  app.prompt = null;
  app.selected = [];
  $("actions").replaceChildren();
  $("countdown").textContent = "";
  closeDialog();
  show("dd-controls", false);
}
ui.clearActions = clearActions;

function actionLabel(a) {
  const zh = TERMS[a.kind];
  const name = i18n.lang === "zh" && zh ? zh : a.kind + (zh ? ` (${zh})` : "");
  return [name, (a.tiles || []).join(" "), a.choice || ""].filter(Boolean).join(" ");
}

// ------------------------------------------------------------------ clicks on the table
const tableActions = {
  // the mahjong tiles a click discards now
  playableTiles() {
    const out = new Set();
    if (!app.prompt || app.prompt.phase === "exchange") return out;
    for (const a of app.prompt.actions) if (a.kind === "discard") out.add((a.tiles || [])[0]);
    return out;
  },
  tile(name, index) {
    if (!app.prompt) return;
    if (app.prompt.phase === "exchange") { toggle(index, 3); return; }
    const a = app.prompt.actions.find((x) => x.kind === "discard" && (x.tiles || [])[0] === name);
    if (a) answer(app.prompt.game, a);
  },
  card(name, index) { toggle(index, 99); },
};

function toggle(index, most) {
  const at = app.selected.indexOf(index);
  if (at >= 0) app.selected.splice(at, 1);
  else if (app.selected.length < most) app.selected.push(index);
  render();
}

// The hand as drawn (sorted, the drawn tile last), to map selections back to tiles.
function shownHand() {
  if (!hand) return [];
  if (rendererOf(hand.game)) return rendererOf(hand.game).sortedHand();
  if (hand.family === "dadun") return sortedHand();
  const rest = [...hand.tiles];
  let drawn = null;
  if (hand.drawn && rest.includes(hand.drawn) && rest.length % 3 === 2) {
    rest.splice(rest.lastIndexOf(hand.drawn), 1);
    drawn = hand.drawn;
  }
  const sorted = sortTiles(rest, hand.voids[app.seat]);
  return drawn ? [...sorted, drawn] : sorted;
}
const selectedTiles = () => app.selected.map((i) => shownHand()[i]).filter(Boolean);

// Select the hand's cards or tiles of a list (a hint, a suggestion).
function select(names) {
  const shown = shownHand();
  const used = new Set();
  app.selected = [];
  for (const n of names) {
    const i = shown.findIndex((x, k) => x === n && !used.has(k));
    if (i >= 0) { used.add(i); app.selected.push(i); }
  }
  render();
}

function ddHint() {
  const plays = (app.prompt ? app.prompt.actions : []).filter((a) => a.kind === "play");
  if (!plays.length) return;
  app.hint = (app.hint + 1) % plays.length;
  select(plays[app.hint].tiles || []);
}

function ddPlay() {
  const p = app.prompt;
  if (!p) return;
  const cards = selectedTiles();
  if (!cards.length) { error("select cards to play, or pass"); return; }
  const hinted = p.actions.find((a) => a.kind === "play" &&
    [...(a.tiles || [])].sort().join() === [...cards].sort().join());
  answer(p.game, hinted || {kind: "play", tiles: cards, ref: p.ref});
}

function ddPass() {
  const p = app.prompt;
  const a = p && p.actions.find((x) => x.kind === "pass");
  if (a) answer(p.game, a);
}

// ------------------------------------------------------------------ drawing
// Frames change the state at once; the page is drawn at most once per animation frame, so a
// room of robots sending ~110 frames a second costs one drawing per screen refresh, not 110
// (the page stays responsive). `ui.renders` counts the drawings (tests compare it with the
// frames received).
let drawPending = false;
function render() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    draw();
  });
}

function draw() {
  ui.renders = (ui.renders || 0) + 1;
  renderTable(tableActions);
  const p = app.prompt;
  const dialog = p && dialogFor(p, (a) => answer(p.game, a), {selectedTiles, select});
  if (!dialog) closeDialog();
  const own = p ? rendererOf(p.game) : null;
  const ddPlayPhase = !!p && ((p.game === "dadun" && p.phase === "play") || !!(own && own.cardControls(p.phase)));
  show("dd-controls", ddPlayPhase);
  if (ddPlayPhase) {
    const canPass = p.actions.some((a) => a.kind === "pass");
    $("dd-pass").disabled = !canPass;
    $("dd-play").disabled = !app.selected.length;
    $("dd-hint").disabled = !p.actions.some((a) => a.kind === "play");
  }
  $("turn-note").textContent = p ? (p.phase === "window" ? `${t("window_on")}` : t("your_turn")) : "";
}
ui.render = render;

// ------------------------------------------------------------------ settlement
function settle(frame, over) {
  const deltas = over.deltas || frame.deltas || [];
  const lines = [`hand ${frame.hand_no || over.hand_no || ""} over` +
    (over.reason ? `, ${over.reason}` : "")];
  lines.push("deltas: " + deltas.map(Number)
    .map((d, s) => `${seatName(s, app.seat)} ${d >= 0 ? "+" : ""}${d}`).join(", "));
  const payments = over.payments || frame.payments || app.payments;
  for (const p of payments) {
    lines.push(`  ${does(p.payer, "pay")} ${seatName(p.payee ?? 0, app.seat)} ` +
      `${p.amount || 0} (${p.reason || ""})`);
  }
  (over.hands || frame.hands || []).forEach((h, s) =>
    lines.push(`  ${seatName(s, app.seat)}: ${tiles(h) || "-"}`));
  for (const p of (over.players || []).filter((x) => x.win_score !== undefined)) {   // Dadun score parts
    lines.push(`  ${seatName(p.seat, app.seat)}: win ${p.win_score || 0}, bomb ` +
      `${p.bomb_score || 0}, cards ${p.card_score || 0}, caught ${p.catch_score || 0}`);
  }
  decisionOver();
  clearActions();
  room.endOfHandEntrust();
  if (hand) { hand.phase = "over"; hand.toAct = []; hand.scores = [0, 0, 0, 0]; }
  room.endOfHand(deltas);
  show("play-panel", false);
  renderSettlement(frame, {...over, deltas}, payments, lines.join("\n"));
  render();
  log("hand over: press Ready for the next hand");
}

// A request whose refusal is a note in the log, not an error for the player.
function quietly(name, body) {
  const seq = send(name, body);
  if (seq) conn.quiet.add(seq);
}

function fairLine(text, state) {
  const box = $("fair");
  box.textContent = text;
  box.className = `fair ${state}`;
  box.hidden = false;
}

// ------------------------------------------------------------------ guest login (dev)
// POST /guest {nickname} gives a short-lived token for a fresh guest id where the server
// allows it (docs/protocol.md, "Guest login"); the page then logs in with it like with any
// token, and reconnects with it.
async function guestLogin() {
  const nickname = $("nickname").value.trim();
  if (!nickname) { error("choose a nickname first"); return; }
  $("error").hidden = true;
  let r;
  let body = {};
  try {
    r = await fetch("/guest", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({nickname})});
    body = await r.json();
  } catch (e) {
    error(`guest login failed: ${e}`);
    return;
  }
  if (!r.ok) {
    error(`guest login: ${body.message || r.status}` +
      (r.status === 404 ? " (use a token below)" : ""));
    if (r.status === 404) $("token-login").open = true;
    return;
  }
  connect({token: body.token, nickname: body.nickname || nickname});
}

// ------------------------------------------------------------------ wiring
conn.hooks = {
  frame: onFrame,
  status,
  error,
  closed: clearActions,
  loggedOut: () => show("login-panel", true),
  // a command answered "a moment" waits for its next try: a quiet status, no error
  moment: (on) => show("moment", on),
};

function tick() {
  const secondsTo = (x) => Math.max(0, Math.ceil((x - Date.now()) / 1000));
  const inZh = (n) => (i18n.lang === "zh" ? `剩 ${n} 秒` : `${n} s left`);
  const left = $("actions").children.length || app.prompt ? inZh(secondsTo(app.deadline)) : "";
  $("countdown").textContent = left;
  $("dialog-countdown").textContent = app.prompt ? left : "";
  if (app.dismissDeadline) $("dismiss-countdown").textContent = inZh(secondsTo(app.dismissDeadline));
  match.tickMatch();
  tickTimers();
}

$("login").onclick = () => {
  const token = $("token").value.trim();
  if (!token) { error("paste a login token first"); return; }
  $("error").hidden = true;
  connect({token, nickname: $("nickname").value.trim()});
};
$("create").onclick = () => {
  app.createSeq = send("create_room", {game: $("game").value, base_score: 1,
    total_hands: Number($("hands").value) || 4, options_json: "{}", password: $("password").value});
};
$("quick").onclick = () => send("join_room", {game: $("game").value});
$("match").onclick = match.askMatch;
$("match-cancel").onclick = match.cancelMatch;
$("join").onclick = () => {
  const roomId = Number($("join-id").value);
  if (!roomId) { error("enter a room number to join"); return; }
  send("join_room", {room_id: String(roomId), password: $("password").value});
};
$("refresh-list").onclick = () => send("ask_room_list", {});
$("ready").onclick = () => { $("error").hidden = true; command("ask_ready", {is_ready: true}); };
$("next-hand").onclick = () => { show("settlement-panel", false); $("ready").onclick(); };
$("settlement-close").onclick = () => show("settlement-panel", false);
$("unready").onclick = () => command("ask_ready", {is_ready: false});
// a retried leave refused "not in a room" (1014): an earlier try, answered "a moment", left
$("leave").onclick = () => command(app.watching ? "stop_watching" : "ask_exit", {}, {onRet: (r) => {
  if (!r.code || Number(r.code) === 1014) room.leaveRoom();
}});
$("chat-send").onclick = room.sendChat;
$("chat-input").onkeydown = (ev) => { if (ev.key === "Enter") room.sendChat(); };
$("dismiss-apply").onclick = () => command("ask_dismiss", {});
$("dismiss-agree").onclick = () => room.vote(true);
$("dismiss-refuse").onclick = () => room.vote(false);
$("cancel-entrust").onclick = room.cancelEntrust;
$("ask-geo").onclick = () => send("ask_geo", {});
$("alerts-hide").onclick = () => show("alerts", false);
$("error").onclick = () => show("error", false);
$("history-ask").onclick = history.askHistory;
$("rating-ask").onclick = ratings.askRating;
$("leaderboard-ask").onclick = ratings.askLeaderboard;
$("dd-hint").onclick = ddHint;
$("dd-play").onclick = ddPlay;
$("dd-pass").onclick = ddPass;
$("dd-clear").onclick = () => { app.selected = []; render(); };
$("all-moves").onclick = () => {
  const box = $("actions");
  box.className = box.className.includes("show-all") ? "actions" : "actions show-all";
};
$("guest-login").onclick = guestLogin;
$("fill-robots").onclick = () => command("add_robots", {count: 0}, {onRet: (r) => {
  if (!r.code) log("robots are taking the free seats");
}});
// Keys: 1-9 press that decision button (shown or not), Escape clears a selection.
document.onkeydown = (ev) => {
  const tag = ev.target && ev.target.tagName;
  if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
  const n = Number(ev.key);
  const buttons = $("actions").children;
  if (n >= 1 && n <= buttons.length) buttons[n - 1].onclick();
  else if (ev.key === "Escape" && app.selected.length) { app.selected = []; render(); }
};
$("lang").onclick = () => setLang(i18n.lang === "zh" ? "en" : "zh");
i18n.listeners.push(() => {
  render();
  if (app.prompt && app.lastPrompt) renderPrompt(app.lastPrompt);
  room.renderRooms();
});
wireReplay();
initLang();
setInterval(tick, 250);
