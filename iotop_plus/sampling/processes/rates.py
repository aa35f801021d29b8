"""Per-process I/O, iotop's way: immutable samples and pure rates and totals over them.

A process is identified by ``(pid, starttime)``, so a PID reused by a new process is a new
process. The samples come from :class:`iotop_plus.sampling.processes.reader.ProcessReader`;
the counters are parsed by :mod:`iotop_plus.sampling.processes.pid_files`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import astuple, dataclass, field
from types import MappingProxyType
from typing import Any

from iotop_plus.sampling.processes.delayacct import DelayAcct
from iotop_plus.sampling.processes.pid_files import USER_HZ, IoCounters

NOT_READABLE_HINT = "run as root"

TaskKey = tuple[int, int]
"""``(pid or tid, starttime)``: one process (or thread) for its whole life."""

_EMPTY: Mapping[TaskKey, TaskCounters] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class TaskCounters:
    """Cumulative I/O counters of one process (or one thread) at one moment."""

    pid: int
    """Process id (thread group id)."""
    tid: int
    """Thread id; equal to ``pid`` for a whole process."""
    starttime: int
    """Start time in clock ticks since boot; with the id it names the task for life."""
    comm: str
    """Executable name as the kernel keeps it (15 characters at most)."""
    cmdline: str
    """Command line, arguments joined by spaces; empty for kernel threads."""
    uid: int | None
    """Owner's uid (of ``/proc/PID``); None if it vanished before we could stat it."""
    user: str
    """Owner's user name, or the uid as text when it has no name."""
    state: str
    """One-letter state when last read (R, S, D...)."""
    num_threads: int
    """Threads in the process (1 for a thread entry)."""
    io: IoCounters | None
    """I/O counters; None when ``/proc/PID/io`` is not readable by us."""
    thread_ticks: tuple[tuple[int, int], ...] | None
    """``(tid, delayacct_blkio_ticks)`` per live thread; None when not read."""
    ppid: int = 0
    """Parent's pid: a reaped child's whole I/O is added to its parent's counters."""

    @property
    def key(self) -> TaskKey:
        """``(tid, starttime)``: the identity used to match samples."""
        return (self.tid, self.starttime)

    @property
    def is_thread(self) -> bool:
        """True for a thread entry that is not the thread group's leader."""
        return self.tid != self.pid

    @property
    def name(self) -> str:
        """The command line, or ``[comm]`` for kernel threads, as ps shows them."""
        return self.cmdline or f"[{self.comm}]"

    @property
    def blkio_ticks(self) -> int | None:
        """Block I/O delay summed over the live threads, in clock ticks."""
        if self.thread_ticks is None:
            return None
        return sum(t for _, t in self.thread_ticks)


@dataclass(frozen=True)
class ProcessSample:
    """Every process's counters at one moment, plus what could not be seen."""

    monotonic: float
    """``time.monotonic()`` when the process list was read."""
    wall_time: float
    """``time.time()`` at the same moment."""
    uptime_ticks: int | None
    """Clock ticks since boot (``/proc/uptime``) just before listing; None if unknown."""
    tasks: Mapping[TaskKey, TaskCounters]
    """Processes (or threads, in per-thread mode) by identity (read-only)."""
    delayacct: DelayAcct
    """Whether the kernel measured block I/O delay during this sample."""
    per_thread: bool = False
    """True when ``tasks`` holds one entry per thread instead of per process."""
    unreadable: int = 0
    """Processes whose I/O counters we may not read (not root)."""
    problems: tuple[str, ...] = ()
    """Files that could not be parsed, one line each."""
    duration_s: float = 0.0
    """How long the read took."""
    as_root: bool = False
    """Whether the reader ran with effective uid 0."""
    detail_pid: int | None = None
    """The process whose threads are in ``detail`` (see ``ProcessReader.detail_pid``)."""
    detail: Mapping[TaskKey, TaskCounters] = field(default_factory=lambda: _EMPTY)
    """The threads of ``detail_pid``, by identity."""

    @property
    def unreadable_message(self) -> str | None:
        """``"N processes not readable: run as root"``, or None when all were readable."""
        if not self.unreadable:
            return None
        noun = "process" if self.unreadable == 1 else "processes"
        if self.as_root:
            # Even root is refused some (e.g. a non-dumpable init in a microVM).
            return f"{self.unreadable} {noun} not readable (denied by the kernel)"
        return f"{self.unreadable} {noun} not readable: {NOT_READABLE_HINT}"


