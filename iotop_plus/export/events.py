"""What ``serve`` learns from the state directory: setting changes and probe results.

Other processes (the TUI, ``set``, ``probe``, ``sweep``, ``ab``, ``restore``) append to
``DIR/changes.jsonl`` (see :mod:`iotop_plus.devices.journal`) and ``DIR/probes.jsonl`` (see
``iotop_plus.probe.history``). The frames carry their lines as ``setting`` and ``probe``
events (the journal part of :class:`~iotop_plus.sampling.frame.live.LiveSource`, which reads them
whole from the start for ``serve``); :class:`StateEvents` counts them. A file replaced or cut
shorter (rotated) is read again from its start, and its counts start again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.journal_events import (
    CHANGE_RECORD,
    PROBE_RESULT_RECORD,
    SOURCES,
    JournalPart,
    JournalState,
)
from iotop_plus.state import CHANGES, PROBES

#: The ``record`` of a probe result line (``iotop_plus.probe.history.RESULT_RECORD``).
PROBE_RESULT = PROBE_RESULT_RECORD
#: The ``record`` of an applied write in the settings journal.
CHANGE = CHANGE_RECORD
_CHANGES_SOURCE = SOURCES[CHANGES][0]
_PROBES_SOURCE = SOURCES[PROBES][0]


@dataclass(frozen=True)
class ProbeFigures:
    """The last probe result for one (target, preset)."""

    iops: float
    """Read plus write IOPS."""
    bandwidth_bytes: float
    """Read plus write bandwidth, bytes per second."""
    latency_p99_seconds: float | None
    """The worse of the read and write completion-latency p99, in seconds."""
    timestamp: float
    """When it finished (seconds since the epoch)."""


def probe_figures(doc: dict[str, Any]) -> tuple[tuple[str, str], ProbeFigures] | None:
    """((target, preset), figures) of a ``probe-result`` line, or None if it does not parse."""
    try:
        result = doc["result"]
        key = (str(result["target"]), str(result["preset"]))
        iops = bandwidth = 0.0
        p99: float | None = None
        for direction in (result.get("read"), result.get("write")):
            if not isinstance(direction, dict):
                continue
            iops += float(direction["iops"])
            bandwidth += float(direction["bw_kib_s"]) * 1024
            percentiles = dict((str(k), float(v)) for k, v in direction["clat"]["percentiles_us"])
            if "p99" in percentiles:
                p99 = max(p99 or 0.0, percentiles["p99"] / 1e6)
        return key, ProbeFigures(iops, bandwidth, p99, float(doc["time"]))
    except (KeyError, TypeError, ValueError):
        return None


@dataclass
class StateEvents:
    """Counts of setting changes and the last probe per target, kept up to date by
    :meth:`take` from each frame's journal events (one thread)."""

    changes: dict[tuple[str, str], int] = field(default_factory=dict)
    """Applied writes by (device, setting), side effects included."""
    probes: dict[tuple[str, str], ProbeFigures] = field(default_factory=dict)
    """The last result by (target, preset)."""
    version: int = 0
    """Bumped whenever :attr:`changes` or :attr:`probes` changed."""
    problems: list[str] = field(default_factory=list)
    """Why a journal could not be read for the last frame."""

    def take(self, frame: Frame) -> bool:
        """Count the frame's journal events; True when something changed."""
        journal = frame.get(JournalPart) or JournalState()
        self.problems = list(journal.problems)
        changed = False
        if _CHANGES_SOURCE in journal.restarted:
            self.changes.clear()
            changed = True
        if _PROBES_SOURCE in journal.restarted:
            self.probes.clear()
            changed = True
        for event in frame.events:
            doc = event.record
            if doc is None:
                continue
            if event.source == _CHANGES_SOURCE and doc.get("record") == CHANGE:
                changed = self._count_change(doc) or changed
            elif event.source == _PROBES_SOURCE and doc.get("record") == PROBE_RESULT:
                parsed = probe_figures(dict(doc))
                if parsed is not None:
                    self.probes[parsed[0]] = parsed[1]
                    changed = True
        if changed:
            self.version += 1
        return changed

    def _count_change(self, doc: Mapping[str, Any]) -> bool:
        device = doc.get("queue_device") or doc.get("device")
        settings = [doc.get("setting")]
        effects = doc.get("side_effects")
        if isinstance(effects, list):
            settings += [e.get("setting") for e in effects if isinstance(e, dict)]
        counted = False
        for setting in settings:
            if isinstance(device, str) and isinstance(setting, str):
                key = (device, setting)
                self.changes[key] = self.changes.get(key, 0) + 1
                counted = True
        return counted
