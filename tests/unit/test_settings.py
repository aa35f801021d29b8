"""The settings model without a device: validation rules, ranges, errno words, read-only."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotop_plus.devices.settings import (
    NEEDS_ROOT,
    SETTINGS,
    UINT_MAX,
    SettingError,
    SettingValue,
    errno_message,
    read_setting,
    read_settings,
    valid_range,
    validate_value,
    write_setting,
)
from iotop_plus.devices.writers import write_tree_file
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.queue_settings import parse_scheduler

QUEUE = {
    "read_ahead_kb": "128",
    "scheduler": "none [mq-deadline] kyber bfq",
    "nr_requests": "256",
    "max_sectors_kb": "1280",
    "max_hw_sectors_kb": "1280",
    "nomerges": "0",
    "rq_affinity": "1",
    "wbt_lat_usec": "2000",
}


def make_tree(base: Path, queue: dict[str, str] | None = None) -> Roots:
    """A tiny sysfs: disk sda (blk-mq, 2 hardware queues of 64 tags) with partition sda1."""
    disk = base / "sys" / "block" / "sda"
    (disk / "queue").mkdir(parents=True)
    for name, value in (queue or QUEUE).items():
        (disk / "queue" / name).write_text(value + "\n")
    for hctx in ("0", "1"):
        (disk / "mq" / hctx).mkdir(parents=True)
        (disk / "mq" / hctx / "nr_tags").write_text("64\n")
    (disk / "sda1").mkdir()
    (disk / "sda1" / "partition").write_text("1\n")
    cls = base / "sys" / "class" / "block"
    cls.mkdir(parents=True)
    (cls / "sda").symlink_to("../../block/sda")
    (cls / "sda1").symlink_to("../../block/sda/sda1")
    (base / "proc").mkdir()
    return Roots(proc=base / "proc", sys=base / "sys")


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    return make_tree(tmp_path)


def current(roots: Roots, name: str, device: str = "sda") -> SettingValue:
    return read_setting(roots, device, name, is_root=True)


def test_parse_scheduler() -> None:
    assert parse_scheduler("none [mq-deadline] kyber bfq") == (
        "mq-deadline",
        ("none", "mq-deadline", "kyber", "bfq"),
    )
    assert parse_scheduler("[none]") == ("none", ("none",))


def test_a_partition_reads_its_disks_queue(roots: Roots) -> None:
    value = current(roots, "read_ahead_kb", "sda1")
    assert (value.device, value.queue_device, value.value) == ("sda1", "sda", "128")
    assert value.display == "128 KiB (256 sectors)"


def test_absent_blk_mq_setting_says_why(tmp_path: Path) -> None:
    queue = {k: v for k, v in QUEUE.items() if k not in ("scheduler", "nr_requests")}
    roots = make_tree(tmp_path, queue)
    value = current(roots, "scheduler")
    assert not value.present
    assert value.reason == "not available on this device (it is not a blk-mq queue)"
    with pytest.raises(SettingError, match="not a blk-mq queue") as exc:
        validate_value(roots, value, "none")
    assert exc.value.kind == "invalid"


@pytest.mark.parametrize(
    ("setting", "text", "expected"),
    [
        ("read_ahead_kb", "0", "0"),
        ("read_ahead_kb", "010", "10"),
        ("read_ahead_kb", str(UINT_MAX), str(UINT_MAX)),
        ("nr_requests", "0", "0"),
        ("max_sectors_kb", "4", "4"),
        ("nomerges", "2", "2"),
        ("rq_affinity", "0", "0"),
        ("wbt_lat_usec", "-1", "-1"),
        ("wbt_lat_usec", "0", "0"),
        ("scheduler", "kyber", "kyber"),
        ("scheduler", "deadline", "mq-deadline"),
    ],
)
def test_valid_values_are_normalised(roots: Roots, setting: str, text: str, expected: str) -> None:
    assert validate_value(roots, current(roots, setting), text) == expected


@pytest.mark.parametrize(
    ("setting", "text", "message"),
    [
        ("read_ahead_kb", "", "the value is empty"),
        ("read_ahead_kb", "+16", "'+16' has a sign"),
        ("read_ahead_kb", "-16", "'-16' has a sign"),
        ("read_ahead_kb", "16.0", "'16.0' is not a whole number"),
        ("read_ahead_kb", "1e3", "'1e3' is not a whole number"),
        ("read_ahead_kb", "0x10", "'0x10' is not base 10"),
        ("read_ahead_kb", "16 ", "'16 ' has spaces"),
        ("read_ahead_kb", "16kb", "'16kb' is not a number"),
        ("read_ahead_kb", str(UINT_MAX + 1), "out of range"),
        ("max_sectors_kb", "2", "2 is out of range (valid: 4 to 1280"),
        ("nomerges", "3", "3 is out of range (valid: 0, 1 or 2)"),
        ("wbt_lat_usec", "-2", "has a sign"),
        ("scheduler", "cfq", "'cfq' is not a scheduler of this device"),
        ("scheduler", "[none]", "is not a scheduler"),
    ],
)
def test_invalid_values_are_refused(roots: Roots, setting: str, text: str, message: str) -> None:
    with pytest.raises(SettingError) as exc:
        validate_value(roots, current(roots, setting), text)
    assert message in exc.value.message
    assert "(valid: " in exc.value.message
    assert exc.value.kind == "invalid"
    assert str(exc.value).startswith(f"sda {setting}: ")


@given(st.text(max_size=12))
def test_read_ahead_accepts_exactly_base_10_digits(text: str) -> None:
    roots = Roots(proc=Path("/nonexistent"), sys=Path("/nonexistent"))
    value = SettingValue(
        "sda", "sda", SETTINGS["read_ahead_kb"], True, "128", "128", (), True, None, Path("/x")
    )
    digits = text != "" and all(c in "0123456789" for c in text)
    try:
        result = validate_value(roots, value, text)
    except SettingError:
        assert not digits or int(text) > UINT_MAX
    else:
        assert digits and result == str(int(text))


def test_valid_ranges_in_plain_words(roots: Roots) -> None:
    assert valid_range(roots, current(roots, "read_ahead_kb")).startswith(f"0 to {UINT_MAX} KiB")
    assert valid_range(roots, current(roots, "scheduler")) == (
        "one of none, mq-deadline, kyber, bfq"
    )
    # The scheduler is mq-deadline here, so the limit is MAX_SCHED_RQ, not the tag depth.
    assert valid_range(roots, current(roots, "nr_requests")) == (
        "4 to 2048 with scheduler mq-deadline (0-3 become 4)"
    )
    (roots.sys_block / "sda" / "queue" / "scheduler").write_text("[none] mq-deadline\n")
    assert valid_range(roots, current(roots, "nr_requests")) == (
        "4 to 64 with scheduler none (0-3 become 4)"
    )
    assert valid_range(roots, current(roots, "wbt_lat_usec")).startswith("-1 (the device default)")


def test_errno_in_plain_words(roots: Roots) -> None:
    nr = current(roots, "nr_requests")
    assert errno_message(roots, nr, OSError(errno.EINVAL, "Invalid argument")) == (
        "value not accepted by this device (valid: 4 to 2048 with scheduler mq-deadline "
        "(0-3 become 4))"
    )
    for code in (errno.EACCES, errno.EPERM):
        assert errno_message(roots, nr, OSError(code, "x")) == NEEDS_ROOT
    assert "gone away" in errno_message(roots, nr, OSError(errno.ENODEV, "x"))


def test_not_root_is_read_only_and_writes_nothing(roots: Roots) -> None:
    for value in read_settings(roots, "sda", is_root=False):
        assert not value.writable
        assert value.reason == "read-only: changing queue settings needs root"
    with pytest.raises(SettingError) as exc:
        write_setting(roots, "sda", "read_ahead_kb", "16", is_root=False)
    assert exc.value.kind == "permission"
    assert exc.value.message == NEEDS_ROOT
    assert current(roots, "read_ahead_kb").value == "128"


def test_write_never_creates_a_missing_attribute(tmp_path: Path) -> None:
    queue = {k: v for k, v in QUEUE.items() if k != "wbt_lat_usec"}
    roots = make_tree(tmp_path, queue)
    with pytest.raises(SettingError, match="not available"):
        write_setting(roots, "sda", "wbt_lat_usec", "100", is_root=True, writer=write_tree_file)
    assert not (roots.sys_block / "sda" / "queue" / "wbt_lat_usec").exists()


def test_write_reads_back_through_the_parent_queue(roots: Roots) -> None:
    result = write_setting(
        roots, "sda1", "read_ahead_kb", "16", is_root=True, writer=write_tree_file
    )
    assert (result.old, result.requested, result.effective) == ("128", "16", "16")
    assert (roots.sys_block / "sda" / "queue" / "read_ahead_kb").read_text() == "16"


@pytest.mark.parametrize("device", ["../sda", "sda/queue", "", "nosuch"])
def test_only_real_device_names_are_written(roots: Roots, device: str) -> None:
    with pytest.raises(SettingError) as exc:
        write_setting(roots, device, "read_ahead_kb", "16", is_root=True)
    assert exc.value.kind == "invalid"


def test_unknown_setting(roots: Roots) -> None:
    with pytest.raises(SettingError, match="unknown setting"):
        write_setting(roots, "sda", "rotational", "0", is_root=True)