@dataclass(frozen=True, slots=True)
class TaskRates:
    """One process's (or thread's) I/O over one interval. None: cannot be known."""

    task: TaskCounters
    """The counters at the end of the interval (names, user, state)."""
    read_bps: float | None
    """DISK READ: bytes per second fetched from storage."""
    write_bps: float | None
    """DISK WRITE: bytes per second dirtied for storage, net of cancelled writes."""
    rchar_bps: float | None
    """Bytes per second read by syscalls, page-cache hits included."""
    wchar_bps: float | None
    """Bytes per second written by syscalls."""
    io_wait_pct: float | None
    """IO%: percentage of the interval spent waiting on block I/O, summed over threads
    (above 100 when several threads wait at once); None when delay accounting is off."""

    @property
    def disk_bps(self) -> float:
        """DISK READ + DISK WRITE (0 when unknown): the default sort key."""
        return (self.read_bps or 0.0) + (self.write_bps or 0.0)

    @property
    def active(self) -> bool:
        """Doing I/O in this interval, as ``iotop -o`` means it."""
        return self.disk_bps > 0 or bool(self.io_wait_pct)


def _thread_tick_delta(
    prev: tuple[tuple[int, int], ...] | None, cur: tuple[tuple[int, int], ...] | None
) -> int | None:
    # Per thread, so that a thread exiting (its ticks leave the sum) is no negative spike.
    if cur is None or prev is None:
        return None
    before = dict(prev)
    return sum(max(0, ticks - before.get(tid, 0)) for tid, ticks in cur)


def started_before_delayacct(task: TaskCounters, switched_on_ticks: int | None) -> bool:
    """Whether ``task`` started before delay accounting was last switched on.

    The kernel gives a task its delay record only when it is forked while delay accounting
    is on, so such a task's IO% reads 0 forever: it is not measurable ("n/a"), not idle.

    Args:
        switched_on_ticks: Clock ticks since boot (``starttime``'s clock) of the last off->on
            switch; None when unknown (then nothing is known to be unmeasured).
    """
    return switched_on_ticks is not None and task.starttime < switched_on_ticks


def switch_ticks(boottime_s: float | None) -> int | None:
    """``CLOCK_BOOTTIME`` seconds as clock ticks since boot (``starttime``'s unit)."""
    return None if boottime_s is None else int(boottime_s * USER_HZ)


def _zero_io() -> IoCounters:
    return IoCounters(0, 0, 0, 0, 0, 0, 0)


def task_rates(
    prev: TaskCounters | None,
    cur: TaskCounters,
    elapsed_s: float,
    *,
    delay_measured: bool = True,
    reaped: IoCounters | None = None,
) -> TaskRates:
    """Rates of ``cur`` since ``prev``; ``prev=None`` means "started in the interval".

    ``reaped``: the counters, as last seen, of children that exited and were reaped in the
    interval. The kernel adds a reaped child's lifetime I/O to its parent's; what was already
    shown as the child's (up to its last sample) is taken back out, so the parent shows only
    what the children did in this interval, not a spike of everything they ever did.

    Counters that went backwards (only ``cancelled_write_bytes`` may outgrow
    ``write_bytes`` over an interval) give 0, never a negative rate.
    """
    base = prev.io if prev is not None else _zero_io()
    if reaped is not None and base is not None:
        base = IoCounters(*(a + b for a, b in zip(astuple(base), astuple(reaped), strict=True)))
    deltas = _io_deltas(base, cur.io)
    per_s = 1.0 / elapsed_s if elapsed_s > 0 else 0.0
    io_wait: float | None = None
    if delay_measured and elapsed_s > 0:
        ticks = _thread_tick_delta(prev.thread_ticks if prev else (), cur.thread_ticks)
        if ticks is not None:
            # Read jitter can push one thread a tick past the interval: cap at 100% each.
            cap = 100.0 * max(1, len(cur.thread_ticks or ()))
            io_wait = min(cap, ticks * 100.0 / USER_HZ / elapsed_s)
    if deltas is None or elapsed_s <= 0:
        return TaskRates(cur, None, None, None, None, io_wait)
    read, write, rchar, wchar = deltas
    return TaskRates(cur, read * per_s, write * per_s, rchar * per_s, wchar * per_s, io_wait)


