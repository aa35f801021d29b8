"""One read of the roots per tick, into an immutable Sample; rates between two samples."""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import (
    DiskCounters,
    ParseProblem,
    parse_diskstats,
    read_sys_block_stats,
    was_reset,
)
from iotop_plus.sampling.disks.rates import DeviceRates, compute_all
from iotop_plus.sampling.gcpause import gc_paused
from iotop_plus.sampling.open_files import OpenFiles, descriptor_budget
from iotop_plus.sampling.topology.inventory import Inventory, read_inventory, shown_by_default
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_attribute, read_bounded


@dataclass(frozen=True)
class Sample:
    """Raw cumulative counters of every device at one moment."""

    monotonic: float
    """``time.monotonic()`` when the counters were read; rates use its differences."""
    wall_time: float
    """``time.time()`` at the same moment, for display and JSON."""
    counters: Mapping[str, DiskCounters]
    """Counters by kernel name (read-only)."""
    problems: tuple[ParseProblem, ...] = ()
    """Lines that could not be parsed in this read."""
    source: str = "/proc/diskstats"
    """The file the counters came from."""
    notice: str | None = None
    """Set when the counters came from the /sys/block/*/stat fallback: why, in one line."""
    identities: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Each device's identity by name (:class:`Identities`): a name whose identity changed is
    another device (a loop device detached and attached again), with new facts and history."""

    @property
    def names(self) -> frozenset[str]:
        """The device names present in this sample."""
        return frozenset(self.counters)


class SourceError(Exception):
    """The counters' source exists but must not be read (a FIFO, ``/dev/zero``, a file over
    the size cap) or cannot be (an I/O error): one line naming the file and the reason."""


#: Why /proc/diskstats may be absent or closed to us, where /sys/block/*/stat can stand in.
_FALLBACK_ERRORS = (FileNotFoundError, NotADirectoryError, PermissionError)


@dataclass(frozen=True)
class HostInfo:
    """What the header shows about the host."""

    hostname: str
    """Node name."""
    kernel: str
    """Kernel release (``uname -r``)."""
    uptime_s: float | None
    """Seconds since boot, from ``/proc/uptime``; None if unreadable."""
    is_root: bool
    """Whether we run with effective uid 0."""


def read_host_info(roots: Roots) -> HostInfo:
    """Host name, kernel release and uptime, from the roots where they are captured."""
    kernel = read_attribute(roots.proc / "sys" / "kernel" / "osrelease") or os.uname().release
    hostname = read_attribute(roots.proc / "sys" / "kernel" / "hostname") or socket.gethostname()
    uptime_text = read_attribute(roots.proc / "uptime")
    uptime: float | None = None
    if uptime_text:
        try:
            uptime = float(uptime_text.split()[0])
        except (ValueError, IndexError):
            uptime = None
    return HostInfo(hostname, kernel, uptime, os.geteuid() == 0)


@dataclass(frozen=True)
class Platform:
    """The host facts iostat's JSON names beside the node name and kernel release."""

    sysname: str = "Linux"
    """``uname -s``."""
    machine: str | None = None
    """``uname -m``; None when unknown (a captured tree without it, an older recording)."""
    cpus: int | None = None
    """iostat's ``number-of-cpus``; None when unknown."""


def read_platform(roots: Roots) -> Platform:
    """The platform of the host ``roots`` describe (captured trees: only what they hold)."""
    uname = os.uname() if roots.is_live else None
    sysname = _read_fact(roots.proc / "sys" / "kernel" / "ostype") or (
        uname.sysname if uname else "Linux"
    )
    machine = _read_fact(roots.proc / "sys" / "kernel" / "arch") or (
        uname.machine if uname else None
    )
    return Platform(sysname, machine, _cpu_count(roots))


def _read_fact(path: Path) -> str | None:
    try:
        return read_bounded(path, 256).strip() or None
    except (OSError, ValueError):
        return None


