"""Why a device is slow: a short ranked list of causes, each with its figures and how sure.

A pure function of one frame and what came before it (a
:class:`~iotop_plus.why.lookback.Lookback`: the last frames, each device's quiet
baseline). Each cause is checked only from what the frames carry; a cause whose data the
frame lacks is named in ``unchecked``, never guessed. When nothing holds, the verdict is
``none`` ("no clear cause"). The causes and their thresholds:

* ``throttled``: a cgroup ran at >= 90 % of one of its limits on the device over the
  interval (v2 ``io.max``, v1 ``blkio.throttle``; :mod:`iotop_plus.sampling.cgroups.limits`).
  Needs the cgroups part, or the cheap throttle check that reads only the limited cgroups
  (:mod:`iotop_plus.sampling.cgroups.throttle_watch`, the TUI's frames while the Cgroups tab is
  closed). High: the limit is what delays that cgroup's I/O.
* ``errors``: failed requests on the device since the previous frame (high), or "device
  reports media errors": the drive's own error figures *grew* since this process started
  (media errors, reallocated or pending sectors higher than at the first reading, a new
  critical-warning bit, SMART turned from passed to failed: medium, as health is read at
  most every 5 minutes). A lifetime count alone is not a cause: a drive that had 40
  reallocated sectors when we started and still has 40 says nothing about this incident
  (the health line and the table's mark still show it). Needs the health part.
* ``capped`` and ``saturated``: the device's own busy time, queue depth and await against
  its quiet baseline over the last frames, or a full queue; ``capped`` when a reason lies
  below it (a throttled or saturated device underneath, a network volume's cap). See
  :mod:`iotop_plus.why.saturation`.
* ``writeback``: dirty memory is at or over the background threshold while the device
  writes (medium), over the foreground threshold where writers are throttled, or the
  flusher was seen writing this device (high); untraced, dirty reached
  :data:`NEAR_BACKGROUND` of the background threshold in the last frames while
  ``nr_written`` rises (or ``Writeback`` is not 0) and the device writes (medium). Needs the
  memory part.
* ``blocked``: threads wait in uninterruptible sleep on a file or mount on the device (or one
  of its partitions) and the oldest has waited :data:`BLOCKED_S` or more without running
  (:mod:`iotop_plus.sampling.blocked.model`). High for a frozen filesystem or a wait of
  :data:`BLOCKED_LONG_S` or more, else medium. It holds on an idle device too: a frozen
  filesystem's device does no I/O at all. Needs the blocked part.
* ``queue``: requests spend more time in the scheduler queue than in the device (queue
  share of queue + device time >= 50 %: medium; >= 75 %: high). Needs the latency tracer.
* ``sync``: the device's fsync/fdatasync p99 is 10 ms or more, and whether they wait on
  the device's flush, the journal's commits or other writers
  (:mod:`iotop_plus.why.sync_verdict`). Judged only while the sync part is in the
  frame, and never listed as unchecked.
* ``cpu``: CPU pressure (PSI cpu ``some`` avg10) >= 30 % (medium) or >= 60 % (high), and
  only when no device-side cause holds. When one does, the pressure is
  ``cpu_some_avg10`` in each cause's evidence and its text says it may inflate await: a
  busy CPU never clears a device whose own figures say it is saturated. Needs host PSI.

Who issues the I/O describes, it does not explain: the top issuer (by IOPS when traced, by
bytes from the estimate) is ``top_issuer`` (``pid``, ``comm``, ``share_pct``, and ``kind``
when it is one of the kernel's entries) in every cause's evidence, when the issuers part is
there.

A device doing under :data:`MIN_IOPS` and under 5 % busy is idle: nothing to explain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from iotop_plus.sampling.cgroups.throttle_watch import ThrottlePart
from iotop_plus.sampling.health.gate import HealthPart
from iotop_plus.sampling.memory.dirty import MemoryPart
from iotop_plus.sampling.processes.issuers_part import IssuersPart
from iotop_plus.why.lookback import MIN_IOPS, RECENT, Lookback, as_lookback, await_ms
from iotop_plus.why.saturation import Finding, capped, saturated
from iotop_plus.why.sync_verdict import sync_waits

if TYPE_CHECKING:
    from iotop_plus.sampling.cgroups.limits import DeviceLimit
    from iotop_plus.sampling.disks.rates import DeviceRates
    from iotop_plus.sampling.frame.model import CgroupFrame, Frame
    from iotop_plus.sampling.memory.dirty import Memory

CAUSES = (
    "throttled",
    "errors",
    "capped",
    "saturated",
    "writeback",
    "blocked",
    "queue",
    "sync",
    "cpu",
)
"""Every cause, in the order they rank at equal confidence."""
NONE = "none"
CONFIDENCE = ("high", "medium", "low")
QUEUE_SHARE = (0.75, 0.5)
"""Queue share of queue + device time for a high / medium ``queue`` verdict."""
CPU_SOME = (60.0, 30.0)
"""PSI cpu some avg10 (%) for a high / medium ``cpu`` verdict, and from which the pressure
qualifies the device-side causes."""
NEAR_BACKGROUND = 0.8
"""Dirty at this share of the background threshold or more: the flusher's territory."""
WRITEBACK_FRAMES = 2
"""The untraced writeback rule needs the judged frame and at least this many before it."""
BLOCKED_S = 1.0
"""A ``blocked`` cause needs a thread that waited this long without running (a page read
waits milliseconds: seen at one frame it says nothing)."""
BLOCKED_LONG_S = 10.0
"""A wait this long makes ``blocked`` high."""


