"""The hot-files frame part: each device's busiest files, their processes, and whose dirty
pages the flusher wrote back.

As root the tracer counts the I/O (:mod:`.file_trace`); this reader turns a frame's counts
into files per whole disk (a filesystem on a partition shows under its disk, naming the
partition), names the busiest from the processes holding them open (:mod:`.file_names`),
shares written-back bytes among their dirtiers (:mod:`.file_dirtiers`) and leaves the device's
other bytes (metadata, the journal, files past the list) as ``other``. Without root it
estimates from the user's own processes' file positions (:mod:`.file_estimate`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from iotop_plus.sampling.files.model import (
    MAX_DIRTIERS,
    MAX_FILES,
    MAX_PROCESSES,
    DeviceFiles,
    Dirtier,
    FileEntry,
    FileProcess,
    FilesFrame,
    device_json,
    frame_from_json,
    frame_to_json,
)
from iotop_plus.sampling.frame.part import FramePart, Metric, ReadContext, TraceProgram

if TYPE_CHECKING:
    from iotop_plus.roots import Roots
    from iotop_plus.sampling.files.trace import FileCounts

SECTOR = 512
MAX_TOTALS = 100_000
"""Files whose running totals are kept, at most (the oldest forgotten first)."""
MAX_COMMS = 8192
"""Command names remembered (of processes seen doing file I/O), at most."""
ESTIMATED_NOTE = (
    "files: estimated from your own processes' file positions (page-cache hits included); "
    "run as root for device I/O per file"
)


@dataclass
class _Acc:
    read: int = 0
    dirtied: int = 0
    written: int = 0
    direct_read: int = 0
    direct_write: int = 0
    pids: dict[int, list[int]] = field(default_factory=dict)
    """pid -> [read, dirtied, direct]."""

    def add_pid(self, pid: int, slot: int, n: int) -> None:
        self.pids.setdefault(pid, [0, 0, 0])[slot] += n

    @property
    def busy(self) -> tuple[int, int]:
        return (self.read + self.written + self.direct_read + self.direct_write, self.dirtied)


def _devnum(dev: int) -> tuple[int, int]:
    """A kernel dev_t (``MKDEV``: major << 20 | minor) as (major, minor)."""
    return dev >> 20, dev & 0xFFFFF


class FilesReader:
    """One source's reader of the hot-files part."""

    def __init__(self, roots: Roots) -> None:
        from iotop_plus.sampling.files.dirtiers import DirtyWindow, window_s
        from iotop_plus.sampling.files.names import FileNames
        from iotop_plus.sampling.processes.task_cgroups import TaskCgroups

        self.roots = roots
        self.names = FileNames(roots)
        self.window = DirtyWindow(window_s(roots))
        self.cgroups = TaskCgroups(roots)
        self.comms: dict[int, str] = {}
        self.totals: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self.exited: Mapping[int, str] = {}
        """Command names of the processes that exited in the frame being read."""
        self.root = os.geteuid() == 0
        self.estimate: Any = None

    def close(self) -> None:
        """Nothing held open between frames."""

    def read(self, ctx: ReadContext) -> tuple[FilesFrame | None, tuple[Any, ...]]:
        """This frame's files (see the module's docstring)."""
        from iotop_plus.sampling.files.trace import FileCounts

        now = ctx.sample.monotonic
        interval = now - ctx.previous.monotonic if ctx.previous is not None else 0.0
        if not self.root:
            return self._estimated(ctx, interval), ()
        counts = ctx.traced
        if not isinstance(counts, FileCounts):
            note = f"files: {ctx.tracer_status}" if ctx.tracer_status else None
            return FilesFrame(interval_s=interval, note=note or "files: waiting for the tracer"), ()
        self.exited = counts.exited  # their pids may be another process's already
        for pid, comm in counts.exited.items():
            self._remember(pid, comm)
        self.window.add(now, counts.dirtied)
        accs = self._accumulate(counts)
        shares = self.window.share(counts.written)
        devices = self._devices(ctx, accs, shares)
        note = (
            f"files: single-page reads and writes counted one in {counts.sample}"
            if counts.sample > 1
            else None
        )
        if counts.filled:
            note = "files: the tracer's maps filled; some I/O is in other"
        return FilesFrame(
            MappingProxyType(devices), interval, counts.sample, False, counts.filled, note
        ), ()

    @staticmethod
    def _accumulate(counts: FileCounts) -> dict[tuple[int, int], _Acc]:
        accs: dict[tuple[int, int], _Acc] = {}

        def acc(dev: int, ino: int) -> _Acc:
            return accs.setdefault((dev, ino), _Acc())

        for (dev, ino, pid), n in counts.read.items():
            a = acc(dev, ino)
            a.read += n
            a.add_pid(pid, 0, n)
        for (dev, ino, pid), n in counts.dirtied.items():
            a = acc(dev, ino)
            a.dirtied += n
            a.add_pid(pid, 1, n)
        for (dev, ino), n in counts.written.items():
            acc(dev, ino).written += n
        for (dev, ino, pid), n in counts.direct_read.items():
            a = acc(dev, ino)
            a.direct_read += n
            a.add_pid(pid, 2, n)
        for (dev, ino, pid), n in counts.direct_write.items():
            a = acc(dev, ino)
            a.direct_write += n
            a.add_pid(pid, 2, n)
        return accs

    def _devices(
        self,
        ctx: ReadContext,
        accs: Mapping[tuple[int, int], _Acc],
        shares: Mapping[tuple[int, int], Mapping[int, int]],
    ) -> dict[str, DeviceFiles]:
        by_num = {(c.major, c.minor): name for name, c in ctx.sample.counters.items()}
        grouped: dict[str, list[tuple[str, int, int, _Acc]]] = {}
        written: dict[str, int] = {}
        for (dev, ino), a in accs.items():
            num = _devnum(dev)
            part = by_num.get(num)
            if part is None:
                continue  # a filesystem on no block device (tmpfs, the bdev pseudo fs)
            disk = self._disk_of(ctx, part)
            grouped.setdefault(disk, []).append((part, ino, dev, a))
            written[disk] = written.get(disk, 0) + a.written
        out: dict[str, DeviceFiles] = {}
        for disk, entries in grouped.items():
            entries.sort(key=lambda e: e[3].busy, reverse=True)
            top = entries[:MAX_FILES]
            wanted = {(*_devnum(dev), ino): (part, a) for part, ino, dev, a in top}
            paths = self.names.names(wanted, {k: a.pids for k, (_p, a) in wanted.items()})
            files = tuple(
                self._entry(ctx, key, part, a, paths.get(key)) for key, (part, a) in wanted.items()
            )
            by_pid: dict[int, int] = {}
            for _part, ino, dev, _a in entries:
                for pid, n in shares.get((dev, ino), {}).items():
                    by_pid[pid] = by_pid.get(pid, 0) + n
            other_r, other_w = self._other(ctx, disk, files)
            out[disk] = DeviceFiles(
                files, other_r, other_w, self._dirtiers(by_pid, written.get(disk, 0))
            )
        return out

    @staticmethod
    def _disk_of(ctx: ReadContext, name: str) -> str:
        dev = ctx.inventory.get(name)
        return dev.parent if dev is not None and dev.parent else name

    def _entry(
        self, ctx: ReadContext, key: tuple[int, int, int], part: str, a: _Acc, path: str | None
    ) -> FileEntry:
        from iotop_plus.sampling.files.names import not_open

        if path is None:
            dev = ctx.inventory.get(part)
            mount = dev.mounts[0] if dev is not None and dev.mounts else f"/dev/{part}"
            path = not_open(key[2], mount)
        procs = sorted(a.pids.items(), key=lambda kv: sum(kv[1]), reverse=True)[:MAX_PROCESSES]
        was = self.totals.pop(key, (0, 0, 0))
        if len(self.totals) >= MAX_TOTALS:
            self.totals.pop(next(iter(self.totals)))
        total = self.totals[key] = (
            was[0] + a.read,
            was[1] + a.written,
            was[2] + a.direct_read + a.direct_write,
        )
        return FileEntry(
            path,
            key[2],
            part,
            a.read,
            a.written,
            a.direct_read,
            a.direct_write,
            a.dirtied,
            tuple(FileProcess(pid, self._comm(pid), r, d, x) for pid, (r, d, x) in procs),
            key in self.names.cache,
            total,
        )

    @staticmethod
    def _other(
        ctx: ReadContext, disk: str, files: Iterable[FileEntry]
    ) -> tuple[int | None, int | None]:
        now = ctx.sample.counters.get(disk)
        was = ctx.previous.counters.get(disk) if ctx.previous is not None else None
        if now is None or was is None:
            return None, None
        read = (now.values[2] - was.values[2]) * SECTOR
        write = (now.values[6] - was.values[6]) * SECTOR
        if read < 0 or write < 0:
            return None, None
        files = list(files)
        got_r = sum(f.read_bytes + f.direct_read_bytes for f in files)
        got_w = sum(f.write_bytes + f.direct_write_bytes for f in files)
        return max(read - got_r, 0), max(write - got_w, 0)

    def _dirtiers(self, by_pid: Mapping[int, int], written: int) -> tuple[Dirtier, ...]:
        if not by_pid or written <= 0:
            return ()
        top = sorted(by_pid.items(), key=lambda kv: kv[1], reverse=True)[:MAX_DIRTIERS]
        cgroups = self.cgroups.update({(pid, 0): None for pid, _n in top})
        return tuple(
            Dirtier(
                pid,
                self._comm(pid),
                self._cmdline(pid),
                cgroups.get((pid, 0)),
                n,
                min(n / written, 1.0),
            )
            for pid, n in top
        )

    def _remember(self, pid: int, comm: str) -> None:
        if len(self.comms) >= MAX_COMMS:
            self.comms.pop(next(iter(self.comms)))
        self.comms[pid] = comm

    def _comm(self, pid: int) -> str:
        gone = self.exited.get(pid)
        if gone is not None:
            return gone
        try:
            with open(f"{self.roots.proc}/{pid}/comm", "rb") as fh:
                comm = os.fsdecode(fh.read(64).rstrip(b"\n"))
        except OSError:
            return self.comms.get(pid, "?")
        self._remember(pid, comm)
        return comm

    def _cmdline(self, pid: int) -> str | None:
        try:
            with open(f"{self.roots.proc}/{pid}/cmdline", "rb") as fh:
                raw = fh.read(4096)
        except OSError:
            return None
        return os.fsdecode(raw.rstrip(b"\0").replace(b"\0", b" ")) or None

    def _estimated(self, ctx: ReadContext, interval: float) -> FilesFrame:
        from iotop_plus.sampling.files.estimate import PositionEstimate

        if self.estimate is None:
            self.estimate = PositionEstimate(self.roots)
        moved = self.estimate.read()
        by_num = {(c.major, c.minor): name for name, c in ctx.sample.counters.items()}
        accs: dict[tuple[int, int, int], tuple[str, _Acc]] = {}
        for (major, minor, ino, pid), (r, w) in moved.items():
            part = by_num.get((major, minor))
            if part is None:
                continue
            _p, a = accs.setdefault((major, minor, ino), (part, _Acc()))
            a.read += r
            a.written += w
            a.add_pid(pid, 0, r)
            a.add_pid(pid, 1, w)
        grouped: dict[str, list[tuple[tuple[int, int, int], str, _Acc]]] = {}
        for key, (part, a) in accs.items():
            grouped.setdefault(self._disk_of(ctx, part), []).append((key, part, a))
        devices: dict[str, DeviceFiles] = {}
        for disk, entries in grouped.items():
            entries.sort(key=lambda e: e[2].busy, reverse=True)
            top = entries[:MAX_FILES]
            paths = self.names.names([k for k, _p, _a in top], {k: a.pids for k, _p, a in top})
            devices[disk] = DeviceFiles(
                tuple(self._entry(ctx, k, part, a, paths.get(k)) for k, part, a in top)
            )
        return FilesFrame(MappingProxyType(devices), interval, 1, True, False, ESTIMATED_NOTE)


