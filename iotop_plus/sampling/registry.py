"""Every frame part, one line each; the frame, recorder, ``snapshot`` and ``serve`` loop over
these and name no part themselves.

Entries are ``module:Class`` so a part's module loads only when something reads the registry
(the start of a ``snapshot`` pays for no part it does not use).
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from iotop_plus.sampling.part import FramePart

REGISTERED: tuple[str, ...] = (
    "iotop_plus.sampling.sync_part:SyncPart",
    "iotop_plus.sampling.jbd2_part:Jbd2Part",
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
                module, _, name = entry.partition(":")
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
