"""``disk[].diagnosis`` and ``disk[].unchecked`` in ``snapshot`` JSON (always, from what the
frame has), and ``snapshot --diagnose`` (and ``--issuers``), which has the frames read cgroups
and their limits too (memory is read with every frame) and prints a ``why`` line a device.
Each report is judged with the reports before it (:class:`Reports`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from iotop_plus.sampling.frame.model import CGROUPS, Frame, FrameSource
from iotop_plus.text import printable
from iotop_plus.why.diagnosis import Diagnosis
from iotop_plus.why.verdicts import Judge, judge


class Reports:
    """The reports judged so far: each device's verdict looks back on them (the one
    :class:`~iotop_plus.why.verdicts.Judge` the TUI's and ``serve``'s frames go
    through).

    Args:
        earlier: The frames just before the first report, oldest first (from a recording:
            its frames before the window, what a replay's verdict looks back on there).
        prior: Each device's quiet awaits before ``earlier`` (from a recording: its frames
            before them, :mod:`~iotop_plus.why.quiet_history`, as a replay has them).
    """

    def __init__(
        self, earlier: Sequence[Frame] = (), prior: Callable[[str], Sequence[float]] | None = None
    ) -> None:
        self._judge = Judge(prior)
        self._count = 0
        self._frame: Frame | None = None
        self._judged: Frame | None = None
        for frame in earlier:
            self._count += 1
            self._judge.lookback.add(frame, self._count)

    def verdict(self, frame: Frame, device: str) -> Diagnosis:
        """``device``'s verdict in ``frame``, a report after those already judged."""
        if frame is not self._frame:
            self._frame, self._count = frame, self._count + 1
            self._judged = self._judge.judged(frame, seq=self._count)
        judged = self._judged
        assert judged is not None and judged.verdicts is not None
        found = judged.verdicts.get(device)
        if not isinstance(found, Diagnosis):  # not a device of the frame
            lookback = self._judge.lookback.before(frame, self._count)
            found = judge(frame, lookback, (device,))[device]
        return found


def want_diagnosis(source: FrameSource) -> None:
    """Ask the frames for what the verdict needs beyond the disks: cgroups and limits."""
    source.want(CGROUPS, True)


def add_diagnosis(disks: Sequence[dict[str, Any]], frame: Frame | None, reports: Reports) -> None:
    """Give each ``disk[]`` entry ``diagnosis`` and ``unchecked``."""
    if frame is None:
        return
    for disk in disks:
        verdict = reports.verdict(frame, disk["disk_device"])
        disk["diagnosis"] = verdict.as_json()
        disk["unchecked"] = list(verdict.unchecked)


def render_verdicts(
    args: argparse.Namespace, names: Sequence[str], frame: Frame | None, reports: Reports
) -> str:
    """The table's verdict lines with ``--diagnose`` or ``--issuers``: ``why sda: ...`` per
    device (else nothing)."""
    asked = getattr(args, "diagnose", False) or getattr(args, "issuers", False)
    if frame is None or not asked:
        return ""
    lines = [
        f"why {printable(name)}: {printable(reports.verdict(frame, name).line())}"
        for name in names
        if frame.rates.get(name) is not None
    ]
    return "".join(f"{line}\n" for line in lines)
