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
A counter is a u64 in the kernel: one above 2^64 - 1, like a negative one, makes the line
malformed (a 400-digit "counter" would otherwise overflow float conversion in the rates).

Files come from roots that may be a captured tree, so they are read with
:func:`iotop_plus.sysfs.read_bounded`:
opened non-blocking, refused unless regular (a FIFO would block ``open()`` forever), and
read up to a cap (``/dev/zero`` would never end).

Speed matters here (it runs every tick, for up to thousands of devices): unchanged lines come
from a cache keyed by the line's text, and changed lines of one format are converted in bulk
by a few C calls (the JSON decoder reads the numbers), with no Python step per line, when a
cheap check proves the bulk reading equals the line-by-line one; otherwise the file is read
line by line. ``benchmarks/bench_sampling.py`` measures it against psutil.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import add, itemgetter, not_
from pathlib import Path
from typing import NamedTuple, cast

from iotop_plus.sampling.topology.blockdev import dev_numbers
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded
from iotop_plus.text import printable

# Index of each counter inside DiskCounters.values (always 17 long; absent ones are 0).
READS, READS_MERGED, SECTORS_READ, READ_MS = 0, 1, 2, 3
WRITES, WRITES_MERGED, SECTORS_WRITTEN, WRITE_MS = 4, 5, 6, 7
IN_FLIGHT, IO_TICKS, TIME_IN_QUEUE = 8, 9, 10
DISCARDS, DISCARDS_MERGED, SECTORS_DISCARDED, DISCARD_MS = 11, 12, 13, 14
FLUSHES, FLUSH_MS = 15, 16
N_COUNTERS = 17

_PAD = {11: (0,) * 6, 15: (0, 0), 17: ()}

U64_MAX = 2**64 - 1
"""The largest value a kernel counter can print (they are ``unsigned long`` or u64)."""


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


# The wrap and reset rule, the one home of it: the rates, the exporter, the recording's
# roll-ups and the probe runner all take their deltas from here.
MS_WRAP = 1 << 32
"""The millisecond counters (read, write, discard and flush ms, io_ticks, time_in_queue) are
32-bit ``unsigned int`` in the kernel: they wrap every 2^32 ms (49.7 days)."""
MS_FIELDS = (READ_MS, WRITE_MS, IO_TICKS, TIME_IN_QUEUE, DISCARD_MS, FLUSH_MS)
"""Indexes of the counters that wrap at :data:`MS_WRAP`: their deltas are taken modulo it."""
COUNT_FIELDS = tuple(i for i in range(N_COUNTERS) if i not in MS_FIELDS and i != IN_FLIGHT)
"""Indexes of the operation and sector counts (64-bit): one that falls means a reset."""
_IS_MS = tuple(i in MS_FIELDS for i in range(N_COUNTERS))


def was_reset(before: Sequence[int], after: Sequence[int]) -> bool:
    """Whether a count or sector counter went backwards: the device was re-created (or its
    counters cleared), so the interval has no honest deltas."""
    # Unrolled over COUNT_FIELDS: this runs for every busy device on every frame.
    return (
        after[0] < before[0]
        or after[1] < before[1]
        or after[2] < before[2]
        or after[4] < before[4]
        or after[5] < before[5]
        or after[6] < before[6]
        or after[11] < before[11]
        or after[12] < before[12]
        or after[13] < before[13]
        or after[15] < before[15]
    )


def value_deltas(before: Sequence[int], after: Sequence[int]) -> tuple[int, ...] | None:
    """The 17 deltas from ``before`` to ``after`` (counter values in kernel order): ms
    counters modulo 2^32, the in-flight gauge as a plain difference; None after a reset."""
    if was_reset(before, after):
        return None
    return tuple(
        (a - b) % MS_WRAP if ms else a - b for a, b, ms in zip(after, before, _IS_MS, strict=False)
    )


def counter_deltas(prev: DiskCounters, cur: DiskCounters) -> tuple[int, ...] | None:
    """:func:`value_deltas` of two readings of one device; None when the counters were reset
    or the name now belongs to another device (its major:minor changed)."""
    if prev.major != cur.major or prev.minor != cur.minor:
        return None
    return value_deltas(prev.values, cur.values)


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
        return f"{self.source}:{self.line_no}: {printable(self.reason)}: {self.line!r}"


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
    if max(values) > U64_MAX:
        raise ValueError("counter above 2^64")
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
    # split("\n"), not splitlines(): line numbers in reports must match what an editor shows
    # even when a corrupt line holds \f, \x1c or other characters splitlines() breaks on.
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()  # the final newline ends the last line; it starts no line of its own
    known: dict[str, DiskCounters] = cache if cache is not None else {}
    # The usual tick takes no Python step per line: cached lines are looked up, changed
    # lines converted in bulk, and names are unique when the dict is as long as the list.
    found = list(map(known.get, lines))
    changed = list(compress(lines, map(not_, found)))
    counters: list[DiskCounters]
    if not changed:
        counters = cast("list[DiskCounters]", found)
    else:
        parsed = _parse_few(changed) if len(changed) < 8 else _parse_uniform(changed)
        if parsed is None:
            return _parse_each(lines, found, source, problems, cache)
        if len(changed) == len(lines):
            counters = parsed
        else:
            known.update(zip(changed, parsed, strict=True))
            counters = list(map(known.__getitem__, lines))
    result = dict(zip(map(_NAME, counters), counters, strict=True))
    if len(result) < len(counters):  # a name twice: report where
        return _parse_each(lines, counters, source, problems, cache)
    if cache is not None:
        cache.clear()
        cache.update(zip(lines, counters, strict=True))
    return result


