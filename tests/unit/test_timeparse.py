"""Times typed by people: every accepted form, the zone rule, and one clear line for bad input."""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from zoneinfo import ZoneInfo

import pytest

from iotop_plus.text import TimeParseError, clock_text, parse_time, zone_label

PARIS = ZoneInfo("Europe/Paris")
NOW = datetime(2026, 11, 23, 15, 0, 0, tzinfo=PARIS).timestamp()


def at(
    year: int, month: int, day: int, hour: int, minute: int, second: int = 0, tz: tzinfo = PARIS
) -> float:
    return datetime(year, month, day, hour, minute, second, tzinfo=tz).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("14:05", at(2026, 11, 23, 14, 5)),
        ("14:05:30", at(2026, 11, 23, 14, 5, 30)),
        ("16:00", at(2026, 11, 22, 16, 0)),  # later than now: yesterday's
        ("10m ago", NOW - 600),
        ("10 min ago", NOW - 600),
        ("90s ago", NOW - 90),
        ("2h ago", NOW - 7200),
        ("now", NOW),
        ("2026-11-23T14:05:00", at(2026, 11, 23, 14, 5)),
        ("2026-11-23 14:05", at(2026, 11, 23, 14, 5)),
        ("2026-11-23T14:05:00+01:00", at(2026, 11, 23, 14, 5)),
        ("2026-11-23T13:05:00Z", at(2026, 11, 23, 14, 5)),
        ("14:05:30+01:00", at(2026, 11, 23, 14, 5, 30)),
        ("13:05:30Z", at(2026, 11, 23, 14, 5, 30)),
        ("14:05:30+05:30", at(2026, 11, 23, 9, 35, 30)),
    ],
)
def test_accepted_forms_in_the_recorded_zone(text: str, expected: float) -> None:
    assert parse_time(text, NOW, PARIS) == expected


def test_without_a_zone_times_are_the_viewers_local_time() -> None:
    expected = datetime(2026, 11, 23, 14, 5).timestamp()  # naive: local time
    assert parse_time("2026-11-23T14:05:00", NOW) == expected


def test_the_zone_changes_what_a_clock_time_means() -> None:
    utc = parse_time("2026-11-23T14:05", NOW, timezone.utc)
    paris = parse_time("2026-11-23T14:05", NOW, PARIS)
    assert utc - paris == 3600


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no time given"),
        ("soon", "cannot read 'soon' as a time"),
        ("25:00", "no such time of day: 25:00"),
        ("14:61", "no such time of day"),
        ("2026-13-01", "no such date or time"),
        ("14:05+25:00", "no such UTC offset"),
        ("10 parsecs ago", "cannot read"),
        ("x" * 200, "time too long"),
        ("\x1b[31m14:05", "cannot read '\\x1b[31m14:05'"),
    ],
)
def test_bad_input_is_one_clear_line(text: str, says: str) -> None:
    with pytest.raises(TimeParseError) as caught:
        parse_time(text, NOW, PARIS)
    message = str(caught.value)
    assert says in message
    assert "\n" not in message and "\x1b" not in message
    assert isinstance(caught.value, ValueError)


def test_zone_label_only_when_it_differs_from_the_viewers() -> None:
    local = datetime.fromtimestamp(NOW).astimezone().tzinfo
    assert zone_label(None, NOW) is None
    assert zone_label(local, NOW) is None
    label = zone_label(ZoneInfo("Asia/Kolkata"), NOW)
    assert label == "IST UTC+05:30"
    assert zone_label(ZoneInfo("Asia/Kathmandu"), NOW) is not None


def test_clock_text_adds_the_date_on_another_day() -> None:
    assert clock_text(at(2026, 11, 23, 14, 5, 3), PARIS, NOW) == "14:05:03"
    assert clock_text(at(2026, 11, 22, 14, 5, 3), PARIS, NOW) == "2026-11-22 14:05:03"


def test_seconds_since_the_epoch_are_one_of_the_forms() -> None:
    """``@EPOCH`` was read only by the commands' own second parser; now the one parser has it."""
    assert parse_time("@1700000000", 1_800_000_000.0) == 1_700_000_000.0
    with pytest.raises(TimeParseError, match="not seconds since the epoch"):
        parse_time("@soon", 1_800_000_000.0)
