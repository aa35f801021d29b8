"""The Processes tab's rows, without the widgets: what one line shows and how rows are chosen.

Pure (no textual, no rich): the worker thread arranges rows with :func:`build_rows`, and the
benchmarks and tests use it directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from iotop_plus.sampling.cgroups.names import cgroup_name
from iotop_plus.sampling.processes.issuers import Issuer
from iotop_plus.sampling.processes.rates import (
    TaskKey,
    TaskRates,
    TaskTotals,
    started_before_delayacct,
)
from iotop_plus.text import compact_bytes as compact_bytes  # the panels import it here
from iotop_plus.text import printable


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
    ("DEV IO/s", "with v (this device only): requests/s it submitted to the selected device"),
    (
        "p50/p99 ms",
        "with v: device time (issue to completion) of its requests on the selected device, "
        "the slower of reads and writes; traced as root with bpftrace, '-' for an estimate",
    ),
)
"""(column, what it means) for the help screen."""

DEVICE_COLUMNS: tuple[Column, ...] = (
    Column("dev_iops", "DEV IO/s", 8, 0),
    Column("dev_p50", "p50 ms", 7, 2),
    Column("dev_p99", "p99 ms", 7, 0),
)
"""Shown before COMMAND in "this device only" mode (kept before READ and WRITE when narrow):
the process's requests per second on the device and their device time (reads and writes
together: the slower operation's figure)."""
SORT_KEYS = ("total", *(c.key for c in COLUMNS))
"""``total`` (READ + WRITE, the default) then every column."""
DEVICE_SORT_KEYS = (*SORT_KEYS, *(c.key for c in DEVICE_COLUMNS))
"""The sort keys in "this device only" mode: the device columns too."""


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
    dev_iops: float | None = None
    """"This device only": its requests/s on the device (None: not traced)."""
    dev_p50: float | None = None
    """"This device only": median device time of its requests there, ms."""
    dev_p99: float | None = None
    """"This device only": 99th percentile device time of its requests there, ms."""
    dev_kbs: float = 0.0
    """"This device only": kB/s it read and wrote there (orders an estimate's rows)."""

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
    "dev_iops": lambda r: (r.dev_iops or 0.0, r.dev_kbs),
    "dev_p50": lambda r: r.dev_p50 or 0.0,
    "dev_p99": lambda r: r.dev_p99 or 0.0,
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
    device: str | None = None
    """"This device only": the device whose issuers are kept (None: every process)."""


def build_rows(
    rates: Mapping[TaskKey, TaskRates | None],
    totals: Mapping[TaskKey, TaskTotals],
    view: View,
    cgroups: Mapping[TaskKey, str] | None = None,
    delay_since: int | None = None,
    issuers: Sequence[Issuer] | None = None,
) -> list[ProcessRow]:
    """Filtered, sorted rows for ``view`` (run in the worker: 5,000 rows cost ~40 ms).

    ``cgroups`` maps tasks to their cgroup paths, for the CGROUP column. ``delay_since``:
    clock ticks since boot of the last switch of delay accounting to on, or None (unknown).
    ``issuers``: with ``view.device``, the device's issuers: only their processes are kept,
    with their figures on the device (none known: no rows).
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
    if view.device is not None:
        rows = device_rows(rows, issuers or ())
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


def device_rows(rows: list[ProcessRow], issuers: Sequence[Issuer]) -> list[ProcessRow]:
    """The rows of the processes among ``issuers``, with their figures on the device."""
    by_pid = {i.pid: i for i in issuers if i.pid is not None}
    out = []
    for row in rows:
        who = by_pid.get(row.key[0])
        if who is None:
            continue
        p50 = _slower(who.read.p50_ms, who.write.p50_ms)
        p99 = _slower(who.read.p99_ms, who.write.p99_ms)
        iops = None if who.r_s is None and who.w_s is None else who.iops
        kbs = who.rkB_s + who.wkB_s
        out.append(replace(row, dev_iops=iops, dev_p50=p50, dev_p99=p99, dev_kbs=kbs))
    return out


def _slower(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def device_cells(row: ProcessRow) -> dict[str, str]:
    """The :data:`DEVICE_COLUMNS` cells of a row (``-`` where unknown)."""
    return {
        "dev_iops": "-" if row.dev_iops is None else f"{row.dev_iops:.0f}",
        "dev_p50": "-" if row.dev_p50 is None else f"{row.dev_p50:.3g}",
        "dev_p99": "-" if row.dev_p99 is None else f"{row.dev_p99:.3g}",
    }


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
    """``text`` through :func:`printable` line by line (newlines kept)."""
    return "\n".join(printable(line) for line in text.split("\n"))
