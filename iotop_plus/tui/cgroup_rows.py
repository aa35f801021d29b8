"""The Cgroups tab's rows, without the widgets: a tree with roll-up, sorted and filtered.

Pure (no textual, no rich). Each row's figures are its subtree's (the samples carry inclusive
counters), so a slice's line is the sum of what is under it. Siblings are sorted by the chosen
column; the filter and "only with I/O" keep the ancestors of what they keep, so the tree
stays a tree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from iotop_plus.sampling.cgroups.active import busy as active
from iotop_plus.sampling.cgroups.names import cgroup_name
from iotop_plus.sampling.cgroups.reader import CgroupSample
from iotop_plus.sampling.frame.model import CgroupFrame
from iotop_plus.sampling.processes.issuers import CgroupShare, IssuersFrame, LatencyFigures
from iotop_plus.text import compact_bytes


@dataclass(frozen=True, slots=True)
class CgroupColumn:
    """One column of the cgroup list."""

    key: str
    """Sort key name."""
    title: str
    """Header text."""
    width: int
    """Characters (0: takes the rest of the line)."""
    priority: int
    """Lower is kept first when the width is short."""


CGROUP_COLUMNS: tuple[CgroupColumn, ...] = (
    CgroupColumn("name", "CGROUP", 0, 0),
    CgroupColumn("read", "READ", 6, 1),
    CgroupColumn("write", "WRITE", 6, 1),
    CgroupColumn("some", "SOME", 5, 2),
    CgroupColumn("full", "FULL", 5, 3),
    CgroupColumn("rios", "R/s", 6, 4),
    CgroupColumn("wios", "W/s", 6, 4),
    CgroupColumn("discard", "DISC", 6, 5),
    CgroupColumn("limits", "LIMITS", 24, 6),
)
CGROUP_SORT_KEYS = ("total", *(c.key for c in CGROUP_COLUMNS if c.key != "limits"))
"""``total`` (READ + WRITE, the default) then the columns."""


@dataclass(frozen=True, slots=True)
class CgroupRow:
    """What the list shows for one cgroup in one tick."""

    path: str
    """Path under the cgroup root."""
    name: str
    """Unit, container or pod name (or the last path component)."""
    depth: int
    """Levels below the root (for the indent)."""
    read: float | None
    """Bytes read per second (subtree); None: no rate yet or no I/O file."""
    write: float | None
    """Bytes written per second (subtree)."""
    rios: float | None
    """Reads per second."""
    wios: float | None
    """Writes per second."""
    discard: float | None
    """Bytes discarded per second."""
    some: float | None
    """io.pressure some avg10 (%)."""
    full: float | None
    """io.pressure full avg10 (%)."""
    limits: str
    """io.max / io.weight / io.latency in force, short; empty when none."""

    @property
    def total(self) -> float:
        """READ + WRITE, unknown counted as 0."""
        return (self.read or 0.0) + (self.write or 0.0)

    @property
    def active(self) -> bool:
        """Did I/O in the last interval."""
        return bool(self.total or self.rios or self.wios or self.discard)


@dataclass(frozen=True, slots=True)
class CgroupView:
    """How the rows are chosen and ordered."""

    sort: str = "total"
    """One of CGROUP_SORT_KEYS."""
    descending: bool = True
    """Biggest (or Z) first."""
    only_active: bool = False
    """Only cgroups with I/O in the last interval (and their ancestors)."""
    filter_text: str = ""
    """Case-insensitive substring of the path or the name."""


_SORTERS: dict[str, Callable[[CgroupRow], object]] = {
    "total": lambda r: r.total,
    "name": lambda r: r.name.lower(),
    "read": lambda r: r.read or 0.0,
    "write": lambda r: r.write or 0.0,
    "rios": lambda r: r.rios or 0.0,
    "wios": lambda r: r.wios or 0.0,
    "discard": lambda r: r.discard or 0.0,
    "some": lambda r: r.some or 0.0,
    "full": lambda r: r.full or 0.0,
}


def _parent(path: str) -> str | None:
    if path == "/":
        return None
    return path.rsplit("/", 1)[0] or "/"


def row_of(path: str, frame: CgroupFrame) -> CgroupRow:
    """One row from the frame's sample and rates."""
    sample: CgroupSample = frame.sample
    stat = sample.cgroups[path]
    r = frame.rates.get(path)
    t = r.total if r is not None else None
    p = stat.pressure
    limits = stat.limits.summary(sample.device_names) if stat.limits is not None else ""
    return CgroupRow(
        path,
        cgroup_name(path),
        0 if path == "/" else path.count("/"),
        t.read_bps if t else None,
        t.write_bps if t else None,
        t.read_iops if t else None,
        t.write_iops if t else None,
        t.discard_bps if t else None,
        p.some.avg10 if p is not None and p.some is not None else None,
        p.full.avg10 if p is not None and p.full is not None else None,
        limits,
    )


