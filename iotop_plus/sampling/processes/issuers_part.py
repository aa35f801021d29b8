"""The frame's issuers part: who issued each device's requests (:mod:`.issuers` reads it).

This module is light: :mod:`.issuers` (and its cost at a ``snapshot``'s start) loads only
when the part is first wanted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from iotop_plus.sampling.frame.model import CGROUPS, LATENCY, PROCESSES, THROTTLES
from iotop_plus.sampling.frame.part import FramePart, ReadContext

if TYPE_CHECKING:
    from iotop_plus.roots import Roots
    from iotop_plus.sampling.processes.issuers import IssuerReader, IssuersFrame

ISSUERS = "issuers"
"""The issuers part's key: while it is wanted the tracer charges each request to its process
and cgroup."""


class IssuersReader:
    """Makes :class:`~iotop_plus.sampling.processes.issuers.IssuerReader` at the first frame."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._reader: IssuerReader | None = None

    def read(self, ctx: ReadContext) -> tuple[IssuersFrame | None, tuple[()]]:
        """The issuers from this frame's latency (the tracer's attribution) or processes."""
        if self._reader is None:
            from iotop_plus.sampling.processes.issuers import IssuerReader

            self._reader = IssuerReader(self.roots)
        latency: Any = ctx.values.get(LATENCY)
        processes: Any = ctx.values.get(PROCESSES)
        limits = ctx.values.get(CGROUPS) or getattr(ctx.values.get(THROTTLES), "part", None)
        return self._reader.frame(latency, processes, limits=limits), ()

    def close(self) -> None:
        """Nothing held open."""


class IssuersPart(FramePart["IssuersFrame"]):
    """Each device's top issuers, recorded as ``W`` while they are traced (an estimate from
    the processes is not recorded: the recording's processes give it again)."""

    key = ISSUERS
    letter = "W"
    after = (THROTTLES,)

    def reader(self, roots: Roots) -> IssuersReader:
        """Reads ``/proc/PID`` of the issuers the tracer names."""
        return IssuersReader(roots)

    def to_json(self, value: IssuersFrame) -> Any:
        """:meth:`~iotop_plus.sampling.processes.issuers.IssuersFrame.to_record`."""
        return value.to_record()

    def from_json(self, doc: Any) -> IssuersFrame | None:
        """:meth:`~iotop_plus.sampling.processes.issuers.IssuersFrame.from_record`."""
        from iotop_plus.sampling.processes.issuers import IssuersFrame

        return IssuersFrame.from_record(doc)

    def record_json(self, value: IssuersFrame) -> Any:
        """The record while traced; None for an estimate."""
        return None if value.estimate else value.to_record()
