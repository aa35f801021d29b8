"""Per-cgroup I/O: cgroup v2 ``io.stat``/``io.pressure``/limits, or v1 ``blkio`` throttle files.

Formats accepted (``Documentation/admin-guide/cgroup-v2.rst``, ``cgroup-v1/blkio-controller.rst``):

* v2 ``io.stat``: one line per device, keyed ``MAJ:MIN``, in no order, then ``key=value``
  words: ``8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0``. A line
  with no keys (``253:0 ``) is legal. io.cost adds ``cost.*`` keys and io.latency adds
  ``depth``, ``avg_lat`` and ``win``: unknown keys are ignored.
* v2 ``io.pressure``: the PSI format (:mod:`iotop_plus.sampling.pressure`).
* v2 ``io.max`` (``8:16 rbps=2097152 wbps=max riops=max wiops=120``), ``io.weight``
  (``default 100`` then ``8:16 200``), ``io.latency`` (``8:16 target=75000``).
* v1 ``blkio.throttle.io_service_bytes`` and ``io_serviced``: ``8:0 Read 4096`` per device
  and operation (Read, Write, Sync, Async, Discard, Total), then ``Total N``. These files are
  each cgroup's own I/O; v2's ``io.stat`` already includes the descendants. Samples carry
  inclusive counters either way (v1's are summed here), so a parent's row is its subtree.

Raw counters live in an immutable :class:`CgroupSample`; :func:`cgroup_rates_between` turns two
samples into rates. Names for people (units, containers, pods) are in
:mod:`iotop_plus.sampling.cgroups.names`.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.files import (
    IoCounters,
    IoLimits,
    parse_io_stat,
    parse_limits,
    parse_v1_blkio,
    v1_not_counted,
)
from iotop_plus.sampling.open_files import WHOLE_BELOW, OpenFiles
from iotop_plus.sampling.pressure import PressureLine, ResourcePressure, parse_pressure

MAX_FILE_BYTES = 1 << 20
"""A cgroup file larger than this is not read (a captured tree's endless file)."""
MAX_DEPTH = 32
"""Cgroups deeper than this are not walked (a captured tree's symlink loop, say)."""
MAX_CGROUPS = 200_000
"""At most this many cgroups are read per sample."""
LIMITS_REFRESH_S = 10.0
"""io.max, io.weight and io.latency change rarely: re-read this often (and for new cgroups)."""

_LIMIT_FILES = ("io.max", "io.weight", "io.latency")

V2 = "v2"
V1 = "v1"


@dataclass(frozen=True)
class CgroupStat:
    """Raw counters of one cgroup at one moment."""

    path: str
    """Path under the cgroup root: ``/`` or ``/system.slice/nginx.service``."""
    ino: int
    """Inode of the cgroup's directory: a cgroup removed and made again has another."""
    devices: Mapping[str, IoCounters] | None
    """Inclusive counters per ``MAJ:MIN``; None when the cgroup has no I/O file of its own
    (v2: the io controller is not enabled for it; its I/O counts in its parent)."""
    pressure: ResourcePressure | None = None
    """``io.pressure``, where the cgroup has one."""
    limits: IoLimits | None = None
    """Limits and weights (v2) or throttle limits (v1), where any file was readable."""


@dataclass(frozen=True)
class CgroupSample:
    """Every cgroup's counters at one moment."""

    monotonic: float
    """``time.monotonic()`` when the walk started."""
    wall_time: float
    """``time.time()`` at the same moment."""
    version: str | None
    """``v2``, ``v1`` or None (no per-cgroup I/O on this host)."""
    root: str
    """The directory the cgroup paths are under."""
    cgroups: Mapping[str, CgroupStat]
    """By path under the root (read-only)."""
    device_names: Mapping[str, str] = field(default_factory=dict)
    """Kernel name per ``MAJ:MIN`` (``vda``), where known."""
    notice: str | None = None
    """One line about the host's cgroup setup (a hybrid host, no io controller)."""
    problems: tuple[str, ...] = ()
    """Files that could not be read or parsed, one line each."""
    duration_s: float = 0.0
    """What reading took."""
    not_counted: Mapping[str, str] = field(default_factory=dict)
    """v1: the whole devices blkio does not count (``MAJ:MIN`` -> why, :func:`v1_not_counted`)."""


@dataclass(frozen=True, slots=True)
class IoRates:
    """Rates of one cgroup (on one device, or in total) over an interval."""

    read_bps: float
    """Bytes read per second."""
    write_bps: float
    """Bytes written per second."""
    read_iops: float
    """Reads per second."""
    write_iops: float
    """Writes per second."""
    discard_bps: float
    """Bytes discarded per second."""
    discard_iops: float = 0.0
    """Discards per second."""

    @property
    def total_bps(self) -> float:
        """Read + write bytes per second."""
        return self.read_bps + self.write_bps


@dataclass(frozen=True)
class CgroupRates:
    """A cgroup's rates over an interval, in total and per device."""

    total: IoRates
    """Sum over the devices that have rates."""
    devices: Mapping[str, IoRates]
    """Per ``MAJ:MIN``; a device seen for the first time is left out."""


# ---- rates --------------------------------------------------------------------------------


def cgroup_rates_between(
    prev: CgroupSample | None, cur: CgroupSample
) -> dict[str, CgroupRates | None]:
    """Rates per cgroup path from two samples over their measured interval.

    None for every cgroup on the first sample, for one that is new or was made again (another
    inode) since ``prev``, for one without I/O counters, and for one whose counters went back
    on any device (made again under a reused inode, or a v1 child gone from the roll-up):
    never a negative rate, and never a total that silently leaves a device out.
    """
    out: dict[str, CgroupRates | None] = {}
    elapsed = cur.monotonic - prev.monotonic if prev is not None else 0.0
    if prev is None or elapsed <= 0:
        return dict.fromkeys(cur.cgroups)
    before = prev.cgroups
    for path, stat_ in cur.cgroups.items():
        old = before.get(path)
        if old is None or old.ino != stat_.ino or stat_.devices is None or old.devices is None:
            out[path] = None
            continue
        devices: dict[str, IoRates] = {}
        reset = False
        for dev, c in stat_.devices.items():
            o = old.devices.get(dev)
            if o is None:
                continue
            deltas = (
                c.rbytes - o.rbytes,
                c.wbytes - o.wbytes,
                c.rios - o.rios,
                c.wios - o.wios,
                c.dbytes - o.dbytes,
                c.dios - o.dios,
            )
            if min(deltas) < 0:
                reset = True
                break
            devices[dev] = IoRates(
                deltas[0] / elapsed,
                deltas[1] / elapsed,
                deltas[2] / elapsed,
                deltas[3] / elapsed,
                deltas[4] / elapsed,
                deltas[5] / elapsed,
            )
        if reset:
            out[path] = None
            continue
        values = list(devices.values())
        total = IoRates(
            sum(r.read_bps for r in values),
            sum(r.write_bps for r in values),
            sum(r.read_iops for r in values),
            sum(r.write_iops for r in values),
            sum(r.discard_bps for r in values),
            sum(r.discard_iops for r in values),
        )
        out[path] = CgroupRates(total, MappingProxyType(devices))
    return out


# ---- the reader ---------------------------------------------------------------------------


def _read(path: str) -> str:
    """A small cgroup file's text: ``os.open``/``os.read``, no ``Path``, never blocking.

    Raises:
        OSError: it cannot be read, is not a regular file, or is over :data:`MAX_FILE_BYTES`.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        data = os.read(fd, 65536)
        if len(data) >= WHOLE_BELOW:  # a page of a longer file, or something that is no file
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            chunks = [data]
            total = len(data)
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
                total += len(chunk)
                if total > MAX_FILE_BYTES:
                    raise OSError(errno.EFBIG, f"larger than {MAX_FILE_BYTES:,} bytes", path)
            data = b"".join(chunks)
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")


def _read_optional(path: str) -> str | None:
    try:
        return _read(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _controllers(path: str) -> set[str] | None:
    text = _read_optional(path)
    return None if text is None else set(text.split())


@dataclass(frozen=True)
class CgroupLayout:
    """Where per-cgroup I/O comes from on a host."""

    version: str | None
    """``v2``, ``v1`` or None."""
    root: str
    """The tree whose cgroups carry the counters."""
    pressure_root: str | None
    """A v2 tree to read ``io.pressure`` from (the same tree on v2; ``unified`` on a hybrid)."""
    notice: str | None
    """One line about the setup, or None when it is plain v2 with the io controller."""


def detect_layout(roots: Roots) -> CgroupLayout:
    """Find the cgroup tree under ``<sys>/fs/cgroup``: v2 with io, a hybrid, or v1 blkio."""
    base = roots.sys / "fs" / "cgroup"
    v2_root: str | None = None
    v2_has_io = False
    for candidate in (base, base / "unified"):
        controllers = _safe_controllers(str(candidate / "cgroup.controllers"))
        if controllers is not None:
            v2_root = str(candidate)
            v2_has_io = "io" in controllers
            break
    if v2_root is not None and v2_has_io:
        return CgroupLayout(V2, v2_root, v2_root, None)
    blkio = base / "blkio"
    has_v1 = os.path.isfile(blkio / "blkio.throttle.io_service_bytes")
    if v2_root is not None:
        why = f"cgroup v2 at {v2_root} has no io controller"
        if has_v1:
            notice = f"{why}; per-cgroup I/O comes from v1 blkio ({blkio})"
            return CgroupLayout(V1, str(blkio), v2_root, notice)
        return CgroupLayout(
            None, v2_root, v2_root, f"{why} and there is no v1 blkio: no per-cgroup I/O"
        )
    if has_v1:
        return CgroupLayout(V1, str(blkio), None, f"cgroup v1: per-cgroup I/O from {blkio}")
    return CgroupLayout(None, str(base), None, f"no cgroup tree with I/O figures under {base}")


def _safe_controllers(path: str) -> set[str] | None:
    try:
        return _controllers(path)
    except OSError:
        return None


class CgroupReader:
    """Reads every cgroup's I/O counters, pressure and (now and then) limits from the roots.

    Not thread-safe: one thread calls :meth:`sample`.
    """

    def __init__(self, roots: Roots | None = None) -> None:
        self.roots = roots or Roots()
        self.layout = detect_layout(self.roots)
        """Where the counters come from (found once)."""
        self._limits: dict[tuple[str, int], IoLimits | None] = {}
        self._limits_at = float("-inf")
        self._files = OpenFiles(_read)  # v2's io.stat and io.pressure, kept open
        self._names: dict[str, str] = {}
        self._names_at = float("-inf")
        self._parsed: dict[str, tuple[str, dict[str, IoCounters]]] = {}
        self._parsed_now: dict[str, tuple[str, dict[str, IoCounters]]] = {}
        self._psi: dict[str, ResourcePressure] = {}
        self._psi_now: dict[str, ResourcePressure] = {}

    def sample(self) -> CgroupSample:
        """Walk the tree and read each cgroup's files; never raises for a bad file."""
        started = time.monotonic()
        wall = time.time()
        layout = self.layout
        problems: list[str] = []
        refresh_limits = started - self._limits_at >= LIMITS_REFRESH_S
        if refresh_limits:
            self._limits_at = started
        stats: dict[str, CgroupStat] = {}
        if layout.version is not None:
            self._parsed_now = {}
            self._walk(layout, stats, problems, refresh_limits)
            self._files.sweep()
            self._parsed, self._parsed_now = self._parsed_now, {}
            self._psi, self._psi_now = self._psi_now, {}
            if layout.version == V1:
                stats = _roll_up(stats)
        if refresh_limits:  # forget the limits of cgroups that are gone
            live = {(p, s.ino) for p, s in stats.items()}
            self._limits = {k: v for k, v in self._limits.items() if k in live}
        names = self._device_names(stats, started)
        uncounted = v1_not_counted(stats, names, self.roots.sys) if layout.version == V1 else {}
        return CgroupSample(
            started,
            wall,
            layout.version,
            layout.root,
            MappingProxyType(stats),
            names,
            layout.notice,
            tuple(problems),
            time.monotonic() - started,
            uncounted,
        )

    def _walk(
        self,
        layout: CgroupLayout,
        stats: dict[str, CgroupStat],
        problems: list[str],
        refresh_limits: bool,
    ) -> None:
        root = layout.root
        try:
            st = os.stat(root)
        except OSError as exc:
            problems.append(f"cannot read {root}: {exc.strerror or exc}")
            return
        v2 = layout.version == V2
        pressure_root = layout.pressure_root
        stack: list[tuple[str, str, int, int, int]] = [("/", root, st.st_ino, st.st_nlink, 0)]
        while stack:
            rel, path, ino, nlink, depth = stack.pop()
            try:
                if v2:
                    devices, bad = self._v2_counters(path, ino)
                else:
                    devices, bad = self._v1_counters(path)
            except FileNotFoundError:
                continue  # removed since it was listed
            except OSError as exc:
                problems.append(f"cannot read {rel}: {exc.strerror or exc}")
                devices, bad = None, []
            if bad:
                problems.extend(f"{rel}: {b}" for b in bad)
            pressure = None
            if pressure_root is not None:
                ppath = path if v2 else pressure_root + ("" if rel == "/" else rel)
                pressure = self._pressure(ppath + "/io.pressure", rel, problems, v2 and ino)
            key = (rel, ino)
            if refresh_limits or key not in self._limits:
                read = self._read_limits if v2 else _read_v1_limits  # io.max, or v1 throttles
                self._limits[key] = read(path, rel, problems)
            limits = self._limits[key]
            stats[rel] = CgroupStat(rel, ino, devices, pressure, limits)
            if len(stats) >= MAX_CGROUPS:
                problems.append(f"more than {MAX_CGROUPS:,} cgroups: the rest not read")
                return
            # A directory's link count is 2 + its subdirectories (kernfs and tmpfs alike):
            # leaves, most cgroups, need no listing.
            if nlink == 2 or depth >= MAX_DEPTH:
                continue
            _push_children(stack, rel, path, depth, problems)

    def _v2_counters(self, path: str, ino: int) -> tuple[dict[str, IoCounters] | None, list[str]]:
        try:
            text = self._files.read(path + "/io.stat", ino)
        except FileNotFoundError:
            if not os.path.isdir(path):
                raise
            return None, []  # the io controller is not enabled for this cgroup
        # Most cgroups are idle: the same text as last tick needs no parsing.
        cached = self._parsed.get(path)
        if cached is not None and cached[0] == text:
            self._parsed_now[path] = cached
            return cached[1], []
        devices, bad = parse_io_stat(text)
        if not bad:
            self._parsed_now[path] = (text, devices)
        return devices, bad

    @staticmethod
    def _v1_counters(path: str) -> tuple[dict[str, IoCounters] | None, list[str]]:
        service_bytes = _read(path + "/blkio.throttle.io_service_bytes")
        serviced = _read(path + "/blkio.throttle.io_serviced")
        return parse_v1_blkio(service_bytes, serviced)

    def _pressure(
        self, path: str, rel: str, problems: list[str], ino: int | bool
    ) -> ResourcePressure | None:
        try:  # v2: the cgroup's own file, kept open (ino); v1: in the pressure tree
            text = _read(path) if ino is False else self._files.read(path, ino)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno != errno.EOPNOTSUPP:  # psi=0: no figures, said host-wide already
                problems.append(f"cannot read {rel}/io.pressure: {exc.strerror or exc}")
            return None
        cached = self._psi.get(text)
        if cached is not None:  # idle cgroups: the same two lines tick after tick
            self._psi_now[text] = cached
            return cached
        words = text.split()
        if len(words) == 10 and words[0] == "some" and words[5] == "full":
            try:  # the usual file: no per-word partition
                found = ResourcePressure(_fast_psi(words[1:5]), _fast_psi(words[6:10]))
                self._psi_now[text] = found
                return found
            except ValueError:
                pass  # parse_pressure says what is wrong
        try:
            return parse_pressure(text)
        except ValueError as exc:
            problems.append(f"{rel}/io.pressure: {exc}")
            return None

    @staticmethod
    def _read_limits(path: str, rel: str, problems: list[str]) -> IoLimits | None:
        try:
            texts = [
                _read_optional(f"{path}/{name}") for name in ("io.max", "io.weight", "io.latency")
            ]
        except OSError as exc:
            problems.append(f"cannot read the limits of {rel}: {exc.strerror or exc}")
            return None
        if all(t is None for t in texts):
            return None
        try:
            return parse_limits(*texts)
        except ValueError as exc:
            problems.append(f"{rel}: {exc}")
            return None

    def _device_names(self, stats: Mapping[str, CgroupStat], now: float) -> Mapping[str, str]:
        seen = {dev for s in stats.values() if s.devices for dev in s.devices}
        v1 = self.layout.version == V1  # v1 lists the devices it does not count: all of them
        if (seen - self._names.keys() or v1) and now - self._names_at >= 5.0:
            self._names_at = now
            self._names = read_device_numbers(self.roots)
        return MappingProxyType(self._names)


def _read_v1_limits(path: str, rel: str, problems: list[str]) -> IoLimits | None:
    from iotop_plus.sampling.cgroups.v1_limits import read_v1_limits

    return read_v1_limits(path, rel, problems, _read)


def _fast_psi(words: list[str]) -> PressureLine:
    a10, a60, a300, total = words
    if not (
        a10.startswith("avg10=")
        and a60.startswith("avg60=")
        and a300.startswith("avg300=")
        and total.startswith("total=")
    ):
        raise ValueError(words)
    return PressureLine(float(a10[6:]), float(a60[6:]), float(a300[7:]), int(total[6:]))


def read_device_numbers(roots: Roots) -> dict[str, str]:
    """Kernel name per ``MAJ:MIN``, from ``<proc>/diskstats`` (empty where unreadable)."""
    try:
        text = _read(str(roots.diskstats))
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0].isdigit() and words[1].isdigit():
            out[f"{words[0]}:{words[1]}"] = words[2]
    return out


