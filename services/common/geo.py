"""Distances between players (haversine) for the proximity alerts, and the coarse bands
players are shown: exact meters between three seats would let them locate each other
(trilateration), so only a band ever leaves the table."""

from __future__ import annotations

import math
import secrets

EARTH_RADIUS_M = 6_371_008.8


def haversine_m(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    """Great-circle distance in meters between two (lat, lng) points in degrees."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lng2 - lng1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(a)))


def has_position(lat: float, lng: float) -> bool:
    """0,0 means "not given" on the wire; anything out of range is unusable."""
    return (lat, lng) != (0.0, 0.0) and -90 <= lat <= 90 and -180 <= lng <= 180


def describe(meters: float) -> str:
    return f"{meters:.0f}m" if meters < 1000 else f"{meters / 1000:.1f}km"


# Lower bounds of the distance bands shown to players, in meters.
BANDS_M = (0, 100, 500, 1_000, 5_000, 20_000, 100_000, 1_000_000)


def band(meters: float) -> tuple[int, str]:
    """The band a distance falls in: its lower bound in meters and a label ("<100m",
    "100m-500m", ..., ">1000km")."""
    i = max(k for k, low in enumerate(BANDS_M) if meters >= low)
    low = BANDS_M[i]
    if i == 0:
        return low, f"<{_label(BANDS_M[1])}"
    if i == len(BANDS_M) - 1:
        return low, f">{_label(low)}"
    return low, f"{_label(low)}-{_label(BANDS_M[i + 1])}"


def _label(meters: int) -> str:
    return f"{meters}m" if meters < 1000 else f"{meters // 1000}km"


# A player's position is blurred once, when he first sits down, by a random offset of up to
# this many meters: the bands a prober can read off by joining from chosen places then
# locate only the blurred point, never the player (and the proximity alert keeps its 100 m
# scale: a pair's distance moves by at most twice this).
BLUR_M = 25.0


def blur(lat: float, lng: float, meters: float = BLUR_M) -> tuple[float, float]:
    """A point drawn uniformly from the disc of radius ``meters`` around (lat, lng)."""
    unit = secrets.randbits(53) / (1 << 53)
    r = meters * math.sqrt(unit)
    theta = 2 * math.pi * secrets.randbits(53) / (1 << 53)
    dlat = math.degrees(r * math.cos(theta) / EARTH_RADIUS_M)
    scale = max(math.cos(math.radians(lat)), 1e-6)
    dlng = math.degrees(r * math.sin(theta) / (EARTH_RADIUS_M * scale))
    new_lat = max(-90.0, min(90.0, lat + dlat))
    new_lng = (lng + dlng + 180.0) % 360.0 - 180.0
    return new_lat, new_lng