def _cpu_count(roots: Roots) -> int | None:
    """CPUs as iostat counts them: sysfs ``cpuN`` directories that are online, else the
    ``cpuN`` lines of /proc/stat."""
    try:
        entries = [e for e in os.scandir(roots.sys / "devices" / "system" / "cpu")]
    except OSError:
        entries = []
    online = 0
    for entry in entries:
        if not (entry.name.startswith("cpu") and entry.name[3:].isdigit()):
            continue
        state = _read_fact(Path(entry.path) / "online")
        online += state is None or state == "1"
    if online:
        return online
    try:
        text = read_bounded(roots.proc / "stat")
    except (OSError, ValueError):
        return None
    count = sum(1 for line in text.splitlines() if line[:3] == "cpu" and line[3:4].isdigit())
    return count or None


class Sampler:
    """Reads the counters of every block device, one immutable :class:`Sample` per call.

    Holds only a parse cache (unchanged lines are not re-parsed) and the last inventory;
    the samples it returns never change.
    """

    def __init__(self, roots: Roots | None = None) -> None:
        self.roots = roots or Roots()
        self._cache: dict[str, DiskCounters] = {}
        self._diskstats = str(self.roots.diskstats)  # built once: this runs every tick
        self._inventory: Inventory | None = None
        self._inventory_names: frozenset[str] = frozenset()
        self._identities = Identities(self.roots)

    def sample(self) -> Sample:
        """Read all counters now.

        Uses /proc/diskstats (one read for all devices); falls back to /sys/block/*/stat
        when it is missing or not readable to us, and says so in ``Sample.notice``. Bad
        lines are carried in the sample as problems.

        Raises:
            SourceError: diskstats is there but is no regular file (a FIFO, a device), is
                larger than the cap, or fails to read: its content cannot be trusted.
        """
        problems: list[ParseProblem] = []
        path = self._diskstats
        try:
            text = read_bounded(path)
        except _FALLBACK_ERRORS as exc:
            names = _sys_names(self.roots)
            notice: str | None = (
                f"{path}: {exc.strerror}; reading {self.roots.sys_block}/*/stat instead"
            )
            if not names:
                problems.append(ParseProblem(path, 0, "", f"cannot read: {exc.strerror}"))
                notice = None
            now = time.monotonic()
            counters = read_sys_block_stats(self.roots.sys, names, problems)
            return Sample(
                now,
                time.time(),
                MappingProxyType(counters),
                tuple(problems),
                str(self.roots.sys_block),
                notice,
                self._identities.of(counters, now),
            )
        except OSError as exc:
            raise SourceError(f"{path}: {exc.strerror or exc}") from None
        now = time.monotonic()
        # The cache holds only this read's lines, so devices that left (loop churn) are
        # forgotten at once.
        with gc_paused():
            counters = parse_diskstats(text, path, problems, self._cache)
        identities = self._identities.of(counters, now)
        return Sample(
            now, time.time(), MappingProxyType(counters), tuple(problems), path, None, identities
        )

    def inventory(self, names: Iterable[str] | None = None, refresh: bool = False) -> Inventory:
        """The device inventory, re-read when ``names`` differs from the last read set."""
        wanted = frozenset(names) if names is not None else None
        if (
            refresh
            or self._inventory is None
            or (wanted is not None and wanted != self._inventory_names)
        ):
            self._inventory = read_inventory(self.roots)
            self._inventory_names = (
                wanted if wanted is not None else frozenset(self._inventory.devices)
            )
        return self._inventory

    def host_info(self) -> HostInfo:
        """Header facts for this host (or captured tree)."""
        return read_host_info(self.roots)


_attribute = functools.partial(read_bounded, limit=MAX_ATTRIBUTE_BYTES)
"""A sysfs attribute's text; raises ``OSError`` as :func:`~iotop_plus.sysfs.read_bounded`."""

DISKSEQ_REFRESH_S = 30.0
"""How often the ``diskseq`` of a device that is not a loop device is read again."""


