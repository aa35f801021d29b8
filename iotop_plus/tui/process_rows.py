"""The Processes tab's rows, without the widgets: what one line shows and how rows are chosen.

Pure (no textual, no rich): the worker thread arranges rows with :func:`build_rows`, and the
benchmarks and tests use it directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from iotop_plus.sampling.cgroup_names import cgroup_name
from iotop_plus.sampling.diskstats import printable
from iotop_plus.sampling.processes import (
    TaskKey,
    TaskRates,
    TaskTotals,
    started_before_delayacct,
)
from iotop_plus.sampling.units import compact_bytes as compact_bytes  # the panels import it here


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the process list."""

    key: str
    """Sort key name."""
    title: str
    """Header text."""
    width: int
    """Characters (0: takes the rest of the line)."""
    priority: int
    """Lower is kept first when the width is short."""
    right: bool = True
    """Right-aligned (numbers)."""


COLUMNS: tuple[Column, ...] = (
    Column("pid", "PID", 7, 0),
    Column("user", "USER", 9, 4, right=False),
    Column("read", "READ", 7, 1),
    Column("write", "WRITE", 7, 1),
    Column("rchar", "RCHAR", 7, 5),
    Column("wchar", "WCHAR", 7, 5),
    Column("io", "IO%", 6, 2),
    Column("cgroup", "CGROUP", 16, 3, right=False),
    Column("command", "COMMAND", 0, 0, right=False),
)
MEANINGS: tuple[tuple[str, str], ...] = (
    ("READ", "bytes/s this process made the block layer fetch (page-cache hits excluded)"),
    ("WRITE", "bytes/s it dirtied for storage, net of cancelled writes (written back later)"),
    ("RCHAR/WCHAR", "bytes/s through read/write syscalls, page-cache hits included"),
    (
        "IO%",
        "share of the interval spent waiting on block I/O (delay accounting). Each thread is "
        "capped at 100 %; a process sums its threads, so 4 threads all waiting read 400 % "
        "(iotop shows threads, hence its 99.99 % ceiling). Enter on a process splits it "
        "by thread. n/a: the process started before delay accounting was switched on, so the "
        "kernel keeps no delays for it",
    ),
)
"""(column, what it means) for the help screen."""

SORT_KEYS = ("total", *(c.key for c in COLUMNS))
"""``total`` (READ + WRITE, the default) then every column."""


@dataclass(frozen=True, slots=True)
class ProcessRow:
    """What the list shows for one process in one tick."""

    key: TaskKey
    """Identity of the process."""
    pid: int
    """PID (or TID in the thread view)."""
    user: str
    """Owner."""
    command: str
    """Command line or ``[comm]``."""
    read: float | None
    """DISK READ bytes/s, or bytes since start in totals mode."""
    write: float | None
    """DISK WRITE (net of cancelled), per second or since start."""
    rchar: float | None
    """Syscall reads, per second or since start."""
    wchar: float | None
    """Syscall writes, per second or since start."""
    io: float | None
    """IO% (rates) or seconds waited (totals); None when unknown or off."""
    active: bool
    """Doing I/O in the last interval."""
    cgroup: str = ""
    """The cgroup's name for people (unit, container, pod); empty when unknown."""
    io_unmeasured: bool = False
    """IO% cannot be measured: the task started before delay accounting was switched on."""

    @property
    def total(self) -> float:
        """READ + WRITE, unknown counted as 0."""
        return (self.read or 0.0) + (self.write or 0.0)


def row_from(
    key: TaskKey,
    rates: TaskRates | None,
    totals: TaskTotals | None,
    delay_since: int | None = None,
) -> ProcessRow:
    """One row, from the interval's rates or (when given) the totals since start.

    ``delay_since``: clock ticks since boot of the last switch of delay accounting to on;
    a task started before it gets no IO% (``io_unmeasured``), not a misleading 0.0.
    """
    source = totals if totals is not None else rates
    if source is None:
        raise ValueError(f"no rates or totals for {key}")
    task = source.task
    active = rates is not None and rates.active
    unmeasured = started_before_delayacct(task, delay_since)
    if totals is not None:
        io = None if unmeasured else totals.io_wait_s
        return ProcessRow(
            key, task.tid, task.user, task.name, totals.read_bytes, totals.write_bytes,
            totals.rchar, totals.wchar, io, active, io_unmeasured=unmeasured,
        )  # fmt: skip
    assert rates is not None
    io = None if unmeasured else rates.io_wait_pct
    return ProcessRow(
        key, task.tid, task.user, task.name, rates.read_bps, rates.write_bps,
        rates.rchar_bps, rates.wchar_bps, io, active, io_unmeasured=unmeasured,
    )  # fmt: skip


