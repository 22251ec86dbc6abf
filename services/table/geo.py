"""Where the seats of a room sit relative to each other: the distance bands players may see
(``UseGeo``) and the proximity alerts (``DistanceAlert``) when two of them are too close or
share an IP address. Pure: positions in, facts out (services/table/views.py makes frames).

The table computes these, not the lobby: only the room's owner sees every seat's position
(each lobby replica knows its own sessions only), and a seat's position is the blurred one it
first sat down with, which only the room keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from services.common.geo import band, describe, has_position, haversine_m


class Located(Protocol):
    """A seated player as geo needs him (services/table/seat.Seat)."""

    @property
    def user_id(self) -> int: ...

    @property
    def nickname(self) -> str: ...

    @property
    def ip(self) -> str: ...

    @property
    def lat(self) -> float: ...

    @property
    def lng(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Pair:
    """What players see of two seats: a band (never exact meters) and a same-IP flag;
    ``meters`` is the exact distance for the alert only (-1 when a position is missing)."""

    src_uid: int
    dest_uid: int
    label: str           # "<100m", "100m-500m", ..., "unknown"
    gap: int             # the band's lower bound in meters, -1 unknown
    same_ip: bool
    meters: float


@dataclass(frozen=True, slots=True)
class Alert:
    text: str
    user_ids: tuple[int, int]


def pair(x: Located, y: Located) -> Pair:
    same_ip = bool(x.ip) and x.ip == y.ip
    if has_position(x.lat, x.lng) and has_position(y.lat, y.lng):
        meters = haversine_m(x.lat, x.lng, y.lat, y.lng)
        low, label = band(meters)
        return Pair(x.user_id, y.user_id, label, low, same_ip, meters)
    return Pair(x.user_id, y.user_id, "unknown", -1, same_ip, -1.0)


def pairs(seated: Sequence[Located]) -> list[Pair]:
    """Every pair of seated players, in seat order."""
    return [pair(seated[a], seated[b])
            for a in range(len(seated)) for b in range(a + 1, len(seated))]


def alerts(new: Located, others: Iterable[Located], limit_m: float) -> list[Alert]:
    """Alerts for a player who just sat down: each other seat sharing his IP address or
    closer than ``limit_m`` meters."""
    out = []
    for other in others:
        p = pair(new, other)
        why = []
        if p.same_ip:
            why.append("share an IP address")
        if 0 <= p.meters < limit_m:
            why.append(f"sit less than {describe(limit_m)} apart")
        if why:
            out.append(Alert(f"{new.nickname} and {other.nickname} " + " and ".join(why),
                             (new.user_id, other.user_id)))
    return out
