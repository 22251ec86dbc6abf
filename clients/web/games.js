// The games whose table a module of their own draws (Dou Dizhu first; the mahjong variants
// and Dadun are drawn by mahjong.js and dadun.js). A game's module, loaded by its
// <script type="module"> line in index.html, calls register(name, renderer); the page asks
// rendererOf(game) and uses it where it would name a game. A renderer:
//   title, seats                          the room list's name, the seats at its table
//   fields()                              the game's own fields of a new hand (state.js)
//   fromObservation(h, obs)               the hand from a seat's observation (authoritative)
//   startsHand(kind, data)                a GameEvent that starts a new hand
//   onEvent(h, kind, data, seat) -> bool  a GameEvent moves the hand forward
//   decisionEnds(kind)                    an event kind that ends the decision of its seat
//   seatParts(seat), centerParts(), handParts(actions), badges(seat)   drawing (table.js)
//   sortedHand()                          the hand as drawn, for card selection
//   cardControls(phase), pictured(phase)  the Play / Pass / Hint bar; buttons it covers
//   layout(seed, Stream, dealNo), dealtPositions(seat), dealt(kind, data), dealer(data),
//   redealt(kind, data)                   the fair-deal check (fair.js)
const renderers = new Map();

export function register(name, renderer) { renderers.set(name, renderer); }
export function rendererOf(game) { return renderers.get(game) || null; }
export function registeredGames() { return [...renderers.keys()]; }

// A room's game name from its paiju.v1.Game enum (proto3 JSON: the value's name): the
// registry's names are the enum names in lower case (tests/unit/test_architecture.py).
export function gameOfEnum(value) { return value ? String(value).toLowerCase() : ""; }
