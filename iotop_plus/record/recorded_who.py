"""Who did the I/O, as a recording keeps it (format version 4): command lines and cgroups.

Two frame parts (:attr:`~iotop_plus.record.chunks.RecordedSample.parts`):

* ``N``: the command lines of the recorded top processes, each written once per chunk: in the
  first sample of a chunk where its pid appears (again when the pid runs another program).
  ``[{"pid": 4242, "cmdline": "fio --name=a ..."}, ...]``, each at most
  :data:`MAX_CMDLINE` characters. A chunk (one wall-clock minute) can be read alone, so the
  reader finds every command line of a sample in the sample's own chunk.
* ``C``: the cgroups that did I/O in the interval (at most
  :data:`~iotop_plus.sampling.cgroups.active.KEPT_CGROUPS`, busiest first) with their rates
  per device: ``{"version": "v1", "root": "/sys/fs/cgroup/blkio", "cgroups": [{"path": "/a",
  "some": 1.5, "full": 0.0, "devices": {"loop2": [rB/s, wB/s, r/s, w/s, dB/s, d/s]}}]}``.
  Present only while the recorder reads cgroups; an absent part is "not recorded".

Files of version 3 and older have neither: their frames carry no cgroups, and their processes
only the comm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.sampling.cgroups.active import KEPT_CGROUPS, busiest_cgroups
from iotop_plus.sampling.cgroups.limits import limits_from_doc
from iotop_plus.sampling.cgroups.reader import CgroupRates, CgroupSample, CgroupStat, IoRates
from iotop_plus.sampling.frame.model import CgroupFrame, Frame
from iotop_plus.sampling.pressure import PressureLine, ResourcePressure

COMMAND_LINES = "N"
"""The record type of new pids' command lines."""
CGROUPS = "C"
"""The record type of the cgroups with I/O."""
MAX_CMDLINE = 512
"""Characters of a command line kept (``ps`` cuts them too); the rest is dropped."""
CHUNK_S = 60
"""A chunk is one wall-clock minute (:data:`~iotop_plus.record.chunks.CHUNK_SECONDS`)."""
_IO_FIELDS = 6


