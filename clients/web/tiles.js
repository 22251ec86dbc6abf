// Mahjong tiles and playing cards: parsing the notation (ARCHITECTURE.md: tiles "5m",
// hands "123m55p"; cards "Th", "SJ", hands as lists or space-separated), sorting, and
// pictures as inline SVG. Only names that match the notation are drawn; anything else is
// shown as its text, so no server text ever reaches innerHTML.
import {el} from "./dom.js";

const TILE = /^[1-9][mps]$/;
const CARD = /^(?:[3-9TJQKA2][shcd]|SJ|BJ)$/;

// "123m55p" or ["1m", "2m"] or "5h 5c" -> a list of names
export function parseTiles(v) {
  if (Array.isArray(v)) return v.map(String);
  const text = String(v || "").trim();
  if (!text) return [];
  if (/\s/.test(text)) return text.split(/\s+/);
  if (/^(?:\d+[mps])+$/.test(text)) {
    const out = [];
    for (const [, digits, suit] of text.matchAll(/(\d+)([mps])/g)) {
      for (const d of digits) out.push(d + suit);
    }
    return out;
  }
  if (CARD.test(text)) return [text];
  return [text];
}

const SUIT_ORDER = {m: 0, p: 1, s: 2};
export function sortTiles(tiles, voidSuit) {
  const key = (t) => (t[1] === voidSuit ? 3 : SUIT_ORDER[t[1]] ?? 4) * 10 + Number(t[0]);
  return [...tiles].sort((a, b) => key(a) - key(b));
}

const RANKS = "3456789TJQKA2";
export function cardRank(c) {
  if (c === "SJ") return 13;
  if (c === "BJ") return 14;
  return RANKS.indexOf(c[0]);
}
export function sortCards(cards) {
  const suit = (c) => "shcd".indexOf(c[1]);
  return [...cards].sort((a, b) => cardRank(a) - cardRank(b) || suit(a) - suit(b));
}

// ------------------------------------------------------------------ tile pictures
const NUMERALS = "一二三四五六七八九";
// pip centres on a 60x80 face for 1..9
const PIPS = {
  1: [[30, 40]], 2: [[30, 22], [30, 58]], 3: [[16, 18], [30, 40], [44, 62]],
  4: [[18, 22], [42, 22], [18, 58], [42, 58]],
  5: [[18, 20], [42, 20], [30, 40], [18, 60], [42, 60]],
  6: [[18, 16], [42, 16], [18, 40], [42, 40], [18, 64], [42, 64]],
  7: [[14, 14], [30, 20], [46, 26], [18, 46], [42, 46], [18, 66], [42, 66]],
  8: [[18, 12], [42, 12], [18, 30], [42, 30], [18, 50], [42, 50], [18, 68], [42, 68]],
  9: [[14, 16], [30, 16], [46, 16], [14, 40], [30, 40], [46, 40], [14, 64], [30, 64], [46, 64]],
};
const DOT_COLORS = ["#1d4ed8", "#b91c1c", "#047857"];

function faceSvg(inner) {
  return `<svg viewBox="0 0 60 80" aria-hidden="true">` +
    `<rect x="1.5" y="1.5" width="57" height="77" rx="7" class="face"/>${inner}</svg>`;
}

function tileInner(name) {
  const n = Number(name[0]);
  const suit = name[1];
  if (suit === "m") {
    return `<text x="30" y="36" class="num">${NUMERALS[n - 1]}</text>` +
      `<text x="30" y="70" class="wan">萬</text>`;
  }
  const r = n === 1 ? 15 : n <= 4 ? 10 : n <= 6 ? 8.5 : 7.5;
  return PIPS[n].map(([x, y], i) => {
    const color = DOT_COLORS[(i + n) % 3];
    if (suit === "p") {
      return `<circle cx="${x}" cy="${y}" r="${r}" fill="none" stroke="${color}" stroke-width="3"/>` +
        `<circle cx="${x}" cy="${y}" r="${r / 3}" fill="${color}"/>`;
    }
    const h = n === 1 ? 44 : n <= 4 ? 26 : n <= 6 ? 18 : 14;
    const stick = i === 0 && n === 1 ? "#b91c1c" : (n === 5 || n === 7 || n === 9) && i === Math.floor(n / 2) ? "#b91c1c" : "#047857";
    return `<rect x="${x - 4}" y="${y - h / 2}" width="8" height="${h}" rx="3" fill="${stick}"/>` +
      `<line x1="${x - 4}" y1="${y}" x2="${x + 4}" y2="${y}" stroke="#fff" stroke-width="1.2"/>`;
  }).join("");
}

const TILE_NAMES_ZH = {m: "万", p: "筒", s: "条"};
// One tile as an element: <span class="tile" data-tile="5m" title="5m 五万"><svg/></span>.
// `back` draws a concealed tile.
export function tileEl(name, {cls = "", onclick = null, back = false} = {}) {
  if (back || !TILE.test(name)) {
    return el("span", {cls: `tile back ${cls}`, title: back ? "" : name, onclick,
      html: back ? faceSvg("") : undefined, text: back ? undefined : name});
  }
  const title = `${name} ${NUMERALS[Number(name[0]) - 1]}${TILE_NAMES_ZH[name[1]]}`;
  return el("span", {cls: `tile s-${name[1]} ${cls}`, title, onclick, data: {tile: name},
    html: faceSvg(tileInner(name))});
}

// ------------------------------------------------------------------ card pictures
const SUITS = {s: "♠", h: "♥", c: "♣", d: "♦"};
export function cardLabel(c) {
  if (c === "SJ") return "小王";
  if (c === "BJ") return "大王";
  return (c[0] === "T" ? "10" : c[0]) + (SUITS[c[1]] || "");
}

export function cardEl(name, {cls = "", onclick = null} = {}) {
  if (!CARD.test(name)) return el("span", {cls: `card ${cls}`, text: name, onclick});
  let inner;
  let color;
  if (name === "SJ" || name === "BJ") {
    color = name === "BJ" ? "red" : "black";
    inner = `<text x="30" y="26" class="joker">JOKER</text>` +
      `<text x="30" y="60" class="jstar">★</text>`;
  } else {
    const rank = name[0] === "T" ? "10" : name[0];
    const suit = SUITS[name[1]];
    color = name[1] === "h" || name[1] === "d" ? "red" : "black";
    inner = `<text x="5" y="22" class="rank">${rank}</text>` +
      `<text x="5" y="38" class="corner">${suit}</text>` +
      `<text x="36" y="70" class="pip">${suit}</text>`;
  }
  return el("span", {cls: `card ${color} ${cls}`, title: cardLabel(name), onclick,
    data: {card: name}, html: faceSvg(inner)});
}

export function isCard(name) { return CARD.test(name); }
export function isTile(name) { return TILE.test(name); }
