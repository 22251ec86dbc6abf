// Dadun (崇仁打盾) on the table: each seat's cards left, points caught and its play in the
// current trick (or "pass"), the desk points and the friend card in the centre, the own
// hand at the bottom: click cards to select them, then play; the engine's hints fill the
// selection.
import {el} from "./dom.js";
import {app, hand} from "./state.js";
import {t, phaseName, tz} from "./i18n.js";
import {cardEl, sortCards} from "./tiles.js";

export function seatParts(seat) {
  const parts = [];
  const info = [];
  if (hand.counts[seat] !== null && hand.counts[seat] !== undefined) {
    info.push(`${hand.counts[seat]} ${t("cards_left")}`);
  }
  if (hand.catch[seat]) info.push(`${t("caught")} ${hand.catch[seat]}`);
  if (hand.overOrder[seat]) info.push(`#${hand.overOrder[seat]}`);
  if (hand.isAlone && hand.aloneSeat === seat) info.push(`${tz("alone", "打独")}`);
  if (info.length) parts.push(el("div", {cls: "dd-info", text: info.join(" · ")}));
  const play = hand.plays[seat];
  if (play === "pass") parts.push(el("div", {cls: "played pass", text: `${t("pass")}`}));
  else if (play) parts.push(el("div", {cls: "played"}, play.map((c) => cardEl(c, {cls: "sm"}))));
  if (hand.shown && seat !== app.seat && (hand.shown[seat] || []).length) {
    parts.push(el("div", {cls: "shown"}, sortCards(hand.shown[seat]).map((c) => cardEl(c, {cls: "xs"}))));
  }
  return parts;
}

export function centerParts() {
  const out = [el("div", {cls: "phase", text: phaseName(hand.phase)}),
    el("div", {cls: "desk-points", text: `${t("desk")} ${hand.deskPoints} ${t("points")}`})];
  if (hand.friendCard) {
    out.push(el("div", {cls: "friend"}, [el("span", {text: `${tz("friend_card", "朋友牌")}`}),
      cardEl(hand.friendCard, {cls: "sm"})]));
  }
  return out;
}

export function handParts(actions) {
  const sorted = sortCards(hand.tiles);
  return [el("div", {cls: "hand-cards"}, sorted.map((c, i) => cardEl(c, {
    cls: `lg${app.selected.includes(i) ? " selected" : ""}`, onclick: () => actions.card(c, i)})))];
}

export function sortedHand() { return sortCards(hand.tiles); }
