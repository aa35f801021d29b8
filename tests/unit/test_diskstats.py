"""The diskstats parser on every kernel format, malformed lines, and sysfs stat files."""

from __future__ import annotations

from pathlib import Path

import pytest

from iotop_plus.sampling.disks.diskstats import (
    DISCARDS,
    FLUSH_MS,
    FLUSHES,
    IN_FLIGHT,
    N_COUNTERS,
    READS,
    SECTORS_READ,
    SECTORS_WRITTEN,
    TIME_IN_QUEUE,
    WRITES,
    DiskCounters,
    ParseProblem,
    parse_diskstats,
    parse_sys_stat,
    read_sys_block_stats,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _diskstats(scenario: str, snapshot: str = "diskstats") -> str:
    return (FIXTURES / scenario / "proc" / snapshot).read_text()


@pytest.mark.parametrize(
    ("scenario", "n_fields", "names"),
    [
        ("kernel-4.14", 11, ["sda", "sda1", "dm-0", "loop0"]),
        ("kernel-5.4", 15, ["sda", "sda1", "sr0"]),
        ("nvme", 17, ["nvme0n1", "nvme0n1p1", "nvme0n1p2", "nvme0n2"]),
    ],
)
def test_each_kernel_format_parses_every_line(
    scenario: str, n_fields: int, names: list[str]
) -> None:
    """14, 18 and 20-field files: every device, in file order, with its field count."""
    problems: list[ParseProblem] = []
    counters = parse_diskstats(_diskstats(scenario), problems=problems)
    assert problems == []
    assert list(counters) == names
    for c in counters.values():
        assert c.n_fields == n_fields
        assert len(c.values) == N_COUNTERS
        assert c.has_discard == (n_fields >= 15)
        assert c.has_flush == (n_fields >= 17)


def test_14_field_line_maps_counters_in_kernel_order() -> None:
    counters = parse_diskstats(_diskstats("kernel-4.14"))
    sda = counters["sda"]
    assert (sda.major, sda.minor, sda.name) == (8, 0, "sda")
    assert sda.values[:11] == (
        91234,
        1203,
        4561234,
        73412,
        52311,
        40123,
        3124567,
        98123,
        0,
        81234,
        171535,
    )
    # Fields the kernel did not print read 0, never garbage.
    assert sda.values[11:] == (0,) * 6


def test_20_field_line_has_discard_and_flush_counters() -> None:
    nvme = parse_diskstats(_diskstats("nvme"))["nvme0n1"]
    assert nvme.values[DISCARDS] == 1000
    assert nvme.values[FLUSHES] == 20000
    assert nvme.values[FLUSH_MS] == 9000
    assert nvme.in_flight == 2


def test_old_7_field_partition_lines_beside_14_field_disks() -> None:
    """2.6 kernels print partitions as reads, sectors read, writes, sectors written."""
    problems: list[ParseProblem] = []
    counters = parse_diskstats(_diskstats("kernel-2.6"), problems=problems)
    assert problems == []
    assert list(counters) == ["hda", "hda1", "hda2", "sda", "sda1"]
    assert counters["hda"].n_fields == 11
    part = counters["sda1"]
    assert part.n_fields == 4
    assert (part.reads, part.values[SECTORS_READ], part.writes, part.values[SECTORS_WRITTEN]) == (
        100,
        6000,
        1100,
        150000,
    )
    assert part.values[TIME_IN_QUEUE] == 0 and part.in_flight == 0


def test_malformed_lines_are_reported_with_line_and_reason_and_the_rest_counts() -> None:
    text = (
        "   8       0 sda 1 2 3 4 5 6 7 8 0 10 11\n"
        "   8       1 sda1 1 2 3\n"  # truncated
        "\n"  # blank lines are not problems
        "   8      16 sdb 1 2 x 4 5 6 7 8 0 10 11\n"  # not a number
        "garbage\n"
        "   8      32 sdc -1 2 3 4 5 6 7 8 0 10 11\n"  # negative
        "   8      48 sdd 1 2 3 4 5 6 7 8 0 10 11 12 13 14 15 16 17\n"
        "   8      48 sdd 9 9 9 9 9 9 9 9 9 9 9\n"  # duplicate
        "  eight    0 sde 1 2 3 4 5 6 7 8 0 10 11\n"  # bad major
    )
    problems: list[ParseProblem] = []
    counters = parse_diskstats(text, "diskstats-test", problems)
    assert list(counters) == ["sda", "sdd"]
    assert counters["sdd"].reads == 1  # the first of a duplicated name wins
    by_line = {p.line_no: p for p in problems}
    assert sorted(by_line) == [2, 4, 5, 6, 8, 9]
    assert "expected 4, 11, 15 or 17 counters, got 3" in by_line[2].reason
    assert "'x'" in by_line[4].reason
    assert by_line[5].reason == "too few fields"
    assert by_line[6].reason == "negative counter"
    assert by_line[8].reason == "duplicate device sdd"
    assert "eight" in by_line[9].reason
    # The report names the file, line and text, on one line.
    message = str(by_line[2])
    assert message.startswith("diskstats-test:2: ") and "sda1 1 2 3" in message
    assert "\n" not in message


def test_a_short_line_beside_a_long_one_is_not_read_shifted() -> None:
    """19 tokens then 21 tokens split as 40: both lines are malformed, not one field off."""
    good = "8 32 sdc " + " ".join(["3"] * 17)
    short = "8 0 sda " + " ".join(["1"] * 16)
    long = "8 16 1 sdb " + " ".join(["2"] * 17)
    problems: list[ParseProblem] = []
    counters = parse_diskstats("\n".join([good, short, long, good]) + "\n", problems=problems)
    assert list(counters) == ["sdc"]
    assert [(p.line_no, p.reason) for p in problems] == [
        (2, "expected 4, 11, 15 or 17 counters, got 16"),
        (3, "expected 4, 11, 15 or 17 counters, got 18"),
        (4, "duplicate device sdc"),
    ]


@pytest.mark.parametrize("counter", ["0" * 21, "+" + "0" * 20, "-" + "0" * 20, "1" * 21])
def test_a_counter_longer_than_20_characters_is_malformed_among_many_lines(
    counter: str,
) -> None:
    """Whether a line is parsed alone or with a thousand others, a 21-character counter
    rejects it, even one int() reads as 0."""
    lines = [f"8 {i} sd{i} " + " ".join(["7"] * 17) for i in range(1000)]
    lines[500] = f"8 500 sd500 {counter} " + " ".join(["7"] * 16)
    problems: list[ParseProblem] = []
    counters = parse_diskstats("\n".join(lines), problems=problems)
    assert len(counters) == 999 and "sd500" not in counters
    assert [(p.line_no, p.reason) for p in problems] == [(501, "counter above 2^64")]


def test_a_lone_surrogate_in_a_counter_is_a_malformed_line_not_a_crash() -> None:
    """Text from another caller than read_bounded (which decodes with replacement) may hold
    a lone surrogate, which UTF-8 cannot encode."""
    problems: list[ParseProblem] = []
    text = "8 0 sda 1 2 3 4 5 6 7 8 9 10 \udcff\n8 16 sdb 1 2 3 4 5 6 7 8 9 10 11\n"
    assert list(parse_diskstats(text, problems=problems)) == ["sdb"]
    assert [p.line_no for p in problems] == [1]


def test_problems_list_is_optional() -> None:
    assert list(parse_diskstats("bad line\n   8 0 sda 1 2 3 4 5 6 7 8 0 10 11\n")) == ["sda"]


def test_overlong_line_is_truncated_in_the_report() -> None:
    problems: list[ParseProblem] = []
    parse_diskstats("8 0 sda " + "1 " * 500, problems=problems)
    assert len(problems) == 1 and len(problems[0].line) == 120


def test_parse_cache_reuses_unchanged_lines_and_reparses_changed_ones() -> None:
    cache: dict[str, DiskCounters] = {}
    t0, t1 = _diskstats("kernel-4.14"), _diskstats("kernel-4.14", "diskstats.t1")
    first = parse_diskstats(t0, cache=cache)
    assert len(cache) == 4
    again = parse_diskstats(t0, cache=cache)
    assert all(again[n] is first[n] for n in first)
    later = parse_diskstats(t1, cache=cache)
    assert later["loop0"] is first["loop0"]  # idle: same line, same object
    assert later["sda"] is not first["sda"] and later["sda"].reads == 91334
    assert later == parse_diskstats(t1)
    # The cache keeps only the lines of the last call.
    assert set(cache.values()) == set(later.values())


def test_cached_duplicate_line_is_still_reported() -> None:
    text = "8 0 sda 1 2 3 4 5 6 7 8 0 10 11\n8 0 sda 1 2 3 4 5 6 7 8 0 10 11\n"
    cache: dict[str, DiskCounters] = {}
    for _ in range(2):
        problems: list[ParseProblem] = []
        assert list(parse_diskstats(text, problems=problems, cache=cache)) == ["sda"]
        assert [p.line_no for p in problems] == [2]


@pytest.mark.parametrize("n", [11, 15, 17])
def test_sys_stat_formats(n: int) -> None:
    text = " ".join(f"{i + 1:8d}" for i in range(n)) + "\n"
    c = parse_sys_stat(text, "vda", 254, 0)
    assert (c.name, c.major, c.minor, c.n_fields) == ("vda", 254, 0, n)
    assert c.values[:n] == tuple(range(1, n + 1))
    assert c.values[IN_FLIGHT] == 9


@pytest.mark.parametrize(
    "text", ["", "1 2 3 4", "1 2 3 4 5 6 7 8 9 10", "1 2 3 4 5 6 7 8 9 10 x", "a b c"]
)
def test_sys_stat_rejects_bad_text_with_a_value_error_quoting_it(text: str) -> None:
    with pytest.raises(ValueError, match="/sys/block/vda/stat"):
        parse_sys_stat(text, "vda", source="/sys/block/vda/stat")


def test_sys_stat_matches_diskstats_for_the_live_host() -> None:
    """The real /sys/block/*/stat and /proc/diskstats describe the same devices."""
    live = parse_diskstats(Path("/proc/diskstats").read_text())
    name = next(n for n, c in live.items() if c.ever_used and not n.startswith("zram"))
    stats = read_sys_block_stats(Path("/sys"), [name])
    assert stats[name].n_fields == live[name].n_fields
    assert (stats[name].major, stats[name].minor) == (live[name].major, live[name].minor)
    # Counters only go up between the two reads.
    assert stats[name].values[READS] >= live[name].values[READS]
    assert stats[name].values[WRITES] >= live[name].values[WRITES]


def test_read_sys_block_stats_on_fixture_tree_reports_vanished_devices() -> None:
    sys_root = FIXTURES / "nvme" / "sys"
    problems: list[ParseProblem] = []
    stats = read_sys_block_stats(sys_root, ["nvme0n1", "nvme0n1p2", "nvme9n9"], problems)
    assert list(stats) == ["nvme0n1", "nvme0n1p2"]
    assert stats["nvme0n1p2"].minor == 2
    assert stats["nvme0n1"] == parse_diskstats(_diskstats("nvme"))["nvme0n1"]
    assert len(problems) == 1 and "nvme9n9" in problems[0].source
    assert "cannot read" in problems[0].reason


def test_read_sys_block_stats_reports_a_malformed_stat_file(tmp_path: Path) -> None:
    d = tmp_path / "class" / "block" / "sdz"
    d.mkdir(parents=True)
    (d / "stat").write_text("1 2 3\n")
    (d / "dev").write_text("8:0\n")
    problems: list[ParseProblem] = []
    assert read_sys_block_stats(tmp_path, ["sdz"], problems) == {}
    assert "got 3" in problems[0].reason


def test_line_numbers_count_newlines_only() -> None:
    """A form feed inside a corrupt line does not shift the reported line numbers."""
    text = "8 0 sda 1 2 3 4 5 6 7 8 0 10 11\n8 1 sd\x0ca1 x\n8 16 sdb 1 2\n"
    problems: list[ParseProblem] = []
    parse_diskstats(text, problems=problems)
    assert [p.line_no for p in problems] == [2, 3]


def test_gc_paused_restores_the_collector_as_it_found_it() -> None:
    import gc

    from iotop_plus.sampling.gcpause import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner one found it off and leaves it off
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # never switched on behind the app's back
    finally:
        gc.enable()