def writeback_dirtiers(value: FilesFrame | None, device: str) -> list[dict[str, Any]] | None:
    """``dirtiers[]`` of ``device``'s writeback issuer entry: whose dirty pages were written
    back in the frame, most first; None when the frame carries no files."""
    if value is None:
        return None
    dev = value.of(device)
    return [d.to_json() for d in dev.dirtiers] if dev is not None else []


class FilesPart(FramePart[FilesFrame]):
    """Each device's busiest files (``snapshot --files``, ``record --files``, key ``F``)."""

    key: ClassVar[str] = "files"
    letter: ClassVar[str | None] = "F"
    record_flag: ClassVar[str | None] = "files"
    live_only: ClassVar[bool] = True

    def __init__(self) -> None:
        self.export_top = MAX_FILES
        """Files of each device the exporter names (``serve --files N``; labels by path)."""

    def reader(self, roots: Roots) -> FilesReader:
        """A new reader for one source."""
        return FilesReader(roots)

    def trace(self, roots: Roots) -> TraceProgram | None:
        """The probes of :mod:`.trace` for the tracepoint groups this kernel has (root only:
        without it the reader estimates)."""
        if os.geteuid() != 0:
            return None
        from iotop_plus.sampling.files.trace import GROUPS, parser
        from iotop_plus.sampling.sync.program import tracepoint_groups

        return parser(groups=tracepoint_groups(roots.sys) or GROUPS)

    def to_json(self, value: FilesFrame) -> Any:
        """The value as recorded."""
        return frame_to_json(value)

    def from_json(self, doc: Any) -> FilesFrame | None:
        """A recorded value back; None for a document that is not one."""
        return frame_from_json(doc)

    def disk_json(self, value: FilesFrame, device: str) -> Mapping[str, Any]:
        """``disk[].files`` (and ``files_other``, what the device moved that no listed file
        did; ``files_sample`` and ``files_estimated`` say how the figures were taken)."""
        dev = value.of(device)
        doc = device_json(dev) if dev is not None else {"files": []}
        doc.pop("dirtiers", None)
        doc["files_sample"] = value.sample
        doc["files_estimated"] = value.estimated
        return doc

    def metrics(self, value: FilesFrame) -> Iterable[Metric]:
        """The running totals of each device's first :attr:`export_top` files."""
        for device, dev in value.devices.items():
            for f in dev.files[: self.export_top]:
                labels = {"device": device, "path": f.path}
                for name, n, what in (
                    ("read", f.totals[0], "read from the device through the page cache"),
                    ("written", f.totals[1], "written back to the device"),
                    ("direct", f.totals[2], "moved by direct I/O"),
                ):
                    yield Metric(
                        f"iotop_plus_file_{name}_bytes_total",
                        "counter",
                        f"Bytes of the file {what} (the top files of each device).",
                        labels,
                        float(n),
                    )
