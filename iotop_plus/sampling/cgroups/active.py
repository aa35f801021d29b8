"""The cgroups worth keeping of a frame's cgroup part: those that did I/O in its interval.

The TUI's history ring and the recorder keep only these (a host may have thousands of idle
cgroups, and the Cgroups tab's question is who did the I/O), at most
:data:`KEPT_CGROUPS` of them, the busiest first. Pure: no files are read here.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from iotop_plus.sampling.frame.model import CgroupFrame

if TYPE_CHECKING:  # the cgroup reader loads only when someone wants cgroups
    from iotop_plus.sampling.cgroups.reader import CgroupRates, IoRates

KEPT_CGROUPS = 50
"""Cgroups kept per frame in history and recordings, the busiest by bytes, then by IOPS."""


def busy(rates: IoRates) -> bool:
    """Whether any I/O was counted over the interval."""
    return bool(
        rates.read_bps
        or rates.write_bps
        or rates.read_iops
        or rates.write_iops
        or rates.discard_bps
        or rates.discard_iops
    )


def busiest_cgroups(part: CgroupFrame, keep: int = KEPT_CGROUPS) -> list[tuple[str, CgroupRates]]:
    """The ``keep`` cgroups that did the most I/O, busiest first (ties by path).

    Counters are inclusive (a parent's figures hold its children's), so the busiest cgroups
    come with their ancestors and the kept rows still form a tree.
    """
    active = [(path, r) for path, r in part.rates.items() if r is not None and busy(r.total)]
    active.sort(
        key=lambda item: (
            -item[1].total.total_bps,
            -(item[1].total.read_iops + item[1].total.write_iops),
            item[0],
        )
    )
    return active[: max(keep, 0)]


def active_cgroup_frame(part: CgroupFrame | None, keep: int = KEPT_CGROUPS) -> CgroupFrame | None:
    """``part`` with only its busiest cgroups (their counters, pressure, limits and rates).

    None stays None: a frame that carried no cgroups still says so in history. The members
    of the detailed cgroup are kept (one short list).
    """
    if part is None:
        return None
    kept = busiest_cgroups(part, keep)
    stats = part.sample.cgroups
    sample = part.sample
    paths = [path for path, _ in kept if path in stats]
    if len(paths) == len(stats):
        return part
    small = replace(sample, cgroups=MappingProxyType({p: stats[p] for p in paths}))
    return CgroupFrame(
        small,
        MappingProxyType({p: part.rates[p] for p in paths}),
        part.members,
        part.members_of,
    )


__all__ = [
    "KEPT_CGROUPS",
    "active_cgroup_frame",
    "busiest_cgroups",
    "busy",
]