def _io_deltas(a: IoCounters | None, b: IoCounters | None) -> tuple[int, int, int, int] | None:
    """Read, net write, rchar and wchar deltas; never negative; None when unknown."""
    if a is None or b is None:
        return None
    return (
        max(0, b.read_bytes - a.read_bytes),
        max(0, b.disk_write_bytes - a.disk_write_bytes),
        max(0, b.rchar - a.rchar),
        max(0, b.wchar - a.wchar),
    )


def _started_since(task: TaskCounters, uptime_ticks: int | None) -> bool:
    return uptime_ticks is not None and task.starttime >= uptime_ticks


def _rates_of(
    prev_tasks: Mapping[TaskKey, TaskCounters],
    cur_tasks: Mapping[TaskKey, TaskCounters],
    prev_uptime: int | None,
    elapsed_s: float,
    delay_measured: bool,
    per_thread: bool = False,
) -> dict[TaskKey, TaskRates | None]:
    reaped = {} if per_thread else _reaped_children(prev_tasks, cur_tasks)
    out: dict[TaskKey, TaskRates | None] = {}
    # The reader hands back the very same counters for a task that did nothing since: its
    # rates are zero, made without working them out field by field (most tasks).
    idle_wait = 0.0 if delay_measured else None
    for key, task in cur_tasks.items():
        before = prev_tasks.get(key)
        if before is task and elapsed_s > 0 and task.io is not None and task.pid not in reaped:
            wait = idle_wait if task.thread_ticks is not None else None
            out[key] = TaskRates(task, 0.0, 0.0, 0.0, 0.0, wait)
            continue
        if before is None and not _started_since(task, prev_uptime):
            # First sight of an older process: no baseline, no rates (never a spike).
            out[key] = None
        else:
            out[key] = task_rates(
                before,
                task,
                elapsed_s,
                delay_measured=delay_measured,
                reaped=reaped.get(task.pid) if before is not None else None,
            )
    return out


def _reaped_children(
    prev_tasks: Mapping[TaskKey, TaskCounters], cur_tasks: Mapping[TaskKey, TaskCounters]
) -> dict[int, IoCounters]:
    """Per parent pid, the summed last-seen counters of its children that are gone now
    (and of their children that went with them, see ``_surviving_ancestor``).

    (A thread view has no such problem: a thread's own counters never take a child's.)
    """
    gone_parent = {task.pid: task.ppid for key, task in prev_tasks.items() if key not in cur_tasks}
    gone: dict[int, list[IoCounters]] = {}
    for key, task in prev_tasks.items():
        if key not in cur_tasks and task.io is not None and task.ppid > 0:
            gone.setdefault(_surviving_ancestor(task.ppid, gone_parent), []).append(task.io)
    return {
        ppid: IoCounters(*(sum(column) for column in zip(*map(astuple, ios), strict=True)))
        for ppid, ios in gone.items()
    }


def _surviving_ancestor(ppid: int, gone_parent: Mapping[int, int]) -> int:
    """The first ancestor from ``ppid`` up that is still listed.

    A child and its parent that both exit in one interval (fio's job, then fio itself) land
    in the grandparent: the parent reaped the child before the grandparent reaped it. Had
    the parent died without reaping, the child went to init and the grandparent is
    over-corrected, which the never-negative rule turns into 0, not a spike.
    """
    seen = {ppid}
    while ppid in gone_parent and gone_parent[ppid] > 0 and gone_parent[ppid] not in seen:
        ppid = gone_parent[ppid]
        seen.add(ppid)
    return ppid


