"""Notices a latency tracer gone blind (its map of request stamps full)."""

from __future__ import annotations

from collections.abc import Mapping

BLIND_RATIO = 0.7
"""A tracer that counts fewer than this share of the completions the disks report..."""
BLIND_MIN_IOS = 500
"""...over a frame with at least this many completions..."""
BLIND_FRAMES = 2
"""...this many frames in a row has a full stamp map (see :class:`BlindWatch`): restart it."""


class BlindWatch:
    """Notices a tracer gone blind because its map of request stamps is full.

    The kernel skips a tracepoint's BPF program when it fires in an interrupt while another
    BPF program runs on the same CPU, so a few completions are never seen (about 0.1 % of
    them on a busy loop device over a virtio disk here) and their issue stamps stay in the
    map. On a large disk their sectors rarely come back, so after minutes of heavy random I/O
    the map is full and new requests go unstamped: the figures would quietly cover fewer and
    fewer requests. bpftrace 0.17 cannot clear a map that probes delete from (it aborts), so
    the cure is a new tracer, and this watch says when: when the devices that were traced
    report many more completions (``/proc/diskstats``) than the tracer saw, frame after
    frame. Devices never traced (bio-based dm and md, partitions) do not count.
    """

    def __init__(self) -> None:
        self._prev: dict[str, int] = {}
        self._traced: set[str] = set()
        self._strikes = 0

    def blind(self, counters: Mapping[str, object], seen: Mapping[str, int]) -> bool:
        """Take one frame: ``counters`` (cumulative disk counters by name) and ``seen`` (reads
        and writes the tracer counted per name); True when the tracer should be restarted."""
        completed = traced = 0
        for name, c in counters.items():
            reads, writes = getattr(c, "reads", None), getattr(c, "writes", None)
            if not isinstance(reads, int) or not isinstance(writes, int):
                continue
            now, before = reads + writes, self._prev.get(name)
            self._prev[name] = now
            got = seen.get(name, 0)
            if got:
                self._traced.add(name)
            if before is not None and name in self._traced and now >= before:
                completed += now - before
                traced += got
        short = completed >= BLIND_MIN_IOS and traced < BLIND_RATIO * completed
        self._strikes = self._strikes + 1 if short else 0
        return self._strikes >= BLIND_FRAMES
