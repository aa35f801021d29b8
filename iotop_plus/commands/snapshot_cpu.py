"""iostat's ``avg-cpu`` in ``snapshot``'s JSON: the share of CPU time of each kind between two
samples, from the ``cpu`` line of ``/proc/stat``, with iostat's formulas and keys.

sysstat's ``iostat.c``: the interval's total is user + nice + system + idle + iowait + irq +
softirq + steal jiffies (guest time is inside user already); ``system`` is system + irq +
softirq; ``idle`` is 0 when its counter went backwards. Figures have two decimals, as
``iostat -x -o JSON`` prints them: ``{"user", "nice", "system", "iowait", "steal", "idle"}``.
"""

from __future__ import annotations

from typing import NamedTuple

from iotop_plus.roots import Roots
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded


class CpuTimes(NamedTuple):
    """The host's cumulative CPU jiffies of each kind (``/proc/stat``'s ``cpu`` line)."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def total(self) -> int:
        """Every kind iostat counts in an interval's total."""
        return sum(self)


def parse_cpu_line(text: str) -> CpuTimes | None:
    """The ``cpu`` line of ``/proc/stat`` text (absent counters 0); None without one."""
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["cpu"]:
            values = [int(w) for w in words[1:9] if w.isdigit()]
            if len(values) < 4:
                return None
            return CpuTimes(*values, *[0] * (8 - len(values)))
    return None


def read_cpu(roots: Roots) -> CpuTimes | None:
    """The host's CPU times now; None where ``/proc/stat`` cannot be read."""
    try:
        # The cpu line comes first; the per-CPU and interrupt lines after it can be long.
        text = read_bounded(roots.proc / "stat", 64 * MAX_ATTRIBUTE_BYTES)
    except OSError:
        return None
    return parse_cpu_line(text)


def avg_cpu(before: CpuTimes | None, after: CpuTimes | None) -> dict[str, float] | None:
    """iostat's ``avg-cpu`` between two readings (percent); None where either is missing."""
    if before is None or after is None:
        return None
    total = after.total - before.total
    if total <= 0:
        return None

    def share(delta: int) -> float:
        return round(100.0 * max(delta, 0) / total, 2)

    return {
        "user": share(after.user - before.user),
        "nice": share(after.nice - before.nice),
        "system": share(
            after.system + after.irq + after.softirq - before.system - before.irq - before.softirq
        ),
        "iowait": share(after.iowait - before.iowait),
        "steal": share(after.steal - before.steal),
        "idle": share(after.idle - before.idle),
    }