def rates_between(prev: ProcessSample, cur: ProcessSample) -> dict[TaskKey, TaskRates | None]:
    """Rates of every task of ``cur`` over the measured interval since ``prev``.

    A task absent from ``prev`` that started after ``prev`` listed the processes is rated
    from zero (all its I/O happened in the interval); any other newcomer gets None.
    """
    return _rates_of(
        prev.tasks,
        cur.tasks,
        prev.uptime_ticks,
        cur.monotonic - prev.monotonic,
        prev.delayacct.measurable and cur.delayacct.measurable,
        prev.per_thread or cur.per_thread,
    )


def detail_rates_between(
    prev: ProcessSample, cur: ProcessSample
) -> dict[TaskKey, TaskRates | None]:
    """Rates of the threads in ``cur.detail`` (empty when the detail process changed)."""
    if cur.detail_pid is None or prev.detail_pid != cur.detail_pid:
        return {key: None for key in cur.detail}
    return _rates_of(
        prev.detail,
        cur.detail,
        prev.uptime_ticks,
        cur.monotonic - prev.monotonic,
        prev.delayacct.measurable and cur.delayacct.measurable,
        per_thread=True,
    )


@dataclass(frozen=True, slots=True)
class TaskTotals:
    """What one task did since the accumulation started (iotop's accumulated mode)."""

    task: TaskCounters
    """The latest counters (names, user)."""
    read_bytes: int | None
    """Bytes fetched from storage."""
    write_bytes: int | None
    """Bytes dirtied for storage, net of cancelled writes."""
    rchar: int | None
    """Bytes read by syscalls."""
    wchar: int | None
    """Bytes written by syscalls."""
    io_wait_s: float | None
    """Seconds spent waiting on block I/O, summed over threads."""


class Accumulator:
    """Totals since the first sample it saw, per task; tasks started later count from 0."""

    def __init__(self) -> None:
        self._start_uptime: int | None = None
        self._started = False
        self._base: dict[TaskKey, TaskCounters | None] = {}

    def reset(self) -> None:
        """Start counting again from the next sample."""
        self._started = False
        self._base.clear()

    def update(self, sample: ProcessSample) -> Mapping[TaskKey, TaskTotals]:
        """Totals of every task in ``sample`` since the start, each computed when read.

        A consumer reads a few (the recorder none, the Processes tab in totals mode the
        rows it shows), so none is computed before it is read (docs/performance.md).
        """
        if not self._started:
            self._started = True
            self._start_uptime = sample.uptime_ticks
            self._base = dict(sample.tasks)
        base = self._base
        start = self._start_uptime
        for key, task in sample.tasks.items():
            if key not in base:
                base[key] = None if _started_since(task, start) else task
        out = _Totals(base, sample.tasks)
        if len(base) > len(sample.tasks):
            # Forget the dead (base holds every task of the sample, so the rest are gone):
            # totals are shown only for live tasks, and churn must not grow this.
            self._base = {k: base[k] for k in sample.tasks}
        return out


def _totals(base: TaskCounters | None, cur: TaskCounters) -> TaskTotals:
    deltas = _io_deltas(base.io if base is not None else _zero_io(), cur.io)
    ticks = _thread_tick_delta(base.thread_ticks if base else (), cur.thread_ticks)
    wait = None if ticks is None else ticks / USER_HZ
    if deltas is None:
        return TaskTotals(cur, None, None, None, None, wait)
    return TaskTotals(cur, *deltas, io_wait_s=wait)


class _Totals(Mapping[TaskKey, TaskTotals]):
    """Totals of a sample's tasks from their base counters, each made (once) when read.

    ``base`` holds a base for every task of ``tasks`` (the accumulator's map of that tick;
    a later tick may add keys or move to a new map, never change a base).
    """

    __slots__ = ("_base", "_made", "_tasks")

    def __init__(
        self, base: Mapping[TaskKey, TaskCounters | None], tasks: Mapping[TaskKey, TaskCounters]
    ) -> None:
        self._base = base
        self._tasks = tasks
        self._made: dict[TaskKey, TaskTotals] = {}

    def __getitem__(self, key: TaskKey) -> TaskTotals:
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = _totals(self._base[key], self._tasks[key])
        return made

    def __contains__(self, key: object) -> bool:
        return key in self._tasks

    def __iter__(self) -> Iterator[TaskKey]:
        return iter(self._tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self.items()),)  # pickled (the history ring) as the plain totals
