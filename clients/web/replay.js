// A replay on a table of its own, step by step: the hand's events (the public ones and
// ours, in the engine's words: docs/protocol.md "History and replays") are turned into the
// live frames' shape and applied with the live reducer (state.onEvent), so a replay looks
// exactly like the game did. Steps: first, back, forward, last, and play (one step each
// 0.6 s).
import {$, show} from "./dom.js";
import {app, currentHand, newHand, onEvent, withHand} from "./state.js";
import {renderTable} from "./table.js";
import {rendererOf} from "./games.js";

const MELDS = new Set(["chi", "peng", "zhigang", "angang", "bugang", "kaigang", "buzhang"]);
const rp = {game: "", seat: 0, frames: [], at: 0, timer: null, hand: null, payments: []};

// One engine event ({kind, data, to}) as [live frame kind, body], or null when the table
// does not show it.
function toFrame(kind, d, game) {
  const seat = d.seat ?? -1;
  if (rendererOf(game)) return ["game_event", {game, kind, seat, json: JSON.stringify(d)}];
  if (game === "dadun") {
    switch (kind) {
      case "deal": return ["game_event", {game, kind: "deal", json: JSON.stringify(d)}];
      case "hand": return ["dd_assign", {cards: d.cards}];
      case "alone": return ["dd_use_alone", {seat, is_alone: d.is_alone, all_hands: (d.all_hands || []).map((c) => ({cards: String(c).split(" ")}))}];
      case "friend_card": return ["dd_use_friend", {seat: d.banker, friend_card: d.card}];
      case "hint_out": return ["dd_hint_out", {seat}];
      case "hint_alone": return ["dd_hint_alone", {seat}];
      case "play": case "pass":
        return ["dd_use_out", {seat, cards: d.cards, is_skip: kind === "pass", desktop_score: d.desk_points,
          rest_num: d.rest_num ?? -1}];
      case "clear_desk": return ["dd_clear_desktop", {seat, desktop_score: d.desk_points, catch_score: d.catch}];
      case "show_hands": return ["dd_tan_pai", {items: d.hands || []}];
      case "payment": return ["game_event", {game, kind: "payment", json: JSON.stringify(d)}];
      default: return null;
    }
  }
  if (MELDS.has(kind)) {
    const tiles = d.tiles || (d.tile ? [d.tile, d.tile, d.tile, d.tile] : []);
    return ["mj_meld", {seat, kind, tiles, source: d.from ?? -1}];
  }
  switch (kind) {
    case "deal": return ["mj_deal", {dealer: d.dealer, wall_remaining: d.wall_remaining}];
    case "hand": return ["mj_hand", {tiles: d.tiles}];
    case "draw": return ["mj_draw", {seat, tile: d.tile || "", wall_remaining: d.wall_remaining}];
    case "discard": return ["mj_discard", {seat, tile: d.tile}];
    case "window_opened": return ["mj_window_opened", {window_id: d.window, tile: d.tile, source: d.source, trigger: d.trigger}];
    case "window_closed": return ["mj_window_closed", {window_id: d.window}];
    case "hu": return ["mj_hu", {seat, tile: d.tile}];
    case "payment": return ["mj_payment", {payment: d}];
    case "void_declared": return ["mj_void", {voids: d.voids}];
    case "birds": return ["mj_birds", {tiles: d.tiles || [], hits: d.hits, dice: d.dice || []}];
    case "turn": return ["game_event", {game, kind: "turn", json: JSON.stringify(d)}];
    default: return null;
  }
}

export function loadReplay(game, events, mySeat) {
  stop();
  rp.game = game;
  rp.seat = mySeat >= 0 ? mySeat : 0;
  rp.frames = events.map((e) => toFrame(e.kind, {...(e.data || {})}, game)).filter(Boolean);
  rp.at = Math.min(rp.frames.length, 1);
  show("replay-view", rp.frames.length > 0);
  draw();
}

// The table after the first `rp.at` frames, applied afresh to a hand of the replay's own.
function draw() {
  const payments = app.payments;
  withHand(null, rp.seat, () => {
    app.payments = [];
    newHand(rp.game);
    for (const [kind, body] of rp.frames.slice(0, rp.at)) onEvent(kind, body);
    const h = currentHand();
    if (h) h.toAct = [];
    renderTable({playableTiles: () => new Set(), tile() {}, card() {}}, "replay-");
  });
  app.payments = payments;
  $("replay-step").textContent = `${rp.at} / ${rp.frames.length}`;
}

function go(to) {
  rp.at = Math.max(0, Math.min(rp.frames.length, to));
  draw();
  if (rp.at >= rp.frames.length) stop();
}

function stop() {
  clearInterval(rp.timer);
  rp.timer = null;
}

export function wireReplay() {
  $("replay-first").onclick = () => { stop(); go(1); };
  $("replay-back").onclick = () => { stop(); go(rp.at - 1); };
  $("replay-next").onclick = () => { stop(); go(rp.at + 1); };
  $("replay-last").onclick = () => { stop(); go(rp.frames.length); };
  $("replay-play").onclick = () => {
    if (rp.timer) { stop(); return; }
    if (rp.at >= rp.frames.length) go(1);
    rp.timer = setInterval(() => go(rp.at + 1), 600);
  };
}
