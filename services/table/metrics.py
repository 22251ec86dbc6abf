"""The table's own metrics (the gRPC interceptor adds request counts and latency)."""

from prometheus_client import Counter, Gauge, Histogram

from services.common.metrics import LATENCY_BUCKETS

ROOMS = Gauge("paiju_table_rooms", "Rooms owned by this table instance")
ROOMS_STUCK = Gauge("paiju_table_rooms_stuck",
                    "Rooms in a hand with nothing recorded for longer than their decision timer "
                    "plus 30 s (RoomActor.stuck), counted at each heartbeat")
HANDS = Counter("paiju_table_hands_total", "Hands finished", ["game"])
# The SLO "moves answered within 200 ms" (docs/slo.md) reads the 0.2 bucket: keep it.
ACTION_SECONDS = Histogram("paiju_table_action_seconds",
                           "Player action: received to applied, logged and fanned out",
                           ["game"], buckets=sorted({*LATENCY_BUCKETS, 0.2}))
LOG_APPEND = Histogram("paiju_table_log_append_seconds", "JetStream append (acknowledged)",
                       buckets=LATENCY_BUCKETS)
FANOUT = Histogram("paiju_table_fanout_seconds", "Publishing one record's events to NATS",
                   buckets=LATENCY_BUCKETS)
ARBITER = Histogram("paiju_table_arbiter_seconds", "Arbiter decision round trip (NATS request on arbiter.decide)",
                    buckets=LATENCY_BUCKETS)
ARBITER_FALLBACK = Counter("paiju_table_arbiter_fallback_total",
                           "Windows decided by local arbitration (the degraded mode): no "
                           "arbiter answered, or the engine refused its decision, by reason",
                           ["reason"])
# no answer in time (also while the connection reconnects); no arbiter subscribed ("no
# responders") or the connection closed; the engine refused the arbiter's decision
FALLBACK_REASONS = ("timeout", "unavailable", "refused")
for _reason in FALLBACK_REASONS:
    ARBITER_FALLBACK.labels(_reason)
TIMEOUTS = Counter("paiju_table_timeouts_total", "Decisions that timed out (entrust)", ["game"])
SETTLEMENTS = Counter("paiju_table_settlements_total", "Settlement messages published", ["final"])
COMMAND_COPIES = Counter(
    "paiju_table_command_copies_total",
    "Copies of a lobby's command (sent again, unanswered after 0.5 s) not answered anew: "
    "dropped while the first is under way, or given the first's reply again",
    ["outcome"])
for _outcome in ("dropped", "replied_again"):
    COMMAND_COPIES.labels(_outcome)
REBUILT = Counter("paiju_table_rooms_rebuilt_total", "Rooms rebuilt from their log (at start, or taken over from another table)")
PENDING = Gauge("paiju_table_pending_writes",
                "Directory writes, settlements and log purges waiting for a retry", ["kind"])
LOGS_PURGED = Counter("paiju_table_logs_purged_total", "Closed rooms whose log was purged")
ADOPTED = Counter("paiju_table_rooms_adopted_total", "Rooms claimed from a table that stopped heartbeating")
ROOM_TRANSITIONS_REFUSED = Counter(
    "paiju_table_room_transitions_refused_total",
    "Room lifecycle events refused in the room's state (services/table/lifecycle.py): a bug",
    ["event", "state"])
HANDED_OVER = Counter("paiju_table_rooms_handed_over_total", "Rooms handed to another table on drain")
APPEND_RETRIES = Counter("paiju_table_log_append_retries_total",
                         "Room-log appends retried (no stream leader, no answer)")
LOG_LEADER_MOVES = Counter("paiju_table_log_leader_moves_total",
                           "Room-log stream leaders moved to spread them over the NATS nodes")
