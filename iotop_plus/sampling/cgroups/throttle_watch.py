"""Throttling checked cheaply, without reading every cgroup each frame (the Device tab's
verdict while the Cgroups tab is closed).

The full cgroup part (:class:`~iotop_plus.sampling.cgroups.reader.CgroupReader`) reads every
cgroup's counters, pressure and limits each frame. The verdict's ``throttled`` needs much
less: the cgroups that have a limit (v2 ``io.max``, v1 ``blkio.throttle.*_device``) and their
I/O counters. :class:`ThrottleWatch` finds them by reading only the limits files, at most
every :data:`SCAN_S` (limits change rarely), and then each frame reads only the counters of
those cgroups (v2 ``io.stat``; v1 ``blkio.throttle.io_serviced``/``io_service_bytes`` of the
cgroup and its descendants, which v1 counts apart). Usage and ``throttled`` are then those of
:func:`~iotop_plus.sampling.cgroups.limits.device_limits`, as with the full part.

A scan of a large tree costs: when one takes longer than :data:`SCAN_BUDGET_S` the watch
turns itself off and says so (:attr:`ThrottleFrame.problem`); ``throttled`` is then unchecked
until the Cgroups tab reads the cgroups. Measured on this host's kernel cgroupfs: see
:data:`SCAN_BUDGET_S`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.model import CGROUPS, THROTTLES, CgroupFrame
from iotop_plus.sampling.frame.part import FramePart, ReadContext

if TYPE_CHECKING:
    from iotop_plus.sampling.cgroups.files import IoCounters, IoLimits
    from iotop_plus.sampling.cgroups.reader import CgroupLayout, CgroupSample, CgroupStat

SCAN_S = 30.0
"""The limits are looked for again at most this often (new cgroups, changed limits)."""
SCAN_BUDGET_S = 0.25
"""A scan that takes longer turns the watch off (one line says so). Measured here
(``benchmarks/bench_throttle_check.py``, 331 real v1 blkio cgroups, one limited, load
average 4.6): a scan 13.4 ms (median of 30; 4 limits files a cgroup), a frame's counter
reads 0.11 ms, so ~0.56 ms a frame at 1 s, against 9.1 ms for the full cgroup part. The
budget is reached near 6,000 cgroups."""
MAX_WATCHED = 200
"""At most this many cgroups (limited ones and, on v1, their descendants) are read a frame."""


@dataclass
class _Limited:
    """A cgroup with a limit, found by a scan."""

    rel: str
    path: str
    ino: int
    limits: IoLimits
    family: list[tuple[str, str, int]] = field(default_factory=list)
    """v1: (rel, path, ino) of the cgroup itself and its descendants (counted apart)."""


class ThrottleWatch:
    """Finds the limited cgroups now and then; reads their counters every frame."""

    def __init__(self, roots: Roots, *, clock: Callable[[], float] = time.monotonic) -> None:
        """Args:
        roots: Where ``/sys`` is.
        clock: The monotonic clock (tests move it).
        """
        from iotop_plus.sampling.cgroups.reader import detect_layout

        self.roots = roots
        self.layout: CgroupLayout = detect_layout(roots)
        self._clock = clock
        self._scanned_at = float("-inf")
        self._limited: list[_Limited] = []
        self._names: Mapping[str, str] = MappingProxyType({})
        self._scan_s: float | None = None
        self._problems: tuple[str, ...] = ()
        self._prev: CgroupSample | None = None
        self.off: str | None = None
        """Why the watch turned itself off (too costly), or None while on."""
        self.idle = self.layout.version is None
        """No per-cgroup I/O on this host: nothing to check, nothing to say."""

    def frame(self) -> ThrottleFrame:
        """The limited cgroups and their rates since the previous call."""
        if self.idle:
            return ThrottleFrame(None)
        if self.off is not None:
            return ThrottleFrame(None, self._scan_s, 0.0, f"throttling unchecked: {self.off}")
        now = self._clock()
        if now - self._scanned_at >= SCAN_S:
            self._scan(now)
            if self.off is not None:
                return self.frame()
        started = time.monotonic()
        sample = self._sample(started)
        from iotop_plus.sampling.cgroups.reader import cgroup_rates_between

        rates = cgroup_rates_between(self._prev, sample)
        self._prev = sample
        part = CgroupFrame(sample, MappingProxyType(rates))
        return ThrottleFrame(part, self._scan_s, time.monotonic() - started)

    def _scan(self, now: float) -> None:
        from iotop_plus.sampling.cgroups.reader import read_device_numbers

        started = time.monotonic()
        self._scanned_at = now
        problems: list[str] = []
        dirs = _cgroup_dirs(self.layout.root, problems)
        v1 = self.layout.version == "v1"
        limited: list[_Limited] = []
        for rel, path, ino in dirs:
            limits = _limits_of(path, rel, v1, problems)
            if limits is not None and limits.max:
                limited.append(_Limited(rel, path, ino, limits))
        if v1:  # v1 counts each cgroup's own I/O: a limited one sums its descendants
            for one in limited:
                prefix = one.rel.rstrip("/") + "/"
                one.family = [d for d in dirs if d[0] == one.rel or d[0].startswith(prefix)]
        self._limited = limited
        self._names = MappingProxyType(read_device_numbers(self.roots))
        self._problems = tuple(problems)
        self._scan_s = time.monotonic() - started
        watched = sum(max(1, len(one.family)) for one in limited)
        if self._scan_s > SCAN_BUDGET_S or watched > MAX_WATCHED:
            self.off = (
                f"finding the limits of {len(dirs):,} cgroups took "
                f"{self._scan_s * 1000:.0f} ms (the Cgroups tab reads them)"
                if self._scan_s > SCAN_BUDGET_S
                else f"{watched:,} limited cgroups are too many to read every frame "
                "(the Cgroups tab reads them)"
            )
            self._prev = None

    def _sample(self, started: float) -> CgroupSample:
        from iotop_plus.sampling.cgroups.reader import CgroupSample, CgroupStat, _roll_up

        problems = list(self._problems)
        stats: dict[str, CgroupStat] = {}
        v1 = self.layout.version == "v1"
        for one in self._limited:
            if v1:
                family = {
                    rel: CgroupStat(rel, ino, _counters(path, rel, True, problems))
                    for rel, path, ino in one.family
                }
                rolled = _roll_up(family).get(one.rel)
                devices = rolled.devices if rolled is not None else None
            else:
                devices = _counters(one.path, one.rel, False, problems)
            stats[one.rel] = CgroupStat(one.rel, one.ino, devices, None, one.limits)
        return CgroupSample(
            started,
            time.time(),
            self.layout.version,
            self.layout.root,
            MappingProxyType(stats),
            self._names,
            self.layout.notice,
            tuple(problems),
            time.monotonic() - started,
        )


def _cgroup_dirs(root: str, problems: list[str]) -> list[tuple[str, str, int]]:
    """(rel, path, inode) of every cgroup directory under ``root``, the root first."""
    try:
        st = os.stat(root)
    except OSError as exc:
        problems.append(f"cannot read {root}: {exc.strerror or exc}")
        return []
    out = [("/", root, st.st_ino)]
    stack = [("/", root, st.st_nlink)]
    while stack:
        rel, path, nlink = stack.pop()
        if nlink == 2:  # no subdirectories: a leaf, most cgroups
            continue
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                    try:
                        child = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    crel = ("" if rel == "/" else rel) + "/" + entry.name
                    out.append((crel, entry.path, child.st_ino))
                    stack.append((crel, entry.path, child.st_nlink))
        except OSError as exc:
            if not isinstance(exc, FileNotFoundError):
                problems.append(f"cannot list {rel}: {exc.strerror or exc}")
    return out


def _limits_of(path: str, rel: str, v1: bool, problems: list[str]) -> IoLimits | None:
    from iotop_plus.sampling.cgroups.files import parse_limits
    from iotop_plus.sampling.cgroups.reader import _read, _read_optional
    from iotop_plus.sampling.cgroups.v1_limits import read_v1_limits

    if v1:
        return read_v1_limits(path, rel, problems, _read)
    try:
        text = _read_optional(path + "/io.max")
    except OSError as exc:
        problems.append(f"cannot read {rel}/io.max: {exc.strerror or exc}")
        return None
    if text is None:
        return None
    try:
        return parse_limits(text, None, None)
    except ValueError as exc:
        problems.append(f"{rel}: {exc}")
        return None


def _counters(
    path: str, rel: str, v1: bool, problems: list[str]
) -> Mapping[str, IoCounters] | None:
    from iotop_plus.sampling.cgroups.files import parse_io_stat, parse_v1_blkio
    from iotop_plus.sampling.cgroups.reader import _read

    try:
        if v1:
            found, bad = parse_v1_blkio(
                _read(path + "/blkio.throttle.io_service_bytes"),
                _read(path + "/blkio.throttle.io_serviced"),
            )
        else:
            found, bad = parse_io_stat(_read(path + "/io.stat"))
    except FileNotFoundError:
        return None  # gone since the scan, or no io controller here
    except OSError as exc:
        problems.append(f"cannot read {rel}: {exc.strerror or exc}")
        return None
    problems.extend(f"{rel}: {b}" for b in bad)
    return MappingProxyType(found)


@dataclass(frozen=True)
class ThrottleFrame:
    """The cgroups with an I/O limit and their rates, as of one frame."""

    part: CgroupFrame | None
    """Only the limited cgroups (with their limits and counters); None when off."""
    scan_s: float | None = None
    """What the last scan for limits took, seconds (None: none yet)."""
    read_s: float = 0.0
    """What this frame's counter reads took, seconds."""
    problem: str | None = None
    """Why throttling is not checked (one line), or None."""


