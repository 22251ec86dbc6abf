// What the page knows: the player, the room, the pending decision, and the hand as this
// seat sees it (`hand`), kept from the seat's observation (every Prompt and snapshot carries
// one, authoritative) and moved forward by the public events in between. No rendering here.
import {parseTiles} from "./tiles.js";
import {gameOfEnum, rendererOf} from "./games.js";

export const app = {me: "", ownRoom: "", createSeq: 0, seat: -1, room: null, rooms: new Map(), deadline: 0, payments: [],
  names: new Map(), lastRoom: 0, dismissDeadline: 0, prompt: null, selected: [],
  settlement: null, birds: null, seatDeadline: [0, 0, 0, 0]};

export const GAME_OF_ENUM = {XUEZHAN: "xuezhan", CHANGSHA: "changsha", DADUN: "dadun"};
export const family = (game) => (rendererOf(game) ? game : game === "dadun" ? "dadun" : "mahjong");

export let hand = null;

// Draw something else than the live hand (a replay): `fn` runs with `other` as the hand and
// `seat` as ours, then the live ones are back.
export function withHand(other, seat, fn) {
  const live = hand;
  const liveSeat = app.seat;
  const liveRoom = app.room;
  const liveSelected = app.selected;
  hand = other;
  app.seat = seat;
  app.room = null;
  app.selected = [];
  try { return fn(); } finally {
    hand = live;
    app.seat = liveSeat;
    app.room = liveRoom;
    app.selected = liveSelected;
  }
}

export function currentHand() { return hand; }

const four = (f) => [0, 1, 2, 3].map(f);

export function newHand(game, fields = {}) {
  hand = {game, family: family(game), handNo: 0, dealer: 0, phase: "", toAct: [],
    // mahjong
    wall: 0, hus: [], discards: four(() => []), melds: four(() => []), tiles: [], drawn: null,
    won: four(() => false), wonTiles: four(() => []), voids: four(() => null), window: null,
    last: null, scores: four(() => 0), counts: four(() => 13), opening: null, haidi: null,
    exchange: null, exchangeDirection: null,
    // dadun
    desk: [], plays: four(() => null), deskPoints: 0, friendCard: "", banker: -1,
    isAlone: false, aloneSeat: null, catch: four(() => 0), overOrder: four(() => 0),
    shown: null, token: "", mustPlay: false,
    ...(rendererOf(game) ? rendererOf(game).fields() : {}),
    ...fields};
  return hand;
}

export function gameOfRoom() {
  const g = app.room && app.room.game;
  return GAME_OF_ENUM[g] || gameOfEnum(g) || (hand && hand.game) || "xuezhan";
}

// The whole hand from an observation (engine view of this seat).
export function fromObservation(game, obs) {
  if (!obs || !Object.keys(obs).length) return hand;
  const keep = hand && hand.game === game ? hand : null;
  const h = newHand(game, {handNo: keep ? keep.handNo : 0});
  h.phase = obs.phase || "";
  h.toAct = obs.to_act || [];
  h.scores = obs.scores || h.scores;
  const r = rendererOf(game);
  if (r) {
    r.fromObservation(h, obs);
    return h;
  }
  if (h.family === "mahjong") {
    h.dealer = obs.dealer ?? 0;
    h.wall = obs.wall_remaining ?? 0;
    h.discards = (obs.discards || h.discards).map(parseTiles);
    h.melds = (obs.melds || h.melds).map((ms) => (ms || []).map((m) =>
      ({kind: m.kind, tiles: parseTiles(m.tiles), from: m.from})));
    h.tiles = parseTiles(obs.hand);
    h.drawn = obs.drawn || null;
    h.won = (obs.won || h.won).map(Boolean);
    h.wonTiles = (obs.won_tiles || h.wonTiles).map(parseTiles);
    h.voids = obs.void || h.voids;
    h.counts = obs.hand_counts || h.counts;
    h.window = obs.window || null;
    h.exchange = obs.exchange || null;
    h.exchangeDirection = obs.exchange_direction || null;
    h.haidi = obs.haidi || null;
    h.opening = obs.opening_hu || null;
    h.hus = (obs.wins || (keep ? keep.hus : [])).map((w) => ({...w}));
    if (keep && keep.last && h.window === null) h.last = keep.last;
    if (h.window) h.last = {seat: h.window.source, tile: h.window.tile};
  } else {
    h.banker = obs.banker ?? -1;
    h.tiles = parseTiles(obs.hand);
    h.desk = (obs.desk || []).map((d) => ({seat: d.seat, cards: parseTiles(d.cards)}));
    h.plays = four(() => null);
    for (const d of h.desk) h.plays[d.seat] = d.cards;
    if (keep) for (let s = 0; s < 4; s++) if (!h.plays[s] && keep.plays[s] === "pass") h.plays[s] = "pass";
    h.deskPoints = obs.desk_points || 0;
    h.friendCard = obs.friend_card || "";
    h.isAlone = !!obs.is_alone;
    h.aloneSeat = obs.alone_seat ?? null;
    h.catch = obs.catch || h.catch;
    h.overOrder = obs.over_order || h.overOrder;
    h.counts = (obs.hand_counts || four(() => null)).map((c) => c ?? null);
    h.shown = obs.all_hands || null;
    h.token = obs.token || "";
    h.mustPlay = !!obs.must_play;
  }
  return h;
}

