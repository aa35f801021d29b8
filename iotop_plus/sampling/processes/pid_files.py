"""Parsers of the per-process files of /proc: ``/proc/PID/io`` and ``/proc/PID/stat``.

Kernel formats read (proc(5)):

* ``/proc/PID/io``: ``name: value`` lines; ``rchar``, ``wchar``, ``syscr``, ``syscw``,
  ``read_bytes``, ``write_bytes``, ``cancelled_write_bytes``. Only root (or the owner)
  may read it; others get EACCES.
* ``/proc/PID/stat`` and ``/proc/PID/task/TID/stat``: ``pid (comm) state ...``; comm may
  hold spaces and parentheses, so fields are counted after the *last* ``)``. Field 20 is
  num_threads, 22 starttime (clock ticks since boot), 42 delayacct_blkio_ticks (2.6.18+).
  Field 42 of ``/proc/PID/stat`` is the main thread's only, so IO wait is summed over
  ``/proc/PID/task/*/stat``.

Every counter is a kernel u64: ASCII digits below 2**64, or the file is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

USER_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""Clock ticks per second of starttime and delayacct_blkio_ticks (100 on Linux)."""

# Fields after "pid (comm) ": index = field number - 3.
STATE_FIELD = 0
PPID_FIELD = 1
"""Index of field 3 (state) among the fields after ``pid (comm)``."""
NUM_THREADS_FIELD = 17
"""Index of field 20 (num_threads) among the fields after ``pid (comm)``."""
STARTTIME_FIELD = 19
"""Index of field 22 (starttime) among the fields after ``pid (comm)``."""
BLKIO_TICKS_FIELD = 39
"""Index of field 42 (delayacct_blkio_ticks) among the fields after ``pid (comm)``."""


@dataclass(frozen=True, slots=True)
class IoCounters:
    """The cumulative counters of ``/proc/PID/io``, in bytes (``sys*`` in calls)."""

    rchar: int
    """Bytes asked for by read-like syscalls, page-cache hits included."""
    wchar: int
    """Bytes passed to write-like syscalls, whether or not they reach a disk."""
    syscr: int
    """Read-like syscalls."""
    syscw: int
    """Write-like syscalls."""
    read_bytes: int
    """Bytes this task caused to be fetched from storage (counted at submission)."""
    write_bytes: int
    """Bytes this task caused to be sent to storage (counted when pages are dirtied)."""
    cancelled_write_bytes: int
    """Dirtied bytes later truncated before write-back (they never reach the disk)."""

    @property
    def disk_write_bytes(self) -> int:
        """``write_bytes - cancelled_write_bytes``: what iotop shows as DISK WRITE."""
        return self.write_bytes - self.cancelled_write_bytes


_IO_NAMES = (
    b"rchar:",
    b"wchar:",
    b"syscr:",
    b"syscw:",
    b"read_bytes:",
    b"write_bytes:",
    b"cancelled_write_bytes:",
)


_U64_DIGITS = 20
_U64_LIMIT = 2**64


def _u64(token: bytes) -> int:
    """A kernel u64 counter: ASCII digits only, below 2**64.

    ``int()`` alone would take ``-5``, ``+5``, ``1_000`` and a 400-digit number; each would
    become a negative or absurd rate.

    Raises:
        ValueError: when ``token`` is not such a number.
    """
    if len(token) > _U64_DIGITS or not token.isdigit():
        raise ValueError(token)
    value = int(token)
    if value >= _U64_LIMIT:
        raise ValueError(token)
    return value


def parse_io(text: bytes) -> IoCounters:
    """Parse ``/proc/PID/io``.

    Raises:
        ValueError: quoting the text, when a counter is missing or not a u64 number.
    """
    tokens = text.split()
    values = dict(zip(tokens[::2], tokens[1::2], strict=False))
    try:
        return IoCounters(*(_u64(values[name]) for name in _IO_NAMES))
    except (KeyError, ValueError):
        raise ValueError(f"not a /proc/PID/io text: {text[:120]!r}") from None


@dataclass(frozen=True, slots=True)
class StatFields:
    """The fields of ``/proc/PID/stat`` that the process view needs."""

    pid: int
    """Process or thread id (field 1)."""
    comm: str
    """Executable name, at most 15 characters (field 2)."""
    state: str
    """One-letter state, e.g. R, S, D (field 3)."""
    ppid: int
    """Parent's pid (field 4)."""
    num_threads: int
    """Threads in the thread group (field 20)."""
    starttime: int
    """Start time in clock ticks since boot (field 22)."""
    blkio_ticks: int | None
    """Block I/O delay of this task in clock ticks (field 42); None on very old kernels."""


def parse_stat(text: bytes) -> StatFields:
    """Parse ``/proc/PID/stat`` or ``/proc/PID/task/TID/stat``.

    Raises:
        ValueError: quoting the text, when it is not a stat line.
    """
    open_paren = text.find(b"(")
    close_paren = text.rfind(b")")
    rest = text[close_paren + 2 :].split()
    try:
        if open_paren < 1 or close_paren < open_paren or len(rest) < 20:
            raise ValueError
        return StatFields(
            pid=_u64(text[:open_paren].strip()),
            comm=text[open_paren + 1 : close_paren].decode("utf-8", "surrogateescape"),
            state=rest[STATE_FIELD].decode("ascii", "replace"),
            ppid=_u64(rest[PPID_FIELD]),
            num_threads=_u64(rest[NUM_THREADS_FIELD]),
            starttime=_u64(rest[STARTTIME_FIELD]),
            blkio_ticks=_u64(rest[BLKIO_TICKS_FIELD]) if len(rest) > BLKIO_TICKS_FIELD else None,
        )
    except ValueError:
        raise ValueError(f"not a /proc/PID/stat line: {text[:120]!r}") from None
