// The connection: the lobby's Connect protocol as proto3 JSON text frames over
// /ws?format=json. A frame is {seq, <payload name>: {...}} with the .proto field names;
// replies carry reply_to = our seq. proto3 JSON omits default values (0, "", false, the
// first enum value) and writes int64 as strings, so every read elsewhere has a default.
//
// A socket that closes without a kick (the lobby stopped, or it sent a Reconnect frame
// because it is draining) is opened again on the same origin, where the load balancer
// picks a live lobby, and the client logs in again with the token it has: the lobby resumes
// its seat (login_ok.room, then the room's snapshot). Pauses: the lobby's after_ms first,
// then FIRST ms doubling up to LONGEST, each a random half to all of that; after GIVE_UP ms
// without a login the client stops and says so.
export const RECONNECT = {FIRST: 200, LONGEST: 3000, GIVE_UP: 60000};
// a login refused for these reasons is not retried (ERR_BAD_TOKEN, ERR_TOKEN_EXPIRED)
export const FINAL_LOGIN_CODES = new Set([1003, 1004]);
const FRAME_KEYS = new Set(["seq", "event_id", "reply_to", "event_uid"]);
// "A moment" answers (docs/protocol.md §8): the room is moving between tables
// (ERR_ROOM_MOVING) or a backend did not answer (ERR_UNAVAILABLE). A command answered so is
// sent again after a pause growing by STEP ms up to LONGEST ms, at most TRIES times in all
// (as the robots do, clients/robot/robot.py): the player sees "a moment", never an error.
export const TRANSIENT = new Set([1050, 1051]);
export const RETRY = {TRIES: 40, STEP: 250, LONGEST: 2000};

export const conn = {ws: null, seq: 0, login: null, loginSeq: 0, kicked: false,
  reconnectAfter: 0, beat: null, onRet: new Map(), answers: new Set(), quiet: new Set(),
  beatSeq: 0,            // the heartbeat waiting for its answer (0: none)
  beatTimer: null,       // drops the socket when that beat is not answered in time
  retry: {attempt: 0, since: 0, timer: null},
  commands: new Map(),   // seq -> a command sent again on "a moment" (command()), until answered
  waiting: new Set(),    // commands answered "a moment" and not yet answered for good
  // set by app.js
  hooks: {frame() {}, status() {}, error() {}, closed() {}, loggedOut() {}, moment() {}}};

export function connect(login) {
  clearTimeout(conn.retry.timer);
  conn.retry = {attempt: 0, since: 0, timer: null};
  conn.login = login;
  conn.kicked = false;
  conn.reconnectAfter = 0;
  open();
}

