"""The sync part's probes in the tracer's one bpftrace program, and their parser.

Each fsync and fdatasync is timed once, where the filesystem tells most:

- ext4: ``ext4:ext4_sync_file_enter`` to ``ext4_sync_file_exit`` (device, inode and
  ``datasync``; the enter's stamp holds the time shifted left and ``datasync`` in bit 0,
  and the exit names the device and inode again, so one map per thread is enough). They
  fire inside the syscall and for io_uring's ``IORING_OP_FSYNC`` alike; the exit drops the
  syscall's own stamp, so the syscall's exit does not count it again.
- XFS: ``xfs:xfs_file_fsync`` names the device and inode, and the syscall's enter and exit
  time it (a sync XFS does outside a syscall, io_uring's, is not seen).
- any other filesystem: the syscall's enter and exit, keyed by the file descriptor; the
  reader resolves the descriptor to its file once per frame.

``O_SYNC``/``O_DSYNC`` writes make no sync call and are not counted.

Maps (``@sy_`` prefix): ``@sy_h[dev, ino, pid, call, exp, sub, comm]`` counts by log-linear
bucket (:mod:`~iotop_plus.sampling.latency.hist`), ``@sy_s[dev, ino, pid, call, comm]`` sums
the ns and ``@sy_m[...]`` keeps the largest. ``dev`` is the kernel's ``dev_t`` of the
filesystem (``major << 20 | minor``); ``call`` is 0 for fsync, 1 for fdatasync, plus
:data:`BY_FD` when ``dev`` is 0 and ``ino`` is the file descriptor.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from iotop_plus.sampling.frame.part import TraceProgram
from iotop_plus.sampling.latency.hist import Histogram, bucket_index
from iotop_plus.sampling.latency.program import _BUCKET

FSYNC = 0
"""``call`` of an fsync (``datasync`` 0)."""
FDATASYNC = 1
"""``call`` of an fdatasync (``datasync`` 1)."""
BY_FD = 2
"""Added to ``call`` when the sync was seen at the syscall only: ``ino`` holds the fd."""
CALL_NAMES = ("fsync", "fdatasync")
"""The metric's ``call`` label, by ``call & 1``."""
MAPS = ("@sy_h", "@sy_s", "@sy_m")
"""The maps the tracer prints and clears at each tick."""


def _record(dev: str, ino: str, call: str) -> list[str]:
    key = f"{dev}, {ino}, pid, {call}"
    return [
        _BUCKET.rstrip("\n"),
        f"    @sy_h[{key}, $e, $s, comm] = count();",
        f"    @sy_s[{key}, comm] = sum($v);",
        f"    @sy_m[{key}, comm] = max($v);",
    ]


def tracepoint_groups(sys: Path) -> frozenset[str]:
    """The tracepoint groups this kernel has now (``ext4``, ``xfs``, ``jbd2``, ``syscalls``:
    a filesystem's appear once its module is loaded)."""
    for events in (
        sys / "kernel" / "tracing" / "events",
        sys / "kernel" / "debug" / "tracing" / "events",
    ):
        try:
            return frozenset(os.listdir(events))
        except OSError:
            continue
    return frozenset()


