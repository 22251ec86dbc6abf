// The settlement of a hand as a table: one column per seat, one row per reason of the
// ledger (its lines summed per seat: payer -, payee +; the plain-text ledger below lists
// every line), the total row (the deltas), then each seat's revealed hand and, in
// Dadun, the score parts. The same data as plain text goes to #settlement (copyable; the
// node harnesses read it).
import {$, el, show} from "./dom.js";
import {app, currentHand} from "./state.js";
import {reasonName, t, tz} from "./i18n.js";
import {cardEl, parseTiles, sortCards, tileEl} from "./tiles.js";
import {seatLabel} from "./table.js";

const signed = (n) => (n > 0 ? `+${n}` : String(n));

export function renderSettlement(frame, over, payments, text) {
  const deltas = (over.deltas || frame.deltas || []).map(Number);
  const seats = deltas.length ? deltas.map((_, s) => s) : [0, 1, 2, 3];   // 3 or 4 seats
  const head = el("tr", {}, [el("th", {text: ""}), ...seats.map((s) =>
    el("th", {text: seatLabel(s), cls: s === app.seat ? "me" : ""}))]);
  // one row per reason (the lines of a reason summed per seat, their number shown)
  const byReason = new Map();
  for (const p of payments) {
    const row = byReason.get(p.reason) || {n: 0, seat: [0, 0, 0, 0]};
    row.n += 1;
    row.seat[p.payee ?? 0] += Number(p.amount || 0);
    row.seat[p.payer ?? 0] -= Number(p.amount || 0);
    byReason.set(p.reason, row);
  }
  const rows = [...byReason].map(([reason, row]) => el("tr", {}, [
    el("th", {text: reasonName(reason) + (row.n > 1 ? ` ×${row.n}` : ""), cls: "reason"}),
    ...seats.map((s) => {
      const v = row.seat[s];
      return el("td", {text: v ? signed(v) : "", cls: v > 0 ? "plus" : v < 0 ? "minus" : ""});
    })]));
  const total = el("tr", {cls: "total"}, [el("th", {text: t("total")}), ...seats.map((s) =>
    el("td", {text: signed(deltas[s] || 0), cls: (deltas[s] || 0) > 0 ? "plus" : (deltas[s] || 0) < 0 ? "minus" : ""}))]);
  const extra = [];
  const hands = over.hands || frame.hands || [];
  if (hands.length) {
    extra.push(el("tr", {cls: "hands"}, [el("th", {text: t("revealed")}), ...seats.map((s) =>
      el("td", {}, [el("div", {cls: "mini"}, parseTiles(hands[s]).map((x) => tileEl(x, {cls: "xs"})))]))]));
  }
  for (const key of ["win_score", "bomb_score", "card_score", "catch_score"]) {
    const players = over.players || [];
    if (!players.some((p) => p[key] !== undefined)) continue;   // Dadun's parts only
    extra.push(el("tr", {cls: "parts"}, [el("th", {text: key.replace("_", " ")}), ...seats.map((s) =>
      el("td", {text: String((players.find((p) => (p.seat ?? 0) === s) || {})[key] ?? "")}))]));
  }
  const live = currentHand();
  const wins = over.wins || (live && live.hus) || [];
  const winners = wins.map((w) => `${seatLabel(w.seat)}: ${(w.patterns || []).join(", ")}` +
    (w.fan ? ` (${w.fan} fan)` : w.big_hu ? ` (${w.big_hu} big hu)` : ""));
  $("settlement-title").textContent = `${t("hand_over")} #${frame.hand_no || frame.now || over.hand_no || ""}` +
    (over.end === "wall_exhausted" || frame.draw_game ? ` · ${t("draw_game")}` : "");
  $("settlement-wins").replaceChildren(...winners.map((w) => el("li", {text: w})));
  const birds = over.birds && over.birds.tiles ? over.birds.tiles : (app.birds ? app.birds.tiles : []);
  $("settlement-birds").replaceChildren(...(birds.length ? [el("span", {text: `${tz("birds_title", "扎鸟")}`}),
    ...birds.map((x) => tileEl(x, {cls: "sm"}))] : []));
  $("settlement-table").replaceChildren(el("thead", {}, [head]), el("tbody", {}, [...rows, total, ...extra]));
  const shown = over.all_hands || [];
  if (shown.length) {
    $("settlement-birds").appendChild(el("div", {cls: "mini"}, sortCards(parseTiles(shown[app.seat] || [])).map((c) => cardEl(c, {cls: "xs"}))));
  }
  $("settlement").textContent = text;
  show("settlement-panel", true);
}