function removeOne(list, tile) {
  const at = list.lastIndexOf(tile);
  if (at >= 0) list.splice(at, 1);
}

// A public or private event moves the hand forward. Returns true when the table changed.
export function onEvent(kind, b) {
  const s = b.seat ?? 0;
  const r = kind === "game_event" ? rendererOf(b.game) : null;
  if (r) {   // a game drawn by its own module (games.js)
    const d = parseJson(b.json);
    if (r.startsHand(b.kind || "", d)) newHand(b.game);
    if (!hand) return false;
    return r.onEvent(hand, b.kind || "", d, b.seat ?? -1);
  }
  if (kind === "mj_deal") {
    newHand(gameOfRoom(), {handNo: b.hand_no || 0, dealer: b.dealer ?? 0,
      wall: b.wall_remaining || 0});
    return true;
  }
  if (kind === "dd_assign") {   // after the public deal event (GameEvent "deal") of the hand
    if (!hand || hand.family !== "dadun" || hand.tiles.length || hand.phase === "over") newHand("dadun");
    hand.tiles = parseTiles(b.cards);
    if (app.room) hand.handNo = app.room.cur_hand || 0;
    return true;
  }
  if (kind === "game_event" && b.kind === "deal" && b.game === "dadun") {
    newHand("dadun", {banker: parseJson(b.json).banker ?? -1, counts: [null, null, null, null]});
    return true;
  }
  if (!hand) return false;
  switch (kind) {
    case "mj_hand": hand.tiles = parseTiles(b.tiles); hand.drawn = null; return true;
    case "mj_draw":
      hand.wall = b.wall_remaining ?? hand.wall;
      hand.toAct = [s];
      hand.phase = "play";
      if (b.tile && s === app.seat) { hand.tiles.push(b.tile); hand.drawn = b.tile; }
      return true;
    case "mj_discard":
      hand.discards[s].push(b.tile);
      hand.last = {seat: s, tile: b.tile};
      if (s === app.seat) { removeOne(hand.tiles, b.tile); hand.drawn = null; }
      return true;
    case "mj_window_opened":
      hand.window = {id: b.window_id, tile: b.tile, source: b.source ?? 0, trigger: b.trigger};
      return true;
    case "mj_window_closed": hand.window = null; return true;
    case "mj_meld": {
      const tiles = parseTiles(b.tiles);
      const src = b.source ?? -1;
      if (["chi", "peng", "zhigang"].includes(b.kind) && src >= 0 && hand.last) {
        removeOne(hand.discards[src], hand.last.tile);
        hand.last = null;
      }
      if (b.kind === "bugang") {
        const m = hand.melds[s].find((x) => x.kind === "peng" && x.tiles[0] === tiles[0]);
        if (m) { m.kind = "bugang"; m.tiles = tiles; return true; }
      }
      hand.melds[s].push({kind: b.kind, tiles, from: src});
      hand.toAct = [s];
      return true;
    }
    case "mj_hu":
      hand.won[s] = true;
      hand.hus.push({seat: s, tile: b.tile, patterns: b.patterns || [], fan: b.fan, big_hu: b.big_hu});
      if (b.tile) hand.wonTiles[s].push(b.tile);
      return true;
    case "mj_void": hand.voids = b.voids || hand.voids; return true;
    case "mj_payment": {
      const p = b.payment || {};
      hand.scores[p.payer ?? 0] -= Number(p.amount || 0);
      hand.scores[p.payee ?? 0] += Number(p.amount || 0);
      return true;
    }
    case "mj_birds": app.birds = {tiles: parseTiles(b.tiles), hits: b.hits || []}; return true;
    case "dd_hint_alone": hand.phase = "alone"; hand.toAct = [s]; return true;
    case "dd_use_alone":
      hand.isAlone = !!b.is_alone;
      if (b.is_alone) { hand.aloneSeat = s; hand.banker = s; }
      if (b.all_hands && b.all_hands.length) hand.shown = b.all_hands.map((x) => x.cards || []);
      return true;
    case "dd_use_friend": hand.friendCard = b.friend_card || ""; hand.banker = s; return true;
    case "dd_hint_out": hand.phase = "play"; hand.toAct = [s]; hand.mustPlay = !!b.is_force; return true;
    case "dd_use_out":
      if (b.is_skip) hand.plays[s] = "pass";
      else {
        const cards = parseTiles(b.cards);
        hand.plays[s] = cards;
        hand.desk.push({seat: s, cards});
        hand.deskPoints = b.desktop_score ?? hand.deskPoints;
        if (s === app.seat) for (const c of cards) removeOne(hand.tiles, c);
      }
      if ((b.rest_num ?? -1) >= 0) hand.counts[s] = b.rest_num;
      return true;
    case "dd_clear_desktop":
      hand.desk = [];
      hand.plays = [null, null, null, null];
      hand.deskPoints = 0;
      if (b.catch_score) hand.catch = b.catch_score;
      return true;
    case "game_event": return onGameEvent(b.kind || "", parseJson(b.json), b);
    case "dd_tan_pai":
      hand.shown = [0, 1, 2, 3].map((i) => ((b.items || []).find((x) => (x.seat ?? 0) === i) || {}).cards || []);
      return true;
    default: return false;
  }
}

