// Matchmaking (docs/protocol.md, "Matchmaking"): the Match button asks for a rated match in
// the chosen game, a waiting line counts the seconds until MatchFound (the room's frames
// follow as after a join) or MatchCancelled, and Cancel withdraws the ticket. The text of
// the line is made by the pure functions below (tested in node:
// tests/unit/clients/test_web_match.py); the rest puts it on the page.
import {$, show} from "./dom.js";
import {send} from "./conn.js";

// what is waiting: the MatchQueued frame and when it arrived here (ms, this clock)
const wait = {queued: null, at: 0};

// "waiting for a dadun match (stake 2, ranked): 12 s, 3 in the queue, usually about 5 s"
export function waitingText(q, nowMs, atMs) {
  const secs = Math.max(0, Math.floor((nowMs - atMs) / 1000));
  const what = `${q.game || "?"} match (stake ${q.stake || 1}${q.ranked ? ", ranked" : ""})`;
  const n = Number(q.waiting || 1);
  const usual = Number(q.estimated_wait_ms || 0)
    ? `, usually about ${Math.round(Number(q.estimated_wait_ms) / 1000)} s` : "";
  return `waiting for a ${what}: ${secs} s, ${n} in the queue${usual}`;
}

// "matched: room 300123, seat 2 (1 robot) after 2.5 s"
export function foundText(f) {
  const robots = Number(f.robots || 0);
  const extra = robots ? ` (${robots} robot${robots === 1 ? "" : "s"})` : "";
  return `matched: room ${f.room_id}, seat ${Number(f.seat || 0)}${extra} after ` +
    `${(Number(f.waited_ms || 0) / 1000).toFixed(1)} s`;
}

const WHY = {CANCELLED: "cancelled", TIMEOUT: "timed out", FAILED: "failed"};

export function cancelledText(c) {
  const why = WHY[c.reason] || "ended";
  return `match request ${why}${c.message && why !== "cancelled" ? `: ${c.message}` : ""}`;
}

function setWaiting(queued) {
  wait.queued = queued;
  wait.at = Date.now();
  show("match-cancel", Boolean(queued));
  show("match", !queued);
  $("match-status").textContent = queued ? waitingText(queued, wait.at, wait.at) : "";
}

export function askMatch() {
  const game = String($("game").value || "").toLowerCase();
  send("ask_match", {game, stake: Number($("match-stake").value) || 1,
    ranked: Boolean($("match-ranked").checked)});
}

export function cancelMatch() { send("cancel_match", {}); }

export function onQueued(q) { setWaiting(q); }

export function onFound(f) { setWaiting(null); $("match-status").textContent = foundText(f); }

export function onCancelled(c) { setWaiting(null); $("match-status").textContent = cancelledText(c); }

// once a second or so (app.js's tick): the waiting line's seconds
export function tickMatch() {
  if (wait.queued) $("match-status").textContent = waitingText(wait.queued, Date.now(), wait.at);
}
