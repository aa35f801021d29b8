"""The health part of a frame: the latest reading of every device and its age, and the
kernel's failed requests since this process started (the frame part
:class:`~iotop_plus.sampling.health.gate.HealthPart`).

Readings come from :class:`HealthWorker`, a thread of its own (never the frame thread or the
UI): one device at a time, each at most every :data:`REFRESH_S`, smartctl killed after
:data:`~iotop_plus.sampling.health.smart.READ_TIMEOUT_S`. A device that cannot have health (loop,
ram, zram, dm, md) is read once and says why. A frame only copies what the worker has.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from iotop_plus.roots import Roots
from iotop_plus.sampling.health import smart as _health
from iotop_plus.sampling.health.io_errors import ErrorCounts, KmsgErrors
from iotop_plus.sampling.health.smart import (
    DeviceHealth,
    device_driver,
    no_health_reason,
    read_health,
)
from iotop_plus.sampling.latency.hist import RUNNING
from iotop_plus.text import printable

if TYPE_CHECKING:
    from iotop_plus.sampling.disks.sampler import Sample
    from iotop_plus.sampling.frame.model import FrameEvent
    from iotop_plus.sampling.latency.hist import LatencyFrame
    from iotop_plus.sampling.topology.inventory import Inventory

REFRESH_S = 300.0
"""A device's health is read at most this often (5 minutes)."""

#: The keys of ``disk[].health``, in order.
HEALTH_KEYS = (
    "source",
    "reason",
    "passed",
    "media_errors",
    "percentage_used",
    "available_spare",
    "temperature_c",
    "critical_warning",
    "reallocated_sectors",
    "pending_sectors",
    "power_on_hours",
    "unsafe_shutdowns",
    "io_errors",
    "age_s",
    "io_errors_lower_bound",
)
_FIGURES = HEALTH_KEYS[2:12]
_EXTRA = (
    "error_log_entries",
    "available_spare_threshold",
    "temperature_warning_c",
    "temperature_critical_c",
    "exit_status",
    "device_state",
    "ioerr_cnt",
    "iodone_cnt",
)
NOT_READ_YET = "not read yet (health is read one device at a time)"
GROWTH_FIGURES = (
    "media_errors",
    "critical_warning",
    "reallocated_sectors",
    "pending_sectors",
    "ioerr_cnt",
)
"""The device's own error figures whose growth since this process started is a new fault
(:func:`health_growth`); ``failing`` joins them when SMART turns from passed to failed."""


EMPTY: Mapping[str, Any] = MappingProxyType({})
"""The empty map a frame's health shares with every other frame's (no errors, nothing grew)."""


class ReadingAges(Mapping[str, float]):
    """How old each of ``readings`` was at ``monotonic``, seconds, worked out when asked:
    a frame keeps its time, not a float per device (the frame store keeps every frame's
    health for its whole window)."""

    __slots__ = ("_monotonic", "_readings")

    def __init__(self, readings: Mapping[str, DeviceHealth], monotonic: float) -> None:
        self._readings = readings
        self._monotonic = monotonic

    def __getitem__(self, name: str) -> float:
        return max(0.0, self._monotonic - self._readings[name].read_monotonic)

    def __iter__(self) -> Iterator[str]:
        return iter(self._readings)

    def __len__(self) -> int:
        return len(self._readings)

    def __repr__(self) -> str:
        return f"ReadingAges({dict(self)!r})"


