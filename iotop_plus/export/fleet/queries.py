"""The fleet view's PromQL, written over the names the exporter gives its metrics.

The disk counters' names come from :data:`~iotop_plus.export.counters.DISK_COUNTERS` (looked up
by the kernel field they export), the latency histogram's from
:data:`~iotop_plus.export.latency.REQUEST_DURATION` and the PSI counter's from
:data:`~iotop_plus.export.collector.PRESSURE_STALLED`: renaming an exported metric renames it
here too. ``tests/unit/test_fleet_queries_name_exported_metrics.py`` checks every name these queries
use against what ``serve`` actually exports.
"""

from __future__ import annotations

from collections.abc import Mapping

from iotop_plus.export.collector import PREFIX, PRESSURE_STALLED
from iotop_plus.export.counters import DISK_COUNTERS
from iotop_plus.export.latency import REQUEST_DURATION
from iotop_plus.sampling.disks.diskstats import (
    IO_TICKS,
    READ_MS,
    READS,
    SECTORS_READ,
    SECTORS_WRITTEN,
    TIME_IN_QUEUE,
    WRITE_MS,
    WRITES,
)

DEFAULT_WINDOW = "1m"


def counter_series(field: int) -> str:
    """The exported counter series of the /proc/diskstats field at index ``field``."""
    (spec,) = (c for c in DISK_COUNTERS if c.index == field)
    return f"{PREFIX}{spec.name}_total"


READS_TOTAL = counter_series(READS)
WRITES_TOTAL = counter_series(WRITES)
READ_BYTES_TOTAL = counter_series(SECTORS_READ)
WRITTEN_BYTES_TOTAL = counter_series(SECTORS_WRITTEN)
READ_SECONDS_TOTAL = counter_series(READ_MS)
WRITE_SECONDS_TOTAL = counter_series(WRITE_MS)
IO_SECONDS_TOTAL = counter_series(IO_TICKS)
IO_WEIGHTED_SECONDS_TOTAL = counter_series(TIME_IN_QUEUE)
PSI_STALLED_TOTAL = f"{PRESSURE_STALLED}_total"
"""PSI full, host-wide (``pressure_families`` in :mod:`iotop_plus.export.collector`)."""
DISK_SERIES = f"{PREFIX}disk_*"
"""The family the fleet's per-device queries read, as named in the "no data yet" note."""

_BY = "sum by (instance, device)"


def _rate_sum(*series: str) -> str:
    """``sum by (instance, device) (rate(a[{w}]) + rate(b[{w}]))``."""
    return f"{_BY} (" + " + ".join(f"rate({s}[{{w}}])" for s in series) + ")"


_IOS = _rate_sum(READS_TOTAL, WRITES_TOTAL)

#: Column key -> PromQL (``{w}`` is the rate window). Each yields one value per
#: (instance, device), except those in :data:`PER_INSTANCE`, one per instance.
FLEET_QUERIES: Mapping[str, str] = {
    "iops": _IOS,
    "bytes_s": _rate_sum(READ_BYTES_TOTAL, WRITTEN_BYTES_TOTAL),
    "await_ms": f"1000 * {_rate_sum(READ_SECONDS_TOTAL, WRITE_SECONDS_TOTAL)} / ({_IOS} > 0)",
    "p99_ms": (
        "1000 * histogram_quantile(0.99, sum by (instance, device, le) "
        f"(rate({REQUEST_DURATION}_bucket[{{w}}])))"
    ),
    "util_pct": f"100 * {_BY} (rate({IO_SECONDS_TOTAL}[{{w}}]))",
    "aqu_sz": f"{_BY} (rate({IO_WEIGHTED_SECONDS_TOTAL}[{{w}}]))",
    "psi_full_pct": (
        f'sum by (instance) (100 * rate({PSI_STALLED_TOTAL}{{{{resource="io"}}}}[{{w}}]))'
    ),
}
PER_INSTANCE = frozenset({"psi_full_pct"})
"""The :data:`FLEET_QUERIES` answered per host, not per device."""


DIAGNOSIS = f"{PREFIX}disk_diagnosis"
"""The verdict's causes per device (``diagnosis_families`` in :mod:`iotop_plus.export.why`)."""
DIAGNOSIS_QUERY = f"max by (instance, device, cause) ({DIAGNOSIS} == 1)"
"""Every cause that holds now, per (instance, device): one series each (``none``: no clear
cause)."""


def _rate(series: str) -> str:
    return f"rate({series}{{sel}}[{{w}}])"


def _writes_as_op_w(promql: str) -> str:
    return f"label_replace({promql}, 'op', 'w', '', '')"


#: Chart key -> (title, PromQL with ``{sel}`` the device selector and ``{w}`` the window).
HISTORY_QUERIES: Mapping[str, tuple[str, str]] = {
    "iops": (
        "IOPS r / w",
        f"{_rate(READS_TOTAL)} or {_writes_as_op_w(_rate(WRITES_TOTAL))}",
    ),
    "bytes_s": (
        "MB/s r / w",
        f"{_rate(READ_BYTES_TOTAL)} / 1e6 or "
        f"{_writes_as_op_w(_rate(WRITTEN_BYTES_TOTAL) + ' / 1e6')}",
    ),
    "await_ms": (
        "await ms",
        f"1000 * ({_rate(READ_SECONDS_TOTAL)} + {_rate(WRITE_SECONDS_TOTAL)}) / "
        f"({_rate(READS_TOTAL)} + {_rate(WRITES_TOTAL)} > 0)",
    ),
    "util_pct": ("%util", f"100 * {_rate(IO_SECONDS_TOTAL)}"),
    "aqu_sz": ("aqu-sz", f"{_rate(IO_WEIGHTED_SECONDS_TOTAL)}"),
}


def selector(instance: str, device: str) -> str:
    """``{instance="...",device="..."}`` with the values escaped for PromQL."""

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return f'{{instance="{esc(instance)}",device="{esc(device)}"}}'
