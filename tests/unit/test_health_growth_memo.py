"""What grew in each device's health is worked out again only for a new reading (#25).

A reading is the same object from frame to frame until the health worker reads the device
again; :func:`health_growth` keeps what grew in each and gives it back for the same object.
"""

from __future__ import annotations

from collections.abc import Mapping

from iotop_plus.sampling.health.part import health_growth
from iotop_plus.sampling.health.smart import DeviceHealth

Grown = dict[str, Mapping[str, tuple[int, int]]]


def _plain(grown: Grown) -> dict[str, dict[str, tuple[int, int]]]:
    return {name: dict(figures) for name, figures in grown.items()}


def test_the_same_readings_give_what_a_fresh_comparison_gives_frame_after_frame() -> None:
    a0 = DeviceHealth("smartctl", media_errors=3, critical_warning=0, passed=True)
    b0 = DeviceHealth("smartctl", reallocated_sectors=40)
    a1 = DeviceHealth("smartctl", media_errors=5, critical_warning=4, passed=True)
    a2 = DeviceHealth("smartctl", media_errors=5, critical_warning=4, passed=False)
    b1 = DeviceHealth("smartctl", reallocated_sectors=40)  # read again, nothing moved
    frames: list[dict[str, DeviceHealth]] = [
        {"sda": a0, "sdb": b0},
        {"sda": a0, "sdb": b0},
        {"sda": a1, "sdb": b0},
        {"sda": a1, "sdb": b0},
        {"sda": a1, "sdb": b1},
        {"sda": a2},  # sdb gone
        {"sda": a2, "sdb": b1},  # back, with its first baseline
    ]
    fresh_first: dict[str, dict[str, int]] = {}
    memo_first: dict[str, dict[str, int]] = {}
    kept: dict[str, tuple[DeviceHealth, Mapping[str, tuple[int, int]] | None]] = {}
    for readings in frames:
        fresh = health_growth(fresh_first, readings)
        memo = health_growth(memo_first, readings, kept)
        assert _plain(memo) == _plain(fresh)
        assert set(kept) == set(readings)
    assert _plain(memo) == {
        "sda": {"media_errors": (3, 5), "critical_warning": (0, 4), "failing": (0, 1)}
    }


def test_what_grew_in_a_reading_seen_before_is_not_compared_again() -> None:
    reading = DeviceHealth("smartctl", media_errors=9)
    first = {"sda": {"media_errors": 2}}
    kept: dict[str, tuple[DeviceHealth, Mapping[str, tuple[int, int]] | None]] = {}
    grown = health_growth(first, {"sda": reading}, kept)
    assert _plain(grown) == {"sda": {"media_errors": (2, 9)}}
    first["sda"]["media_errors"] = 9  # no new comparison would find growth now
    again = health_growth(first, {"sda": reading}, kept)
    assert again["sda"] is grown["sda"]
    newer = DeviceHealth("smartctl", media_errors=9)  # a new reading is compared afresh
    assert health_growth(first, {"sda": newer}, kept) == {}
    assert kept["sda"] == (newer, None)
