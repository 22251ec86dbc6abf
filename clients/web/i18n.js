// Labels in English and Chinese. `t(key)` is the current language's label (English when a
// key has no Chinese); `term(kind)` names an action kind. Static labels in index.html carry
// data-i18n="key"; `setLang` rewrites them and calls the listeners (the table re-renders).
import {all, storage} from "./dom.js";

const EN = {
  login: "Log in", token: "Token", nickname: "Nickname", rooms: "Rooms", game: "Game",
  hands: "Hands", password: "Password", create: "Create", quick: "Quick start",
  refresh: "Refresh list", room_number: "Room number", join: "Join (uses the password above)",
  ready: "Ready", unready: "Not ready", leave: "Leave", dismiss_apply: "Apply to dismiss",
  distances: "Distances", chat: "Chat", send: "Send", settlement: "Settlement",
  history: "History scores and replays", show_history: "Show history", events: "Events",
  ratings: "Ratings", my_rating: "My rating", leaderboard: "Leaderboard",
  stake: "Stake", ranked: "Ranked", find_match: "Find a match", cancel_match: "Cancel",
  friends: "Friends", friends_hint: "user ids, up to 2", your_id: "your id: {id}",
  friend: "friend", a_friend: "a friend", match_with: "with {ids} (they ask too, naming you)",
  match_party_bad: "friends: up to two user ids, each once, not your own",
  match_party_offline: "{who} is not online: friends must be logged in to be matched together",
  match_party_busy: "{who} is busy: waiting for another match or sitting in a room",
  match_already: "you are already waiting for a match (or being seated)",
  match_stake: "your coins do not cover this stake", match_in_room: "leave your room first",
  match_bad_options: "this game, stake or rule set cannot be matched",
  match_unavailable: "matchmaking did not answer: try again", match_refused: "match request refused",
  next_hand: "Ready for the next hand", close: "Close", take_back: "Take back control",
  agree: "Agree", refuse: "Refuse", dismiss_vote: "Dismiss vote", hide: "Hide",
  warning: "Warning: players in this room may be together", ledger_text: "Ledger as text",
  wall: "wall", tiles_left: "tiles", desk: "desk", points: "pts", friend_card: "friend card",
  dealer: "dealer", banker: "banker", you: "you", seat: "seat", empty_seat: "empty seat",
  online: "online", offline: "offline", entrusted: "entrust", ready_mark: "ready",
  your_turn: "your turn", waiting: "waiting for the other players",
  play_selected: "Play", pass: "Pass", hint: "Hint", clear: "Clear",
  confirm: "Confirm", suggest: "Suggest",
  exchange_title: "Exchange three", exchange_text: "Pick three tiles of one suit in your hand, then confirm.",
  void_title: "Choose your void suit", void_text: "You must discard every tile of this suit before you can win.",
  opening_title: "Opening win", opening_text: "Your dealt hand has an opening win. Declare it?",
  haidi_title: "The last tile (haidi)", haidi_text: "Take the last tile of the wall?",
  alone_title: "Play alone?", alone_text: "Play alone against the three others (double stakes)?",
  friend_title: "Call your friend card", friend_text: "Whoever holds this card plays with you.",
  birds_title: "Birds", yes: "Yes", no: "No", take: "Take", decline: "Decline",
  declare: "Declare", total: "total", revealed: "hands", score_parts: "score parts",
  seat_col: "", payer_pays: "pays", hand_over: "Hand over", draw_game: "Draw (no winner)",
  phase: "phase", language: "中文", drawn: "drawn", window_on: "claim?",
  cards_left: "cards", caught: "caught", alone: "alone", hu: "won",
  m: "characters", p: "dots", s: "bamboo", game_over: "Room over", all_moves: "all moves",
  replay_events: "the replay's events", alone_yes: "Yes, alone", alone_no: "No",
  robot: "robot", guest: "Play as a guest", with_token: "Log in with a token", fill_robots: "Fill with robots",
  a_moment: "reconnecting… a moment",
};