@dataclass(frozen=True)
class Cause:
    """One reason the device may be slow, with the figures behind it."""

    cause: str
    """One of :data:`CAUSES`, or ``none``."""
    evidence: Mapping[str, Any]
    """The figures it rests on, by name."""
    confidence: str
    """``high``, ``medium`` or ``low``."""
    text: str
    """One line for people."""

    def as_json(self) -> dict[str, Any]:
        """One ``disk[].diagnosis`` entry."""
        return {
            "cause": self.cause,
            "evidence": dict(self.evidence),
            "confidence": self.confidence,
            "text": self.text,
        }


@dataclass(frozen=True)
class Diagnosis:
    """The verdict for one device in one frame."""

    causes: tuple[Cause, ...]
    """Ranked, most certain first; one ``none`` entry when no cause holds."""
    unchecked: tuple[str, ...] = field(default=())
    """Causes the frame had no data for."""
    syncs: Cause | None = None
    """Where the device's slow syncs wait, as found (the Sync tab's why; whatever else holds,
    even on an idle device), or None when its syncs are not slow or not traced."""

    def as_json(self) -> list[dict[str, Any]]:
        """``disk[].diagnosis``."""
        return [c.as_json() for c in self.causes]

    @property
    def held(self) -> tuple[str, ...]:
        """The causes that hold (empty for ``none``)."""
        return tuple(c.cause for c in self.causes if c.cause != NONE)

    def line(self) -> str:
        """The verdict line, every cause: ``throttled by /h2: riops 100 (98 % used) [high] ·
        ...``."""
        if not self.held:
            text = self.causes[0].text if self.causes else "no clear cause"
            gaps = f" (unchecked: {', '.join(self.unchecked)})" if self.unchecked else ""
            return text + gaps
        return " · ".join(f"{c.text} [{c.confidence}]" for c in self.causes)


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


_last_throttled: tuple[Any, Mapping[str, list[DeviceLimit]]] = (None, {})
"""The last cgroup part seen and its throttled limits by device: every device of a frame is
judged against the same cgroups, walked once (one tuple, read and replaced whole: threads
judging other frames never see a part with another's limits)."""


def _throttled_limits(part: CgroupFrame) -> Mapping[str, list[DeviceLimit]]:
    from iotop_plus.sampling.cgroups.limits import device_limits

    global _last_throttled
    seen, found = _last_throttled
    if seen is not part:
        by_device: dict[str, list[DeviceLimit]] = {}
        for limit in device_limits(part.sample, part.rates):
            if limit.throttled and limit.binding is not None:
                by_device.setdefault(limit.device, []).append(limit)
        found = by_device
        _last_throttled = (part, found)
    return found


def _limits_part(frame: Frame) -> CgroupFrame | None:
    """The cgroups that say what limits are in force: the full part, else the throttle
    check's limited cgroups (None: throttling is not checked)."""
    if frame.cgroups is not None:
        return frame.cgroups
    throttles = frame.get(ThrottlePart)
    return throttles.part if throttles is not None else None


def _throttled(frame: Frame, device: str) -> list[Cause]:
    part = _limits_part(frame)
    assert part is not None
    out = []
    for limit in _throttled_limits(part).get(device, ()):
        assert limit.binding is not None
        key = limit.binding
        evidence = {
            "cgroup": limit.cgroup,
            "limit": key,
            "limit_value": limit.limits.get(key),
            "used_pct": _r(limit.usage[key] * 100, 1),
            "source": limit.source,
        }
        share = limit.usage[key] * 100
        text = (
            f"throttled by {limit.cgroup}'s {limit.source} limit: "
            f"{key} {limit.limits.get(key)} ({share:.0f} % used)"
        )
        out.append(Cause("throttled", evidence, "high", text))
    return out


