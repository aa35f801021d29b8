"""The named fio probes: a database benchmark suite.

Each preset is one fio job pattern with its reason for existing. The user may edit the
parameters in :class:`ProbeParams` (bs, iodepth, numjobs, runtime, size, direct, ioengine);
the pattern itself (rw, mix, fsync) stays what the preset is named for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

#: A quick probe: short enough to try things interactively, too short to quote.
QUICK_RUNTIME_S = 10
#: The runtime range (seconds) worth running before quoting a number.
QUOTE_RUNTIME_S = (60, 300)
#: The engine tried first; libaio is the fallback when io_uring is unavailable.
DEFAULT_ENGINE = "io_uring"
FALLBACK_ENGINE = "libaio"

_BS_RE = re.compile(r"^(\d+)([kKmM]?)$")
_ENGINE_RE = re.compile(r"^[a-z0-9_]+$")


@dataclass(frozen=True)
class ProbeParams:
    """The parameters a user may edit before a probe."""

    bs: str
    """Block size in fio's notation (``4k``, ``256k``, ``1m``)."""
    iodepth: int
    """I/Os in flight per job (the queue depth)."""
    numjobs: int
    """Parallel jobs (threads) issuing I/O, reported as one group."""
    runtime_s: int = QUICK_RUNTIME_S
    """Seconds to run (time based)."""
    size_mb: int = 1024
    """Size of the probe file in MiB; capped from free space, or the device size."""
    direct: bool = True
    """O_DIRECT: bypass the page cache so the device, not RAM, is measured."""
    ioengine: str = DEFAULT_ENGINE
    """fio I/O engine."""

    @property
    def bs_bytes(self) -> int:
        """The block size in bytes (a plan may run sizes no user edit can give, such as
        etcd's 2300-byte writes)."""
        return _bytes(self.bs)

    @property
    def total_qd(self) -> int:
        """Outstanding I/Os across all jobs: numjobs x iodepth."""
        return self.iodepth * self.numjobs

    @property
    def is_quick(self) -> bool:
        """Shorter than the minimum for a number worth quoting (:data:`QUOTE_RUNTIME_S`)."""
        return self.runtime_s < QUOTE_RUNTIME_S[0]


@dataclass(frozen=True)
class Preset:
    """One named probe: a fio job pattern and why it is worth running."""

    name: str
    """Short name for the command line (``wal``)."""
    title: str
    """Human title (``WAL / commit latency``)."""
    rw: str
    """fio ``rw=`` pattern."""
    params: ProbeParams
    """Default parameters."""
    rationale: str
    """Why this pattern, in plain words (shown in the UI)."""
    rwmixread: int | None = None
    """Read share in percent for mixed patterns."""
    fsync: int = 0
    """fio ``fsync=``: fsync after this many writes (0: never)."""
    fdatasync: int = 0
    """fio ``fdatasync=``: fdatasync after this many writes (0: never)."""
    sync_io: str = ""
    """fio ``sync=``: ``dsync`` opens with O_DSYNC, ``sync`` with O_SYNC ("": neither)."""

    @property
    def writes(self) -> bool:
        """Whether the pattern writes (so a raw device target needs the write rules)."""
        return self.rw not in ("read", "randread")

    @property
    def pattern(self) -> str:
        """One line: ``8k randread, 8 jobs x QD4``."""
        p = self.params
        mix = f" {self.rwmixread}/{100 - self.rwmixread}" if self.rwmixread is not None else ""
        sync = f", fsync={self.fsync}" if self.fsync else ""
        sync += f", fdatasync={self.fdatasync}" if self.fdatasync else ""
        sync += f", sync={self.sync_io}" if self.sync_io else ""
        jobs = f"{p.numjobs} jobs x QD{p.iodepth}" if p.numjobs > 1 else f"QD{p.iodepth}"
        return f"{p.bs} {self.rw}{mix}{sync}, {jobs}"


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "wal",
            "WAL / commit latency",
            "write",
            ProbeParams(bs="8k", iodepth=1, numjobs=1),
            "A database commit waits for its log write to be durable: 8k sequential writes, "
            "each followed by fsync, one at a time. The fsync latency is the commit latency; "
            "a device with a volatile cache and no power-loss protection shows it here.",
            fsync=1,
        ),
        Preset(
            "index",
            "Index lookups",
            "randread",
            ProbeParams(bs="8k", iodepth=4, numjobs=8),
            "B-tree lookups read random 8k pages from many sessions at once: 8 jobs x QD4 "
            "approximates a busy OLTP read path. Watch p99 latency more than IOPS.",
        ),
        Preset(
            "seqscan",
            "Sequential scan",
            "read",
            ProbeParams(bs="256k", iodepth=16, numjobs=2),
            "Full table scans and backups read large sequential blocks: 256k x QD16 in two "
            "streams measures the bandwidth a scan can reach.",
        ),
        Preset(
            "mixed",
            "Mixed OLTP",
            "randrw",
            ProbeParams(bs="8k", iodepth=4, numjobs=8),
            "A transactional workload mixes reads and writes of 8k pages, 70/30: writes "
            "contend with reads, which is where write-back throttling and GC show up.",
            rwmixread=70,
        ),
        Preset(
            "randread",
            "Peak random read",
            "randread",
            ProbeParams(bs="4k", iodepth=32, numjobs=1),
            "The datasheet number: 4k random reads at QD32. It tells what the device can do "
            "at best, not what a database will see.",
        ),
        Preset(
            "throughput",
            "Throughput",
            "rw",
            ProbeParams(bs="1m", iodepth=32, numjobs=1),
            "Large sequential reads and writes at QD32, half and half: the bandwidth ceiling "
            "for bulk loads, backups and restores.",
            rwmixread=50,
        ),
    )
}

