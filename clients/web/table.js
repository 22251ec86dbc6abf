// The table: four seats around it (seen from ours: we sit at the bottom, the next seat 下家
// on the right), each with its plate (name, score, online / entrust, dealer, countdown), and
// the game's own parts drawn by mahjong.js or dadun.js. Reads state.js, never changes the
// hand; clicks go to the `actions` callbacks app.js passes in.
import {$, el, show} from "./dom.js";
import {app, hand} from "./state.js";
import {t, tz} from "./i18n.js";
import * as mahjong from "./mahjong.js";
import * as dadun from "./dadun.js";
import {rendererOf} from "./games.js";

export const POSITIONS = ["bottom", "right", "top", "left"];
const POSITIONS_OF = {3: ["bottom", "right", "left"], 4: POSITIONS};

// Seats at the table: the room's (RoomInfo.seats), else the game's renderer's, else four.
export function seatCount() {
  const r = hand ? rendererOf(hand.game) : null;
  return (app.room && app.room.seats) || (r && r.seats) || 4;
}

// The position of a seat on the screen: ours at the bottom.
export function position(seat) {
  const n = seatCount();
  const me = app.seat >= 0 ? app.seat : 0;
  return (POSITIONS_OF[n] || POSITIONS)[(seat - me + n) % n];
}

export function playerAt(seat) {
  return ((app.room && app.room.players) || []).find((p) => (p.seat ?? 0) === seat) || null;
}

export function seatLabel(seat) {
  const p = playerAt(seat);
  if (seat === app.seat) return t("you");
  return p ? p.nickname || `user ${p.user_id}` : `${t("seat")} ${seat}`;
}

// `at` names the table's elements: "" the live table, "replay-" the replay's.
export function renderTable(actions, at = "") {
  const table = $(`${at}table`);
  if (!table) return;
  const game = hand ? hand.game : "";
  table.className = `table g-${hand ? hand.family : "none"}`;
  if (!at) show("table", !!app.room);
  const own = hand ? rendererOf(hand.game) : null;
  const game_ = own || (hand && hand.family === "dadun" ? dadun : mahjong);
  for (const pos of POSITIONS) { const box = $(`${at}seat-${pos}`); if (box) box.replaceChildren(); }
  for (let seat = 0; seat < seatCount(); seat++) {
    const box = $(`${at}seat-${position(seat)}`);
    box.replaceChildren(plate(seat));
    if (hand) for (const p of game_.seatParts(seat)) box.appendChild(p);
  }
  const center = $(`${at}table-center`);
  center.replaceChildren(...(hand ? game_.centerParts() : [el("div", {cls: "idle", text: t("waiting")})]));
  const mine = $(`${at}my-hand`);
  mine.replaceChildren(...(hand ? game_.handParts(actions) : []));
  if (game) table.title = game;
}

function plate(seat) {
  const p = playerAt(seat);
  const acting = hand && (hand.toAct || []).includes(seat) && hand.phase !== "over";
  const cls = ["plate", acting ? "acting" : "", seat === app.seat ? "me" : "",
    p && !p.online ? "is-offline" : "", p && p.entrusted ? "is-entrusted" : ""].join(" ");
  if (!p && hand && !app.room) {   // a replay: seats by number
    const score = Number((hand.scores || [])[seat] || 0);
    return el("div", {cls, data: {seat}}, [el("span", {cls: "name", text: seatLabel(seat)}),
      el("span", {cls: "score", text: score > 0 ? `+${score}` : String(score)})]);
  }
  if (!p) return el("div", {cls: `${cls} vacant`, text: t("empty_seat")});
  const badges = [];
  const own = hand ? rendererOf(hand.game) : null;
  if (own) badges.push(...own.badges(seat));
  const dealer = hand && !own && (hand.family === "dadun" ? hand.banker : hand.dealer);
  if (hand && !own && dealer === seat) badges.push(el("span", {cls: "badge dealer", text: hand.family === "dadun" ? t("banker") : t("dealer")}));
  if (p.robot) badges.push(el("span", {cls: "badge robot", text: tz("robot", "机器人")}));
  else badges.push(el("span", {cls: `badge ${p.online ? "online" : "offline"}`, text: p.online ? t("online") : t("offline")}));
  if (p.entrusted && !p.robot) badges.push(el("span", {cls: "badge entrusted", text: `${tz("entrusted", "托管")}`}));
  if (!hand && p.ready) badges.push(el("span", {cls: "badge ready", text: t("ready_mark")}));
  if (hand && hand.family === "mahjong" && hand.won[seat]) badges.push(el("span", {cls: "badge won", text: `${tz("hu", "胡")}`}));
  if (hand && hand.family === "mahjong" && hand.voids[seat]) {
    badges.push(el("span", {cls: "badge void", text: `缺${{m: "万", p: "筒", s: "条"}[hand.voids[seat]] || ""}`}));
  }
  const running = hand && hand.phase !== "over" ? Number((hand.scores || [])[seat] || 0) : 0;
  const score = Number(p.total_score || 0) + running;
  const timer = el("span", {cls: "timer", data: {seat}});
  return el("div", {cls, data: {seat}}, [
    el("span", {cls: "name", text: (p.nickname || `user ${p.user_id}`).replace(/ \(robot\)$/, "")}),
    el("span", {cls: "score", text: score > 0 ? `+${score}` : String(score)}),
    timer, ...badges]);
}

// The countdowns on the plates and the decision bar, every 250 ms.
export function tickTimers() {
  const left = (ms) => Math.max(0, Math.ceil((ms - Date.now()) / 1000));
  for (const e of document.querySelectorAll ? document.querySelectorAll(".plate .timer") : []) {
    const seat = Number(e.getAttribute("data-seat"));
    const acting = hand && (hand.toAct || []).includes(seat);
    const until = seat === app.seat && app.prompt ? app.deadline : app.seatDeadline[seat];
    e.textContent = acting && until > Date.now() ? `${left(until)}s` : "";
  }
}