function open() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws?format=json`);
  conn.ws = ws;
  ws.onopen = () => {
    conn.hooks.status(conn.retry.attempt ? "connected again, logging in" : "connected");
    conn.loginSeq = send("login", conn.login);
  };
  ws.onmessage = (ev) => {
    if (conn.ws !== ws) return;   // a socket given up (its beat unanswered)
    const frame = JSON.parse(ev.data);
    const kind = Object.keys(frame).find((k) => !FRAME_KEYS.has(k));
    if (kind === "heartbeat" && conn.beatSeq && Number(frame.reply_to) === conn.beatSeq) {
      conn.beatSeq = 0;
      clearTimeout(conn.beatTimer);
    }
    conn.hooks.frame(kind, frame[kind] || {}, frame);
  };
  ws.onclose = () => closed(ws);
}

// The socket `ws` is over: it closed, or it was given up (a beat left unanswered); the
// client logs in again with its token unless it was kicked or logged out.
function closed(ws) {
  if (conn.ws !== ws) return;   // a socket already replaced or given up
  conn.ws = null;
  clearInterval(conn.beat);
  clearTimeout(conn.beatTimer);
  conn.beatSeq = 0;
  conn.answers.clear();
  conn.quiet.clear();
  conn.onRet.clear();
  forgetCommands();   // the resumed seat's snapshot and prompt say what is still to do
  conn.hooks.closed();
  if (conn.kicked || !conn.login) {
    conn.hooks.status("disconnected");
    conn.hooks.loggedOut();
    return;
  }
  reconnectLater();
}

// The next try to open the socket and log in again, or giving up after GIVE_UP ms.
function reconnectLater() {
  const r = conn.retry;
  if (!r.since) r.since = Date.now();
  r.attempt += 1;
  const ceiling = Math.min(RECONNECT.LONGEST, RECONNECT.FIRST * 2 ** (r.attempt - 1));
  const pause = Math.max(conn.reconnectAfter, ceiling * (0.5 + Math.random() / 2));
  conn.reconnectAfter = 0;
  if (Date.now() + pause - r.since > RECONNECT.GIVE_UP) {
    conn.retry = {attempt: 0, since: 0, timer: null};
    conn.hooks.status("disconnected");
    conn.hooks.error("the lobby cannot be reached: log in again later");
    conn.hooks.loggedOut();
    return;
  }
  conn.hooks.status(`connection lost: reconnecting in ${(pause / 1000).toFixed(1)} s`);
  r.timer = setTimeout(open, pause);
}

// A login answered: the retries start over; the heartbeat runs every `seconds`. A beat the
// lobby does not answer within `seconds` means the socket is dead without having closed (a
// frozen lobby, a cut network; docs/protocol.md, "Login"): it is given up at once (a
// close on a dead link can take a minute to be confirmed) and the client logs in again,
// as clients/session.py does.
export function loggedIn(seconds) {
  const again = conn.retry.attempt > 0;
  conn.retry = {attempt: 0, since: 0, timer: null};
  clearInterval(conn.beat);
  clearTimeout(conn.beatTimer);
  conn.beatSeq = 0;
  const every = (seconds || 15) * 1000;
  const ws = conn.ws;
  conn.beat = setInterval(() => {
    if (conn.ws !== ws || conn.beatSeq) return;   // replaced, or a beat still waiting
    conn.beatSeq = send("heartbeat", {client_time_ms: String(Date.now())});
    if (conn.beatSeq) conn.beatTimer = setTimeout(() => giveUp(ws, every), every);
  }, every);
  return again;
}

// A beat unanswered for `ms`: the socket is given up and the session taken back.
function giveUp(ws, ms) {
  if (conn.ws !== ws || !conn.beatSeq) return;
  conn.hooks.status(`no answer from the lobby for ${(ms / 1000).toFixed(0)} s: reconnecting`);
  ws.onmessage = null;
  try { ws.close(); } catch (e) { /* closing a dead socket: nothing to do */ }
  closed(ws);
}

// `envelope`: more fields of the ClientFrame beside the payload (a game action's `decision`).
export function send(name, body, envelope = {}) {
  if (!conn.ws || conn.ws.readyState !== WebSocket.OPEN) {
    conn.hooks.error("not connected");
    return 0;
  }
  conn.seq += 1;
  conn.ws.send(JSON.stringify({...envelope, seq: conn.seq, [name]: body || {}}));
  return conn.seq;
}

// Send a request; `onRet(ret)` gets its Return (OK or refused) when the lobby answers.
export function request(name, body, onRet) {
  const seq = send(name, body);
  if (seq && onRet) conn.onRet.set(seq, onRet);
  return seq;
}

// A command the player sent that is sent again while its answer is "a moment" (TRANSIENT).
// `still()` says whether it is still wanted when a try is answered so and before the next
// try (a game action: its decision is still pending; once the prompt changed it is
// dropped). `answer`: an answer to a Prompt, remembered so that an "overtaken" refusal is a
// note, not an error. `onRet`
// gets the final Return, never a "a moment" one.
export function command(name, body, {still = () => true, answer: isAnswer = false, onRet = null,
                                     envelope = {}} = {}) {
  return sendCommand({name, body, envelope, still, answer: isAnswer, onRet, tries: 0,
                      timer: null});
}

function sendCommand(c) {
  c.tries += 1;
  const seq = send(c.name, c.body, c.envelope);
  if (!seq) return 0;
  conn.commands.set(seq, c);
  if (c.answer) conn.answers.add(seq);
  if (c.onRet) conn.onRet.set(seq, c.onRet);
  return seq;
}

// The answer to request `seq`: for a command of command(), "retry" when the answer is "a
// moment" and the command is sent again after a pause, "dropped" when it is no longer
// wanted or out of tries (nothing more to do: the caller shows no error), else the command
// ({tries, ...}: tries > 1 is a retry, whose refusal may only mean that an earlier try
// counted); null for any other request.
export function commandAnswered(seq, code) {
  const c = conn.commands.get(seq);
  if (!c) return null;
  conn.commands.delete(seq);
  if (!TRANSIENT.has(code)) {
    settle(c);
    return c;
  }
  conn.answers.delete(seq);
  conn.onRet.delete(seq);
  if (!c.still() || c.tries >= RETRY.TRIES) {
    settle(c);
    return "dropped";
  }
  conn.waiting.add(c);
  conn.hooks.moment(true);
  c.timer = setTimeout(() => {
    c.timer = null;
    if (!conn.waiting.has(c)) return;
    if (!c.still() || !sendCommand(c)) settle(c);
  }, Math.min(RETRY.LONGEST, RETRY.STEP * c.tries));
  return "retry";
}

// A command's last word: no more tries; "a moment" goes once nothing waits any more.
function settle(c) {
  clearTimeout(c.timer);
  c.timer = null;
  if (conn.waiting.delete(c) && !conn.waiting.size) conn.hooks.moment(false);
}

// Commands waiting for a try that is no longer wanted (a new prompt, the decision over).
export function dropStale() {
  for (const c of [...conn.waiting]) if (!c.still()) settle(c);
}

function forgetCommands() {
  for (const c of conn.waiting) clearTimeout(c.timer);
  const had = conn.waiting.size > 0;
  conn.waiting.clear();
  conn.commands.clear();
  if (had) conn.hooks.moment(false);
}
