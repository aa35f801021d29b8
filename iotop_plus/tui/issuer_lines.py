"""The "who" line of the Device tab: the selected device's top three issuers in the frame
shown (live, paused or replayed), from the tracer or, without it, estimated."""

from __future__ import annotations

from iotop_plus.sampling.frame import Frame
from iotop_plus.sampling.issuers import Issuer

TOP_SHOWN = 3
"""Issuers the Device tab names."""
NOT_TRACED = "not traced (the latency columns or v on Processes trace it)"
"""The line when the frame carries no issuers."""


def issuer_text(issuer: Issuer) -> str:
    """``fio[4242] 2,500 IO/s p99 0.05 ms`` (kernel threads: ``kernel writeback ...``)."""
    name = f"{issuer.comm}[{issuer.pid}]" if issuer.pid is not None else issuer.comm
    if issuer.is_kernel and issuer.writeback:
        name += " writeback"
    if issuer.r_s is None and issuer.w_s is None:  # an estimate: bytes only
        return f"{name} {issuer.rkB_s + issuer.wkB_s:,.0f} kB/s"
    text = f"{name} {issuer.iops:,.0f} IO/s"
    p99 = [v for v in (issuer.read.p99_ms, issuer.write.p99_ms) if v is not None]
    if p99:
        text += f" p99 {max(p99):.3g} ms"
    return text


def issuer_facts(device: str, frame: Frame | None) -> list[tuple[str, str]]:
    """The ``who`` line for ``device`` in ``frame``: its top three issuers by IOPS."""
    if frame is None:
        return []
    issuers = frame.issuers
    if issuers is None:
        return [("who", NOT_TRACED)]
    top = issuers.of(device)[:TOP_SHOWN]
    text = " · ".join(issuer_text(i) for i in top) if top else "no I/O in this interval"
    if issuers.estimate:
        text += " (estimate: no tracer)"
    return [("who", text)]
