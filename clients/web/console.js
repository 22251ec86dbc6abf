// Paiju operator console: a view over the lobby's console API (services/lobby/console/),
// read-only with the console token; with the admin token as well, the operator actions
// (fill a room with robots, dismiss it, kick a user, mute his chat), each audited in records.
// Plain JavaScript, no build step. Every string from the server goes into the page as
// textContent, never as HTML.
"use strict";

(() => {
  const REFRESH_MS = 5000;
  const TOKEN_KEY = "paiju-console-token";
  const $ = (id) => document.getElementById(id);

  let token = sessionStorage.getItem(TOKEN_KEY) || "";
  let openRoom = 0;        // the room shown in detail, 0 = none
  let busy = false;        // one refresh at a time

  // -- small DOM helpers (text only) -------------------------------------------------------

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function row(cells) {
    const tr = el("tr");
    for (const cell of cells) {
      const td = el("td");
      if (cell !== null && typeof cell === "object" && "nodeType" in cell) td.appendChild(cell);
      else td.textContent = cell === undefined || cell === null ? "" : String(cell);
      tr.appendChild(td);
    }
    return tr;
  }

  function keyValues(tbody, pairs) {
    tbody.replaceChildren(...pairs.map(([k, v]) => {
      const tr = el("tr");
      tr.appendChild(el("th", k));
      tr.appendChild(el("td", v === undefined || v === null ? "-" : v));
      return tr;
    }));
  }

  function button(label, onclick) {
    const b = el("button", label);
    b.type = "button";
    b.onclick = onclick;
    return b;
  }

  const yesNo = (v) => (v ? "yes" : "no");
  const seconds = (v) => (v === null || v === undefined ? "-" : `${v} s`);
  const counts = (obj) => Object.entries(obj || {}).map(([k, n]) => `${k} ${n}`).join(", ") || "none";

  function showError(message) {
    const box = $("error");
    box.textContent = message || "";
    box.hidden = !message;
  }

  // -- the API ----------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(path) {
    const response = await fetch(`${location.origin}${path}`, {
      headers: {Authorization: `Bearer ${token}`}, cache: "no-store"});
    let body = null;
    try {
      body = await response.json();
    } catch (err) {
      body = null;
    }
    if (response.status === 401) {
      forget("The console refused the token.");
      throw new ApiError(401, "token refused");
    }
    if (!response.ok) {
      const what = body && body.message ? body.message : response.statusText;
      throw new ApiError(response.status, `${response.status}: ${what}`);
    }
    return body;
  }

  // -- token ------------------------------------------------------------------------------

  function signedIn(on) {
    $("token-panel").hidden = on;
    $("console").hidden = !on;
    $("status").textContent = on ? "signed in" : "not signed in";
  }

  function forget(message) {
    token = "";
    sessionStorage.removeItem(TOKEN_KEY);
    openRoom = 0;
    signedIn(false);
    showError(message || "");
  }

  $("token-form").onsubmit = (ev) => {
    ev.preventDefault();
    const given = $("token").value.trim();
    if (!given) {
      showError("Enter the console token.");
      return;
    }
    token = given;
    sessionStorage.setItem(TOKEN_KEY, token);
    $("token").value = "";
    signedIn(true);
    showError("");
    refresh();
  };
  $("forget").onclick = () => forget("");

  // -- rendering --------------------------------------------------------------------------

  function renderOverview(o) {
    const rooms = o.rooms || {};
    const games = Object.entries(rooms.by_game || {}).map(([g, c]) => `${g}: ${counts(c)}`);
    keyValues($("overview"), [
      ["lobby", `${o.lobby.instance} (pid ${o.lobby.pid}, version ${o.lobby.version})`],
      ["up since", `${o.lobby.started_at} (${o.lobby.uptime_seconds} s)`],
      ["NATS", o.lobby.nats_connected ? "connected" : "NOT connected"],
      ["sessions on this lobby", `${o.sessions.connections} connections, ` +
        `${o.sessions.logged_in} logged in, ${o.sessions.in_rooms} in rooms`],
      ["live tables", `${o.tables.live} (${o.tables.rooms} rooms, ${o.tables.players} players)`],
      ["rooms", `${rooms.total}: ${counts(rooms.by_status)}`],
      ["rooms by game", games.join("; ") || "none"],
    ]);
  }

  function renderTables(tables) {
    $("tables").replaceChildren(...tables.map((t) => {
      const tr = row([t.instance, t.address, t.rooms, t.players,
        seconds(t.heartbeat_age_seconds), t.started_at || "-", yesNo(t.linked_here)]);
      if (t.heartbeat_age_seconds !== null && t.heartbeat_age_seconds > 5) tr.className = "stale";
      return tr;
    }));
  }

  function renderRooms(rooms) {
    $("room-count").textContent = `${rooms.length} room(s)`;
    $("rooms").replaceChildren(...rooms.map((r) => row([
      r.room_id, r.game, r.status,
      r.total_hands ? `${r.hand}/${r.total_hands}` : String(r.hand),
      r.players, r.free_seats, yesNo(r.has_password), r.owner,
      button("Open", () => showRoom(r.room_id)),
    ])));
  }

  function renderRoom(r) {
    $("room-title").textContent = `Room ${r.room_id}`;
    keyValues($("room-info"), [
      ["game", r.game], ["status", r.status],
      ["hand", r.total_hands ? `${r.hand} of ${r.total_hands}` : r.hand],
      ["base score", r.base_score], ["play", r.play_desc], ["min hands", r.min_hands],
      ["VIP (password)", yesNo(r.has_password)], ["free seats", r.free_seats],
      ["owner table", `${r.owner} at ${r.address}`],
      ["options", JSON.stringify(r.options)],
    ]);
    $("room-seats").replaceChildren(...r.seats.map((s) => row([
      s.seat, button(String(s.user_id), () => showUser(s.user_id)), s.nickname,
      yesNo(s.online), yesNo(s.ready), yesNo(s.entrusted), s.total_score, s.coins,
      yesNo(s.session_here),
    ])));
    $("room").hidden = false;
  }

  function renderUser(u) {
    $("user-title").textContent = `User ${u.user_id}`;
    const seat = u.seat;
    const session = u.session_here;
    const profile = u.profile;
    const pairs = [
      ["seated", seat ? `room ${seat.room_id}, seat ${seat.seat}, table ${seat.owner} ` +
        `(${seat.address})` : "no"],
      ["session on this lobby", session ? `yes, room ${session.room_id || "-"}, ` +
        `logged in ${session.logged_in_at || "-"}, idle ${session.idle_seconds} s` +
        (session.closing ? ", closing" : "") : "no (maybe on another lobby replica)"],
      ["profile", profile ? `${profile.nickname}, ${profile.coins} coins` :
        (u.profile_error ? `unavailable: ${u.profile_error}` : "none")],
    ];
    keyValues($("user-info"), pairs);
    if (seat && seat.room_id) {
      const tr = el("tr");
      tr.appendChild(el("th", "room"));
      const td = el("td");
      td.appendChild(button(`Open room ${seat.room_id}`, () => showRoom(seat.room_id)));
      tr.appendChild(td);
      $("user-info").appendChild(tr);
    }
    $("user").hidden = false;
  }

  function renderHistory(h) {
    const hands = Math.max(0, ...h.players.map((p) => p.scores.length));
    const head = el("tr");
    head.appendChild(el("th", "user"));
    for (let i = 1; i <= hands; i += 1) head.appendChild(el("th", `hand ${i}`));
    head.appendChild(el("th", "total"));
    $("history-head").replaceChildren(head);
    $("history-body").replaceChildren(...h.players.map((p) =>
      row([p.user_id, ...p.scores, p.total])));
    $("history").hidden = false;
  }

  // -- actions ----------------------------------------------------------------------------

  async function showRoom(roomId) {
    openRoom = roomId;
    $("history").hidden = true;
    try {
      renderRoom(await api(`/api/rooms/${encodeURIComponent(roomId)}`));
      showError("");
    } catch (err) {
      if (err.status === 404) closeRoom();
      if (err.status !== 401) showError(`Room ${roomId}: ${err.message}`);
    }
  }

  function closeRoom() {
    openRoom = 0;
    $("room").hidden = true;
  }
  $("room-close").onclick = closeRoom;

  $("room-history").onclick = async () => {
    if (!openRoom) return;
    try {
      renderHistory(await api(`/api/history/${encodeURIComponent(openRoom)}`));
      showError("");
    } catch (err) {
      $("history").hidden = true;
      if (err.status !== 401) showError(`History of room ${openRoom}: ${err.message}`);
    }
  };

  async function showUser(userId) {
    $("user-id").value = String(userId);
    try {
      renderUser(await api(`/api/users/${encodeURIComponent(userId)}`));
      showError("");
    } catch (err) {
      $("user").hidden = true;
      if (err.status !== 401) showError(`User ${userId}: ${err.message}`);
    }
  }

  $("user-form").onsubmit = (ev) => {
    ev.preventDefault();
    const text = $("user-id").value.trim();
    if (!/^[0-9]{1,19}$/.test(text) || /^0+$/.test(text)) {
      showError("A user id is a positive number.");
      return;
    }
    showUser(text);
  };

  async function refresh() {
    if (!token || busy) return;
    busy = true;
    try {
      const query = [];
      if ($("room-game").value) query.push(`game=${encodeURIComponent($("room-game").value)}`);
      if ($("room-status").value) query.push(`status=${encodeURIComponent($("room-status").value)}`);
      const [overview, tables, rooms] = await Promise.all([
        api("/api/overview"), api("/api/tables"),
        api(`/api/rooms${query.length ? `?${query.join("&")}` : ""}`)]);
      renderOverview(overview);
      renderTables(tables.tables);
      renderRooms(rooms.rooms);
      if (openRoom) await showRoom(openRoom);
      $("refreshed").textContent = `updated ${new Date().toLocaleTimeString()}`;
      showError("");
    } catch (err) {
      if (err.status !== 401) showError(`Refresh failed: ${err.message}`);
    } finally {
      busy = false;
    }
  }

  // -- operator actions (admin token) ------------------------------------------------------

  async function act(path, body, what) {
    const admin = $("admin-token").value.trim();
    const operator = $("operator-name").value.trim();
    if (!admin || !operator) {
      showError("Operator actions need the admin token and your name.");
      return;
    }
    let answer = null;
    let response = null;
    try {
      response = await fetch(`${location.origin}${path}`, {
        method: "POST", cache: "no-store",
        headers: {Authorization: `Bearer ${admin}`, "Content-Type": "application/json"},
        body: JSON.stringify({operator, ...body})});
      answer = await response.json().catch(() => null);
    } catch (err) {
      showError(`${what}: ${err.message}`);
      return;
    }
    if (!response.ok) {
      showError(`${what}: ${response.status} ${answer && answer.message ? answer.message : ""}`);
    } else {
      showError("");
      $("action-result").textContent = `${what}: done`;
    }
    await showAudit();
    refresh();
  }

  function renderAudit(entries) {
    $("audit").replaceChildren(...entries.map((e) => row([
      e.at, e.operator, e.action, `${e.target} ${e.target_id}`, e.result,
      JSON.stringify(e.detail || {}),
    ])));
  }

  async function showAudit() {
    try {
      renderAudit((await api("/api/audit?limit=50")).entries || []);
    } catch (err) {
      if (err.status !== 401) showError(`Audit log: ${err.message}`);
    }
  }

  function targetUser() {
    const text = $("target-user").value.trim();
    if (!/^[0-9]{1,19}$/.test(text) || /^0+$/.test(text)) {
      showError("A user id is a positive number.");
      return "";
    }
    return text;
  }

  $("room-robots").onclick = () => openRoom &&
    act(`/api/rooms/${encodeURIComponent(openRoom)}/robots`, {count: 0}, `Robots for room ${openRoom}`);
  $("room-dismiss").onclick = () => openRoom &&
    act(`/api/rooms/${encodeURIComponent(openRoom)}/dismiss`, {reason: "dismissed by an operator"},
        `Dismiss room ${openRoom}`);
  $("user-kick").onclick = () => {
    const user = targetUser();
    if (user) act(`/api/users/${user}/kick`, {}, `Kick ${user}`);
  };
  $("user-mute").onclick = () => {
    const user = targetUser();
    const minutes = Number($("mute-minutes").value || "0");
    if (user) act(`/api/users/${user}/mute`, {minutes}, `Mute ${user} for ${minutes} min`);
  };
  $("audit-refresh").onclick = showAudit;
  $("admin-form").onsubmit = (ev) => ev.preventDefault();

  $("refresh").onclick = refresh;
  $("room-game").onchange = refresh;
  $("room-status").onchange = refresh;
  setInterval(() => {
    if ($("auto").checked) refresh();
  }, REFRESH_MS);

  signedIn(Boolean(token));
  if (token) refresh();
})();