@dataclass(frozen=True)
class HealthFrame:
    """Health readings and I/O error counts as of one frame."""

    readings: Mapping[str, DeviceHealth]
    """The latest reading per device (devices not read yet are absent)."""
    age_s: Mapping[str, float]
    """How old each reading was at this frame, seconds."""
    io_errors: Mapping[str, int] | None
    """Failed requests per device since this process started; None when nothing counts them
    (no tracer, no ``/dev/kmsg``)."""
    io_error_source: str | None = None
    """``tracer`` (``block_rq_error``) or ``kmsg``; None when nothing counts."""
    problem: str | None = None
    """Why I/O errors are not counted (one line), or None."""
    new_errors: Mapping[str, int] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    """Errors per device since the previous frame (for the table's severity mark)."""
    grown: Mapping[str, Mapping[str, tuple[int, int]]] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    """Per device, the error figures that grew since this process started (recording:
    since the recorder started): figure -> (at the first reading, now). A lifetime count
    that did not move is not here (:func:`health_growth`)."""
    failed: str | None = None
    """Why the health reader's thread died (one printable line), or None while it reads.
    Live only: a recording's writer that loses it stops (``record`` exits 1)."""

    def device_json(self, name: str) -> dict[str, Any]:
        """``disk[].health`` for ``name``, exactly its fixed keys (absent values null)."""
        reading = self.readings.get(name)
        out: dict[str, Any] = dict.fromkeys(HEALTH_KEYS)
        if reading is None:
            out.update(source="none", reason=NOT_READ_YET)
        else:
            out.update(source=reading.source, reason=reading.reason)
            out.update({k: getattr(reading, k) for k in _FIGURES})
            age = self.age_s.get(name)
            out["age_s"] = round(age, 1) if age is not None else None
        if self.io_errors is not None:
            out["io_errors"] = self.io_errors.get(name, 0)
            out["io_errors_lower_bound"] = self.lower_bound
        return out

    @property
    def lower_bound(self) -> bool:
        """Whether the I/O error counts are at least what they say: the kernel log (not the
        tracer) rate-limits its lines, so some failed requests never reach it."""
        return self.io_error_source == "kmsg"

    def errors_text(self, name: str) -> str:
        """``name``'s I/O error count as shown: ``≥ N`` when it is a lower bound (the kernel log
        lets the first lines of a burst through, so none logged is none)."""
        count = self.io_errors.get(name, 0) if self.io_errors is not None else 0
        return f"≥ {count:,}" if self.lower_bound and count else f"{count:,}"

    def severity(self, name: str) -> str | None:
        """Why the device table marks ``name`` (one short phrase), or None."""
        reading = self.readings.get(name)
        errors = self.io_errors.get(name, 0) if self.io_errors is not None else 0
        if errors:
            return f"{self.errors_text(name)} I/O errors since start"
        if reading is None:
            return None
        if reading.passed is False:
            return "SMART: failing"
        if reading.critical_warning:
            return f"critical warning 0x{reading.critical_warning:02x}"
        if reading.worn:
            return f"wear {reading.percentage_used} %"
        return None

    def as_json(self) -> dict[str, Any]:
        """What a recording stores (record type ``H``)."""
        devices = {}
        for name, reading in self.readings.items():
            doc = {k: getattr(reading, k) for k in ("source", "reason", *_FIGURES, *_EXTRA)}
            doc["age_s"] = self.age_s.get(name)
            devices[name] = {k: v for k, v in doc.items() if v is not None}
        return {
            "devices": devices,
            "io_errors": dict(self.io_errors) if self.io_errors is not None else None,
            "io_error_source": self.io_error_source,
            "problem": self.problem,
            "new_errors": dict(self.new_errors),
            "grown": {d: {k: list(v) for k, v in g.items()} for d, g in self.grown.items()},
        }


MAX_PART_DEVICES = 100_000
"""Devices a recorded ``H`` part is read for, at most (as many as an inventory may list)."""


def _of_devices(doc: object, names: Mapping[str, object] | None) -> list[tuple[str, Any]]:
    """The entries of a recorded per-device map: those of ``names`` when given (looked up
    from the smaller side), at most :data:`MAX_PART_DEVICES`."""
    if not isinstance(doc, Mapping):
        return []
    if names is None:
        pairs = ((str(k), v) for k, v in doc.items())
    elif len(names) < len(doc):
        pairs = ((k, doc[k]) for k in names if k in doc)
    else:
        pairs = ((k, v) for k, v in doc.items() if isinstance(k, str) and k in names)
    return list(itertools.islice(pairs, MAX_PART_DEVICES))


def health_from_json(doc: object, names: Mapping[str, object] | None = None) -> HealthFrame | None:
    """A recorded ``H`` part back as a frame part (None when absent or not an object).

    ``names`` (the sample's devices): only their entries are read, so a part listing more
    devices than its sample costs no more than the sample; at most :data:`MAX_PART_DEVICES`
    either way.
    """
    if not isinstance(doc, Mapping):
        return None
    fields = {f.name for f in dataclasses.fields(DeviceHealth)}
    readings: dict[str, DeviceHealth] = {}
    ages: dict[str, float] = {}
    for name, one in _of_devices(doc.get("devices"), names):
        if not isinstance(one, dict) or not isinstance(one.get("source"), str):
            continue
        kept = {k: v for k, v in one.items() if k in fields and k != "exit_notes"}
        try:
            readings[name] = DeviceHealth(**kept)
        except TypeError:
            continue
        if isinstance(one.get("age_s"), int | float):
            ages[name] = float(one["age_s"])
    counts = doc.get("io_errors")
    io_errors = (
        {k: int(v) for k, v in _of_devices(counts, names) if isinstance(v, int)}
        if isinstance(counts, Mapping)
        else None
    )
    new = doc.get("new_errors")
    source, problem = doc.get("io_error_source"), doc.get("problem")
    grown = _grown_from_json(_of_devices(doc.get("grown"), names))
    return HealthFrame(
        MappingProxyType(readings),
        MappingProxyType(ages),
        MappingProxyType(io_errors) if io_errors is not None else None,
        source if isinstance(source, str) else None,
        problem if isinstance(problem, str) else None,
        MappingProxyType({k: v for k, v in _of_devices(new, names) if isinstance(v, int)}),
        grown,
    )


