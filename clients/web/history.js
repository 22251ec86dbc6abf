// History scores of a room and the replay of one of its hands (the engine's events, the
// public ones plus this player's own private ones), as lines seen from our seat.
import {$, button, el, fill, span} from "./dom.js";
import {app} from "./state.js";
import {send} from "./conn.js";
import {TERMS} from "./i18n.js";
import {does, error, parseOr, plain, seatName, signed, tiles, userName} from "./log.js";
import {loadReplay} from "./replay.js";

export function askHistory() {
  const roomId = Number($("history-room").value) || app.lastRoom;
  if (!roomId) { error("enter a room number for its history"); return; }
  $("history-title").textContent = `asking for the history of room ${roomId}...`;
  send("ask_history_score", {room_id: String(roomId)});
}

export function renderHistory(h) {
  const roomId = Number(h.room_id || 0);
  const items = h.items || [];
  const hands = Math.max(0, ...items.map((i) => (i.scores || []).length));
  $("history-title").textContent = hands
    ? `Room ${roomId}: ${hands} hand${hands > 1 ? "s" : ""} settled`
    : `Room ${roomId}: no settled hand yet`;
  const rows = [];
  for (let hand = 1; hand <= hands; hand++) {
    const li = el("li");
    li.appendChild(span(`hand ${hand}: ` + items.map((i) =>
      `${userName(i.user_id)} ${signed((i.scores || [])[hand - 1])}`).join(", ")));
    li.appendChild(button(`Replay hand ${hand}`, () => askReplay(roomId, hand)));
    rows.push(li);
  }
  if (hands) {
    const total = el("li");
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

export function renderReplay(r) {
  const cells = (r.cells || []).map((c) => parseOr(c.json, {kind: c.kind || "?"}));
  const own = cells.find((e) => e.to !== undefined && e.to !== null);   // private events are our seat's
  const mySeat = own ? own.to : -1;
  $("replay-title").textContent = `Replay: room ${r.room_id || 0}, hand ${r.hand_no || 0}` +
    ` (${r.game || "?"}), ${cells.length} events`;
  fill($("replay"), cells.map((e) => replayLine(e, mySeat)), "li");
  loadReplay(r.game || "", cells, mySeat);
}

// One engine event of a replay ({kind, data, to}) as a line of text, seats seen from ours.
function replayLine(e, mySeat) {
  const d = {...(e.data || {})};
  const term = TERMS[e.kind] ? ` (${TERMS[e.kind]})` : "";
  const to = e.to !== undefined && e.to !== null ? " [private]" : "";
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
