// Provably fair deals in the browser (docs/fairness.md): the commitment the table publishes
// before a hand, this seat's own random client seed, and at the hand's end the page's own
// verifier, the algorithm of games/tools/verify_deal.py in WebCrypto (SHA-256, HMAC-SHA256):
// the revealed server seed gives the commitment shown before the deal, our client seed was
// mixed in, the hand seed gives the wall (mahjong) or deck (Dadun) by the page's shuffle, the
// first dealer is the seed's draw, our dealt tiles or cards are our positions of that
// shuffle, and each tile we drew from the front of the wall is the next front position. What
// needs the rules engine (every seat's actions re-run) is `python -m clients.verify_deal`.

const TAG = new TextEncoder().encode("paiju/fair/v1/commit");
const HAND_TAG = new TextEncoder().encode("paiju/fair/v1/hand");

import {rendererOf} from "./games.js";

export const fair = {
  commitments: new Map(),   // hand_no -> commitment hex shown before the deal
  sent: new Map(),          // hand_no -> the client seed (hex) this page sent for it
  last: null,               // {hand_no, text, ok} of the newest check, for the page
  seen: null,               // what this page saw of the running hand's deal (observe)
};

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function fromHex(text) {
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
  return out;
}

function u64(value) {
  const out = new Uint8Array(8);
  let v = BigInt(value);
  for (let i = 7; i >= 0; i--) { out[i] = Number(v & 0xffn); v >>= 8n; }
  return out;
}

// SHA-256(TAG || 0x00 || room_id u64 BE || hand_no u64 BE || server_seed), lowercase hex.
export async function commitmentOf(roomId, handNo, serverSeedHex) {
  const seed = fromHex(serverSeedHex);
  const data = new Uint8Array(TAG.length + 1 + 16 + seed.length);
  data.set(TAG, 0);
  data.set(u64(roomId), TAG.length + 1);
  data.set(u64(handNo), TAG.length + 9);
  data.set(seed, TAG.length + 17);
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", data)));
}

export function onCommitment(body) {
  fair.commitments.set(Number(body.hand_no || 0), body.commitment || "");
}

// This seat's entropy for the next hand: 32 random bytes, base64 as proto3 JSON writes bytes.
export function clientSeed(handNo) {
  const seed = crypto.getRandomValues(new Uint8Array(32));
  fair.sent.set(handNo, hex(seed));
  return btoa(String.fromCharCode(...seed));
}

export function nextHand() {
  return Math.max(0, ...fair.commitments.keys());
}

// ------------------------------------------------------------------ the derivation

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

// hand_seed = SHA-256(HAND_TAG || 0x00 || u64be(room) || u64be(hand) || server_seed ||
// for each seat: u8(len) || client seed): 32 bytes. The reveal lists one per seat (3 or 4).
export async function handSeedOf(roomId, handNo, serverSeedHex, clientSeedsHex) {
  const given = clientSeedsHex || [];
  const seeds = Array.from({length: given.length === 3 ? 3 : 4}, (_, i) => fromHex(given[i] || ""));
  const parts = [HAND_TAG, new Uint8Array(1), u64(roomId), u64(handNo), fromHex(serverSeedHex)];
  for (const c of seeds) parts.push(Uint8Array.of(c.length), c);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", concat(...parts)));
}

const TWO64 = 1n << 64n;

// One labelled sub-stream: word w is bytes 8*(w%4).. of HMAC-SHA256(seed, label||0||u64be(w/4)).
export class Stream {
  constructor(key, label) {
    this.key = key;
    this.label = new TextEncoder().encode(label);
    this.words = 0;
    this.block = null;
  }

  static async of(seed, label) {
    const key = await crypto.subtle.importKey("raw", seed, {name: "HMAC", hash: "SHA-256"},
      false, ["sign"]);
    return new Stream(key, label);
  }

  async next64() {
    const k = Math.floor(this.words / 4);
    const w = this.words % 4;
    if (w === 0 || !this.block) {
      const msg = concat(this.label, new Uint8Array(1), u64(k));
      this.block = new DataView(await crypto.subtle.sign("HMAC", this.key, msg));
    }
    this.words += 1;
    return this.block.getBigUint64(8 * w, false);
  }

