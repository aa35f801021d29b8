"""Every frame part, one line each; the frame, recorder, ``snapshot`` and ``serve`` loop over
these and name no part themselves.

Entries are ``module:Class key`` so a part's module loads only when something reads it: the
start of a ``snapshot`` pays for no part it does not use, and the live source loads only the
parts it reads (:func:`chosen`), so the TUI's first figures wait for none of the others. The
line says what the source needs to choose without loading the part: its ``key``, ``always``
when the part sets :attr:`~iotop_plus.sampling.frame.part.FramePart.always`, and a part with
a :attr:`~iotop_plus.sampling.frame.part.FramePart.record_flag` names it (``--flag``), so the
command line gets its ``record``/``snapshot`` options from here too (:func:`record_flags`).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Collection
from typing import Any

from iotop_plus.sampling.frame.part import FramePart

REGISTERED: tuple[str, ...] = (
    "iotop_plus.sampling.journal_events:JournalPart journal",
    "iotop_plus.sampling.memory.dirty:MemoryPart memory always",
    "iotop_plus.sampling.disks.queue_settings:QueuePart queues always",
    "iotop_plus.sampling.cgroups.throttle_watch:ThrottlePart throttles",
    "iotop_plus.sampling.processes.issuers_part:IssuersPart issuers",
    "iotop_plus.sampling.health.gate:HealthPart health",
    "iotop_plus.sampling.blocked.part:BlockedPart blocked --blocked",
    "iotop_plus.sampling.latency.hist_part:LatencyHistogramsPart latency-histograms --latency",
    "iotop_plus.sampling.files.part:FilesPart files --files",
    "iotop_plus.sampling.sync.part:SyncPart sync --sync",
    "iotop_plus.sampling.sync.jbd2_part:Jbd2Part jbd2 --sync",
)
"""The parts, in read order (a part is read after those named in its ``after``)."""

_lock = threading.Lock()
_extra: list[FramePart[Any]] = []
_made: dict[str, FramePart[Any]] = {}
"""The registered parts made so far, by their line (one instance each)."""
_loaded: tuple[FramePart[Any], ...] | None = None
_chosen: dict[tuple[frozenset[str], bool], tuple[FramePart[Any], ...]] = {}


def _key(entry: str) -> str:
    return entry.split()[1]


def _always(entry: str) -> bool:
    return "always" in entry.split()[2:]


def _make(entry: str) -> FramePart[Any]:
    """The part of registry line ``entry``, its module imported the first time (under
    ``_lock``)."""
    part = _made.get(entry)
    if part is None:
        module, _, name = entry.split()[0].partition(":")
        part = _made[entry] = getattr(importlib.import_module(module), name)()
    return part


def register(part: FramePart[Any]) -> None:
    """Add a part from outside the package (a plug-in, or a test's toy part)."""
    global _loaded
    with _lock:
        if any(_key(e) == part.key for e in REGISTERED) or any(p.key == part.key for p in _extra):
            raise ValueError(f"frame part {part.key!r} is registered already")
        _extra.append(part)
        _loaded = None
        _chosen.clear()


def unregister(key: str) -> None:
    """Remove a part added with :func:`register`."""
    global _loaded
    with _lock:
        _extra[:] = [p for p in _extra if p.key != key]
        _loaded = None
        _chosen.clear()


def parts() -> tuple[FramePart[Any], ...]:
    """Every registered part, each once, in read order."""
    global _loaded
    with _lock:
        if _loaded is None:
            found = [_make(entry) for entry in REGISTERED]
            found.extend(_extra)
            keys = [p.key for p in found]
            if len(set(keys)) != len(keys):
                raise ValueError(f"two frame parts share a key: {keys}")
            letters = [p.letter for p in found if p.letter is not None]
            if len(set(letters)) != len(letters):
                raise ValueError(f"two frame parts share a record letter: {letters}")
            _loaded = tuple(found)
        return _loaded


def chosen(keys: Collection[str], always: bool = False) -> tuple[FramePart[Any], ...]:
    """The registered parts named in ``keys`` (and, with ``always``, those read on every
    frame), in registry order, loading no other part's module. The same tuple for the same
    question until a part is registered or removed."""
    asked = (frozenset(keys), always)
    with _lock:
        got = _chosen.get(asked)
        if got is None:

            def picked(key: str, every: bool) -> bool:
                return key in asked[0] or (always and every)

            made = [_make(e) for e in REGISTERED if picked(_key(e), _always(e))]
            made.extend(p for p in _extra if picked(p.key, p.always))
            got = _chosen[asked] = tuple(made)
        return got


def part(key: str) -> FramePart[Any] | None:
    """The registered part named ``key``, if any (only its module is loaded)."""
    with _lock:
        entry = next((e for e in REGISTERED if _key(e) == key), None)
        if entry is not None:
            return _make(entry)
        return next((p for p in _extra if p.key == key), None)


def record_flags() -> tuple[str, ...]:
    """The ``record --X`` options of the registered parts (``X`` without dashes), from the
    registry's lines and the parts added with :func:`register`, loading no part module."""
    flags = [w[2:] for entry in REGISTERED for w in entry.split()[2:] if w.startswith("--")]
    with _lock:
        flags += [p.record_flag for p in _extra if p.record_flag is not None]
    return tuple(dict.fromkeys(flags))
