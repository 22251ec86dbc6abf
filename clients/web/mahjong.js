// Mahjong (XueZhan, Changsha) on the table: each seat's melds, discard river and concealed
// tiles, the wall and the open claim window in the centre, the own hand at the bottom.
import {el} from "./dom.js";
import {app, hand} from "./state.js";
import {t, term, phaseName, tz} from "./i18n.js";
import {sortTiles, tileEl} from "./tiles.js";

export function seatParts(seat) {
  const parts = [];
  const melds = hand.melds[seat] || [];
  if (melds.length || hand.wonTiles[seat].length) {
    parts.push(el("div", {cls: "melds"}, [
      ...melds.map((m) => el("span", {cls: `meld k-${m.kind}`, title: term(m.kind)},
        (m.tiles.length ? m.tiles : ["", "", "", ""]).map((x) => tileEl(x, {cls: "sm", back: !x})))),
      ...hand.wonTiles[seat].map((x) => el("span", {cls: "meld won", title: "胡"}, [tileEl(x, {cls: "sm"})])),
    ]));
  }
  if (seat !== app.seat) {
    const n = Math.max(0, Number(hand.counts[seat] || 0) - melds.length * 3);
    parts.push(el("div", {cls: "concealed", title: `${n}`},
      Array.from({length: Math.min(n, 14)}, () => tileEl("", {cls: "xs", back: true}))));
  }
  const river = hand.discards[seat] || [];
  parts.push(el("div", {cls: "river"}, river.map((x, i) => {
    const last = hand.last && hand.last.seat === seat && i === river.length - 1;
    return tileEl(x, {cls: `sm${last ? " last" : ""}`});
  })));
  return parts;
}

export function centerParts() {
  const out = [
    el("div", {cls: "wall", text: `${t("wall")} ${hand.wall} ${t("tiles_left")}`}),
    el("div", {cls: "phase", text: `${phaseName(hand.phase)}${hand.handNo ? ` · #${hand.handNo}` : ""}`}),
  ];
  if (hand.window && hand.window.tile) {
    out.push(el("div", {cls: "claim-tile"}, [tileEl(hand.window.tile, {cls: "md last"}),
      el("span", {text: t("window_on")})]));
  } else if (hand.last) {
    out.push(el("div", {cls: "claim-tile"}, [tileEl(hand.last.tile, {cls: "md last"})]));
  }
  if (app.birds && app.birds.tiles.length) {
    out.push(el("div", {cls: "birds"}, [el("span", {text: `${tz("birds_title", "扎鸟")}`}),
      ...app.birds.tiles.map((x) => tileEl(x, {cls: "sm"}))]));
  }
  return out;
}

// The own hand: sorted, the drawn tile apart on the right; a click goes to actions.tile.
export function handParts(actions) {
  const tiles = [...hand.tiles];
  let drawn = null;
  if (hand.drawn && tiles.includes(hand.drawn) && tiles.length % 3 === 2) {
    tiles.splice(tiles.lastIndexOf(hand.drawn), 1);
    drawn = hand.drawn;
  }
  const voidSuit = hand.voids[app.seat];
  const sorted = sortTiles(tiles, voidSuit);
  const playable = actions.playableTiles();
  const row = sorted.map((x, i) => tileEl(x, {cls: tileClass(x, i, playable, voidSuit),
    onclick: () => actions.tile(x, i)}));
  if (drawn) {
    row.push(el("span", {cls: "gap"}));
    row.push(tileEl(drawn, {cls: tileClass(drawn, sorted.length, playable, voidSuit) + " drawn",
      onclick: () => actions.tile(drawn, sorted.length)}));
  }
  return [el("div", {cls: "hand-tiles"}, row)];
}

function tileClass(x, i, playable, voidSuit) {
  return ["lg", playable.has(x) ? "playable" : "", app.selected.includes(i) ? "selected" : "",
    x[1] === voidSuit ? "void" : ""].join(" ");
}
