"""The registered frame parts of a recorded sample, back as the values a live frame holds.

Each part's document sits under its letter (:attr:`RecordedSample.parts`); its
:meth:`~iotop_plus.sampling.frame.part.FramePart.from_json` reads it. A recording is untrusted: a
document a part cannot read (or whose reading fails) leaves the part out of the frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from iotop_plus.sampling.frame import registry
from iotop_plus.sampling.frame.model import NO_PARTS

_UNREADABLE = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError)
"""What reading a hostile document can raise in a part's ``from_json`` (left out, not fatal)."""


def part_values(docs: Mapping[str, Any], **given: object) -> Mapping[str, object]:
    """Every registered part's value in ``docs`` (by letter), by key; ``given`` adds values
    worked out elsewhere (a part recorded only when it changed) by key, None leaving it out."""
    out: dict[str, object] = {}
    if docs:
        for part in registry.parts():
            letter = part.letter
            doc = docs.get(letter) if letter is not None else None
            if doc is None or part.key in given:
                continue
            try:
                value = part.from_json(doc)
            except _UNREADABLE:
                value = None
            if value is not None:
                out[part.key] = value
    out.update((k, v) for k, v in given.items() if v is not None)
    return MappingProxyType(out) if out else NO_PARTS
