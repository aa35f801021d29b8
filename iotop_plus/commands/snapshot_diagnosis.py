"""``disk[].diagnosis`` and ``disk[].unchecked`` in ``snapshot`` JSON (always, from what the
frame has), and ``snapshot --diagnose``, which has the frames read cgroups and their limits
too (memory is read with every frame)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from iotop_plus.sampling.diagnosis import RECENT, diagnose
from iotop_plus.sampling.diskstats import printable
from iotop_plus.sampling.frame import CGROUPS, Frame, FrameSource
from iotop_plus.sampling.rates import DeviceRates


def want_diagnosis(source: FrameSource) -> None:
    """Ask the frames for what the verdict needs beyond the disks: cgroups and limits."""
    source.want(CGROUPS, True)


def add_diagnosis(
    disks: Sequence[dict[str, Any]], frame: Frame | None, recent: dict[str, list[DeviceRates]]
) -> None:
    """Give each ``disk[]`` entry ``diagnosis`` and ``unchecked``; ``recent`` keeps each
    device's earlier rates across the reports (updated here)."""
    if frame is None:
        return
    for disk in disks:
        name = disk["disk_device"]
        verdict = diagnose(frame, name, recent.get(name, ()))
        disk["diagnosis"] = verdict.as_json()
        disk["unchecked"] = list(verdict.unchecked)
        rates = frame.rates.get(name)
        if rates is not None:
            recent[name] = [*recent.get(name, ()), rates][-RECENT:]


def render_verdicts(
    args: argparse.Namespace,
    names: Sequence[str],
    frame: Frame | None,
    recent: dict[str, list[DeviceRates]],
) -> str:
    """The table's verdict lines with ``--diagnose``: ``why sda: ...`` per device (else
    nothing)."""
    if frame is None or not getattr(args, "diagnose", False):
        return ""
    disks = [{"disk_device": n} for n in names if frame.rates.get(n) is not None]
    lines = []
    for disk in disks:
        name = disk["disk_device"]
        lines.append(printable(f"why {name}: {diagnose(frame, name, recent.get(name, ())).line()}"))
        rates = frame.rates.get(name)
        if rates is not None:
            recent[name] = [*recent.get(name, ()), rates][-RECENT:]
    return "\n".join(lines) + "\n" if lines else ""