class CommandLines:
    """Which pids' command lines the open chunk already holds, so each is written once."""

    def __init__(self) -> None:
        self._seen: set[tuple[int, str]] = set()
        self._minute: int | None = None

    def reset(self) -> None:
        """A new chunk or file starts: every pid is new again."""
        self._seen = set()

    def part(self, frame: Frame, pids: Sequence[int]) -> list[dict[str, Any]]:
        """The ``N`` document for ``pids`` (the recorded top processes) of ``frame``: those
        not yet written in this chunk (a new minute, or new devices, start a chunk)."""
        minute = int(frame.wall_time // CHUNK_S)
        if minute != self._minute or frame.inventory_changed:
            self.reset()
            self._minute = minute
        procs = frame.processes
        if procs is None:
            return []
        by_pid = {task.pid: task for task in procs.sample.tasks.values()}
        out = []
        for pid in pids:
            task = by_pid.get(pid)
            if task is None or not task.cmdline or task.cmdline == task.comm:
                continue  # nothing a reader would not show anyway (its comm)
            key = (pid, task.comm)
            if key in self._seen:
                continue
            self._seen.add(key)
            out.append({"pid": pid, "cmdline": task.cmdline[:MAX_CMDLINE]})
        return out


def command_lines(parts: Sequence[Any]) -> dict[int, str]:
    """Pid -> command line from a chunk's ``N`` documents up to a sample, oldest first (a
    later line for the same pid, after an exec, wins); bad entries are skipped."""
    out: dict[int, str] = {}
    for doc in parts:
        for entry in doc if isinstance(doc, list) else ():
            if not isinstance(entry, Mapping):
                continue
            pid, cmdline = entry.get("pid"), entry.get("cmdline")
            if type(pid) is int and pid > 0 and isinstance(cmdline, str):
                out[pid] = cmdline[:MAX_CMDLINE]
    return out


def chunk_command_lines(samples: Sequence[RecordedSample], i: int) -> dict[int, str]:
    """The command lines in force at sample ``i`` of a chunk's ``samples``: written at or
    before it, else (the first sample of a file the recorder started mid-minute) the first
    written after it."""
    docs = [s.parts.get(COMMAND_LINES) for s in samples]
    found = command_lines(docs[: i + 1])
    for pid, line in command_lines(docs[:i:-1]).items():  # later ones, the nearest wins
        found.setdefault(pid, line)
    return found


def _figures(r: IoRates) -> list[float]:
    values = (r.read_bps, r.write_bps, r.read_iops, r.write_iops, r.discard_bps, r.discard_iops)
    return [round(v, 1) for v in values]


def cgroups_part(part: CgroupFrame | None, keep: int = KEPT_CGROUPS) -> dict[str, Any] | None:
    """The ``C`` document of a frame's cgroups; None when the frame carried none."""
    if part is None:
        return None
    sample = part.sample
    names = sample.device_names
    rows = []
    for path, rates in busiest_cgroups(part, keep):
        stat = sample.cgroups.get(path)
        pressure = stat.pressure if stat is not None else None
        row: dict[str, Any] = {"path": path}
        if pressure is not None:
            row["some"] = pressure.some.avg10 if pressure.some is not None else None
            row["full"] = pressure.full.avg10 if pressure.full is not None else None
        row["devices"] = {names.get(dev, dev): _figures(r) for dev, r in rates.devices.items()}
        rows.append(row)
    return {"version": sample.version, "root": sample.root, "cgroups": rows}


def with_who(
    rs: RecordedSample, frame: Frame, memo: CommandLines | None, cgroups: bool = True
) -> RecordedSample:
    """``rs`` (the recorder's sample of ``frame``) with the ``N`` part (new pids' command
    lines; ``memo`` None: none) and, when ``cgroups`` and the frame carries them, ``C``."""
    parts = dict(rs.parts)
    if memo is not None and rs.processes:
        pids = [p["pid"] for p in rs.processes if type(p.get("pid")) is int]
        lines = memo.part(frame, pids)
        if lines:
            parts[COMMAND_LINES] = lines
    if cgroups:
        doc = cgroups_part(frame.cgroups)
        if doc is not None:
            parts[CGROUPS] = doc
    return replace(rs, parts=MappingProxyType(parts))


class WhoParts:
    """Adds the ``N`` and ``C`` parts to the recorder's samples, one file after another.

    Args:
        command_lines: The pids written in the open chunk (None: no command lines).
        cgroups: Record the cgroups doing I/O (the frames carry them).
    """

    def __init__(self, command_lines: CommandLines | None, *, cgroups: bool) -> None:
        self.command_lines = command_lines
        self.cgroups = cgroups
        self._files: int | None = None

    def add(
        self, rs: RecordedSample, frame: Frame, files_started: int, file_open: bool
    ) -> RecordedSample:
        """``rs`` with the parts; ``files_started`` and ``file_open`` are the recorder's
        before ``rs`` is written: a file starts with it, or one started since the last sample
        (rotated mid-minute), and every pid's command line is written again."""
        if self.command_lines is not None and (not file_open or files_started != self._files):
            self.command_lines.reset()
        self._files = files_started if file_open else files_started + 1
        return with_who(rs, frame, self.command_lines, self.cgroups)


def rebundled(rs: RecordedSample, frame: Frame, memo: CommandLines) -> RecordedSample:
    """A recorded sample as a bundle writes it again: its ``N`` part made anew for the
    bundle's chunks (``frame``, the sample's replayed frame, has every command line in force),
    so a bundle that starts mid-minute still names its processes."""
    parts = {k: v for k, v in rs.parts.items() if k != COMMAND_LINES}
    pids = [p["pid"] for p in rs.processes or () if type(p.get("pid")) is int]
    lines = memo.part(frame, pids)
    if lines:
        parts[COMMAND_LINES] = lines
    return replace(rs, parts=MappingProxyType(parts))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value == value and abs(value) < 1e18 else None


def _io_rates(values: Any) -> IoRates | None:
    if not isinstance(values, list) or len(values) != _IO_FIELDS:
        return None
    numbers = [_number(v) for v in values]
    if any(n is None or n < 0 for n in numbers):
        return None
    return IoRates(*(n or 0.0 for n in numbers))


def _line(avg10: float | None) -> PressureLine | None:
    return None if avg10 is None else PressureLine(avg10, 0.0, 0.0, 0)


def _pressure(row: Mapping[str, Any]) -> ResourcePressure | None:
    some, full = _number(row.get("some")), _number(row.get("full"))
    if some is None and full is None:
        return None
    return ResourcePressure(_line(some), _line(full))


def _total(devices: Sequence[IoRates]) -> IoRates:
    return IoRates(*(sum(getattr(r, f) for r in devices) for f in IoRates.__slots__))


def cgroup_frame_of(doc: Any, monotonic: float, wall_time: float) -> CgroupFrame | None:
    """The cgroup part of a recorded frame from its ``C`` document (None: not recorded).

    Only the cgroups that did I/O are there; rows of a corrupt or hostile file that do not
    have the recorded shape are left out.
    """
    if not isinstance(doc, Mapping):
        return None
    stats: dict[str, CgroupStat] = {}
    rates: dict[str, CgroupRates | None] = {}
    rows = doc.get("cgroups")
    for row in rows[:KEPT_CGROUPS] if isinstance(rows, list) else ():
        path = row.get("path") if isinstance(row, Mapping) else None
        if not isinstance(path, str) or not path.startswith("/") or path in stats:
            continue
        devices = row.get("devices")
        per_device = {
            str(name): r
            for name, values in (devices.items() if isinstance(devices, Mapping) else ())
            if (r := _io_rates(values)) is not None
        }
        stats[path] = CgroupStat(path, 0, None, _pressure(row))
        total = _total(list(per_device.values()))
        rates[path] = CgroupRates(total, MappingProxyType(per_device))
    version = doc.get("version")
    root = doc.get("root")
    sample = CgroupSample(
        monotonic,
        wall_time,
        version if version in ("v1", "v2") else None,
        root if isinstance(root, str) else "?",
        MappingProxyType(stats),
    )
    return CgroupFrame(sample, MappingProxyType(rates))


__all__ = [
    "CGROUPS",
    "COMMAND_LINES",
    "MAX_CMDLINE",
    "CommandLines",
    "WhoParts",
    "cgroup_frame_of",
    "cgroups_part",
    "chunk_command_lines",
    "command_lines",
    "rebundled",
    "with_who",
]


def with_limits(part: CgroupFrame | None, doc: Any) -> CgroupFrame | None:
    """A replayed cgroup part with the recorded limits (``L``) put back on its cgroups (a
    limited cgroup that did no I/O gets a row of its own); unchanged without limits."""
    limits = limits_from_doc(doc)
    if part is None or not limits:
        return part
    stats = dict(part.sample.cgroups)
    for path, found in limits.items():
        stat = stats.get(path)
        stats[path] = (
            replace(stat, limits=found)
            if stat is not None
            else CgroupStat(path, 0, None, None, found)
        )
    return replace(part, sample=replace(part.sample, cgroups=MappingProxyType(stats)))