_GROWN_WORDS = {
    "media_errors": "media errors",
    "reallocated_sectors": "reallocated",
    "pending_sectors": "pending",
    "ioerr_cnt": "SCSI ioerr_cnt",
}


def _grown_text(key: str, was: int, now: int) -> str:
    if key == "critical_warning":
        return f"critical warning 0x{was:02x}→0x{now:02x}"
    if key == "failing":
        return "SMART now failing"
    return f"{_GROWN_WORDS.get(key, key)} {was}→{now}"


def growth_text(grown: Mapping[str, tuple[int, int]]) -> str:
    """``media errors 7→9, pending 0→8``: the error figures that grew since the start."""
    return ", ".join(_grown_text(k, *v) for k, v in grown.items())


def _errors(frame: Frame, device: str) -> list[Cause]:
    health = frame.get(HealthPart)
    assert health is not None
    new = health.new_errors.get(device, 0)
    grown = health.grown.get(device, {})
    if not new and not grown:
        return []
    evidence: dict[str, Any] = {"new_io_errors": new} if new else {}
    parts = [f"{new} failed I/O requests"] if new else []
    if grown:
        for key, (was, now) in grown.items():
            evidence[key] = now
            evidence[f"{key}_at_start"] = was
        parts.append(f"device reports media errors: {growth_text(grown)} since start")
    return [Cause("errors", evidence, "high" if new else "medium", "; ".join(parts))]


def _writeback(frame: Frame, device: str, rates: DeviceRates, lookback: Lookback) -> list[Cause]:
    memory = frame.get(MemoryPart)
    assert memory is not None
    dirty = memory.dirty_kB or 0
    bg = memory.dirty_background_threshold_kB or 0
    top = memory.dirty_threshold_kB or 0
    who = frame.get(IssuersPart)
    flusher = who is not None and any(i.writeback for i in who.of(device) if i.is_kernel)
    if rates.w_s <= 0:
        return []
    evidence: dict[str, Any] = {
        "dirty_kB": memory.dirty_kB,
        "writeback_kB": memory.writeback_kB,
        "dirty_background_threshold_kB": memory.dirty_background_threshold_kB,
        "dirty_threshold_kB": memory.dirty_threshold_kB,
        "w/s": _r(rates.w_s),
    }
    high = flusher or (top > 0 and dirty >= top)
    if top > 0 and dirty >= top:
        text = f"writeback storm: dirty {dirty // 1024} MB over the limit: writers are throttled"
    elif memory.over_background:
        text = f"writeback storm: dirty {dirty // 1024} MB over the background {bg // 1024} MB"
    elif flusher:
        text = "writeback: the flusher is writing this device back"
    else:
        written = _writing_back(memory, lookback.memories())
        if written is None:
            return []
        evidence.update(written)
        text = (
            f"writeback: dirty at the background threshold {bg // 1024} MB in the last "
            f"frames (now {dirty // 1024} MB) while the flusher writes back"
        )
    dirtier = _top_dirtier(frame, device)
    if dirtier is not None:
        evidence["top_dirtier"] = dirtier
        text += f"; dirtied by {dirtier['comm']}[{dirtier['pid']}] ({dirtier['share_pct']:.0f} %)"
    return [Cause("writeback", evidence, "high" if high else "medium", text)]


def _top_dirtier(frame: Frame, device: str) -> dict[str, Any] | None:
    """The process whose dirty pages were most of what ``device`` wrote back in the frame
    (when the frame carries files: the hot-files part shares written-back bytes among the
    inodes' dirtiers)."""
    from iotop_plus.sampling.files.part import FilesPart

    files = frame.get(FilesPart)
    dev = files.of(device) if files is not None else None
    if dev is None or not dev.dirtiers:
        return None
    top = dev.dirtiers[0]
    return {"pid": top.pid, "comm": top.comm, "share_pct": round(top.share * 100, 1)}


