"""The hot-files part's value: each device's busiest files over one frame, and who wrote
back what (the dirtiers of the flusher's writes), with its JSON both ways.

Bytes are over the frame's interval. ``read_bytes`` are device reads through the page cache,
``write_bytes`` bytes written back to the device (by the flusher or a sync), ``direct_bytes``
direct I/O both ways; ``dirtied_bytes`` buffered writes into the page cache (which reach the
device later, as some frame's ``write_bytes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

MAX_FILES = 20
"""Files listed per device, busiest first."""
MAX_PROCESSES = 8
"""Processes listed per file, busiest first."""
MAX_DIRTIERS = 10
"""Dirtiers listed per device."""


@dataclass(frozen=True)
class FileProcess:
    """One process's I/O on one file over the frame."""

    pid: int
    comm: str
    read_bytes: int = 0
    dirtied_bytes: int = 0
    direct_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "comm": self.comm,
            "read_bytes": self.read_bytes,
            "dirtied_bytes": self.dirtied_bytes,
            "direct_bytes": self.direct_bytes,
        }


@dataclass(frozen=True)
class FileEntry:
    """One file's I/O on its device over the frame."""

    path: str
    """Its path as a process holding it open sees it, or ``inode N on MOUNT (not open)``."""
    inode: int
    partition: str
    """The block device its filesystem is on (a partition, or the whole disk)."""
    read_bytes: int = 0
    write_bytes: int = 0
    direct_read_bytes: int = 0
    direct_write_bytes: int = 0
    dirtied_bytes: int = 0
    processes: tuple[FileProcess, ...] = ()
    is_open: bool = True
    """False: nobody held it open at the frame's end (``path`` names its inode)."""
    totals: tuple[int, int, int] = (0, 0, 0)
    """Bytes read, written back and moved by direct I/O since the reader first counted this
    file (the exporter's counters)."""

    @property
    def direct_bytes(self) -> int:
        """Direct I/O both ways."""
        return self.direct_read_bytes + self.direct_write_bytes

    @property
    def busy(self) -> int:
        """Bytes it moved to or from the device (the order of the list)."""
        return self.read_bytes + self.write_bytes + self.direct_bytes

    def to_json(self) -> dict[str, Any]:
        """One entry of ``disk[].files`` (its documented keys, plus the split of direct I/O and
        the bytes dirtied)."""
        return {
            "path": self.path,
            "inode": self.inode,
            "partition": self.partition,
            "read_bytes": self.read_bytes,
            "write_bytes": self.write_bytes,
            "direct_bytes": self.direct_bytes,
            "direct_read_bytes": self.direct_read_bytes,
            "direct_write_bytes": self.direct_write_bytes,
            "dirtied_bytes": self.dirtied_bytes,
            "open": self.is_open,
            "processes": [p.to_json() for p in self.processes],
            "totals": list(self.totals),
        }


@dataclass(frozen=True)
class Dirtier:
    """A process whose dirtied pages the flusher (or a sync) wrote back in the frame."""

    pid: int
    comm: str
    cmdline: str | None
    cgroup: str | None
    bytes: int
    """Bytes of its dirtying written back in the frame (an inode's written bytes shared among
    its dirtiers by what each dirtied)."""
    share: float
    """Its part of the device's written-back bytes (0..1)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "comm": self.comm,
            "cmdline": self.cmdline,
            "cgroup": self.cgroup,
            "bytes": self.bytes,
            "share": round(self.share, 4),
        }


@dataclass(frozen=True)
class DeviceFiles:
    """One whole disk's files over the frame."""

    files: tuple[FileEntry, ...] = ()
    """At most :data:`MAX_FILES`, busiest first."""
    other_read_bytes: int | None = None
    """Bytes the device read (diskstats) that no listed file did: metadata, the journal,
    files past the list; None when not known."""
    other_write_bytes: int | None = None
    dirtiers: tuple[Dirtier, ...] = ()
    """Whose dirtying the written-back bytes were, most first."""


