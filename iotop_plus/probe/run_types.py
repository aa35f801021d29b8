"""What a probe run takes and gives: the request, live progress, the outcome, the error."""

from __future__ import annotations

from dataclasses import dataclass

from iotop_plus.probe.presets import Preset, ProbeParams
from iotop_plus.probe.results import ProbeResult
from iotop_plus.probe.target import ProbeTarget

INSTALL_HINT = "install it with `apt-get install fio` (Debian/Ubuntu) or `dnf install fio`"


class ProbeError(Exception):
    """A probe failed; the message is one plain line for the user."""


class DirectIORefused(ProbeError):
    """The target's filesystem refuses O_DIRECT: the run is not made (no buffered stand-in)."""


@dataclass(frozen=True)
class FileLayout:
    """A probe file laid out before fio starts, which fio then only rewrites.

    The probe makes the file itself (O_EXCL), of the target's size, either written through
    and synced once (``fill``, as ``pg_test_fsync`` does) or allocated unwritten (as fio
    lays out a new file for a write job); fio gets ``--allow_file_create=0`` and works in
    its first ``span`` bytes.
    """

    span: str
    """fio ``--size=``: the region rewritten (``8k``: offset 0 each time)."""
    fill: bool = True
    """Write and fsync the whole file once; otherwise only allocate it."""
    open_flags: int = 0
    """Flags the run opens with (O_DIRECT, O_DSYNC, O_SYNC), tried on the laid out file
    first: a refusal is :class:`DirectIORefused`."""


@dataclass(frozen=True)
class ProbeRequest:
    """What the user asked to run."""

    preset: Preset
    """The pattern."""
    params: ProbeParams
    """The parameters, after the user's edits."""
    target: str
    """A directory or a block device path, as typed."""
    confirm: str | None = None
    """The device name typed to confirm a write probe on a raw device."""
    layout: FileLayout | None = None
    """A file the probe lays out itself (a directory target only); None: fio makes it."""


@dataclass(frozen=True)
class ProbeProgress:
    """One live status report from fio (every second)."""

    elapsed_s: float
    """Seconds since the job started."""
    runtime_s: float
    """Seconds the job is set to run."""
    read_iops: float
    """Reads per second over the last report interval."""
    write_iops: float
    """Writes per second over the last report interval."""
    read_kib_s: float
    """Read KiB/s over the last report interval."""
    write_kib_s: float
    """Write KiB/s over the last report interval."""
    mean_lat_us: float
    """Mean completion latency of the I/Os in the last report interval."""
    engine: str
    """The engine running."""

    @property
    def iops(self) -> float:
        """Reads plus writes per second."""
        return self.read_iops + self.write_iops

    @property
    def kib_s(self) -> float:
        """Read plus write KiB/s."""
        return self.read_kib_s + self.write_kib_s

    @property
    def time_left_s(self) -> float:
        """Seconds until the runtime is up."""
        return max(0.0, self.runtime_s - self.elapsed_s)

    @property
    def fraction(self) -> float:
        """Share of the runtime done, 0 to 1."""
        return min(1.0, self.elapsed_s / self.runtime_s) if self.runtime_s else 0.0


@dataclass(frozen=True)
class ProbeOutcome:
    """A finished probe: the parsed result and fio's own words."""

    result: ProbeResult
    """The parsed figures, hints and placement."""
    raw_json: str
    """fio's final JSON document, as printed."""
    argv: tuple[str, ...]
    """The fio command line run (the last attempt)."""
    target: ProbeTarget
    """The checked target."""