def _parse_each(
    lines: list[str],
    found: Sequence[DiskCounters | None],
    source: str,
    problems: list[ParseProblem] | None,
    cache: dict[str, DiskCounters] | None,
) -> dict[str, DiskCounters]:
    """The careful way, for a file with a malformed, blank or duplicated line.

    ``found`` holds the counters already known for each line (None: parse it alone).
    """
    result: dict[str, DiskCounters] = {}
    fresh: dict[str, DiskCounters] = {}
    for line_no, (line, counters) in enumerate(zip(lines, found, strict=True), 1):
        if counters is None:
            if not line or line.isspace():
                continue
            outcome = _parse_line(line)
            if isinstance(outcome, str):
                _report(problems, source, line_no, line, outcome)
                continue
            counters = outcome
        name = counters.name
        if name in result:
            _report(problems, source, line_no, line, f"duplicate device {name}")
            continue
        result[name] = fresh[line] = counters
    if cache is not None:
        cache.clear()
        cache.update(fresh)
    return result


_NAME = itemgetter(2)
_decode_json = json.JSONDecoder().decode
# ASCII as the bulk check sees it: digits become "d", spaces stay, anything else is "x".
_DIGIT_CLASSES = bytes(
    ord("d") if 48 <= i <= 57 else 32 if i == 32 else ord("x") for i in range(256)
)
_TWENTY_DIGITS = b"d" * 20


def _parse_few(lines: list[str]) -> list[DiskCounters] | None:
    """Counters for each line parsed alone, or None if one is malformed.

    For a handful of changed lines, the bulk path's fixed cost (a dozen C calls and the
    JSON decoder) is more than parsing each (8 devices, one busy: ~64 vs ~46 us a tick).
    """
    parsed = list(map(_parse_line, lines))
    if any(isinstance(outcome, str) for outcome in parsed):
        return None
    return cast("list[DiskCounters]", parsed)


def _parse_uniform(lines: list[str]) -> list[DiskCounters] | None:
    """Counters for each line when all are plainly well formed and of one format, else None.

    The usual file has one format throughout, so all lines are converted together: a few
    C calls over the whole text (split, join, translate, the JSON decoder), no Python step
    per line or per field. The result is exactly what :func:`_parse_line` gives line by
    line, because it is used only when nothing can be read differently:

    * each line is split into major, minor, name and the rest, as ``_parse_line`` splits it;
    * the numbers (major, minor and the rest) hold only ASCII digits and single spaces, and
      no run of 20 digits: every one is under 10^19, below 2^64 and under 21 characters,
      and the JSON decoder reads each as ``int()`` does (it refuses a leading zero, and a
      double space becomes an empty field it refuses too);
    * every line has the same number of counters, one the kernel prints (11, 15 or 17).

    The JSON decoder reads a list of lists of integers in one call, faster than ``int()``
    on each token. Anything else (mixed formats, a blank or corrupt line, ``007``, ``+7``,
    a 20-digit counter) returns None: the caller then goes line by line and reports what
    is wrong where.
    """
    heads = list(map(str.split, lines, repeat(None), repeat(3)))
    if min(map(len, heads)) != 4:
        return None
    fields = list(chain.from_iterable(heads))
    names = fields[2::4]
    del fields[2::4]  # now major, minor, counters of each line
    numbers = " ".join(fields)
    if not numbers.isascii():  # (a flag, not a scan) and a lone surrogate cannot encode
        return None
    classes = numbers.encode("ascii").translate(_DIGIT_CLASSES)
    if b"x" in classes or _TWENTY_DIGITS in classes:
        return None
    try:
        rows = _decode_json("[[" + "],[".join(fields[2::3]).replace(" ", ",") + "]]")
    except ValueError:
        return None
    lengths = set(map(len, rows))
    n_counters = lengths.pop()
    pad = _PAD.get(n_counters)
    if lengths or pad is None:
        return None
    values: Iterable[tuple[int, ...]] = map(tuple, rows)
    if pad:
        values = map(add, values, repeat(pad))
    majors, minors = map(int, fields[0::3]), map(int, fields[1::3])
    return list(
        map(
            tuple.__new__,
            repeat(DiskCounters),
            zip(majors, minors, names, values, repeat(n_counters)),
        )
    )


def _parse_line(line: str) -> DiskCounters | str:
    """One /proc/diskstats line, or why it is rejected."""
    parts = line.split()
    if len(parts) < 3:
        return "too few fields"
    if any(len(p) > 20 for i, p in enumerate(parts) if i != 2):
        return "counter above 2^64"  # 2^64 has 20 digits; int() of 5,000 digits is slow
    try:
        major, minor, values = int(parts[0]), int(parts[1]), _counters(parts[3:])
    except ValueError as exc:
        return str(exc)
    return DiskCounters(major, minor, parts[2], values, len(parts) - 3)


def parse_sys_stat(
    text: str, name: str, major: int = 0, minor: int = 0, source: str = "stat"
) -> DiskCounters:
    """Parse the single line of /sys/block/DEV/stat (11, 15 or 17 counters).

    Raises:
        ValueError: quoting the bad line.
    """
    fields = text.split()
    if any(len(f) > 20 for f in fields):
        raise ValueError(f"{source}: counter above 2^64: {text.strip()[:120]!r}")
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
            text = read_bounded(path, MAX_ATTRIBUTE_BYTES)
            dev = read_bounded(path.parent / "dev", MAX_ATTRIBUTE_BYTES)
            numbers = dev_numbers(dev)
            if numbers is None:
                raise ValueError(f"{path.parent / 'dev'}: not MAJOR:MINOR: {dev.strip()[:40]!r}")
            result[name] = parse_sys_stat(text, name, *numbers, str(path))
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
