"""Every frame part, one line each; the frame, recorder, ``snapshot`` and ``serve`` loop over
these and name no part themselves.

Entries are ``module:Class`` so a part's module loads only when something reads the registry
(the start of a ``snapshot`` pays for no part it does not use). A part with a
:attr:`~iotop_plus.sampling.frame.part.FramePart.record_flag` names it after the class
(``module:Class --flag``), so the command line gets its ``record``/``snapshot`` options from
here without loading any part (:func:`record_flags`).
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from iotop_plus.sampling.frame.part import FramePart

REGISTERED: tuple[str, ...] = (
    "iotop_plus.sampling.journal_events:JournalPart",
    "iotop_plus.sampling.memory.dirty:MemoryPart",
    "iotop_plus.sampling.disks.queue_settings:QueuePart",
    "iotop_plus.sampling.cgroups.throttle_watch:ThrottlePart",
    "iotop_plus.sampling.processes.issuers_part:IssuersPart",
    "iotop_plus.sampling.health.gate:HealthPart",
    "iotop_plus.sampling.blocked.part:BlockedPart --blocked",
    "iotop_plus.sampling.latency.hist_part:LatencyHistogramsPart --latency",
    "iotop_plus.sampling.files.part:FilesPart --files",
    "iotop_plus.sampling.sync.part:SyncPart --sync",
    "iotop_plus.sampling.sync.jbd2_part:Jbd2Part --sync",
)
"""The parts, in read order (a part is read after those named in its ``after``)."""

_lock = threading.Lock()
_extra: list[FramePart[Any]] = []
_loaded: tuple[FramePart[Any], ...] | None = None


def register(part: FramePart[Any]) -> None:
    """Add a part from outside the package (a plug-in, or a test's toy part)."""
    global _loaded
    with _lock:
        if any(p.key == part.key for p in _extra):
            raise ValueError(f"frame part {part.key!r} is registered already")
        _extra.append(part)
        _loaded = None


def unregister(key: str) -> None:
    """Remove a part added with :func:`register`."""
    global _loaded
    with _lock:
        _extra[:] = [p for p in _extra if p.key != key]
        _loaded = None


def parts() -> tuple[FramePart[Any], ...]:
    """Every registered part, each once, in read order."""
    global _loaded
    with _lock:
        if _loaded is None:
            found: list[FramePart[Any]] = []
            for entry in REGISTERED:
                module, _, name = entry.split()[0].partition(":")
                found.append(getattr(importlib.import_module(module), name)())
            found.extend(_extra)
            keys = [p.key for p in found]
            if len(set(keys)) != len(keys):
                raise ValueError(f"two frame parts share a key: {keys}")
            letters = [p.letter for p in found if p.letter is not None]
            if len(set(letters)) != len(letters):
                raise ValueError(f"two frame parts share a record letter: {letters}")
            _loaded = tuple(found)
        return _loaded


def part(key: str) -> FramePart[Any] | None:
    """The registered part named ``key``, if any."""
    return next((p for p in parts() if p.key == key), None)


def record_flags() -> tuple[str, ...]:
    """The ``record --X`` options of the registered parts (``X`` without dashes), from the
    registry's lines and the parts added with :func:`register`, loading no part module."""
    flags = [w[2:] for entry in REGISTERED for w in entry.split()[1:] if w.startswith("--")]
    with _lock:
        flags += [p.record_flag for p in _extra if p.record_flag is not None]
    return tuple(dict.fromkeys(flags))
