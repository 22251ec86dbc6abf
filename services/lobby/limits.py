"""What one player (or one address) may spend of a lobby: request rates and open connections.

Every limit has its own ``lobby.*`` key (services/common/config.py, docs/services.md
"Lobby: limits, deadlines, reconnects"), counts per lobby replica, and 0 turns it off:

- rates over a sliding minute: logins per client IP, room creations per user and per IP,
  joins (by id and quick start) per user, chat per user. A request beyond one is answered
  ERR_RATE_LIMITED with a message saying what the limit is and when to try again, and does
  no work at all (it is not counted either);
- open connections (gRPC ``Connect`` streams and WebSockets alike) per client IP and in
  total: a connection beyond them is refused (an error frame, or HTTP 429/503 before the
  WebSocket upgrade) and closed.

The client IP is the one the lobby believes (client_ip.py): behind an ingress that is not
in ``lobby.trusted_proxies`` every player has the ingress's address, and the per-IP limits
would hold them all together.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass

from paiju.v1 import common_pb2
from services.common.config import LobbyConfig
from services.lobby import metrics
from services.lobby.errors import Reject

WINDOW = 60.0


@dataclass
class Rate:
    """One rate limit: at most ``limit`` of ``what`` per minute per key; 0 = off."""

    what: str
    limit: int

    def __post_init__(self) -> None:
        self.window = RateLimiter(self.limit, WINDOW) if self.limit > 0 else None

    def wait(self, key: Hashable, now: float | None = None) -> float:
        """Seconds before ``key`` may do one more (0: now)."""
        return 0.0 if self.window is None else self.window.retry_after(key, now)

    def record(self, key: Hashable, now: float | None = None) -> None:
        if self.window is not None:
            self.window.record(key, now)


def refusal(rate: Rate, seconds: float) -> Reject:
    again = "in a minute" if math.isinf(seconds) else f"in {max(1, math.ceil(seconds))} s"
    return Reject(common_pb2.ERR_RATE_LIMITED,
                  f"too many {rate.what}: at most {rate.limit} a minute; try again {again}")


def take(request: str, *checks: tuple[Rate, Hashable], now: float | None = None) -> None:
    """Count one ``request`` in each (rate, key), or none when any of them is full: then
    Reject(ERR_RATE_LIMITED) names the one that is full the longest."""
    worst: tuple[float, Rate] | None = None
    for rate, key in checks:
        seconds = rate.wait(key, now)
        if seconds > 0 and (worst is None or seconds > worst[0]):
            worst = (seconds, rate)
    if worst is not None:
        metrics.RATE_LIMITED.labels(request).inc()
        raise refusal(worst[1], worst[0])
    for rate, key in checks:
        rate.record(key, now)


class Limits:
    """The request rates of one lobby, from its configuration."""

    def __init__(self, c: LobbyConfig) -> None:
        self.logins_per_ip = Rate("login attempts from your address", c.logins_per_ip_per_minute)
        self.creates_per_user = Rate("rooms created", c.creates_per_user_per_minute)
        self.creates_per_ip = Rate("rooms created from your address", c.creates_per_ip_per_minute)
        self.joins_per_user = Rate("room joins", c.joins_per_user_per_minute)


class Admission:
    """Open connections per client IP and in total; ``admit`` before a connection is
    served, ``release`` once it is over (exactly once per admitted connection)."""

    def __init__(self, per_ip: int, total: int) -> None:
        self.per_ip = per_ip
        self.total = total
        self.open = 0
        self.by_ip: dict[str, int] = {}

    def admit(self, ip: str) -> str | None:
        """None when the connection is admitted (and counted); else why it is refused:
        ``"ip"`` (too many from this address) or ``"total"`` (the lobby is full)."""
        if self.total > 0 and self.open >= self.total:
            return "total"
        if self.per_ip > 0 and self.by_ip.get(ip, 0) >= self.per_ip:
            return "ip"
        self.open += 1
        self.by_ip[ip] = self.by_ip.get(ip, 0) + 1
        return None

    def release(self, ip: str) -> None:
        self.open = max(0, self.open - 1)
        left = self.by_ip.get(ip, 0) - 1
        if left > 0:
            self.by_ip[ip] = left
        else:
            self.by_ip.pop(ip, None)

    def message(self, reason: str) -> str:
        if reason == "ip":
            return (f"too many connections from your address (at most {self.per_ip}): "
                    "close one and try again")
        return f"the lobby is full ({self.total} connections): try again in a moment"


class RateLimiter:
    """At most ``limit`` events per ``window`` seconds per key (a sliding window).

    A key is remembered only while it has events inside the window: a key's expired events
    go when it is used again, and once per ``window`` a sweep drops every key whose last
    event has left the window, so the state is bounded by the keys active lately (not by
    every user who ever chatted)."""

    def __init__(self, limit: int, window: float = 60.0) -> None:
        self.limit = limit
        self.window = window
        self._events: dict[Hashable, deque[float]] = {}
        self._next_sweep = float("-inf")

    def __len__(self) -> int:
        """The keys remembered."""
        return len(self._events)

    def allow(self, key: Hashable, now: float | None = None) -> bool:
        """Count one event of ``key`` if the window has room for it; False (nothing
        counted) when it has not."""
        now = time.monotonic() if now is None else now
        if self.retry_after(key, now) > 0:
            return False
        self.record(key, now)
        return True

    def retry_after(self, key: Hashable, now: float | None = None) -> float:
        """Seconds until ``key`` may have one more event (0: now); counts nothing."""
        now = time.monotonic() if now is None else now
        self.sweep(now)
        if self.limit <= 0:
            return math.inf
        times = self._events.get(key)
        if times is not None:
            while times and times[0] <= now - self.window:
                times.popleft()
        if len(times or ()) < self.limit:
            return 0.0
        assert times is not None
        return max(1e-3, times[-self.limit] + self.window - now)

    def record(self, key: Hashable, now: float | None = None) -> None:
        """Count one event of ``key`` (after :meth:`retry_after` said 0)."""
        now = time.monotonic() if now is None else now
        times = self._events.get(key)
        if times is None:
            times = self._events[key] = deque()
        times.append(now)

    def sweep(self, now: float | None = None, *, force: bool = False) -> None:
        """Forget the keys with no event inside the window (at most once per window, unless
        ``force``)."""
        now = time.monotonic() if now is None else now
        if now < self._next_sweep and not force:
            return
        self._next_sweep = now + self.window
        cutoff = now - self.window
        for key in [k for k, times in self._events.items() if not times or times[-1] <= cutoff]:
            del self._events[key]
