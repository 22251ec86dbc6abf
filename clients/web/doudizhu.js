// Dou Dizhu (斗地主) on a three-seat table: each seat's cards left, its bid and its role
// (地主 landlord / 农民 farmer), its play in the current trick (or "pass"); the bottom (底牌,
// shown once the landlord took it) and the multiplier in the centre; the own hand at the
// bottom: click cards to select them, then Play (Hint cycles through the legal plays).
// Registered with games.js; index.html loads it. Events: docs/protocol.md "Dou Dizhu".
import {el} from "./dom.js";
import {app, hand} from "./state.js";
import {tz} from "./i18n.js";
import {cardEl, sortCards} from "./tiles.js";
import {register} from "./games.js";

const SEATS = 3;
const three = (f) => [0, 1, 2].map(f);
const cards = (text) => (Array.isArray(text) ? text : String(text || "").split(" ")).filter(Boolean);
const BIDS = {call_landlord: ["叫地主", "不叫"], rob_landlord: ["抢地主", "不抢"]};

const doudizhu = {
  title: "Dou Dizhu 斗地主",
  seats: SEATS,
  fields() {
    return {counts: three(() => 17), plays: three(() => null), bids: three(() => ""),
      landlord: null, bottom: null, multiplier: 1, scores: three(() => 0), tiles: []};
  },
  fromObservation(h, obs) {
    h.tiles = cards(obs.hand);
    h.counts = obs.hand_counts || h.counts;
    h.landlord = obs.landlord ?? null;
    h.bottom = obs.bottom || null;
    h.multiplier = obs.multiplier || 1;
    h.bids = three(() => "");
    for (const b of obs.bids || []) h.bids[b.seat] = BIDS[b.kind][b.choice === "yes" ? 0 : 1];
    h.plays = three(() => null);
    for (const p of obs.trick || []) h.plays[p.seat] = p.cards.length ? cards(p.cards) : "pass";
    h.scores = obs.scores || three(() => 0);
  },
  startsHand(kind, d) { return kind === "deal" && !(d && d.deal_no); },   // not a redeal
  decisionEnds(kind) { return kind in BIDS || kind === "play" || kind === "pass"; },
  onEvent(h, kind, d, seat) {
    const s = d.seat ?? seat;
    switch (kind) {
      case "deal":   // also a redeal's (deal_no > 0): bids and plays start again
        Object.assign(h, doudizhu.fields(), {toAct: [d.first_caller ?? 0], phase: "call"});
        return true;
      case "hand": h.tiles = cards(d.cards); return true;
      case "turn": h.toAct = [s]; h.phase = d.phase || h.phase;
        app.seatDeadline[s] = Date.now() + (d.countdown || 0) * 1000; return true;
      case "call_landlord": h.bids[s] = BIDS[kind][d.call ? 0 : 1]; return true;
      case "rob_landlord": h.bids[s] = BIDS[kind][d.rob ? 0 : 1]; h.multiplier = d.bid_mult || h.multiplier; return true;
      case "landlord":
        h.landlord = s; h.bottom = cards(d.bottom); h.counts[s] = 20; h.multiplier = d.bid_mult || 1;
        h.plays = three(() => null); return true;
      case "play": {
        const played = cards(d.cards);
        h.plays[s] = played;
        h.counts[s] = d.cards_left ?? h.counts[s];
        if (s === app.seat) for (const c of played) { const i = h.tiles.indexOf(c); if (i >= 0) h.tiles.splice(i, 1); }
        if (d.bomb) h.multiplier *= 2;
        return true;
      }
      case "pass": h.plays[s] = "pass"; return true;
      case "new_trick": h.plays = three(() => null); return true;
      case "show_hands": h.shown = three((i) => cards(((d.hands || []).find((x) => x.seat === i) || {}).cards)); return true;
      case "payment":
        app.payments.push(d);
        h.scores[d.payer] -= Number(d.amount || 0);
        h.scores[d.payee] += Number(d.amount || 0);
        return true;
      case "hand_over": h.phase = "over"; h.toAct = []; return true;
      default: return false;
    }
  },
  seatParts(seat) {
    const h = hand;
    const parts = [];
    const info = [];
    if (h.landlord !== null) info.push(h.landlord === seat ? tz("landlord", "地主") : tz("farmer", "农民"));
    if (h.counts[seat] !== undefined) info.push(`${h.counts[seat]} cards`);
    if (h.bids[seat] && h.landlord === null) info.push(h.bids[seat]);
    parts.push(el("div", {cls: "dz-info", text: info.join(" · ")}));
    const play = h.plays[seat];
    if (play === "pass") parts.push(el("div", {cls: "played pass", text: "pass 不要"}));
    else if (play) parts.push(el("div", {cls: "played"}, play.map((c) => cardEl(c, {cls: "sm"}))));
    if (h.shown && seat !== app.seat && (h.shown[seat] || []).length) {
      parts.push(el("div", {cls: "shown"}, sortCards(h.shown[seat]).map((c) => cardEl(c, {cls: "xs"}))));
    }
    return parts;
  },
  centerParts() {
    const h = hand;
    const out = [el("div", {cls: "phase", text: {call: "叫地主 call", rob: "抢地主 rob", play: "play 出牌",
      over: "over 结束"}[h.phase] || h.phase})];
    if (h.bottom) {
      out.push(el("div", {cls: "dz-bottom"}, [el("span", {text: "底牌 "}),
        ...h.bottom.map((c) => cardEl(c, {cls: "sm"}))]));
    }
    out.push(el("div", {cls: "dz-mult", text: `x${h.multiplier}`}));
    return out;
  },
  handParts(actions) {
    return [el("div", {cls: "hand-cards"}, doudizhu.sortedHand().map((c, i) => cardEl(c, {
      cls: `lg${app.selected.includes(i) ? " selected" : ""}`, onclick: () => actions.card(c, i)})))];
  },
  badges(seat) {
    return hand && hand.landlord === seat ? [el("span", {cls: "badge dealer", text: "地主"})] : [];
  },
  sortedHand() { return sortCards(hand ? hand.tiles : []); },
  cardControls(phase) { return phase === "play"; },
  pictured(phase) { return phase === "play"; },
  // the fair-deal check (docs/doudizhu.md): the 54 codes shuffled by the hand seed's "deck"
  // stream; seat k holds positions 17k..17k+16 (the bottom, 51..53, joins the landlord later)
  // deal n (a redeal after three passes: n > 0) is the (n + 1)-th shuffle of that stream
  async layout(seed, Stream, dealNo = 0) {
    const stream = await Stream.of(seed, "deck");
    let deck = [];
    for (let n = 0; n <= dealNo; n++) {
      deck = Array.from({length: 54}, (_, c) => c);
      await stream.shuffle(deck);
    }
    return deck.map(cardName);
  },
  dealer(d) { return d.first_caller ?? null; },   // the first hand's first caller: drawn
  redealt(kind, d) { return kind === "deal" && d.deal_no ? d.deal_no : null; },
  dealtPositions(seat) { return Array.from({length: 17}, (_, i) => 17 * seat + i); },
  dealt(kind, d) { return kind === "hand" ? cards(d.cards) : null; },
};

const RANKS = "3456789TJQKA2";
function cardName(c) {
  if (c === 52) return "SJ";
  if (c === 53) return "BJ";
  return RANKS[c >> 2] + "shcd"[c & 3];
}

register("doudizhu", doudizhu);

// the game in the room form's (enum names) and the ratings' (game names) choice of games
for (const [id, value] of [["game", "DOUDIZHU"], ["rating-game", "doudizhu"]]) {
  const select = globalThis.document && document.getElementById(id);
  if (select && !select.querySelector(`option[value="${value}"]`)) {
    select.appendChild(el("option", {text: "Dou Dizhu 斗地主", attrs: {value}}));
  }
}