#: The parameters that ``--set`` and the UI may change, with a one-line meaning each.
EDITABLE: dict[str, str] = {
    "bs": "block size, e.g. 4k, 256k, 1m",
    "iodepth": "I/Os in flight per job, 1-1024",
    "numjobs": "parallel jobs, 1-64",
    "runtime": "seconds, 1-3600",
    "size": "probe file size in MiB (capped from free space), 1-1048576",
    "direct": "1 bypasses the page cache, 0 goes through it",
    "ioengine": "fio engine: io_uring (default, falls back to libaio), libaio, psync...",
}


def _bytes(text: str) -> int:
    """Bytes in ``8k``, ``1m`` or ``2300`` (powers of 1024, as fio reads them).

    Raises:
        ValueError: quoting the text when it is not such a size.
    """
    m = _BS_RE.match(text.strip())
    if not m:
        raise ValueError(f"bs: not a block size like 4k or 1m: {text!r}")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]


def parse_size(text: str) -> int:
    """Bytes in a block size like ``8k`` or ``1m`` (powers of 1024, as fio reads them).

    Raises:
        ValueError: quoting the text when it is not a size from 512 bytes to 64 MiB that is
            a multiple of 512.
    """
    value = _bytes(text)
    if not 512 <= value <= 64 * 1024 * 1024 or value % 512:
        raise ValueError(f"bs: must be a multiple of 512 bytes from 512 to 64m: {text!r}")
    return value


def _int_in(key: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{key}: not a whole number: {text!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{key}: must be from {low} to {high}: {text!r}")
    return value


def with_overrides(params: ProbeParams, overrides: Mapping[str, str]) -> ProbeParams:
    """Apply ``key=value`` edits (the keys of :data:`EDITABLE`) to ``params``.

    Raises:
        ValueError: one line naming the bad key or value.
    """
    changes: dict[str, object] = {}
    for key, text in overrides.items():
        text = text.strip()
        if key == "bs":
            parse_size(text)
            changes["bs"] = text.lower()
        elif key == "iodepth":
            changes["iodepth"] = _int_in(key, text, 1, 1024)
        elif key == "numjobs":
            changes["numjobs"] = _int_in(key, text, 1, 64)
        elif key == "runtime":
            changes["runtime_s"] = _int_in(key, text, 1, 3600)
        elif key == "size":
            changes["size_mb"] = _int_in(key, text, 1, 1024 * 1024)
        elif key == "direct":
            if text.lower() not in ("0", "1", "true", "false", "yes", "no"):
                raise ValueError(f"direct: must be 1 or 0: {text!r}")
            changes["direct"] = text.lower() in ("1", "true", "yes")
        elif key == "ioengine":
            # Only the spelling is checked here; fio itself says whether it has the engine.
            if not _ENGINE_RE.match(text):
                raise ValueError(f"ioengine: not an engine name: {text!r}")
            changes["ioengine"] = text
        else:
            raise ValueError(f"unknown parameter {key!r} (editable: {', '.join(EDITABLE)})")
    return replace(params, **changes)  # type: ignore[arg-type]


def parse_assignments(items: list[str]) -> dict[str, str]:
    """Split ``["bs=4k", "iodepth=8"]`` into a dict.

    Raises:
        ValueError: quoting an item without ``=``.
    """
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out
