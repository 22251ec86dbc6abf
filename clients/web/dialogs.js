// The decisions that are not a tile click or a claim: XueZhan's exchange three and void
// suit, Changsha's opening win and haidi, Dadun's alone choice and friend card. Each opens
// in the one dialog box (#dialog) with its title, a line of help, its choices and the
// decision's countdown; answering closes it. The exchange is docked, not modal: the tiles
// are picked in the hand.
import {$, el, show} from "./dom.js";
import {app, hand} from "./state.js";
import {t, tz} from "./i18n.js";
import {cardEl, sortCards, tileEl} from "./tiles.js";

export const DIALOG_PHASES = new Set(["exchange", "void", "opening", "haidi", "alone", "friend"]);
const SUIT_ZH = {m: "万", p: "筒", s: "条"};

export function closeDialog() {
  show("dialog", false);
  const box = $("dialog");
  if (box) box.className = "dialog";
}

function open({kind, title, text, body = [], buttons = [], docked = false}) {
  $("dialog").className = `dialog${docked ? " docked" : ""} d-${kind}`;
  $("dialog-title").textContent = title;
  $("dialog-text").textContent = text;
  $("dialog-body").replaceChildren(...body);
  $("dialog-buttons").replaceChildren(...buttons.map((b) =>
    el("button", {text: b.label, cls: b.cls || "", onclick: b.onclick, disabled: b.disabled})));
  show("dialog", true);
}

// The dialog of a prompt's phase, or none (false) for play and claim windows.
// `answer(action)` sends one of the prompt's actions.
export function dialogFor(prompt, answer, helpers) {
  const actions = prompt.actions || [];
  const kinds = new Set(actions.map((a) => a.kind));
  const phase = prompt.phase || "";
  if (phase === "exchange" && kinds.has("exchange_three")) {
    const chosen = helpers.selectedTiles();
    const match = actions.find((a) => sameTiles(a.tiles || [], chosen));
    open({kind: "exchange", docked: true, title: `${tz("exchange_title", "换三张")}`,
      text: t("exchange_text"),
      body: [el("div", {cls: "picked"}, chosen.map((x) => tileEl(x, {cls: "md"})))],
      buttons: [
        {label: t("suggest"), onclick: () => helpers.select(actions[0].tiles || [])},
        {label: t("confirm"), cls: "primary", disabled: !match, onclick: () => match && answer(match)}]});
    return true;
  }
  if (kinds.has("declare_void")) {
    const counts = {m: 0, p: 0, s: 0};
    for (const x of hand.tiles) counts[x[1]] = (counts[x[1]] || 0) + 1;
    open({kind: "void", title: `${tz("void_title", "定缺")}`, text: t("void_text"),
      buttons: actions.filter((a) => a.kind === "declare_void").map((a) => ({
        label: `${SUIT_ZH[a.choice] || a.choice} ${t(a.choice)} (${counts[a.choice] || 0})`,
        cls: `suit-${a.choice}`, onclick: () => answer(a)}))});
    return true;
  }
  if (phase === "opening" && kinds.has("hu")) {
    const mine = hand.opening && hand.opening[String(app.seat)];
    const types = mine ? [].concat(mine.types || mine).join(", ") : "";
    open({kind: "opening", title: `${tz("opening_title", "起手胡")}`,
      text: t("opening_text") + (types ? ` (${types})` : ""),
      buttons: actions.map((a) => ({label: a.kind === "hu" ? `${tz("declare", "胡")}` : `${tz("pass", "过")}`,
        cls: a.kind === "hu" ? "primary" : "", onclick: () => answer(a)}))});
    return true;
  }
  if (kinds.has("haidi")) {
    open({kind: "haidi", title: `${tz("haidi_title", "海底")}`, text: t("haidi_text"),
      buttons: actions.filter((a) => a.kind === "haidi").map((a) => ({
        label: a.choice === "yes" ? `${tz("take", "要")}` : `${tz("decline", "不要")}`,
        cls: a.choice === "yes" ? "primary" : "", onclick: () => answer(a)}))});
    return true;
  }
  if (kinds.has("choose_alone")) {
    open({kind: "alone", title: `${tz("alone_title", "打独")}`, text: t("alone_text"),
      buttons: actions.map((a) => ({label: a.choice === "yes" ? `${tz("alone_yes", "打独")}` : `${tz("alone_no", "不打")}`,
        cls: a.choice === "yes" ? "" : "primary", onclick: () => answer(a)}))});
    return true;
  }
  if (kinds.has("choose_friend_card")) {
    const byCard = new Map(actions.map((a) => [(a.tiles || [])[0], a]));
    open({kind: "friend", title: `${tz("friend_title", "叫朋友")}`, text: t("friend_text"),
      body: [el("div", {cls: "friend-cards"}, sortCards([...byCard.keys()]).map((c) =>
        cardEl(c, {cls: "md pick", onclick: () => answer(byCard.get(c))})))]});
    return true;
  }
  return false;
}

function sameTiles(a, b) {
  if (a.length !== b.length) return false;
  const x = [...a].sort().join();
  return x === [...b].sort().join();
}
