"""The Sync tab's text for one device: its fsync/fdatasync latency by file, its journal's
commits, and where slow syncs wait (the verdict's ``sync`` cause, judged off the UI thread
with the rest of the verdict: read from the frame's verdict, never worked out here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iotop_plus.sampling.sync.jbd2_part import Jbd2Part, journal_summary
from iotop_plus.sampling.sync.part import DeviceSync, SyncPart, sync_summary
from iotop_plus.text import printable
from iotop_plus.why.diagnosis import Diagnosis

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.model import Frame

NOT_SYNCS = "O_SYNC/O_DSYNC writes make no sync call: they are not counted here."
NOT_RECORDED = "Sync: not recorded at this time (record --sync keeps syncs and commits)"
NOT_YET = "Sync: not in this frame (syncs and commits are read on the live host; timed as root)"
FILES_SHOWN = 8


def _us(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.1f} ms" if value >= 1000 else f"{value:.0f} µs"


def _phase(doc: object) -> str:
    if not isinstance(doc, dict):
        return "-"
    return f"{_us(doc.get('avg'))} avg, {_us(doc.get('max'))} max"


def sync_lines(frame: Frame | None, device: str | None, recorded: bool = False) -> list[str]:
    """The tab's lines for ``device`` in ``frame``."""
    if device is None:
        return ["Sync: no device selected"]
    if frame is None:
        return ["Sync: waiting for the first frame"]
    value = frame.get(SyncPart)
    journal = frame.get(Jbd2Part)
    if value is None and journal is None:
        return [NOT_RECORDED if recorded else NOT_YET]
    lines = [f"Syncs on {printable(device)} (fsync, fdatasync; io_uring's too)"]
    if value is None or not value.traced:
        why = value.status if value is not None and value.status else "not traced"
        lines.append(f"  latency: {printable(why)}")
    else:
        dev = value.devices.get(device)
        doc = sync_summary(dev if dev is not None else DeviceSync({}))
        calls = ", ".join(f"{k} {h.count}" for k, h in sorted((dev.calls if dev else {}).items()))
        lines.append(
            f"  {doc['count']} syncs{f' ({calls})' if calls else ''}: p50 {_us(doc['p50_us'])}"
            f"  p99 {_us(doc['p99_us'])}  max {_us(doc['max_us'])}"
        )
        for f in doc["by_file"][:FILES_SHOWN]:
            who = f"{f['comm']}[{f['pid']}]"
            lines.append(f"  {f['count']:>6}  p99 {_us(f['p99_us']):>9}  {who}  {f['path']}")
    lines.append(f"  {NOT_SYNCS}")
    jdev = journal.devices.get(device) if journal is not None else None
    if jdev is None:
        lines.append("Journal: no jbd2 journal on this device")
    else:
        j = journal_summary(jdev)
        rate = j["commits_per_s"]
        lines.append(f"Journal (jbd2): {'-' if rate is None else f'{rate:.1f}'} commits/s")
        if jdev.phases is None:
            lines.append("  phases: not traced (the commit count is the kernel's)")
        else:
            lines.append(f"  locked   {_phase(j['locked_us'])}")
            lines.append(f"  flushing {_phase(j['flushing_us'])}")
            lines.append(f"  logging  {_phase(j['logging_us'])}")
            run = j["running_ms"]
            if isinstance(run, dict):
                lines.append(
                    f"  running  {run['avg']} ms avg, {run['max']} ms max (coarse: jiffies)"
                )
    verdict = (frame.verdicts or {}).get(device)
    slow = verdict.syncs if isinstance(verdict, Diagnosis) else None
    if slow is not None:
        lines.append(f"Why: {slow.text}")
    return lines
