"""The "who" line of the Device tab: the selected device's top three issuers in the frame
shown (live, paused or replayed), from the tracer or, without it, estimated."""

from __future__ import annotations

from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.processes.issuers import issuer_text
from iotop_plus.sampling.processes.issuers_part import IssuersPart

TOP_SHOWN = 3
"""Issuers the Device tab names."""
NOT_TRACED = "not traced (the latency columns or v on Processes trace it)"
"""The line when the frame carries no issuers."""


def issuer_facts(device: str, frame: Frame | None) -> list[tuple[str, str]]:
    """The ``who`` line for ``device`` in ``frame``: its top three issuers by IOPS."""
    if frame is None:
        return []
    issuers = frame.get(IssuersPart)
    if issuers is None:
        return [("who", NOT_TRACED)]
    top = issuers.of(device)[:TOP_SHOWN]
    text = " · ".join(issuer_text(i) for i in top) if top else "no I/O in this interval"
    if issuers.estimate:
        text += " (estimate: no tracer)"
    return [("who", text)]
