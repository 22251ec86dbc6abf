"""Prometheus metrics of the lobby: sessions, logins, frames, kicks, limits, table forward
latency."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from services.common.metrics import LATENCY_BUCKETS

SESSIONS = Gauge("paiju_lobby_sessions", "Open client sessions (logged in or not)")
LOGINS = Counter("paiju_lobby_logins_total", "Login attempts by result", ["result"])
FRAMES_IN = Counter("paiju_lobby_frames_in_total", "Client frames received, by event id",
                    ["event_id"])
FRAMES_OUT = Counter("paiju_lobby_frames_out_total", "Server frames sent, by event id",
                     ["event_id"])
KICKS = Counter("paiju_lobby_kicks_total",
                "Sessions closed by a newer login of the same user (local or from another lobby)",
                ["origin"])
SLOW_CLIENTS = Counter("paiju_lobby_slow_clients_total",
                       "Sessions disconnected because their outbound queue was full")
LOGIN_DEADLINES = Counter("paiju_lobby_login_deadlines_total",
                          "Connections closed because they had not logged in in time")
REFUSED_CONNECTIONS = Counter("paiju_lobby_refused_connections_total",
                              "Connections refused by a cap (ip: per client IP, total: all)",
                              ["cap"])
RATE_LIMITED = Counter("paiju_lobby_rate_limited_total",
                       "Requests refused with ERR_RATE_LIMITED, by request",
                       ["request"])
ROOM_CHANGES = Counter("paiju_lobby_room_changes_total",
                       "Room-list changes seen on the rooms bucket watch (relayed: sent to the idle "
                       "sessions; coalesced: replaced by a later state of the same room)",
                       ["result"])
REFILLS = Counter("paiju_lobby_room_refills_total",
                  "Refills of a room's event stream from its table (asked; failed; resync: "
                  "the table could not, snapshots were asked)", ["result"])
FORWARD_SECONDS = Histogram("paiju_lobby_table_forward_seconds",
                            "Round trip of one command from the lobby to a table",
                            ["kind"], buckets=LATENCY_BUCKETS)

TABLE_COMMANDS = Counter("paiju_lobby_table_commands_total",
                         "Commands answered by a table (over its NATS command subject)")
COMMANDS_RESENT = Counter("paiju_lobby_table_commands_resent_total",
                          "commands sent to their table once more, unanswered after "
                          "the link's resend wait (table_link.RESEND_SECONDS, longer while "
                          "the table answers slowly): lost while a NATS connection moved, or "
                          "a table slower than that")

RESEND_WAIT = Gauge("paiju_lobby_table_resend_wait_seconds",
                    "How long a command to this table waits for its reply before a copy goes: "
                    "table_link.RESEND_SECONDS while the table answers in time, longer (up to "
                    "MAX_RESEND_SECONDS) after slow answers or a copy", ["table"])

BATCHES = Counter("paiju_lobby_batches_total",
                  "Stream messages that carried several frames at once (ServerFrame.batch)")
BATCHED_FRAMES = Counter("paiju_lobby_batched_frames_total",
                         "Server frames that left inside a batch (also in frames_out)")

_FRAMES_OUT_BY_ID: dict[int, Counter] = {}


def frame_out(event_id: int) -> None:
    """Count one server frame sent (FRAMES_OUT), its labelled child looked up once per id."""
    child = _FRAMES_OUT_BY_ID.get(event_id)
    if child is None:
        child = _FRAMES_OUT_BY_ID[event_id] = FRAMES_OUT.labels(str(event_id))
    child.inc()
