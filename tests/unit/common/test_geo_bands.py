"""Distances: haversine, and the coarse bands players are shown instead of meters."""

from __future__ import annotations

import pytest

from services.common.geo import BANDS_M, band, has_position, haversine_m


def test_haversine_of_known_distances() -> None:
    assert haversine_m(0, 0, 0, 1) == pytest.approx(111_195, rel=1e-3)   # one degree
    changsha_beijing = haversine_m(28.2282, 112.9388, 39.9042, 116.4074)
    assert 1_330_000 < changsha_beijing < 1_350_000
    assert haversine_m(28.2, 112.9, 28.2, 112.9) == 0


@pytest.mark.parametrize("meters, expected", [
    (0, (0, "<100m")), (99.9, (0, "<100m")), (100, (100, "100m-500m")),
    (999, (500, "500m-1km")), (1_000, (1_000, "1km-5km")), (19_999, (5_000, "5km-20km")),
    (150_000, (100_000, "100km-1000km")), (1_340_000, (1_000_000, ">1000km")),
])
def test_bands(meters: float, expected: tuple[int, str]) -> None:
    assert band(meters) == expected


def test_every_band_is_reachable_and_ordered() -> None:
    assert list(BANDS_M) == sorted(BANDS_M)
    assert [band(low)[0] for low in BANDS_M] == list(BANDS_M)


def test_zero_zero_and_out_of_range_are_no_position() -> None:
    assert not has_position(0.0, 0.0)
    assert not has_position(91, 0) and not has_position(0, 181)
    assert has_position(28.2, 112.9)
