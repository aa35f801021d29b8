"""The "why" lines of the Device tab: dirty/writeback memory and the verdict for the
selected device, from the frame shown (live, paused or replayed)."""

from __future__ import annotations

from iotop_plus.sampling.cgroups.throttle_watch import ThrottlePart
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.memory.dirty import MemoryPart
from iotop_plus.why.diagnosis import Diagnosis

JUDGING = "judging…"
"""The why line while the frame's verdict is judged (off the UI thread)."""


def why_facts(_device: str, frame: Frame | None) -> list[tuple[str, str]]:
    """(label, value) lines of ``frame`` beside a device's facts: dirty and writeback memory
    (host-wide, so the same for every device)."""
    if frame is None:
        return []
    facts: list[tuple[str, str]] = []
    memory = frame.get(MemoryPart)
    if memory is not None:
        text = memory.summary()
        if memory.over_background:
            text += "  (over the background threshold: writing back)"
        facts.append(("memory", text))
    else:
        facts.append(("memory", "not recorded"))
    return facts


def verdict_facts(device: str, frame: Frame | None) -> list[tuple[str, str]]:
    """The verdict line for ``device`` in ``frame`` (the Device tab shows it first, every
    cause, wrapped): the frame's derived verdict, judged off the UI thread with the frames
    before it (:mod:`iotop_plus.why.verdicts`); "judging…" until it is there
    (:func:`~iotop_plus.why.verdicts.has_verdict`)."""
    if frame is None:
        return []
    verdict = frame.verdicts.get(device) if frame.verdicts is not None else None
    line = verdict.line() if isinstance(verdict, Diagnosis) else JUDGING
    facts = [("why", line)]
    throttles = frame.get(ThrottlePart)
    if frame.cgroups is None and throttles is not None and throttles.problem:
        facts.append(("why note", throttles.problem))  # the throttle check was too costly
    return facts


WHY_HELP = (
    "Device tab, memory: Dirty and Writeback from /proc/meminfo, bg and max the kernel's "
    "dirty background and foreground thresholds (/proc/vmstat). At bg the flusher starts "
    "writing back (a chart mark); at max writers are throttled. Host-wide, not per device.",
    "Device tab, why: the verdict for the selected device, every cause that holds, ranked by "
    "how sure (high, medium, low), from the frame shown and the five before it: throttled (a "
    "cgroup at >= 90 % of an io.max or blkio.throttle limit; read from the limited cgroups), "
    "errors (failed requests in the interval, or 'device reports media errors': media "
    "errors, reallocated or pending sectors, critical-warning bits or a SMART failure that "
    "grew since iotop-plus started; a lifetime count that did not move is not a cause), "
    "saturated (in 4 of the last 5 frames >= 90 % busy, aqu-sz >= 4 and await >= 4x the "
    "device's quiet baseline, the median await of earlier frames with aqu-sz <= 1; with no "
    "baseline, await >= 4x the service time util / IOPS on a loop device without direct I/O "
    "or a spinning disk, medium; or aqu-sz >= 90 % of nr_requests), capped (saturated, and "
    "the device below, named, is throttled or saturated itself, or it is a network volume "
    "with a provisioned cap: EBS, Persistent Disk, Azure disk), writeback (dirty over the "
    "background threshold while the device writes; or, without the tracer, dirty at 80 % of "
    "it in the last five frames while nr_written rises and the device writes), blocked "
    "(threads in D state on a file or mount of the device, the oldest waiting >= 1 s without "
    "running; high for a frozen filesystem or >= 10 s; read while the Blocked tab, key B, is "
    "open), queue (>= 50 "
    "% of the time in the scheduler queue; needs the latency columns), cpu (PSI cpu some "
    ">= 30 %, only when nothing on the "
    "device side holds; otherwise each cause notes that CPU pressure may inflate await). The "
    "top issuer is evidence on each cause, not a cause. 'no clear cause' when none holds; "
    "'unchecked' names what the frame had no figures for. Never a guess.",
)
"""The help's paragraphs on the memory and verdict lines (thresholds of
:mod:`iotop_plus.why.diagnosis`)."""
