"""Where slow syncs wait: the device's flush, the journal's commit, or other writers.

Judged only while the sync part is in the frame (``sync`` is never "unchecked": most frames
do not trace syncs, and a verdict line full of them would say nothing). Syncs on a device are
slow when their p99 is at least :data:`SLOW_P99_MS` (etcd's guidance for its WAL's fsync).
Then, with ``S`` the syncs' median:

* ``flush``: the device's flushes (the latency part's ``flush`` or ``flush+write`` median)
  take at least :data:`SHARE` of ``S``: the device's cache flush is the cost, and a faster
  sync needs a device that flushes faster (or no volatile cache).
* ``journal``: otherwise, the journal's commits (locked + flushing + logging, on average)
  take at least :data:`SHARE` of ``S``: each sync waits for a jbd2 commit of the whole
  transaction (everyone's metadata, and in ordered mode their data).
* ``writers``: neither explains it: the sync waits behind other writes (the file's own
  writeback, or other writers' requests queued ahead); the top issuer is in the evidence.

Confidence is medium when both the flush and the commit times are known, low when one is
missing (named in ``evidence.unknown``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from iotop_plus.why.saturation import Finding

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.model import Frame

CAUSE = "sync"
SLOW_P99_MS = 10.0
"""Syncs slower than this at p99 are worth explaining."""
SHARE = 0.5
"""A wait explains the syncs when it takes at least this share of their median."""
WAITS_ON = ("flush", "journal", "writers")
SYNC_KEY = "sync"
"""The sync part's key (``SyncPart.key``; a test checks it)."""


def _ms(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 3)


def _flush_ns(frame: Frame, device: str) -> float | None:
    from iotop_plus.sampling.latency.program import FLUSH_WRITE

    latency = frame.latency
    if latency is None or not latency.has_figures:
        return None
    dev = latency.devices.get(device)
    if dev is None:
        return None
    best: float | None = None
    for op in (FLUSH_WRITE, "flush"):
        p50 = dev.op(op).percentile(50.0)
        if p50 is not None:
            best = p50 if best is None else max(best, p50)
    return best


def _commit_ns(frame: Frame, device: str) -> tuple[float | None, dict[str, float | None]]:
    from iotop_plus.sampling.sync.jbd2_part import Jbd2Part

    journal = frame.get(Jbd2Part)
    if journal is None or not journal.traced:
        return None, {}
    dev = journal.devices.get(device)
    if dev is None or dev.phases is None or not dev.commits:
        return None, {}
    phases = {p: dev.phases[p].mean for p in ("locked", "flushing", "logging") if p in dev.phases}
    known = [v for v in phases.values() if v is not None]
    return (sum(known) if known else None), {f"{p}_ms": _ms(v) for p, v in phases.items()}


def sync_waits(frame: Frame, device: str) -> Finding | None:
    """The ``sync`` cause for ``device``, when its syncs are slow (see the module's doc)."""
    if SYNC_KEY not in frame.parts:
        return None  # (most frames: the sync parts' modules load with the first that has it)
    from iotop_plus.sampling.sync.part import SyncPart

    value = frame.get(SyncPart)
    if value is None or not value.traced:
        return None
    dev = value.devices.get(device)
    if dev is None:
        return None
    hist = dev.all
    p99 = hist.percentile(99.0)
    p50 = hist.percentile(50.0)
    if p99 is None or p50 is None or p99 < SLOW_P99_MS * 1e6:
        return None
    flush = _flush_ns(frame, device)
    commit, phases = _commit_ns(frame, device)
    evidence: dict[str, Any] = {
        "syncs": hist.count,
        "sync_p50_ms": _ms(p50),
        "sync_p99_ms": _ms(p99),
        "flush_p50_ms": _ms(flush),
        "commit_ms": _ms(commit),
        **phases,
    }
    unknown = [n for n, v in (("flush", flush), ("journal", commit)) if v is None]
    if flush is not None and flush >= SHARE * p50:
        waits, text = "flush", f"device flush {_ms(flush)} ms"
    elif commit is not None and commit >= SHARE * p50:
        waits, text = "journal", f"journal commit {_ms(commit)} ms"
    elif unknown == ["flush", "journal"]:
        waits, text = None, "where they wait is unknown (needs the latency tracer)"
    else:
        waits, text = "writers", "not the flush nor the journal: waiting behind other writes"
    evidence["waits_on"] = waits
    if unknown:
        evidence["unknown"] = unknown
    confidence = "low" if unknown else "medium"
    line = f"slow syncs (p99 {_ms(p99)} ms, p50 {_ms(p50)} ms): {text}"
    return Finding(CAUSE, evidence, confidence, line)
