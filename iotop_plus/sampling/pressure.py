"""Pressure stall information: ``/proc/pressure/{io,memory,cpu}`` (and a cgroup's ``io.pressure``).

Each file has a ``some`` line and (except host-wide cpu on older kernels) a ``full`` line::

    some avg10=0.06 avg60=3.42 avg300=6.62 total=984707315
    full avg10=0.05 avg60=2.59 avg300=4.76 total=404181119

The averages are percentages of wall time; ``total`` is cumulative microseconds stalled.
``some``: at least one task stalled; ``full``: every non-idle task stalled at once.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path

from iotop_plus.roots import Roots
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded

RESOURCES = ("io", "memory", "cpu")
"""The host-wide pressure files, in the order the header shows them."""

MISSING_HINT = (
    "no pressure (PSI) figures: {path} is missing "
    "(kernel without CONFIG_PSI, or booted with psi=0; add psi=1 to the kernel command line)"
)


@dataclass(frozen=True)
class PressureLine:
    """One ``some`` or ``full`` line."""

    avg10: float
    """Percent of the last 10 s stalled."""
    avg60: float
    """Percent of the last 60 s stalled."""
    avg300: float
    """Percent of the last 300 s stalled."""
    total_us: int
    """Microseconds stalled since boot (a counter)."""

    def as_json(self) -> dict[str, float | int]:
        """The JSON object: ``{avg10, avg60, avg300, total_us}``."""
        return {
            "avg10": self.avg10,
            "avg60": self.avg60,
            "avg300": self.avg300,
            "total_us": self.total_us,
        }


@dataclass(frozen=True)
class ResourcePressure:
    """The ``some`` and ``full`` lines of one pressure file."""

    some: PressureLine | None
    full: PressureLine | None

    def as_json(self) -> dict[str, dict[str, float | int] | None]:
        """``{"some": {...}, "full": {...}}``, with null for a missing line."""
        return {
            "some": self.some.as_json() if self.some is not None else None,
            "full": self.full.as_json() if self.full is not None else None,
        }


@dataclass(frozen=True)
class Pressure:
    """Host-wide pressure at one instant: io, memory and cpu, each where the kernel has it."""

    resources: dict[str, ResourcePressure]
    """Keyed by ``io``, ``memory``, ``cpu``; a resource whose file is missing is absent."""
    problem: str | None = None
    """One line saying why some or all of the figures are missing, for the UI and stderr."""

    @property
    def io(self) -> ResourcePressure | None:
        """The I/O pressure, or None where the kernel has no PSI."""
        return self.resources.get("io")

    def as_json(self) -> dict[str, dict[str, dict[str, float | int] | None]]:
        """The ``pressure`` object of ``snapshot --format json``."""
        return {name: res.as_json() for name, res in self.resources.items()}


def parse_pressure(text: str) -> ResourcePressure:
    """Parse one pressure file's text.

    Raises:
        ValueError: no parsable ``some`` or ``full`` line (the message names the first bad line).
    """
    lines: dict[str, PressureLine] = {}
    bad: str | None = None
    for raw in text.splitlines():
        words = raw.split()
        if not words:
            continue
        kind = words[0]
        fields: dict[str, str] = {}
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if sep:
                fields[key] = value
        try:
            line = PressureLine(
                float(fields["avg10"]),
                float(fields["avg60"]),
                float(fields["avg300"]),
                int(fields["total"]),
            )
        except (KeyError, ValueError):
            bad = bad or raw.strip()[:80]
            continue
        if kind in ("some", "full"):
            lines[kind] = line
    if not lines:
        raise ValueError(f"no pressure line in {bad!r}" if bad else "empty pressure file")
    return ResourcePressure(lines.get("some"), lines.get("full"))


def read_pressure_file(path: Path) -> ResourcePressure:
    """Read and parse one pressure file (``/proc/pressure/io``, a cgroup's ``io.pressure``).

    Raises:
        OSError: the file cannot be read.
        ValueError: it holds no parsable line.
    """
    return parse_pressure(read_bounded(path, MAX_ATTRIBUTE_BYTES))


def read_pressure(roots: Roots) -> Pressure:
    """Host-wide pressure from ``<proc>/pressure``; never raises.

    A missing directory (no ``CONFIG_PSI``, or ``psi=0``) gives an empty :class:`Pressure`
    whose ``problem`` says so in one line; an unreadable or malformed file is left out and
    named in ``problem``.
    """
    base = roots.proc / "pressure"
    resources: dict[str, ResourcePressure] = {}
    problems: list[str] = []
    for name in RESOURCES:
        path = base / name
        try:
            resources[name] = read_pressure_file(path)
        except FileNotFoundError:
            if name == "io":
                problems.append(MISSING_HINT.format(path=path))
        except OSError as exc:
            if exc.errno == errno.EOPNOTSUPP:  # psi=0: the files exist but cannot be read
                if name == "io":
                    problems.append(MISSING_HINT.format(path=path).replace("is missing", "is off"))
            else:
                problems.append(f"cannot read {path}: {exc.strerror or exc}")
        except ValueError as exc:
            problems.append(f"malformed {path}: {exc}")
    return Pressure(resources, "; ".join(problems) or None)