def _grown_from_json(
    entries: list[tuple[str, Any]],
) -> Mapping[str, Mapping[str, tuple[int, int]]]:
    out: dict[str, Mapping[str, tuple[int, int]]] = {}
    for name, figures in entries:
        pairs = (
            {
                str(k): (int(v[0]), int(v[1]))
                for k, v in figures.items()
                if isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v)
            }
            if isinstance(figures, Mapping)
            else {}
        )
        if pairs:
            out[name] = MappingProxyType(pairs)
    return MappingProxyType(out)


def _error_figures(reading: DeviceHealth) -> dict[str, int]:
    found = {k: v for k in GROWTH_FIGURES if isinstance(v := getattr(reading, k), int)}
    if reading.passed is not None:
        found["failing"] = 0 if reading.passed else 1
    return found


def health_growth(
    first: dict[str, dict[str, int]],
    readings: Mapping[str, DeviceHealth],
    kept: dict[str, tuple[DeviceHealth, Mapping[str, tuple[int, int]] | None]] | None = None,
) -> dict[str, Mapping[str, tuple[int, int]]]:
    """The error figures of ``readings`` that grew since each one was first seen.

    ``first`` keeps each device's first value of each figure (filled here as figures
    appear; the caller keeps it across frames). A count grew when it is higher than at
    first; ``critical_warning`` when it has a bit that was not set at first; ``failing``
    when SMART said passed at first and failed now. A device that had 40 reallocated sectors
    when we started and still has 40 has no new fault: the lifetime count alone says nothing
    about this incident.

    ``kept`` (the caller keeps it across frames too) holds each device's last reading and
    what grew in it: a reading is the same object from frame to frame until the worker reads
    the device again, and its figures only were compared then; what grew is taken from there
    (comparing every figure of every reading each frame would be a large share of the frame
    thread's work). Devices no longer in ``readings`` are dropped from it, and from ``first``
    when they had no error figures (loop, dm, zram: a baseline of nothing, made again if the
    name comes back), so devices that come and go leave nothing behind; a disk's baseline
    stays, for a disk that drops off and comes back with more errors.
    """
    grown: dict[str, Mapping[str, tuple[int, int]]] = {}
    if kept is not None and kept.keys() != readings.keys():  # (a set comparison, in C)
        for gone in kept.keys() - readings.keys():
            del kept[gone]
        for gone in [name for name, base in first.items() if not base and name not in readings]:
            del first[gone]
    for name, reading in readings.items():
        if kept is not None:
            last = kept.get(name)
            if last is not None and last[0] is reading:
                if last[1] is not None:
                    grown[name] = last[1]
                continue
        base = first.setdefault(name, {})
        changed: dict[str, tuple[int, int]] = {}
        for key, now in _error_figures(reading).items():
            was = base.setdefault(key, now)
            rose = now & ~was if key == "critical_warning" else now > was
            if rose:
                changed[key] = (was, now)
        found = MappingProxyType(changed) if changed else None
        if found is not None:
            grown[name] = found
        if kept is not None:
            kept[name] = (reading, found)
    return grown