function parseJson(text) {
  try { return text ? JSON.parse(text) : {}; } catch { return {}; }
}

// The engine's events without a typed frame (GameEvent): the ones the table shows.
function onGameEvent(kind, d, b) {
  const seat = d.seat ?? b.seat ?? -1;
  switch (kind) {
    case "payment": {   // Dadun's ledger lines (mahjong has MjPayment)
      const p = {reason: d.reason, payer: d.payer ?? 0, payee: d.payee ?? 0, amount: d.amount || 0};
      app.payments.push(p);
      hand.scores[p.payer] -= Number(p.amount);
      hand.scores[p.payee] += Number(p.amount);
      return true;
    }
    case "turn": if (seat >= 0) { hand.toAct = [seat]; hand.phase = "play"; } return true;
    case "deal": if (d.banker !== undefined) hand.banker = d.banker; return true;
    case "haidi_offer": if (seat >= 0) { hand.toAct = [seat]; hand.phase = "haidi"; } return true;
    case "exchange_done": hand.exchangeDirection = d.direction || null; return true;
    default: return false;
  }
}

// The Dadun snapshot after a reconnect, as an observation.
export function ddInfoObservation(g) {
  return {phase: g.is_choice_alone ? "alone" : "play", banker: g.banker_seat ?? -1,
    hand: g.hand || [], desk: (g.desktop || []).map((d) => ({seat: d.seat ?? 0, cards: d.cards || []})),
    desk_points: g.desktop_score || 0, friend_card: g.friend_card || "", is_alone: !!g.is_alone,
    catch: g.catch_score, over_order: g.over_order,
    hand_counts: (g.rest_num || []).map((n) => (n >= 0 ? n : null)),
    all_hands: (g.all_hands || []).length ? g.all_hands.map((x) => x.cards || []) : null,
    to_act: g.cur_out_seat >= 0 ? [g.cur_out_seat] : [], token: g.out_token || "",
    must_play: !!g.must_out};
}

// Set by app.js: draw the table again after a change outside the hand (players, room).
export const ui = {render() {}, clearActions() {}};