def build_cgroup_rows(frame: CgroupFrame, view: CgroupView) -> list[CgroupRow]:
    """The rows in tree order for ``view``: each cgroup under its parent, siblings sorted."""
    rows = {path: row_of(path, frame) for path in frame.sample.cgroups}
    keep: set[str] | None = None
    wanted = view.filter_text.lower()
    if wanted or view.only_active:
        keep = set()
        for path, row in rows.items():
            if wanted and wanted not in path.lower() and wanted not in row.name.lower():
                continue
            if view.only_active and not row.active:
                continue
            node: str | None = path
            while node is not None and node not in keep:  # a kept row keeps its ancestors
                keep.add(node)
                node = _parent(node)
    children: dict[str | None, list[CgroupRow]] = {}
    for path, row in rows.items():
        if keep is not None and path not in keep:
            continue
        parent = _parent(path)
        if parent is not None and parent not in rows:
            parent = None  # an orphan (its parent vanished mid-walk): list it at the top
        children.setdefault(parent, []).append(row)
    key = _SORTERS[view.sort]
    out: list[CgroupRow] = []
    stack = [_ordered(children.get(None, []), key, view.descending)[::-1]]
    while stack:
        level = stack[-1]
        if not level:
            stack.pop()
            continue
        row = level.pop()
        out.append(row)
        kids = children.get(row.path)
        if kids:
            stack.append(_ordered(kids, key, view.descending)[::-1])
    return out


def _ordered(
    rows: list[CgroupRow], key: Callable[[CgroupRow], object], descending: bool
) -> list[CgroupRow]:
    rows = sorted(rows, key=lambda r: r.path)  # ties: by path, stable between ticks
    rows.sort(key=key, reverse=descending)  # type: ignore[arg-type]
    return rows


def members_text(
    frame: CgroupFrame | None, path: str | None, limit: int = 12, *, recorded: bool = False
) -> str:
    """The processes of the selected cgroup, one per line (pid, name); ``recorded``: the
    frame is one of the history or a replay (what it lacks is not recorded, not coming)."""
    if path is None:
        return ""
    if frame is None or frame.members_of != path:
        if recorded:
            return f"{path}: its processes were not recorded at this time"
        return f"{path}: reading its processes..."
    head = f"{cgroup_name(path)}  ({path})"
    stat = frame.sample.cgroups.get(path)
    limits = stat.limits if stat is not None else None
    summary = limits.summary(frame.sample.device_names) if limits is not None else ""
    head += f"\nlimits: {summary or 'none'}"
    members = frame.members
    if not members:
        return f"{head}\nNo processes directly in this cgroup (they may be in its children)."
    lines = [head, f"{'PID':>7} NAME"]
    lines += [f"{pid:>7} {comm}" for pid, comm in members[:limit]]
    if len(members) > limit:
        lines.append(f"... and {len(members) - limit} more")
    return "\n".join(lines)


def _rate(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == 0 else f"{value:.1f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}" if value < 10 else f"{value:.0f}"


def _pair(figures: LatencyFigures) -> str | None:
    if figures.p50_ms is None and figures.p99_ms is None:
        return None
    return f"{_ms(figures.p50_ms)}/{_ms(figures.p99_ms)}"


def share_latency_text(share: CgroupShare | None) -> str | None:
    """``    p50/p99 ms R 0.21/1.3  W 0.1/0.4``: the device time of a cgroup's own tasks'
    requests on one device, as the tracer measured them; None when unknown (an estimate, a
    recording, no requests of that kind)."""
    if share is None:
        return None
    read, write = _pair(share.read), _pair(share.write)
    if read is None and write is None:
        return None
    parts = [f"R {read}" if read else "", f"W {write}" if write else ""]
    return "    p50/p99 ms " + "  ".join(p for p in parts if p)


def _traced_shares(issuers: IssuersFrame | None, path: str) -> dict[str, CgroupShare]:
    if issuers is None or issuers.estimate:
        return {}
    return {
        device: share
        for device, shares in issuers.cgroups.items()
        for share in shares
        if share.cgroup == path
    }


def device_split_text(
    frame: CgroupFrame | None, path: str, limit: int = 4, issuers: IssuersFrame | None = None
) -> str:
    """The I/O of cgroup ``path`` per device over the interval, busiest first: which disks it
    reads and writes (``loop2    R 1.2M 300  W 4.0M 20``: bytes and requests per second, in
    40 columns for the side panel at 120); empty without rates. When ``issuers`` were
    traced, each device's line is followed by the device latency (p50/p99) of the requests
    of the cgroup's own tasks there (:func:`share_latency_text`)."""
    rates = frame.rates.get(path) if frame is not None else None
    if frame is None or rates is None:
        return ""
    names = frame.sample.device_names
    busy = [(names.get(dev, dev), r) for dev, r in rates.devices.items() if active(r)]
    if not busy:
        return f"{cgroup_name(path)}: no I/O on any device in this interval"
    busy.sort(key=lambda item: (-item[1].total_bps, item[0]))
    shares = _traced_shares(issuers, path)
    lines = [f"{cgroup_name(path)} per device (B/s IO/s):"]
    for name, r in busy[:limit]:
        line = (
            f"  {name:<8} R {compact_bytes(r.read_bps)} {_rate(r.read_iops)}"
            f"  W {compact_bytes(r.write_bps)} {_rate(r.write_iops)}"
        )
        if r.discard_bps:
            line += f"  D {compact_bytes(r.discard_bps)}"
        lines.append(line)
        latency = share_latency_text(shares.get(name))
        if latency is not None:
            lines.append(latency)
    if len(busy) > limit:
        lines.append(f"  ... and {len(busy) - limit} more devices")
    return "\n".join(lines)
