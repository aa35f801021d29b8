"""The kernel's failed block requests per device, counted since this process started.

Two sources: the latency tracer's ``block_rq_error``
tracepoint while it runs, else the kernel log, ``/dev/kmsg`` (root, read non-blocking from
its end when the counter starts). The log lines come from ``blk_print_req_error``
(``block/blk-core.c``), for example::

    critical space allocation error, dev loop7, sector 8192 op 0x1:(WRITE) flags 0xc800 ...
    blk_update_request: I/O error, dev sda, sector 2048 op 0x0:(READ) flags 0x0 ...   (5.x)
    end_request: I/O error, dev sda, sector 2048                                     (2.6-4.x)

The kernel rate-limits those lines (printk_ratelimited: about 10 per 5 s), so under a burst
the log counts fewer errors than happened; the tracer counts every one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from iotop_plus.sampling.latency.parser import TracerBatch

KMSG = "/dev/kmsg"
"""The kernel log, one record per read."""
MAX_RECORDS_PER_READ = 10_000
"""Records one frame takes from the log at most (the rest wait for the next frame)."""

_ERROR_LINE = re.compile(
    r"(?:^|: )(?P<kind>[A-Za-z][A-Za-z /]*?) error, dev (?P<dev>[^,\s]+), sector (?P<sector>\d+)"
    r"(?: op 0x[0-9a-f]+:\((?P<op>[A-Z_]+)\))?"
)

#: The kernel's ``blk_status_t`` errors as negative errnos (``block/blk-core.c`` blk_errors[]),
#: for the tracepoint's ``error`` field.
ERRNO_KINDS: dict[int, str] = {
    -errno.EOPNOTSUPP: "operation not supported",
    -errno.ETIMEDOUT: "timeout",
    -errno.ENOSPC: "critical space allocation",
    -errno.ENOLINK: "recoverable transport",
    -errno.EREMOTEIO: "critical target",
    -errno.EBADE: "critical nexus",
    -errno.ENODATA: "critical medium",
    -errno.EILSEQ: "protection",
    -errno.ENOMEM: "kernel resource",
    -errno.EBUSY: "device resource",
    -errno.EAGAIN: "nonblocking retry",
    -errno.EIO: "I/O",
}


@dataclass(frozen=True)
class IoError:
    """One failed request the kernel reported."""

    device: str
    """Kernel name of the device, e.g. ``loop7``."""
    kind: str
    """The kernel's words for it, e.g. ``critical medium``, ``I/O``."""
    op: str | None = None
    """``READ``, ``WRITE``, ... where the line says."""


def parse_kmsg_record(record: str) -> IoError | None:
    """The failed request one ``/dev/kmsg`` record reports (``PRI,SEQ,TS,FLAGS;text``), or None."""
    text = record.split(";", 1)[1] if ";" in record.split("\n", 1)[0] else record
    found = _ERROR_LINE.search(text.split("\n", 1)[0])
    if found is None or found["dev"].startswith("?"):
        return None
    kind = found["kind"].strip()
    if kind.lower().startswith("buffer"):  # "Buffer I/O error on dev": a filesystem's view
        return None
    return IoError(found["dev"], kind, found["op"])


class KmsgErrors:
    """Reads the kernel log's new records without blocking and keeps the failed requests."""

    def __init__(self, path: str = KMSG) -> None:
        """Open ``path`` at its end; :attr:`problem` says why when it cannot be read."""
        self.problem: str | None = None
        """Why the log cannot be read (one line), or None."""
        self._fd: int | None = None
        try:
            self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            os.lseek(self._fd, 0, os.SEEK_END)  # only errors from now on
        except OSError as exc:
            self.close()
            why = "run as root" if exc.errno in (errno.EACCES, errno.EPERM) else exc.strerror
            self.problem = f"I/O errors: cannot read {path} ({why})"

    def read(self) -> list[IoError]:
        """The failed requests logged since the previous call."""
        out: list[IoError] = []
        fd = self._fd
        if fd is None:
            return out
        for _ in range(MAX_RECORDS_PER_READ):
            try:
                chunk = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # records overwritten before we read them
                    continue
                self.problem = f"I/O errors: reading {KMSG} failed ({exc.strerror})"
                self.close()
                break
            if not chunk:
                break
            found = parse_kmsg_record(chunk.decode("utf-8", "replace"))
            if found is not None:
                out.append(found)
        return out

    def close(self) -> None:
        """Release the log."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


class ErrorCounts:
    """Failed requests per device since the counter started, and what is new since the
    previous frame (by device and kind).

    Only devices of the frame's inventory are counted, and a device that leaves it is
    forgotten: the kernel log names whatever it likes, and every new name kept for ever grew
    the process without bound under a flood of them.
    """

    def __init__(self) -> None:
        """Start at zero for every device."""
        self.totals: dict[str, int] = {}
        """Errors per device since the start (devices of the last inventory only)."""

    def add(self, errors: Iterable[IoError], devices: Container[str]) -> dict[tuple[str, str], int]:
        """Count ``errors`` on ``devices`` (the inventory's names); returns the new ones per
        (device, kind)."""
        self._keep(devices)
        new: dict[tuple[str, str], int] = {}
        for e in errors:
            if e.device in devices:
                new[(e.device, e.kind)] = new.get((e.device, e.kind), 0) + 1
                self.totals[e.device] = self.totals.get(e.device, 0) + 1
        return new

    def add_counts(
        self, counts: Mapping[tuple[str, str], int], devices: Container[str]
    ) -> dict[tuple[str, str], int]:
        """Count errors already summed per (device, kind) (the tracer's map), on ``devices``."""
        self._keep(devices)
        new = {k: n for k, n in counts.items() if n and k[0] in devices}
        for (device, _kind), n in new.items():
            self.totals[device] = self.totals.get(device, 0) + n
        return new

    def _keep(self, devices: Container[str]) -> None:
        for gone in [name for name in self.totals if name not in devices]:
            del self.totals[gone]


def tracer_errors(
    batches: Iterable[TracerBatch], names: Mapping[int, str]
) -> Mapping[tuple[str, str], int]:
    """The tracer's failed requests of ``batches`` per (device name, kind), for the devices
    in ``names`` (kernel dev_t -> name)."""
    out: dict[tuple[str, str], int] = {}
    for batch in batches:
        for (dev, error), n in batch.errors.items():
            name = names.get(dev)
            if name is not None:
                key = (name, ERRNO_KINDS.get(error, f"errno {-error}"))
                out[key] = out.get(key, 0) + n
    return MappingProxyType(out)
