"""Distances and proximity alerts between seated players (services/table/geo.py, pure):
bands, never meters; alerts for the same IP or closer than the table's limit."""

from __future__ import annotations

from services.table import geo

CHENGDU = (30.6598, 104.0633)
NEXT_DOOR = (30.6601, 104.0633)      # about 33 m north


class Spot:
    def __init__(self, uid: int, lat: float = 0.0, lng: float = 0.0, ip: str = "") -> None:
        self.user_id, self.nickname, self.ip, self.lat, self.lng = uid, f"p{uid}", ip, lat, lng


def test_geo_pairs_and_alerts() -> None:
    a, b, c = Spot(1, *CHENGDU, ip="1.1.1.1"), Spot(2, *NEXT_DOOR), Spot(3, ip="1.1.1.1")
    near = geo.pair(a, b)
    assert (near.label, near.gap, near.same_ip) == ("<100m", 0, False) and 30 < near.meters < 40
    assert geo.pair(a, c) == geo.Pair(1, 3, "unknown", -1, True, -1.0)
    assert [p.dest_uid for p in geo.pairs([a, b, c])] == [2, 3, 3]
    assert geo.alerts(a, [b, c], 100.0) == [
        geo.Alert("p1 and p2 sit less than 100m apart", (1, 2)),
        geo.Alert("p1 and p3 share an IP address", (1, 3))]
    assert geo.alerts(a, [b], 20.0) == []
