// Ratings (docs/protocol.md, section 7): the player's own rating and rank in a game, and a
// game's leaderboard. The text of each line is made by the pure functions below (tested in
// node: tests/unit/clients/test_web_ratings.py); the rest puts it on the page.
import {$, fill} from "./dom.js";
import {send} from "./conn.js";

const season = (n) => (Number(n || 0) === 0 ? "all-time" : `season ${n}`);
const one = (x) => Number(x || 0).toFixed(1);

// "xuezhan, all-time: 27.8 ± 8.3 (score 3.1), rank 2, 5 hands" (proto3 JSON omits zeros)
export function ratingText(r) {
  const where = `${r.game || "?"}, ${season(r.season)}`;
  if (!r.rated) return `${where}: not rated yet (play a hand)`;
  const hands = Number(r.hands || 0);
  return `${where}: ${one(r.mu)} ± ${one(r.sigma)} (score ${one(r.score)}), ` +
    `rank ${r.rank || "?"}, ${hands} hand${hands === 1 ? "" : "s"}`;
}

// The title, then one line per player: rank, user id, score, mu ± sigma, hands.
export function leaderboardLines(b) {
  const total = Number(b.total || 0);
  const title = `${b.game || "?"} leaderboard, ${season(b.season)} ` +
    `(${total} player${total === 1 ? "" : "s"})`;
  const rows = (b.entries || []).map((e) => {
    const hands = Number(e.hands || 0);
    return `${e.rank || "?"}. ${e.user_id} — ${one(e.score)} (${one(e.mu)} ± ` +
      `${one(e.sigma)}, ${hands} hand${hands === 1 ? "" : "s"})`;
  });
  return [title, ...(rows.length ? rows : ["nobody rated yet"])];
}

function scope() {
  const which = $("rating-season").value;
  return which === "now" ? {game: $("rating-game").value, current_season: true}
    : {game: $("rating-game").value, season: Number(which) || 0};
}

export function askRating() { send("ask_rating", scope()); }
export function askLeaderboard() { send("ask_leaderboard", {...scope(), limit: 20}); }

export function renderRating(r) { $("rating-title").textContent = ratingText(r); }

export function renderLeaderboard(b) {
  const [title, ...rows] = leaderboardLines(b);
  $("leaderboard-title").textContent = title;
  fill($("leaderboard"), rows, "li");
}