_SORTERS: dict[str, Callable[[ProcessRow], object]] = {
    "total": lambda r: r.total,
    "pid": lambda r: r.pid,
    "user": lambda r: r.user,
    "read": lambda r: r.read or 0.0,
    "write": lambda r: r.write or 0.0,
    "rchar": lambda r: r.rchar or 0.0,
    "wchar": lambda r: r.wchar or 0.0,
    "io": lambda r: r.io or 0.0,
    "command": lambda r: r.command,
    "cgroup": lambda r: r.cgroup,
}


@dataclass(frozen=True, slots=True)
class View:
    """How the rows are chosen and ordered; the worker arranges rows for the current one."""

    sort: str = "total"
    """One of SORT_KEYS."""
    descending: bool = True
    """Biggest (or Z) first."""
    only_active: bool = False
    """Only processes doing I/O in the last interval."""
    totals_mode: bool = False
    """Totals since start instead of rates."""
    filter_text: str = ""
    """Case-insensitive substring of the command or user."""


def build_rows(
    rates: Mapping[TaskKey, TaskRates | None],
    totals: Mapping[TaskKey, TaskTotals],
    view: View,
    cgroups: Mapping[TaskKey, str] | None = None,
    delay_since: int | None = None,
) -> list[ProcessRow]:
    """Filtered, sorted rows for ``view`` (run in the worker: 5,000 rows cost ~40 ms).

    ``cgroups`` maps tasks to their cgroup paths, for the CGROUP column. ``delay_since``:
    clock ticks since boot of the last switch of delay accounting to on, or None (unknown).
    """
    since = delay_since
    if view.totals_mode:
        rows = [row_from(k, rates.get(k), t, since) for k, t in totals.items()]
    elif view.only_active:
        # Most processes are idle: skip building rows that would be dropped at once.
        rows = [row_from(k, r, None, since) for k, r in rates.items() if r is not None and r.active]
    else:
        rows = [row_from(k, r, None, since) for k, r in rates.items() if r is not None]
    if cgroups:
        rows = [
            replace(r, cgroup=_cgroup_name(cgroups[r.key])) if r.key in cgroups else r for r in rows
        ]
    return arrange(rows, view.sort, view.descending, view.only_active, view.filter_text)


def arrange(
    rows: list[ProcessRow], sort: str, descending: bool, only_active: bool, text: str
) -> list[ProcessRow]:
    """Filter and sort rows; ties go by PID so the order is stable between ticks."""
    wanted = text.lower()
    if only_active:
        rows = [r for r in rows if r.active]
    if wanted:
        rows = [
            r
            for r in rows
            if wanted in r.command.lower() or wanted in r.user.lower() or wanted in r.cgroup.lower()
        ]
    rows.sort(key=lambda r: r.pid)
    rows.sort(key=_SORTERS[sort], reverse=descending)  # type: ignore[arg-type]
    return rows


@lru_cache(maxsize=4096)
def _cgroup_name(path: str) -> str:
    return cgroup_name(path)


def pct(rates: TaskRates | None, delay_since: int | None = None) -> str:
    """IO% of one task: ``n/a`` when it started before delay accounting was switched on."""
    if rates is not None and started_before_delayacct(rates.task, delay_since):
        return "n/a"
    if rates is None or rates.io_wait_pct is None:
        return "-"
    return f"{rates.io_wait_pct:.1f}"


def printable_lines(text: str) -> str:
    """``text`` with control characters shown as ``?`` in each line (newlines kept)."""
    return "\n".join(printable(line) for line in text.split("\n"))
