"""Parse /proc/diskstats and /sys/block/DEV/stat into raw cumulative counters.

Kernel formats accepted (Documentation/admin-guide/iostats.rst, block/genhd.c):

* /proc/diskstats, ``major minor name`` followed by
  - 11 counters (14 fields): kernels before 4.18;
  - 15 counters (18 fields): 4.18 and later add discard completed/merged/sectors/ms;
  - 17 counters (20 fields): 5.5 and later add flush completed/ms;
  - 4 counters (7 fields): partition lines of 2.6.x kernels (reads, sectors read,
    writes, sectors written).
* /sys/block/DEV/stat: the same 11, 15 or 17 counters without the first three columns.

A malformed line is reported as a :class:`ParseProblem` and skipped; the rest still counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

# Index of each counter inside DiskCounters.values (always 17 long; absent ones are 0).
READS, READS_MERGED, SECTORS_READ, READ_MS = 0, 1, 2, 3
WRITES, WRITES_MERGED, SECTORS_WRITTEN, WRITE_MS = 4, 5, 6, 7
IN_FLIGHT, IO_TICKS, TIME_IN_QUEUE = 8, 9, 10
DISCARDS, DISCARDS_MERGED, SECTORS_DISCARDED, DISCARD_MS = 11, 12, 13, 14
FLUSHES, FLUSH_MS = 15, 16
N_COUNTERS = 17

_PAD = {11: (0,) * 6, 15: (0, 0), 17: ()}


# A NamedTuple rather than a frozen dataclass: one is built for every changed line on every
# tick, and tuple construction is several times cheaper (see benchmarks/bench_sampling.py).
class DiskCounters(NamedTuple):
    """Raw cumulative counters of one block device, as the kernel printed them."""

    major: int
    """Device major number."""
    minor: int
    """Device minor number."""
    name: str
    """Kernel name, e.g. ``sda1`` or ``dm-0``."""
    values: tuple[int, ...]
    """The 17 counters in kernel order; fields the kernel did not print are 0."""
    n_fields: int
    """How many counters the kernel printed: 4 (old partitions), 11, 15 or 17."""

    @property
    def has_discard(self) -> bool:
        """Whether the kernel printed the discard counters (4.18+)."""
        return self.n_fields >= 15

    @property
    def has_flush(self) -> bool:
        """Whether the kernel printed the flush counters (5.5+)."""
        return self.n_fields >= 17

    @property
    def reads(self) -> int:
        """Reads completed."""
        return self.values[READS]

    @property
    def writes(self) -> int:
        """Writes completed."""
        return self.values[WRITES]

    @property
    def in_flight(self) -> int:
        """I/Os currently in flight (a gauge)."""
        return self.values[IN_FLIGHT]

    @property
    def ever_used(self) -> bool:
        """True when the device has done any read, write, discard or flush since boot."""
        v = self.values
        return bool(v[READS] or v[WRITES] or v[DISCARDS] or v[FLUSHES])


@dataclass(frozen=True, slots=True)
class ParseProblem:
    """One line that could not be parsed, and why."""

    source: str
    """The file it came from."""
    line_no: int
    """1-based line number in that file."""
    line: str
    """The offending text (truncated to 120 characters)."""
    reason: str
    """Why it was rejected, in plain words."""

    def __str__(self) -> str:
        return f"{self.source}:{self.line_no}: {self.reason}: {self.line!r}"


def _counters(fields: list[str]) -> tuple[int, ...]:
    """Convert counter fields to ints, padded to N_COUNTERS. Raises ValueError."""
    n = len(fields)
    if n == 4:
        # 2.6 partition line: reads, sectors read, writes, sectors written.
        r, rs, w, ws = map(int, fields)
        values: tuple[int, ...] = (r, 0, rs, 0, w, 0, ws, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    else:
        pad = _PAD.get(n)
        if pad is None:
            raise ValueError(f"expected 4, 11, 15 or 17 counters, got {n}")
        values = tuple(map(int, fields)) + pad
    if min(values) < 0:
        raise ValueError("negative counter")
    return values


def parse_diskstats(
    text: str,
    source: str = "/proc/diskstats",
    problems: list[ParseProblem] | None = None,
    cache: dict[str, DiskCounters] | None = None,
) -> dict[str, DiskCounters]:
    """Parse the text of /proc/diskstats.

    Args:
        text: The file's content.
        source: Name used in problem reports.
        problems: If given, malformed lines are appended here (they are always skipped).
        cache: Optional ``line -> counters`` map from the previous call. A line that is
            byte-for-byte unchanged (an idle device) reuses its counters, the same object,
            without being split or converted: nearly free on hosts with thousands of idle
            devices. It is replaced in place by this call's lines, so it never outgrows the
            file.

    Returns:
        Counters by kernel name, in file order. A duplicated name keeps the first line.
    """
    result: dict[str, DiskCounters] = {}
    fresh: dict[str, DiskCounters] = {}
    new = tuple.__new__
    cached_get = (cache if cache is not None else fresh).get
    # split("\n"), not splitlines(): line numbers in reports must match what an editor shows
    # even when a corrupt line holds \f, \x1c or other characters splitlines() breaks on.
    for line_no, line in enumerate(text.split("\n"), 1):
        counters = cached_get(line)
        if counters is not None:
            name = counters.name
            if name in result:
                _report(problems, source, line_no, line, f"duplicate device {name}")
            else:
                result[name] = fresh[line] = counters
            continue
        parts = line.split()
        n = len(parts)
        if n == 20 or n == 18 or n == 14:
            try:
                major, minor = int(parts[0]), int(parts[1])
                values = tuple(map(int, parts[3:]))
            except ValueError as exc:
                _report(problems, source, line_no, line, str(exc))
                continue
            if n != 20:
                values += _PAD[n - 3]
            # A negative number needs a "-": only lines holding one (dm-N names) pay the check.
            if "-" in line and min(values) < 0:
                _report(problems, source, line_no, line, "negative counter")
                continue
        elif n == 0:
            continue
        elif n < 3:
            _report(problems, source, line_no, line, "too few fields")
            continue
        else:
            try:
                major, minor, values = int(parts[0]), int(parts[1]), _counters(parts[3:])
            except ValueError as exc:
                _report(problems, source, line_no, line, str(exc))
                continue
        name = parts[2]
        if name in result:
            _report(problems, source, line_no, line, f"duplicate device {name}")
            continue
        result[name] = fresh[line] = new(DiskCounters, (major, minor, name, values, n - 3))
    if cache is not None:
        cache.clear()
        cache.update(fresh)
    return result


def parse_sys_stat(
    text: str, name: str, major: int = 0, minor: int = 0, source: str = "stat"
) -> DiskCounters:
    """Parse the single line of /sys/block/DEV/stat (11, 15 or 17 counters).

    Raises:
        ValueError: quoting the bad line.
    """
    fields = text.split()
    if len(fields) == 4:
        raise ValueError(f"{source}: expected 11, 15 or 17 counters, got 4: {text.strip()!r}")
    try:
        values = _counters(fields)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}: {text.strip()[:120]!r}") from None
    return DiskCounters(major, minor, name, values, len(fields))


def read_sys_block_stats(
    sys_root: Path, names: Iterable[str], problems: list[ParseProblem] | None = None
) -> dict[str, DiskCounters]:
    """Read ``/sys/block/DEV/stat`` (or ``/sys/class/block/DEV/stat``) for each name.

    A device that vanished or whose file is malformed is skipped and reported.
    """
    result: dict[str, DiskCounters] = {}
    for name in names:
        path = sys_root / "class" / "block" / name / "stat"
        if not path.exists():
            path = sys_root / "block" / name / "stat"
        try:
            text = path.read_text()
            dev = (path.parent / "dev").read_text().strip()
            major_s, _, minor_s = dev.partition(":")
            result[name] = parse_sys_stat(text, name, int(major_s), int(minor_s), str(path))
        except OSError as exc:
            _report(problems, str(path), 1, "", f"cannot read: {exc.strerror or exc}")
        except ValueError as exc:
            _report(problems, str(path), 1, "", str(exc))
    return result


def _report(
    problems: list[ParseProblem] | None, source: str, line_no: int, line: str, reason: str
) -> None:
    if problems is not None:
        problems.append(ParseProblem(source, line_no, line[:120], reason))