def _writing_back(memory: Memory, earlier: Sequence[Memory]) -> dict[str, int] | None:
    """Untraced writeback: over the judged frame and the :data:`WRITEBACK_FRAMES` to
    :data:`~iotop_plus.why.lookback.RECENT` - 1 before it, dirty memory reached
    :data:`NEAR_BACKGROUND` of the background threshold (the flusher then drains it in bursts,
    down to nothing and back, so no single frame says it), while pages are written back:
    ``nr_written`` rose since the frame before (its rise in pages), or, where it was not read
    (a recording), ``Writeback`` is not 0. None when the rule does not hold."""
    last = list(earlier)[-(RECENT - 1) :]
    bg = memory.dirty_background_threshold_kB or 0
    if len(last) < WRITEBACK_FRAMES or bg <= 0:
        return None
    if max((m.dirty_kB or 0) for m in [*last, memory]) < NEAR_BACKGROUND * bg:
        return None
    before = last[-1].written_pages
    if memory.written_pages is not None and before is not None:
        rise = memory.written_pages - before
        return {"nr_written_rise": rise} if rise > 0 else None
    return {"writeback_kB": memory.writeback_kB} if memory.writeback_kB else None


def _blocked(frame: Frame, device: str) -> list[Cause]:
    from iotop_plus.sampling.blocked.model import REASON_TEXT
    from iotop_plus.sampling.blocked.part import BlockedPart
    from iotop_plus.text import printable

    tasks = frame.get(BlockedPart)
    found = tasks.on(device) if tasks is not None else ()
    if not found or max(g.oldest_s for g in found) < BLOCKED_S:
        return []
    oldest = max(found, key=lambda g: g.oldest_s)
    threads = sum(g.count for g in found)
    reasons: dict[str, int] = {}
    for g in found:
        reasons[g.reason] = reasons.get(g.reason, 0) + g.count
    where = oldest.file or oldest.mount or oldest.device or device
    evidence = {
        "threads": threads,
        "oldest_s": oldest.oldest_s,
        "reasons": reasons,
        "mount": None if oldest.mount is None else printable(oldest.mount),
        "file": None if oldest.file is None else printable(oldest.file),
        "syscall": oldest.syscall,
        "pids": list(oldest.pids[:5]),
    }
    high = "frozen" in reasons or oldest.oldest_s >= BLOCKED_LONG_S
    call = f"{oldest.syscall} on " if oldest.syscall else "on "
    who = f" (pid {oldest.pids[0]} {oldest.comm})" if oldest.pids else ""
    text = printable(
        f"{threads} {'thread' if threads == 1 else 'threads'} blocked, "
        f"{REASON_TEXT.get(oldest.reason, oldest.reason)}: {call}{where} "
        f"for {oldest.oldest_s:.0f} s{who}"
    )
    return [Cause("blocked", evidence, "high" if high else "medium", text)]


def _queue(frame: Frame, device: str) -> list[Cause]:
    lat = frame.latency
    assert lat is not None
    seen = lat.devices.get(device)
    share = seen.queue_share() if seen is not None else None
    if seen is None or share is None or share < QUEUE_SHARE[1]:
        return []
    evidence = {
        "queue_ms_mean": _r(seen.queue_ms_mean, 3),
        "device_ms_mean": _r(seen.device_ms_mean, 3),
        "queue_share_pct": _r(share * 100, 1),
    }
    confidence = "high" if share >= QUEUE_SHARE[0] else "medium"
    text = f"queue-bound: {share * 100:.0f} % of the time in the scheduler queue, not the device"
    return [Cause("queue", evidence, confidence, text)]


def _cpu_some(frame: Frame) -> float | None:
    pressure = frame.pressure
    cpu = pressure.resources.get("cpu") if pressure is not None else None
    return cpu.some.avg10 if cpu is not None and cpu.some is not None else None


def _cpu(frame: Frame, rates: DeviceRates) -> list[Cause]:
    """CPU pressure as the cause: only when no device-side cause holds."""
    some = _cpu_some(frame)
    if some is None or some < CPU_SOME[1]:
        return []
    pressure = frame.pressure
    io = pressure.resources.get("io") if pressure is not None else None
    evidence = {
        "cpu_some_avg10": some,
        "io_some_avg10": io.some.avg10 if io is not None and io.some is not None else None,
        "%util": _r(rates.util),
    }
    confidence = "high" if some >= CPU_SOME[0] else "medium"
    text = f"CPU pressure {some:.0f} %: tasks wait for a CPU; no device-side cause holds"
    return [Cause("cpu", evidence, confidence, text)]


def _with_cpu(found: list[Cause], some: float | None) -> list[Cause]:
    """Device-side causes qualified by the CPU pressure (it may inflate await)."""
    if some is None or some < CPU_SOME[1]:
        return found
    note = f" (CPU pressure {some:.0f} % may inflate await)"
    return [
        replace(c, evidence={**c.evidence, "cpu_some_avg10": some}, text=c.text + note)
        for c in found
    ]