@dataclass(frozen=True)
class FilesFrame:
    """The part's value: files per whole disk (partitions show under their disk)."""

    devices: Mapping[str, DeviceFiles] = field(default_factory=lambda: MappingProxyType({}))
    interval_s: float = 0.0
    sample: int = 1
    """Single-page reads and writes were counted one in ``sample`` (scaled back up)."""
    estimated: bool = False
    """From the file positions of this user's own processes (not root: no tracer)."""
    filled: bool = False
    """The tracer's maps filled: some I/O was not counted (it is in ``other``)."""
    note: str | None = None
    """One line for people: why there are no or only estimated figures, or the sampling."""

    def of(self, device: str) -> DeviceFiles | None:
        """The files of ``device`` (a whole disk), if any."""
        return self.devices.get(device)


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _str(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _process(doc: object) -> FileProcess | None:
    if not isinstance(doc, Mapping) or not isinstance(doc.get("pid"), int):
        return None
    return FileProcess(
        doc["pid"],
        _str(doc.get("comm")) or "",
        _int(doc.get("read_bytes")),
        _int(doc.get("dirtied_bytes")),
        _int(doc.get("direct_bytes")),
    )


def file_from_json(doc: object) -> FileEntry | None:
    """An entry of :meth:`FileEntry.to_json` back; None when it is not one."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("path"), str):
        return None
    procs = doc.get("processes")
    got = [_process(p) for p in procs[:MAX_PROCESSES]] if isinstance(procs, list) else []
    return FileEntry(
        doc["path"],
        _int(doc.get("inode")),
        _str(doc.get("partition")) or "",
        _int(doc.get("read_bytes")),
        _int(doc.get("write_bytes")),
        _int(doc.get("direct_read_bytes")),
        _int(doc.get("direct_write_bytes")),
        _int(doc.get("dirtied_bytes")),
        tuple(p for p in got if p is not None),
        doc.get("open") is not False,
        _totals(doc.get("totals")),
    )


def _totals(doc: object) -> tuple[int, int, int]:
    if isinstance(doc, list) and len(doc) == 3:
        return _int(doc[0]), _int(doc[1]), _int(doc[2])
    return 0, 0, 0


def _dirtier(doc: object) -> Dirtier | None:
    if not isinstance(doc, Mapping) or not isinstance(doc.get("pid"), int):
        return None
    share = doc.get("share")
    return Dirtier(
        doc["pid"],
        _str(doc.get("comm")) or "",
        _str(doc.get("cmdline")),
        _str(doc.get("cgroup")),
        _int(doc.get("bytes")),
        float(share) if isinstance(share, (int, float)) and 0 <= share <= 1 else 0.0,
    )


def device_json(dev: DeviceFiles) -> dict[str, Any]:
    """A device's files as recorded (and the keys ``snapshot`` adds to its entry)."""
    return {
        "files": [f.to_json() for f in dev.files],
        "files_other": {"read_bytes": dev.other_read_bytes, "write_bytes": dev.other_write_bytes},
        "dirtiers": [d.to_json() for d in dev.dirtiers],
    }


def frame_to_json(value: FilesFrame) -> dict[str, Any]:
    """The whole value as recorded."""
    return {
        "devices": {name: device_json(dev) for name, dev in value.devices.items()},
        "interval_s": value.interval_s,
        "sample": value.sample,
        "estimated": value.estimated,
        "filled": value.filled,
        "note": value.note,
    }


def _opt_int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def frame_from_json(doc: object, max_devices: int = 100_000) -> FilesFrame | None:
    """A value of :func:`frame_to_json` back; None for a document that is not one."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("devices"), Mapping):
        return None
    devices: dict[str, DeviceFiles] = {}
    for name, dev in list(doc["devices"].items())[:max_devices]:
        if not isinstance(name, str) or not isinstance(dev, Mapping):
            continue
        files = dev.get("files")
        got = [file_from_json(f) for f in files[:MAX_FILES]] if isinstance(files, list) else []
        other = dev.get("files_other")
        other = other if isinstance(other, Mapping) else {}
        dirt = dev.get("dirtiers")
        ds = [_dirtier(d) for d in dirt[:MAX_DIRTIERS]] if isinstance(dirt, list) else []
        devices[name] = DeviceFiles(
            tuple(f for f in got if f is not None),
            _opt_int(other.get("read_bytes")),
            _opt_int(other.get("write_bytes")),
            tuple(d for d in ds if d is not None),
        )
    interval = doc.get("interval_s")
    sample = doc.get("sample")
    return FilesFrame(
        MappingProxyType(devices),
        float(interval) if isinstance(interval, (int, float)) and interval >= 0 else 0.0,
        sample if isinstance(sample, int) and sample >= 1 else 1,
        doc.get("estimated") is True,
        doc.get("filled") is True,
        _str(doc.get("note")),
    )