class Identities:
    """Which device each name is: its ``MAJ:MIN`` and ``diskseq`` (the kernel numbers every
    disk it attaches), or, where there is no ``diskseq``, a loop device's backing file; and
    ``+N`` after the counters went backwards N times (a device replaced under its name,
    :func:`~iotop_plus.sampling.disks.diskstats.was_reset`).

    ``diskseq`` is read each frame for loop devices (they are re-attached in place), for the
    others when their name first shows and every :data:`DISKSEQ_REFRESH_S`.
    """

    def __init__(self, roots: Roots) -> None:
        self._block = str(roots.sys_block)
        self._kept = OpenFiles(_attribute, descriptor_budget(1024, 8)) if roots.is_live else None
        """The host's loop devices' ``diskseq`` files, kept open
        (:mod:`~iotop_plus.sampling.open_files`; a captured tree's file may be replaced)."""
        self._seq: dict[str, str] = {}
        self._resets: dict[str, int] = {}
        self._last: Mapping[str, DiskCounters] = {}
        self._all_at = float("-inf")
        self._shown: Mapping[str, str] = MappingProxyType({})
        self._loops: list[str] = []

    def of(self, counters: Mapping[str, DiskCounters], now: float) -> Mapping[str, str]:
        """The identities of the devices in ``counters`` (the same mapping while none
        changed)."""
        last, seq = self._last, self._seq
        changed = counters.keys() != last.keys()
        if changed:
            self._loops = [n for n in counters if n.startswith("loop")]
            self._seq = seq = {n: s for n, s in seq.items() if n in counters}
            self._resets = {n: r for n, r in self._resets.items() if n in counters}
        if now - self._all_at >= DISKSEQ_REFRESH_S:
            self._all_at = now
            todo: Iterable[str] = counters
        elif changed:
            todo = [*self._loops, *(n for n in counters if n not in seq)]
        else:
            todo = self._loops
        for name in todo:
            found = self._read_seq(name)
            if seq.get(name) != found:
                seq[name] = found
                changed = True
        if self._kept is not None:
            self._kept.sweep()  # the loop devices' files are read every frame: the others go
        get = last.get
        for name, c in counters.items():
            before = get(name)
            if before is None or before is c:
                continue  # new, or its line is unchanged (the parse cache's same object)
            if before[:2] != c[:2] or was_reset(before.values, c.values):
                self._resets[name] = self._resets.get(name, 0) + 1
                changed = True
        self._last = counters
        if changed:
            self._shown = MappingProxyType(
                {
                    name: f"{c.major}:{c.minor}{seq.get(name, '')}"
                    + (f"+{self._resets[name]}" if name in self._resets else "")
                    for name, c in counters.items()
                }
            )
        return self._shown

    def _read_seq(self, name: str) -> str:
        base = f"{self._block}/{name}"
        try:
            if self._kept is not None and name.startswith("loop"):  # read at every frame
                return " diskseq " + self._kept.read(f"{base}/diskseq").strip()
            return " diskseq " + _attribute(f"{base}/diskseq").strip()
        except OSError:
            pass
        if not name.startswith("loop"):
            return ""
        try:
            backing = read_bounded(
                f"{base}/loop/backing_file", MAX_ATTRIBUTE_BYTES, "surrogateescape"
            )
        except OSError:
            return ""
        return " file " + backing.strip()


def _sys_names(roots: Roots) -> list[str]:
    for directory in (roots.sys_class_block, roots.sys_block):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        if names:
            return names
    return []


def rates_between(prev: Sample, cur: Sample) -> dict[str, DeviceRates | None]:
    """iostat -x rates for every device of ``cur`` over the measured interval."""
    with gc_paused():
        return compute_all(prev.counters, cur.counters, cur.monotonic - prev.monotonic)


def select_devices(
    counters: Mapping[str, DiskCounters],
    inventory: Inventory,
    *,
    show_all: bool = False,
    partitions: bool = False,
    hide_virtual: bool = False,
) -> list[str]:
    """Device names to show, iostat's way by default.

    By default: whole devices (no partitions) that have ever done I/O since boot
    (:func:`~iotop_plus.sampling.topology.inventory.shown_by_default`, the TUI's rule too).

    Args:
        counters: Counters of the current sample.
        inventory: For partition and device-kind facts.
        show_all: Every device, used or not, partitions included.
        partitions: Add partitions (of devices that have done I/O).
        hide_virtual: Also hide loop, ram and zram devices (the TUI's default).
    """
    return [
        name
        for name, c in counters.items()
        if shown_by_default(
            name,
            inventory.get(name),
            c.ever_used,
            show_all=show_all,
            partitions=partitions,
            hide_virtual=hide_virtual,
        )
    ]
