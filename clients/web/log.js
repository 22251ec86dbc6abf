// The status line, the error box and the event log (a list of plain-text lines), and the
// short descriptions of events in it. Seats are named from ours: "you", "seat 2".
import {$, el} from "./dom.js";
import {app} from "./state.js";
import {TERMS} from "./i18n.js";

export function status(text) { $("status").textContent = text; }

export function error(text) {
  const box = $("error");
  box.textContent = text;
  box.hidden = false;
  log(text);
}

// The log keeps its newest LOG_LINES lines, and scrolls to the newest once per animation
// frame (a scroll per line forces a layout per frame received: robots at full speed send
// ~110 a second).
const LOG_LINES = 400;
let scrollPending = false;

export function log(text) {
  if (!text) return;
  const box = $("log");
  box.appendChild(el("li", {text}));
  while (box.childElementCount > LOG_LINES) box.firstElementChild.remove();
  if (scrollPending) return;
  scrollPending = true;
  requestAnimationFrame(() => {
    scrollPending = false;
    if (box.lastElementChild) box.lastElementChild.scrollIntoView({block: "nearest"});
  });
}

// Tiles and cards come as a list of names or as one string in notation ("123m55p").
export function tiles(v) { return Array.isArray(v) ? v.join(" ") : (v || ""); }
export function seatName(seat, me) { return seat === me ? "you" : `seat ${seat}`; }
// A user by nickname as far as we know it: "you", "alice", or "user 1002".
export function userName(uid) {
  if (String(uid) === app.me) return "you";
  return app.names.get(String(uid)) || `user ${uid || 0}`;
}
export function signed(n) { n = Number(n || 0); return n > 0 ? `+${n}` : String(n); }
// Subject and verb that agree, seen from our seat: "you discard" / "seat 2 discards".
export function does(seat, verb, third, me = app.seat) {
  seat = seat ?? 0;
  return seat === me ? `you ${verb}` : `seat ${seat} ${third || verb + "s"}`;
}
// JSON text from the server, or `fallback` when it is missing or malformed.
export function parseOr(text, fallback) {
  try { return text ? JSON.parse(text) : fallback; } catch { return fallback; }
}
// A value of an event's data as short text: lists joined, objects as JSON.
export function plain(v) {
  if (Array.isArray(v) && v.every((x) => typeof x !== "object")) return v.join(" ");
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

export function describe(kind, b) {
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
    case "mj_opening_hu": return `${s(b.seat)} opening win (起手胡): ${(b.types || []).join(", ")} ${tiles(b.shown)}`;
    case "mj_haidi": return `${s(b.seat)} haidi (海底) ${b.step || ""} ${b.tile || ""}`;
    case "mj_birds": return b.dice && b.dice.length ? `birds (扎鸟), dice: ${b.dice.join(" ")}`
      : `birds (扎鸟): ${tiles(b.tiles)}`;
    case "dd_assign": return `your cards: ${(b.cards || []).join(" ")}`;
    case "dd_use_out": return b.is_skip ? `${does(b.seat, "pass", "passes")}`
      : `${does(b.seat, "play")} ${tiles(b.cards)}`;
    case "dd_clear_desktop": return `${s(b.seat)} wins the trick, ${b.desktop_score || 0} pts`;
    case "dd_use_alone": return `${s(b.seat)} ${b.is_alone ? "plays alone (打独)" : "does not play alone"}`;
    case "dd_use_friend": return `friend card (叫朋友) ${b.friend_card}`;
    case "in_entrust": return `${does(b.seat, "are", "is")} played by entrust (托管)`;
    case "hand_commitment": return `fair deal: hand ${b.hand_no || ""} commitment ${b.commitment || ""}`;
    case "fair_reveal": return `fair deal: hand ${b.hand_no || ""} server seed ${b.server_seed || ""}`;
    case "game_event": return null;   // the engine's extra events; the prompt says enough
    case "mj_window_opened": case "mj_window_closed": case "mj_candidates": return null;
    case "dd_hint_out": case "dd_hint_alone": return null;
    default: return `${kind} ${JSON.stringify(b)}`;
  }
}