def top_issuer(frame: Frame, device: str) -> dict[str, Any] | None:
    """The device's top issuer (by IOPS when traced, else by bytes from the estimate) as
    ``{"pid", "comm", "share_pct"}``; None without issuers or I/O."""
    issuers = frame.get(IssuersPart)
    found = issuers.of(device) if issuers is not None else ()
    if issuers is None or not found:
        return None
    exact = not issuers.estimate

    def amount(i: Any) -> float:
        if exact and i.r_s is not None and i.w_s is not None:
            return float(i.r_s + i.w_s)
        return float(i.rkB_s + i.wkB_s)

    total = sum(amount(i) for i in found)
    top = max(found, key=amount)
    if total <= 0:
        return None
    out = {"pid": top.pid, "comm": top.comm, "share_pct": _r(amount(top) / total * 100, 1)}
    if top.is_kernel:
        out["kind"] = top.kind or "other"
    return out


def unchecked_causes(frame: Frame) -> tuple[str, ...]:
    """The causes ``frame`` has no data for."""
    missing = []
    if _limits_part(frame) is None:
        missing.append("throttled")
    if frame.get(HealthPart) is None:
        missing.append("errors")
    memory = frame.get(MemoryPart)
    if memory is None or not memory.has_figures:
        missing.append("writeback")
    if frame.latency is None or not frame.latency.has_figures:
        missing.append("queue")
    pressure = frame.pressure
    if pressure is None or "cpu" not in pressure.resources:
        missing.append("cpu")
    if "blocked" not in frame.parts:
        missing.append("blocked")
    return tuple(missing)


def _limits_on(frame: Frame) -> Any:
    """A device's throttled limits in ``frame`` (None: throttling is not checked)."""
    part = _limits_part(frame)
    if part is None:
        return None
    limits = _throttled_limits(part)
    return lambda device: limits.get(device, ())


def _saturation(frame: Frame, device: str, lookback: Lookback) -> list[Cause]:
    found = saturated(frame, device, lookback)
    if found is None:
        return []
    found = capped(frame, device, lookback, found, _limits_on(frame)) or found
    return [_cause(found)]


def _cause(found: Finding) -> Cause:
    return Cause(found.cause, found.evidence, found.confidence, found.text)


def diagnose(frame: Frame, device: str, recent: Lookback | Sequence[DeviceRates] = ()) -> Diagnosis:
    """The verdict for ``device`` in ``frame``; ``recent``: what came before it (a
    :class:`~iotop_plus.why.lookback.Lookback`, or the device's earlier rates, oldest
    first)."""
    lookback = as_lookback(recent, device)
    unchecked = unchecked_causes(frame)
    slow_syncs = sync_waits(frame, device)
    syncs = _cause(slow_syncs) if slow_syncs is not None else None
    rates = frame.rates.get(device)
    if rates is None:
        evidence: dict[str, Any] = {}
        return Diagnosis(
            (Cause(NONE, evidence, "low", "no rates yet: nothing to judge"),), unchecked, syncs
        )
    iops = rates.r_s + rates.w_s + rates.d_s
    figures = {
        "r/s": _r(rates.r_s),
        "w/s": _r(rates.w_s),
        "await": _r(await_ms(rates)),
        "aqu-sz": _r(rates.aqu_sz),
        "%util": _r(rates.util),
    }
    stuck = _blocked(frame, device) if "blocked" not in unchecked else []
    if iops < MIN_IOPS and rates.util < 5.0 and not stuck:
        idle = Cause(NONE, figures, "high", "idle: no I/O to explain")
        return Diagnosis((idle,), unchecked, syncs)
    found: list[Cause] = []
    if "throttled" not in unchecked:
        found += _throttled(frame, device)
    if "errors" not in unchecked:
        found += _errors(frame, device)
    found += _saturation(frame, device, lookback)
    if "writeback" not in unchecked:
        found += _writeback(frame, device, rates, lookback)
    found += stuck
    if "queue" not in unchecked:
        found += _queue(frame, device)
    if syncs is not None:
        found.append(syncs)
    if found:
        found = _with_cpu(found, _cpu_some(frame))
    elif "cpu" not in unchecked:
        found = _cpu(frame, rates)
    who = top_issuer(frame, device)
    if not found:
        confidence = "low" if unchecked else "medium"
        found = [Cause(NONE, figures, confidence, "no clear cause")]
    if who is not None:
        found = [replace(c, evidence={**c.evidence, "top_issuer": who}) for c in found]
    if found[0].cause == NONE:
        return Diagnosis(tuple(found), unchecked, syncs)
    found.sort(key=lambda c: (CONFIDENCE.index(c.confidence), CAUSES.index(c.cause)))
    return Diagnosis(tuple(found), unchecked, syncs)