def sync_program_text(groups: Iterable[str] = ("ext4", "xfs", "syscalls")) -> str:
    """The probe blocks for the tracepoint ``groups`` there are (see the module's doc)."""
    have = set(groups)
    lines: list[str] = []
    if "ext4" in have:
        lines += [
            "tracepoint:ext4:ext4_sync_file_enter {",
            "  @sy_t[tid] = (nsecs << 1) | (args->datasync ? 1 : 0);",
            "}",
            "tracepoint:ext4:ext4_sync_file_exit /@sy_t[tid]/ {",
            "    $t = (uint64)@sy_t[tid]; delete(@sy_t[tid]);",
            "    $v = nsecs - ($t >> 1);",
            "    delete(@sy_c[tid]); delete(@sy_q[tid]);",
            *_record("args->dev", "args->ino", "$t & 1"),
            "}",
        ]
    if "syscalls" not in have:
        return "\n".join(lines) + "\n" if lines else ""
    lines += [
        "tracepoint:syscalls:sys_enter_fsync { @sy_c[tid] = nsecs; @sy_q[tid] = args->fd << 1; }",
        "tracepoint:syscalls:sys_enter_fdatasync {",
        "  @sy_c[tid] = nsecs; @sy_q[tid] = (args->fd << 1) | 1;",
        "}",
    ]
    if "xfs" in have:
        lines += [
            "tracepoint:xfs:xfs_file_fsync /@sy_c[tid]/ {",
            "  @sy_x[tid] = args->dev; @sy_xi[tid] = args->ino;",
            "}",
        ]
    lines += [
        "tracepoint:syscalls:sys_exit_fsync, tracepoint:syscalls:sys_exit_fdatasync",
        "/@sy_c[tid]/ {",
        "    $v = nsecs - (uint64)@sy_c[tid]; $q = @sy_q[tid];",
        "    delete(@sy_c[tid]); delete(@sy_q[tid]);",
    ]
    if "xfs" in have:
        lines += [
            "    $d = @sy_x[tid]; $i = @sy_xi[tid];",
            "    if ($d) { delete(@sy_x[tid]); delete(@sy_xi[tid]); $k = $q & 1; }",
            f"    else {{ $i = $q >> 1; $k = ($q & 1) | {BY_FD}; }}",
        ]
    else:
        lines.append(f"    $d = 0; $i = $q >> 1; $k = ($q & 1) | {BY_FD};")
    lines += [*_record("$d", "$i", "$k"), "}"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SyncStat:
    """One (filesystem, file, pid, call) over one interval."""

    comm: str
    hist: Histogram

    def merged(self, other: SyncStat) -> SyncStat:
        return SyncStat(other.comm or self.comm, self.hist.merged(other.hist))


SyncKey = tuple[int, int, int, int]
"""``(dev, ino, pid, call)`` as the maps key them (``dev`` the kernel's ``dev_t``)."""


@dataclass(frozen=True)
class SyncTraced:
    """The syncs the tracer saw over some ticks."""

    stats: Mapping[SyncKey, SyncStat]


EMPTY = SyncTraced(MappingProxyType({}))


def parse_sync_maps(maps: Mapping[str, Mapping[str, object]]) -> SyncTraced:
    """One tick's printed maps as a :class:`SyncTraced`; a key that is not the program's
    shape raises ``ValueError`` quoting it."""
    buckets: dict[tuple[SyncKey, str], dict[int, int]] = {}
    sums: dict[tuple[SyncKey, str], int] = {}
    tops: dict[tuple[SyncKey, str], int] = {}
    for name, parts, out in (("@sy_h", 6, None), ("@sy_s", 4, sums), ("@sy_m", 4, tops)):
        for text, value in (maps.get(name) or {}).items():
            if not isinstance(value, int):
                continue
            cut = text.split(",", parts)
            try:
                if len(cut) != parts + 1:
                    raise ValueError
                dev, ino, pid, call = (int(x) for x in cut[:4])
                key = ((dev, ino, pid, call), cut[-1])
                if out is None:
                    index = bucket_index(int(cut[4]), int(cut[5]))
                    into = buckets.setdefault(key, {})
                    into[index] = into.get(index, 0) + value
                else:
                    out[key] = out.get(key, 0) + value
            except ValueError:
                raise ValueError(f"bad {name} key from the tracer: {text[:80]!r}") from None
    stats: dict[SyncKey, SyncStat] = {}
    for named, counts in buckets.items():
        hist = Histogram(MappingProxyType(counts), sums.get(named, 0), tops.get(named, 0))
        sync_key, comm = named
        stat = SyncStat(comm, hist)
        stats[sync_key] = stats[sync_key].merged(stat) if sync_key in stats else stat
    return SyncTraced(MappingProxyType(stats))


def merge_sync(a: object, b: object) -> SyncTraced:
    """Two intervals' syncs together."""
    if not isinstance(a, SyncTraced) or not a.stats:
        return b if isinstance(b, SyncTraced) else EMPTY
    if not isinstance(b, SyncTraced) or not b.stats:
        return a
    out = dict(a.stats)
    for key, stat in b.stats.items():
        out[key] = out[key].merged(stat) if key in out else stat
    return SyncTraced(MappingProxyType(out))


def sync_trace_program(groups: Iterable[str]) -> TraceProgram | None:
    """What the sync part adds to the tracer, for the tracepoint ``groups`` there are; None
    when it can time nothing here."""
    text = sync_program_text(groups)
    return TraceProgram(text, MAPS, parse_sync_maps, merge_sync) if text else None