  // uniform in [0, n) by rejection: a word x is used only when x < 2^64 - 2^64 mod n
  async below(n) {
    const big = BigInt(n);
    const limit = TWO64 - (TWO64 % big);
    for (;;) {
      const x = await this.next64();
      if (x < limit) return Number(x % big);
    }
  }

  // Fisher-Yates from the last position down: swap i with below(i + 1)
  async shuffle(items) {
    for (let i = items.length - 1; i >= 1; i--) {
      const j = await this.below(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }
}

const SUITS = "mps";
const RANKS = "3456789TJQKA2";
const tileName = (t) => `${(t % 9) + 1}${SUITS[Math.floor(t / 9)]}`;
function cardName(c) {
  if (c === 52) return "SJ";
  if (c === 53) return "BJ";
  return RANKS[c >> 2] + "shcd"[c & 3];
}

// The wall in draw order (mahjong) or the deck in deal order (Dadun), as names.
export async function layoutOf(game, seed) {
  const own = rendererOf(game);
  if (own) return own.layout(seed, Stream);
  if (game === "dadun") {
    const deck = [];
    for (let c = 0; c < 54; c++) deck.push(c, c);
    return (await (await Stream.of(seed, "deck")).shuffle(deck)).map(cardName);
  }
  const wall = [];
  for (let t = 0; t < 27; t++) wall.push(t, t, t, t);
  return (await (await Stream.of(seed, "wall")).shuffle(wall)).map(tileName);
}

export async function firstDealerOf(seed, seats = 4) {
  return (await Stream.of(seed, "dealer")).below(seats);
}

// The layout positions a seat is dealt: mahjong, 13 rounds from the dealer, the dealer's
// fourteenth at 52; Dadun, 27 in a row from seat 0.
export function dealtPositions(game, seat, dealer) {
  const own = rendererOf(game);
  if (own) return own.dealtPositions(seat);
  if (game === "dadun") return Array.from({length: 27}, (_, i) => 27 * seat + i);
  const k = (seat - dealer + 4) % 4;
  const out = Array.from({length: 13}, (_, r) => 4 * r + k);
  if (k === 0) out.push(52);
  return out;
}

// Everything the seed decides that a page can compare, for the cross-check with Python.
export async function derive(roomId, handNo, serverSeedHex, clientSeedsHex, game) {
  const seed = await handSeedOf(roomId, handNo, serverSeedHex, clientSeedsHex);
  const dice = await Stream.of(seed, "dice");
  const firstDice = [];
  for (let i = 0; i < 6; i++) firstDice.push(await dice.below(6) + 1);
  const own = rendererOf(game);
  return {commitment: await commitmentOf(roomId, handNo, serverSeedHex), handSeed: hex(seed),
    layout: await layoutOf(game, seed), dealer: await firstDealerOf(seed, own ? own.seats : 4),
    dice: firstDice};
}

// ------------------------------------------------------------------ what the page saw

// Called with every server frame (and the room's game): keeps this seat's view of the deal.
export function observe(kind, b, game, seat) {
  if (kind === "mj_deal") {
    fair.seen = {handNo: Number(b.hand_no || 0) || nextHand(), game, seat, dealer: b.dealer ?? 0,
      dealt: null, front: 53, back: 107, last: {}, draws: []};
    return;
  }
  if (kind === "game_event" && b.kind === "deal" && b.game === "dadun") {
    let banker = null;
    try { banker = JSON.parse(b.json || "{}").banker ?? null; } catch (e) { banker = null; }
    fair.seen = {handNo: nextHand(), game: "dadun", seat, dealer: banker, dealt: null, draws: []};
    return;
  }
  const own = kind === "game_event" ? rendererOf(b.game) : null;
  let d = {};
  if (own) { try { d = JSON.parse(b.json || "{}"); } catch (e) { d = {}; } }
  if (own && own.startsHand(b.kind || "", d)) {   // a game drawn by its own module (games.js)
    fair.seen = {handNo: nextHand(), game: b.game, seat, dealer: own.dealer(d), dealt: null,
      draws: [], dealNo: 0};
    return;
  }
  const s = fair.seen;
  if (!s) return;
  if (own && own.redealt(b.kind || "", d) !== null) {   // a new deal of the same hand
    s.dealNo = own.redealt(b.kind || "", d);
    s.dealt = null;
    return;
  }
  if (own && !s.dealt) {
    const cards = own.dealt(b.kind || "", d);
    if (cards) s.dealt = cards;
  }
  if (kind === "dd_assign" && !s.dealt) s.dealt = [...(b.cards || [])];
  else if (kind === "mj_hand" && !s.dealt) s.dealt = [...(b.tiles || [])];
  else if (kind === "mj_draw" && s.front !== undefined) {
    const who = b.seat ?? 0;
    if (!b.tile) {   // the public draw: one wall position taken, from the front or the back
      s.last[who] = b.from_back ? {back: s.back--} : {front: s.front++};
    } else if (who === s.seat) {
      s.draws.push({tile: b.tile, ...(s.last[who] || {})});
    }
  }
}

const sorted = (list) => [...list].sort().join(" ");

// The hand's deal against the derived seed: a list of [name, ok, detail] checks.
async function dealChecks(seen, seed, handNo) {
  const out = [];
  if (!seen || seen.handNo !== handNo || !seen.game) return out;
  const own = rendererOf(seen.game);
  const layout = own ? await own.layout(seed, Stream, seen.dealNo || 0) : await layoutOf(seen.game, seed);
  if (handNo === 1 && seen.dealer !== null && seen.dealer !== undefined) {
    const drawn = await firstDealerOf(seed, own ? own.seats : 4);
    out.push(["dealer", drawn === seen.dealer, drawn === seen.dealer
      ? `the first dealer, seat ${drawn}, is the seed's draw`
      : `the seed draws seat ${drawn} as first dealer, the table named seat ${seen.dealer}`]);
  }
  if (seen.dealt && seen.seat >= 0) {
    const mine = dealtPositions(seen.game, seen.seat, seen.dealer ?? 0).map((i) => layout[i]);
    const ok = sorted(mine) === sorted(seen.dealt);
    const what = seen.game === "dadun" || rendererOf(seen.game) ? "cards" : "tiles";
    out.push(["deal", ok, ok ? `your ${mine.length} ${what} are the shuffle's`
      : `you were dealt ${sorted(seen.dealt)}, the seed deals ${sorted(mine)}`]);
  }
  const front = (seen.draws || []).filter((d) => d.front !== undefined);
  if (front.length) {
    const bad = front.find((d) => layout[d.front] !== d.tile);
    out.push(["draws", !bad, !bad ? `your ${front.length} draws are the wall's next tiles`
      : `you drew ${bad.tile}, wall position ${bad.front} holds ${layout[bad.front]}`]);
  }
  return out;
}

// The hand is over: does its revealed server seed give the commitment shown before it, was
// our own seed mixed in, and do the deal and our draws come from the hand seed? Resolves to
// {hand_no, ok, text, checks}.
export async function checkReveal(roomId, body) {
  const handNo = Number(body.hand_no || 0);
  const shown = fair.commitments.get(handNo) || body.commitment || "";
  const serverSeed = body.server_seed || "";
  const checks = [];
  const made = /^[0-9a-f]{64}$/.test(serverSeed) ? await commitmentOf(roomId, handNo, serverSeed) : "";
  checks.push(["commitment", made !== "" && made === shown && made === body.commitment,
    made === shown ? `sha256 ${made.slice(0, 12)}…` : `the revealed seed does NOT match the commitment ${shown.slice(0, 12)}…`]);
  const mine = fair.sent.get(handNo);
  if (mine) {
    const used = (body.client_seeds || []).includes(mine);
    checks.push(["client seed", used, used ? "yours was mixed in" : "our client seed was not used"]);
  }
  if (checks.every((c) => c[1])) {
    const seed = await handSeedOf(roomId, handNo, serverSeed, body.client_seeds || []);
    checks.push(...await dealChecks(fair.seen, seed, handNo));
  }
  const failed = checks.find((c) => !c[1]);
  const ok = !failed;
  const dealSeen = checks.some((c) => c[0] === "deal");
  const text = ok
    ? `hand ${handNo}: ${dealSeen ? "deal" : "commitment"} verified (${checks.map((c) => c[2]).join("; ")}` +
      `${dealSeen ? "" : "; this page did not see the deal"})`
    : `hand ${handNo}: deal NOT verified: ${failed[0]}: ${failed[2]}`;
  fair.last = {hand_no: handNo, ok, text, checks: checks.map(([name, pass, detail]) => ({name, pass, detail}))};
  return fair.last;
}
