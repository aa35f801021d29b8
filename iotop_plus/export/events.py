"""What ``serve`` learns from the state directory: setting changes and probe results.

Other processes (the TUI, ``set``, ``probe``, ``sweep``, ``ab``, ``restore``) append to
``DIR/changes.jsonl`` (see :mod:`iotop_plus.devices.journal`) and ``DIR/probes.jsonl`` (see
``iotop_plus.probe.history``); ``serve`` tails both on its sampler thread. A file replaced or
cut shorter (rotated) is read again from its start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iotop_plus.state import CHANGES, PROBES, JsonlTail, StateDir

#: The ``record`` of a probe result line (``iotop_plus.probe.history.RESULT_RECORD``).
PROBE_RESULT = "probe-result"
#: The ``record`` of an applied write in the settings journal.
CHANGE = "change"


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
    :meth:`poll` (one thread)."""

    state: StateDir | None
    """The state directory, or None for none (nothing to tail)."""
    changes: dict[tuple[str, str], int] = field(default_factory=dict)
    """Applied writes by (device, setting), side effects included."""
    probes: dict[tuple[str, str], ProbeFigures] = field(default_factory=dict)
    """The last result by (target, preset)."""
    version: int = 0
    """Bumped whenever :attr:`changes` or :attr:`probes` changed."""

    def __post_init__(self) -> None:
        self._changes = JsonlTail(self.state, CHANGES) if self.state is not None else None
        self._probes = JsonlTail(self.state, PROBES) if self.state is not None else None

    @property
    def problems(self) -> list[str]:
        """Why a file could not be read on the last poll."""
        return [t.problem for t in (self._changes, self._probes) if t is not None and t.problem]

    def poll(self) -> bool:
        """Read what was appended since the last poll; True when something changed."""
        if self._changes is None or self._probes is None:
            return False
        changed = False
        restarted, docs = self._changes.read()
        if restarted:
            self.changes.clear()
            changed = True
        for doc in docs:
            if doc.get("record") != CHANGE:
                continue
            device = doc.get("queue_device") or doc.get("device")
            settings = [doc.get("setting")]
            effects = doc.get("side_effects")
            if isinstance(effects, list):
                settings += [e.get("setting") for e in effects if isinstance(e, dict)]
            for setting in settings:
                if isinstance(device, str) and isinstance(setting, str):
                    key = (device, setting)
                    self.changes[key] = self.changes.get(key, 0) + 1
                    changed = True
        restarted, docs = self._probes.read()
        if restarted:
            self.probes.clear()
            changed = True
        for doc in docs:
            if doc.get("record") != PROBE_RESULT:
                continue
            parsed = probe_figures(doc)
            if parsed is not None:
                self.probes[parsed[0]] = parsed[1]
                changed = True
        if changed:
            self.version += 1
        return changed