const ZH = {
  login: "登录", token: "令牌", nickname: "昵称", rooms: "房间", game: "游戏", hands: "局数",
  password: "密码", create: "创建", quick: "快速开始", refresh: "刷新", room_number: "房间号",
  join: "加入（使用上面的密码）", ready: "准备", unready: "取消准备", leave: "离开",
  dismiss_apply: "申请解散", distances: "距离", chat: "聊天", send: "发送", settlement: "结算",
  ratings: "等级分", my_rating: "我的等级分", leaderboard: "排行榜",
  stake: "底分", ranked: "排位", find_match: "匹配", cancel_match: "取消匹配",
  friends: "好友", friends_hint: "用户ID，最多2个", your_id: "你的ID：{id}",
  friend: "好友", a_friend: "一位好友", match_with: "与 {ids} 一起（他们也要发起匹配并填写你）",
  match_party_bad: "好友：最多两个用户ID，不能重复，不能填自己",
  match_party_offline: "{who} 不在线：好友必须登录后才能一起匹配",
  match_party_busy: "{who} 正忙：正在等待其他匹配或已在房间中",
  match_already: "你已经在等待匹配（或正在入座）",
  match_stake: "你的金币不足以支付这个底分", match_in_room: "请先离开房间",
  match_bad_options: "这个游戏、底分或规则无法匹配",
  match_unavailable: "匹配服务没有响应：请重试", match_refused: "匹配请求被拒绝",
  history: "战绩与回放", show_history: "查看战绩", events: "事件", next_hand: "准备下一局",
  close: "关闭", take_back: "取消托管", agree: "同意", refuse: "拒绝", dismiss_vote: "解散投票",
  hide: "隐藏", warning: "警告：本房间的玩家可能在一起", ledger_text: "文字账单",
  wall: "牌墙", tiles_left: "张", desk: "桌面", points: "分", friend_card: "朋友牌",
  dealer: "庄", banker: "庄家", you: "你", seat: "座位", empty_seat: "空位", online: "在线",
  offline: "离线", entrusted: "托管", ready_mark: "已准备", your_turn: "轮到你",
  waiting: "等待其他玩家", play_selected: "出牌", pass: "过", hint: "提示", clear: "重选",
  confirm: "确定", suggest: "推荐",
  exchange_title: "换三张", exchange_text: "从手牌中选三张同花色的牌，然后确定。",
  void_title: "定缺", void_text: "缺的花色必须先打完才能胡牌。",
  opening_title: "起手胡", opening_text: "你的起手牌可以胡，要胡吗？",
  haidi_title: "海底", haidi_text: "要海底牌吗？",
  alone_title: "打独", alone_text: "一个人对三家（输赢翻倍）？",
  friend_title: "叫朋友", friend_text: "持有这张牌的玩家和你一伙。",
  birds_title: "扎鸟", yes: "是", no: "否", take: "要", decline: "不要", declare: "胡",
  total: "合计", revealed: "手牌", score_parts: "得分明细", payer_pays: "付",
  hand_over: "本局结束", draw_game: "流局", phase: "阶段", language: "English", drawn: "摸",
  window_on: "可响应", cards_left: "张", caught: "抓分", alone: "打独", hu: "已胡",
  m: "万", p: "筒", s: "条", game_over: "房间结束", all_moves: "全部操作",
  replay_events: "回放事件", alone_yes: "打独", alone_no: "不打",
  robot: "机器人", guest: "游客登录", with_token: "用令牌登录", fill_robots: "机器人补位",
  a_moment: "正在重连…请稍候",
};

// action kinds, phases and payment reasons
const TERMS_ZH = {discard: "打", chi: "吃", peng: "碰", zhigang: "明杠", angang: "暗杠",
  bugang: "补杠", kaigang: "开杠", buzhang: "补张", hu: "胡", pass: "过",
  exchange_three: "换三张", declare_void: "定缺", opening_hu: "起手胡", midway_hu: "中途胡",
  haidi: "海底", haidi_take: "要海底", haidi_refuse: "不要海底", choose_alone: "打独",
  choose_friend_card: "叫朋友", play: "出牌"};
const TERMS_EN = {discard: "discard", chi: "chi", peng: "peng", zhigang: "kong",
  angang: "concealed kong", bugang: "added kong", kaigang: "open kong", buzhang: "replace",
  hu: "hu", pass: "pass", exchange_three: "exchange", declare_void: "void",
  opening_hu: "opening hu", midway_hu: "midway hu", haidi: "haidi", choose_alone: "alone",
  choose_friend_card: "friend card", play: "play"};
const PHASES = {exchange: ["exchange three", "换三张"], void: ["void suit", "定缺"],
  opening: ["opening wins", "起手胡"], play: ["play", "打牌"], window: ["claims", "响应"],
  haidi: ["haidi", "海底"], over: ["over", "结束"], alone: ["alone?", "打独"],
  friend: ["friend card", "叫朋友"]};
const REASONS = {self_draw: ["self-draw", "自摸"], discard_win: ["win on a discard", "点炮"],
  birds: ["birds", "扎鸟"], bomb: ["bomb", "炸弹"], card_result: ["card points", "牌分"],
  zhigang: ["exposed kong", "明杠"], angang: ["concealed kong", "暗杠"],
  bugang: ["added kong", "补杠"], rob_kong: ["robbed kong", "抢杠"],
  opening_hu: ["opening win", "起手胡"], midway_hu: ["midway win", "中途胡"],
  refund: ["kong refund", "退税"], flower_pig: ["flower pig", "查花猪"],
  not_ready: ["not ready", "查大叫"], win_score: ["win", "输赢"]};

export const TERMS = TERMS_ZH;   // the Chinese term of an action kind, in English labels too
export const i18n = {lang: "en", listeners: []};

export function t(key) {
  return (i18n.lang === "zh" ? ZH[key] : EN[key]) ?? EN[key] ?? key;
}
// A label in English followed by its Chinese term ("Birds 扎鸟"), or the Chinese alone.
export function tz(key, zh) {
  return i18n.lang === "zh" ? t(key) : `${t(key)} ${zh}`;
}
export function term(kind) {
  return (i18n.lang === "zh" ? TERMS_ZH[kind] : TERMS_EN[kind]) || kind;
}
export function phaseName(phase) {
  const p = PHASES[phase];
  return p ? p[i18n.lang === "zh" ? 1 : 0] : (phase || "");
}
export function reasonName(reason) {
  const r = REASONS[reason];
  return r ? r[i18n.lang === "zh" ? 1 : 0] : String(reason || "").replaceAll("_", " ");
}

export function setLang(lang) {
  i18n.lang = lang === "zh" ? "zh" : "en";
  const store = storage();
  if (store) store.setItem("paiju.lang", i18n.lang);
  if (globalThis.document && document.documentElement) {
    document.documentElement.lang = i18n.lang === "zh" ? "zh-CN" : "en";
  }
  for (const e of all("[data-i18n]")) e.textContent = t(e.getAttribute("data-i18n"));
  for (const f of i18n.listeners) f();
}

export function initLang() {
  const store = storage();
  const saved = store && store.getItem("paiju.lang");
  setLang(saved || "en");
}
