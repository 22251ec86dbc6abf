// Matchmaking (docs/protocol.md, "Matchmaking"): the Match button asks for a rated match in
// the chosen game, with the friends named in the Friends field (a party: up to two user ids,
// each of whom asks too, naming the others), a waiting line counts the seconds until
// MatchFound (the room's frames follow as after a join) or MatchCancelled, and Cancel
// withdraws the ticket. A refused ask (a friend offline or busy, ...) is said on that line.
// The texts are made by the pure functions below (tested in node:
// tests/unit/clients/test_web_match.py, test_web_match_party.py); the rest puts them on the
// page.
import {$, attr, show} from "./dom.js";
import {conn, request, send} from "./conn.js";
import {app} from "./state.js";
import {t} from "./i18n.js";

export const MAX_FRIENDS = 2;   // a party is up to three players (AskMatch.party)

// what is waiting: the MatchQueued frame and when it arrived here (ms, this clock); the
// party asked with; the seq of the ask under way
const wait = {queued: null, at: 0, party: [], askSeq: 0};

// The Friends field as AskMatch.party: user ids as text (int64: guest ids exceed 2^53),
// separated by commas or spaces; null when it is not up to two ids, each once, not `me`.
export function parseParty(text, me) {
  const ids = String(text || "").split(/[\s,，;、]+/).filter(Boolean);
  if (ids.length > MAX_FRIENDS || new Set(ids).size !== ids.length) return null;
  if (ids.some((id) => !/^[1-9][0-9]{0,18}$/.test(id) || id === String(me || ""))) return null;
  return ids;
}

// AskMatch refusals (common.proto's codes) as the match line's text, in the page's language
const REFUSED = {1013: "match_in_room", 1016: "match_bad_options", 1050: "match_unavailable",
  1060: "match_already", 1062: "match_stake", 1063: "match_party_offline",
  1064: "match_party_busy"};

// "friend 1002 is not online: friends must be logged in to be matched together"
export function refusedText(r) {
  const code = Number(r.code || 0);
  const key = REFUSED[code] || "match_refused";
  const named = /player (\d+)/.exec(String(r.message || ""));   // the friend the lobby names
  const who = named ? `${t("friend")} ${named[1]}` : t("a_friend");
  const text = t(key).replace("{who}", who);
  return REFUSED[code] ? text : `${text}: ${r.message || code}`;
}

// "waiting for a dadun match (stake 2, ranked): 12 s, 3 in the queue, usually about 5 s"
export function waitingText(q, nowMs, atMs) {
  const secs = Math.max(0, Math.floor((nowMs - atMs) / 1000));
  const what = `${q.game || "?"} match (stake ${q.stake || 1}${q.ranked ? ", ranked" : ""})`;
  const n = Number(q.waiting || 1);
  const usual = Number(q.estimated_wait_ms || 0)
    ? `, usually about ${Math.round(Number(q.estimated_wait_ms) / 1000)} s` : "";
  return `waiting for a ${what}: ${secs} s, ${n} in the queue${usual}`;
}

// " with 1002, 1003 (they ask too, naming you)"; "" alone
export function partyText(party) {
  return party && party.length ? ` ${t("match_with").replace("{ids}", party.join(", "))}` : "";
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

function line() {
  return waitingText(wait.queued, Date.now(), wait.at) + partyText(wait.party);
}

function setWaiting(queued) {
  wait.queued = queued;
  wait.at = Date.now();
  show("match-cancel", Boolean(queued));
  show("match", !queued);
  $("match-status").textContent = queued ? line() : "";
}

export function askMatch() {
  const game = String($("game").value || "").toLowerCase();
  const party = parseParty($("match-party").value, app.me);
  if (party === null) { $("match-status").textContent = t("match_party_bad"); return; }
  wait.party = party;
  const seq = request("ask_match", {game, stake: Number($("match-stake").value) || 1,
    ranked: Boolean($("match-ranked").checked), party}, onAskRefused);
  // a refusal is said on the match line, not as an error; an answer MatchQueued ends it
  if (seq) conn.quiet.add(seq);
  wait.askSeq = seq || 0;
}

function onAskRefused(r) {
  if (Number(r.code || 0)) $("match-status").textContent = refusedText(r);
}

export function cancelMatch() { send("cancel_match", {}); }

export function onQueued(q) {
  conn.onRet.delete(wait.askSeq);   // answered: no refusal will come
  conn.quiet.delete(wait.askSeq);
  setWaiting(q);
}

export function onFound(f) { setWaiting(null); $("match-status").textContent = foundText(f); }

export function onCancelled(c) { setWaiting(null); $("match-status").textContent = cancelledText(c); }

// once a second or so (app.js's tick): the waiting line's seconds, and the player's own id
// next to the Friends field (what his friends type in theirs), the field's hint in the
// page's language
export function tickMatch() {
  if (wait.queued) $("match-status").textContent = line();
  const me = $("match-me");
  if (me) me.textContent = app.me ? t("your_id").replace("{id}", app.me) : "";
  attr($("match-party"), "placeholder", t("friends_hint"));
}