class HealthWorker:
    """One thread reading device health, one device at a time, each at most every
    ``refresh_s``; the frame thread only copies what it has."""

    def __init__(
        self,
        roots: Roots,
        *,
        refresh_s: float = REFRESH_S,
        timeout: float | None = None,
        use_smartctl: bool | None = None,
        reader: Callable[..., DeviceHealth] = read_health,
    ) -> None:
        """Args:
        roots: Where /sys is.
        refresh_s: Least time between two readings of one device.
        timeout: How long smartctl may take for one device (default
            :data:`~iotop_plus.sampling.health.smart.READ_TIMEOUT_S`, read when the worker starts).
        use_smartctl: Run smartctl (default: only when ``roots`` is the live host; never
            for a captured tree, whose device names are not this host's).
        reader: The reading function (:func:`~iotop_plus.sampling.health.smart.read_health`).
        """
        self.roots = roots
        self.refresh_s = refresh_s
        self.timeout = timeout if timeout is not None else _health.READ_TIMEOUT_S
        self.use_smartctl = roots.is_live if use_smartctl is None else use_smartctl
        self._reader = reader
        self._cond = threading.Condition()
        self._kinds: dict[str, str] = {}
        self._due: dict[str, float] = {}
        self._readings: dict[str, DeviceHealth] = {}
        self._shared: Mapping[str, DeviceHealth] | None = None
        """:meth:`readings` as last handed out, until a reading changes (then None)."""
        self._closed = False
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self.reading: str | None = None
        """The device being read now, if any."""
        self.failure: str | None = None
        """Why the thread died (one printable line), or None while it lives."""

    def watch(self, kinds: Mapping[str, str]) -> None:
        """Read these devices (name -> inventory kind) from now on; new ones are due now."""
        with self._cond:
            if kinds.keys() == self._kinds.keys():
                return
            now = time.monotonic()
            for name in kinds.keys() - self._kinds.keys():
                self._due[name] = now
            for name in self._kinds.keys() - kinds.keys():
                self._due.pop(name, None)
                self._readings.pop(name, None)
            self._shared = None
            self._kinds = dict(kinds)
            self._cond.notify_all()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="iotop-plus-health", daemon=True)
            self._thread.start()

    def readings(self) -> Mapping[str, DeviceHealth]:
        """The latest reading of each watched device read so far: one read-only map, the
        same object until a device is read again or the set of devices changes (the frames
        between share it)."""
        with self._cond:
            if self._shared is None:
                self._shared = MappingProxyType(dict(self._readings))
            return self._shared

    def wait_all(self, timeout: float) -> bool:
        """Wait until every watched device has a reading (a headless snapshot)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: (
                    self._closed
                    or self.failure is not None
                    or self._kinds.keys() <= self._readings.keys()
                ),
                timeout,
            )

    def close(self) -> None:
        """Stop; a smartctl still running is killed."""
        self._cancel.set()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _next(self) -> tuple[str, str] | None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                due = [(t, n) for n, t in self._due.items() if t <= now]
                if due:
                    name = min(due)[1]
                    return name, self._kinds[name]
                later = min(self._due.values(), default=None)
                self._cond.wait(None if later is None else max(0.0, later - now))
            return None

    def _run(self) -> None:
        """Read until closed. A death is kept in :attr:`failure` (the TUI shows it) and
        raised on to ``threading.excepthook`` (``serve`` and ``record`` then exit 1)."""
        try:
            self._read_due()
        except BaseException as exc:
            detail = str(exc).strip().splitlines()
            what = type(exc).__name__ + (f": {detail[0][:200]}" if detail else "")
            self.failure = printable(f"the health reader stopped ({what})")
            with self._cond:
                self._cond.notify_all()
            raise

    def _read_due(self) -> None:
        while (job := self._next()) is not None:
            name, kind = job
            self.reading = name
            once = no_health_reason(kind, device_driver(self.roots, name)) is not None
            try:
                found = self._reader(
                    self.roots,
                    name,
                    kind,
                    timeout=self.timeout,
                    use_smartctl=self.use_smartctl,
                    cancel=self._cancel,
                )
            except Exception as exc:  # one device's failure must not stop the others
                found = DeviceHealth(source="none", reason=f"health read failed: {exc}")
            self.reading = None
            with self._cond:
                if name not in self._kinds:
                    continue
                previous = self._readings.get(name)
                kept = previous is not None and previous.source == "smartctl"
                if kept and found.source == "none" and found.reason:
                    # keep the last figures (and their age), say what went wrong
                    assert previous is not None
                    found = dataclasses.replace(previous, reason=found.reason)
                self._readings[name] = found
                self._shared = None
                self._due[name] = float("inf") if once else time.monotonic() + self.refresh_s
                self._cond.notify_all()


class HealthState:
    """The health worker, the I/O error counter and what the frames need between them."""

    def __init__(self, roots: Roots, worker: HealthWorker | None = None) -> None:
        """Start counting I/O errors now; the worker starts with the first frame."""
        self.roots = roots
        self.worker = worker if worker is not None else HealthWorker(roots)
        self.counts = ErrorCounts()
        self.kmsg: KmsgErrors | None = None
        self.problem: str | None = None
        self.first_figures: dict[str, dict[str, int]] = {}
        """Each device's error figures at their first reading (the growth baseline)."""
        self._grown: dict[str, tuple[DeviceHealth, Mapping[str, tuple[int, int]] | None]] = {}
        """Each device's last reading and what grew in it (:func:`health_growth`)."""
        self._totals: Mapping[str, int] = EMPTY
        self._growth: Mapping[str, Mapping[str, tuple[int, int]]] = EMPTY
        if roots.is_live:
            self.kmsg = KmsgErrors()
            self.problem = self.kmsg.problem
        else:
            self.problem = "I/O errors: counted on the live host only, not on a captured tree"

    def frame(
        self,
        inventory: Inventory,
        monotonic: float,
        tracer_errors: Mapping[tuple[str, str], int] | None = None,
    ) -> tuple[HealthFrame, tuple[FrameEvent, ...]]:
        """This frame's part and its new ``io-error`` events.

        ``tracer_errors``: failed requests per (device, kind) the tracer saw since the
        previous frame, while it runs; then the kernel log is only drained, not counted.
        """
        from iotop_plus.sampling.frame.model import FrameEvent

        kinds = {n: d.kind for n, d in inventory.devices.items() if not d.is_partition}
        self.worker.watch(kinds)
        logged = self.kmsg.read() if self.kmsg is not None else []
        names = inventory.devices
        if tracer_errors is not None:
            new, source = self.counts.add_counts(tracer_errors, names), "tracer"
        elif self.kmsg is not None and self.kmsg.problem is None:
            new, source = self.counts.add(logged, names), "kmsg"
        else:
            new, source = {}, None
        problem = self.kmsg.problem if self.kmsg is not None else self.problem
        events = tuple(
            FrameEvent(
                "io-error",
                f"{n} {kind} error{'s' if n > 1 else ''} on {dev}"
                f" ({self.counts.totals.get(dev, 0)} since start)",
                dev,
            )
            for (dev, kind), n in sorted(new.items())
        )
        per_device: dict[str, int] = {}
        for (dev, _kind), n in new.items():
            per_device[dev] = per_device.get(dev, 0) + n
        readings = self.worker.readings()
        # The maps that stay the same from frame to frame are shared by the frames (the
        # frame store keeps every frame's part): a frame of its own holds its time only.
        self._totals = _same_or(self._totals, self.counts.totals)
        self._growth = _same_or(
            self._growth, health_growth(self.first_figures, readings, self._grown)
        )
        part = HealthFrame(
            readings,
            ReadingAges(readings, monotonic),
            self._totals if source is not None else None,
            source,
            None if source is not None else problem,
            MappingProxyType(per_device) if per_device else EMPTY,
            self._growth,
            self.worker.failure,
        )
        return part, events

    def close(self) -> None:
        """Stop the worker and release the kernel log."""
        self.worker.close()
        if self.kmsg is not None:
            self.kmsg.close()

    def stopped(self) -> HealthState | None:
        """:meth:`close`, then None (for the owner's ``part = part.stopped()``)."""
        self.close()
        return None


def _same_or(shared: Mapping[str, Any], now: Mapping[str, Any]) -> Mapping[str, Any]:
    """``shared`` when it holds what ``now`` does, else a read-only copy of ``now``."""
    if shared == now:
        return shared
    return MappingProxyType(dict(now)) if now else EMPTY


def health_step(
    part: HealthState | None,
    wanted: bool,
    roots: Roots,
    inventory: Inventory,
    sample: Sample,
    latency: LatencyFrame | None = None,
) -> tuple[HealthState | None, HealthFrame | None, tuple[FrameEvent, ...]]:
    """One frame's step of :class:`~iotop_plus.sampling.frame.live.LiveSource`: the part (started
    when first wanted, closed when no longer wanted), this frame's health and its events.

    The I/O errors come from ``latency``'s tracer while it counts them, else the kernel log.
    """
    if not wanted:
        if part is not None:
            part.close()
        return None, None, ()
    part = part if part is not None else HealthState(roots)
    counted = latency.errors if latency is not None and latency.state == RUNNING else None
    health, events = part.frame(inventory, sample.monotonic, counted)
    return part, health, events
