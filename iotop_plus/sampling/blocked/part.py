"""The ``blocked`` frame part: threads stuck in uninterruptible sleep, grouped by reason, file
or mount, and cgroup (:mod:`.blocked`, read by :mod:`.blocked_scan`).

Read while wanted (``snapshot --blocked``, the TUI's Blocked tab, ``record --blocked``,
``serve``); recorded as type ``B``; ``blocked[]`` in each ``snapshot`` statistics entry;
exported as ``iotop_plus_blocked_tasks{device,reason}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from iotop_plus.roots import Roots
from iotop_plus.sampling.blocked.model import (
    MAX_GROUPS,
    MAX_PIDS,
    REASONS,
    BlockedGroup,
    BlockedTasks,
)
from iotop_plus.sampling.frame.part import FramePart, Metric, PartReader
from iotop_plus.text import printable

METRIC = "iotop_plus_blocked_tasks"
_HELP = (
    "Threads in uninterruptible sleep (D) by the device their file or mount lives on "
    "(empty: not known) and why they wait"
)
_TEXT_KEYS = ("wait", "syscall", "file", "mount", "device", "cgroup", "disk")
_MAX_TEXT = 4096
_REFUSABLE = ("wait", "syscall", "stack", "file")


class BlockedPart(FramePart[BlockedTasks]):
    """Blocked threads, read while wanted."""

    key = "blocked"
    letter = "B"
    record_flag = "blocked"

    def reader(self, roots: Roots) -> PartReader[BlockedTasks]:
        from iotop_plus.sampling.blocked.scan import BlockedReader

        return BlockedReader(roots)

    def to_json(self, value: BlockedTasks) -> Any:
        """The groups as ``snapshot`` shows them, plus the scan's figures."""
        return {
            "groups": [g.as_json(raw=True) for g in value.groups],
            "threads": value.threads,
            "scan_age_s": value.scan_age_s,
            "root": value.root,
            "dropped": value.dropped,
        }

    def from_json(self, doc: Any) -> BlockedTasks | None:
        """A recorded value; None for a document that is not one (never raises)."""
        if not isinstance(doc, dict) or not isinstance(doc.get("groups"), list):
            return None
        groups = []
        for entry in doc["groups"][:MAX_GROUPS]:
            found = _group(entry)
            if found is None:
                return None
            groups.append(found)
        threads, age, dropped = doc.get("threads"), doc.get("scan_age_s"), doc.get("dropped", 0)
        if not (_count(threads) and _count(dropped) and _seconds(age)):
            return None
        return BlockedTasks(
            groups=tuple(groups),
            threads=threads,
            scan_age_s=float(age),
            root=doc.get("root") is True,
            dropped=dropped,
        )

    def entry_json(self, value: BlockedTasks) -> Mapping[str, Any]:
        """``blocked[]``: every group (see :meth:`BlockedGroup.as_json`)."""
        return {"blocked": [g.as_json() for g in value.groups]}

    def metrics(self, value: BlockedTasks) -> Iterable[Metric]:
        """Blocked threads by device and reason (an unknown device is ``""``)."""
        counts: dict[tuple[str, str], int] = {}
        for g in value.groups:
            key = (printable(g.device or ""), g.reason)
            counts[key] = counts.get(key, 0) + g.count
        if value.dropped:
            counts["", "unknown"] = counts.get(("", "unknown"), 0) + value.dropped
        for (device, reason), count in sorted(counts.items()):
            yield Metric(METRIC, "gauge", _HELP, {"device": device, "reason": reason}, count)


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


def _seconds(value: object) -> TypeGuard[float]:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and 0 <= value < 10**9  # also refuses NaN
    )


def _group(doc: object) -> BlockedGroup | None:
    """One recorded group; None unless every field has its type."""
    if not isinstance(doc, dict) or doc.get("reason") not in REASONS:
        return None
    texts: dict[str, str | None] = {}
    for key in _TEXT_KEYS:
        value = doc.get(key)
        if value is not None and not (isinstance(value, str) and len(value) <= _MAX_TEXT):
            return None
        texts[key] = value
    pids, refused, comm = doc.get("pids"), doc.get("refused", []), doc.get("comm", "")
    if not isinstance(pids, list) or not all(_count(p) for p in pids[:MAX_PIDS]):
        return None
    if not isinstance(refused, list) or not all(r in _REFUSABLE for r in refused):
        return None
    if not isinstance(comm, str) or len(comm) > _MAX_TEXT:
        return None
    count, oldest = doc.get("count"), doc.get("oldest_s")
    if not (_count(count) and _seconds(oldest)):
        return None
    return BlockedGroup(
        reason=doc["reason"],
        wait=texts["wait"],
        syscall=texts["syscall"],
        file=texts["file"],
        mount=texts["mount"],
        device=texts["device"],
        cgroup=texts["cgroup"],
        count=count,
        pids=tuple(pids[:MAX_PIDS]),
        oldest_s=float(oldest),
        comm=comm,
        disk=texts["disk"],
        refused=tuple(refused[: len(_REFUSABLE)]),
    )