def _roll_up(stats: dict[str, CgroupStat]) -> dict[str, CgroupStat]:
    """v1 counters are each cgroup's own: add every descendant's into its ancestors."""
    sums: dict[str, dict[str, IoCounters]] = {
        p: dict(s.devices) for p, s in stats.items() if s.devices is not None
    }
    for path in sorted(stats, key=lambda p: p.count("/"), reverse=True):
        if path == "/" or path not in sums:
            continue
        parent = path.rsplit("/", 1)[0] or "/"
        target = sums.get(parent)
        if target is None:
            continue
        for dev, counters in sums[path].items():
            have = target.get(dev)
            target[dev] = counters if have is None else have + counters
    return {
        p: CgroupStat(
            p, s.ino, MappingProxyType(sums[p]) if p in sums else None, s.pressure, s.limits
        )
        for p, s in stats.items()
    }


MAX_MEMBERS = 500
"""At most this many processes are listed for one cgroup."""


def cgroup_members(reader: CgroupReader, path: str) -> tuple[tuple[int, str], ...]:
    """(pid, comm) of the processes directly in cgroup ``path`` (``cgroup.procs``).

    Empty when the cgroup is gone or unreadable, or ``path`` is not a plain cgroup path.
    """
    if not path.startswith("/") or any(p in (".", "..") for p in path.split("/")):
        return ()
    base = reader.layout.root + ("" if path == "/" else path)
    try:
        text = _read(base + "/cgroup.procs")
    except OSError:
        return ()
    proc = str(reader.roots.proc)
    out: list[tuple[int, str]] = []
    for word in text.split()[:MAX_MEMBERS]:
        if not word.isdigit():
            continue
        try:
            comm = _read(f"{proc}/{word}/comm").strip()
        except OSError:
            continue  # exited since
        out.append((int(word), comm))
    return tuple(out)


def _push_children(
    stack: list[tuple[str, str, int, int, int]],
    rel: str,
    path: str,
    depth: int,
    problems: list[str],
) -> None:
    """Push the child cgroups of ``rel`` (at ``path``) on the walk's ``stack``; a directory
    removed meanwhile has none, one that cannot be listed is one problem line."""
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    try:
                        child = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    name = f"/{entry.name}" if rel == "/" else f"{rel}/{entry.name}"
                    stack.append((name, entry.path, child.st_ino, child.st_nlink, depth + 1))
    except FileNotFoundError:
        return
    except OSError as exc:
        problems.append(f"cannot list {rel}: {exc.strerror or exc}")
