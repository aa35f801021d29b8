"""A recorded sample as a :class:`~iotop_plus.sampling.frame.model.Frame`: the one place a frame is
rebuilt from what a recording (or the frame store's memory ring) holds.

Rates come from the recorded raw counters with the live code (``rates_between``), so every
figure is what a live view would have shown for the same pair of samples.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.recorded_health import chunk_health
from iotop_plus.record.recorded_parts import part_values
from iotop_plus.record.recorded_processes import process_frame
from iotop_plus.record.recorded_who import (
    CGROUPS,
    cgroup_frame_of,
    chunk_command_lines,
    with_limits,
)
from iotop_plus.sampling.disks.sampler import rates_between
from iotop_plus.sampling.frame.model import Frame, FrameEvent
from iotop_plus.sampling.health.gate import HEALTH
from iotop_plus.sampling.pressure import Pressure, PressureLine, ResourcePressure
from iotop_plus.sampling.topology.inventory import Inventory


def recorded_frame(
    now: RecordedSample,
    before: RecordedSample | None,
    inventory: Inventory,
    nr: Mapping[str, int],
    *,
    changed: bool,
    seq: int,
    chunk: Sequence[RecordedSample],
    index: int,
) -> Frame:
    """The frame of sample ``now`` with rates since ``before`` (None: no rates).

    ``chunk`` holds ``now`` at ``index``: the chunk's earlier samples carry the command lines
    and health facts a sample refers back to.
    """
    sample = now.sample
    if before is not None and before.sample.monotonic < sample.monotonic:
        rates: Mapping[str, Any] = rates_between(before.sample, sample)
        elapsed: float | None = sample.monotonic - before.sample.monotonic
    else:
        rates, elapsed = dict.fromkeys(sample.counters), None
    return Frame(
        sample=sample,
        rates=MappingProxyType(dict(rates)),
        inventory=inventory,
        inventory_changed=changed,
        nr_requests=MappingProxyType(nr),
        elapsed_s=elapsed,
        ever_used=frozenset(n for n, c in sample.counters.items() if c.ever_used),
        seq=seq,
        events=tuple(frame_events(now.events)),
        pressure=pressure_of(now.pressure),
        processes=process_frame(now, before, chunk_command_lines(chunk, index)),
        cgroups=with_limits(
            cgroup_frame_of(now.parts.get(CGROUPS), sample.monotonic, sample.wall_time),
            now.parts.get("L"),
        ),
        parts=part_values(now.parts, **{HEALTH: chunk_health(chunk, index, sample.wall_time)}),
    )


def pressure_of(doc: Any) -> Pressure | None:
    """A :class:`Pressure` from its recorded JSON (``Pressure.as_json()``)."""
    if not isinstance(doc, dict):
        return None
    resources = {}
    for name, res in doc.items():
        if not isinstance(res, dict):
            continue
        lines = []
        for kind in ("some", "full"):
            line = res.get(kind)
            try:
                lines.append(PressureLine(**line) if isinstance(line, dict) else None)
            except TypeError:
                lines.append(None)
        resources[str(name)] = ResourcePressure(lines[0], lines[1])
    return Pressure(resources)


def frame_events(events: Any) -> Iterator[FrameEvent]:
    """Recorded events as :class:`FrameEvent` (kinds ``device-*``, ``setting``, ``probe``); a
    journal event keeps its line and the journal it came from, as live."""
    for event in events or ():
        if not isinstance(event, dict):
            continue
        source = event.get("source")
        if source == "device":
            yield FrameEvent(str(event.get("kind")), str(event.get("text")), event.get("device"))
            continue
        doc = event.get("record")
        if not isinstance(doc, dict):
            continue
        device = doc.get("device") if isinstance(doc.get("device"), str) else None
        kind = "setting" if source == "changes" else "probe"
        if kind == "setting" and "setting" in doc:
            text = f"{device or '?'} {doc.get('setting')}: {doc.get('old')} -> {doc.get('new')}"
            if doc.get("kind") or doc.get("type"):
                text = f"{doc.get('kind') or doc.get('type')}: {text}"
        else:
            text = json.dumps(doc, separators=(",", ":"))[:200]
        yield FrameEvent(kind, text, device, doc, str(source))