class ThrottleReader:
    """The throttle part's reader: the watch, made at the first frame that needs it."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._watch: ThrottleWatch | None = None

    def read(self, ctx: ReadContext) -> tuple[ThrottleFrame | None, tuple[()]]:
        """The limited cgroups now; nothing while the full cgroup part is read (it judges
        throttling) or the frame reads no devices."""
        if CGROUPS in ctx.wanted or not ctx.sample.counters:
            return None, ()
        if self._watch is None:
            self._watch = ThrottleWatch(self.roots)
        return self._watch.frame(), ()

    def close(self) -> None:
        """Nothing held open between frames."""


class ThrottlePart(FramePart[ThrottleFrame]):
    """The limited cgroups' rates without the cgroups part (the TUI's Device tab judges
    throttling with the Cgroups tab closed). Not recorded: the cgroup part's ``L`` is."""

    key = THROTTLES

    def reader(self, roots: Roots) -> ThrottleReader:
        """A watch of ``roots``' cgroups."""
        return ThrottleReader(roots)

    def to_json(self, value: ThrottleFrame) -> Any:
        """Not kept apart from the frame: the live ring keeps the object itself."""
        raise NotImplementedError

    def from_json(self, doc: Any) -> ThrottleFrame | None:  # noqa: ARG002
        """Never recorded."""
        return None
