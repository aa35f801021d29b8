"""What the frame store keeps of a closed chunk's frames besides their recorded stream: the
values a recording does not hold (:data:`~iotop_plus.record.store_chunk.UNRECORDED`: the parts'
values whole, a frame's problems), packed.

Kept as the objects the frames came with, each frame's values were a few small objects of
their own (~1.3 KB a frame at 60 devices with the TUI's parts, 4.7 MB of a 15-minute ring at
0.25 s). Packed, a chunk's values are one deflated pickle of one
column per field and part (what the frames share is pickled once), unpacked whole when the
chunk is decoded. A column whose values do not pickle (a plug-in's part may refuse) is kept as
its objects.
"""

from __future__ import annotations

import copyreg
import dataclasses
import io
import pickle
import zlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

Rest = dict[str, Any] | None
"""A frame's unrecorded fields that are not empty, by field name (None: none)."""
Column = tuple[str, str]
"""A field, and the part's key for the ``parts`` field's values (else ``""``)."""
PARTS = "parts"
ORDER: Column = ("", "")
"""The column of each frame's columns, in the frame's order (its parts' order)."""


def read_only(items: dict[Any, Any]) -> Mapping[Any, Any]:
    """``items`` read-only: how a packed ``MappingProxyType`` comes back."""
    return MappingProxyType(items)


class _Pickler(pickle.Pickler):
    """Pickles read-only mappings (``MappingProxyType``) as read-only mappings."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[MappingProxyType] = lambda m: (read_only, (dict(m),))


def _pickled(columns: dict[Column, list[Any]]) -> bytes | None:
    out = io.BytesIO()
    try:
        _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(columns)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError, ValueError):
        return None
    return out.getvalue()


@dataclasses.dataclass(frozen=True)
class Packed:
    """A chunk's frames' unrecorded values."""

    size: int
    """Frames."""
    blob: bytes
    """The columns that pickle, deflated."""
    kept: Mapping[Column, list[Any]]
    """The columns whose values do not pickle, as the objects."""

    def nbytes(self) -> int:
        """The bytes of the packed columns."""
        return len(self.blob)

    def unpack(self) -> list[Rest]:
        """Each frame's values, as :func:`pack` got them (equal, not the same objects)."""
        columns: dict[Column, list[Any]] = pickle.loads(zlib.decompress(self.blob))
        columns.update(self.kept)
        orders = columns[ORDER]
        rests: list[Rest] = []
        for i in range(self.size):
            order = orders[i]
            if not order:
                rests.append(None)
                continue
            rest: dict[str, Any] = {}
            parts: dict[str, Any] = {}
            for column in order:
                field, key = column
                value = columns[column][i]
                if field == PARTS:
                    parts[key] = value
                else:
                    rest[field] = value
            if parts:
                rest[PARTS] = MappingProxyType(parts)
            rests.append(rest)
        return rests


def pack(rests: list[Rest]) -> Packed:
    """``rests`` (a chunk's frames' values, in order) packed."""
    size = len(rests)
    columns: dict[Column, list[Any]] = {ORDER: [()] * size}
    orders: dict[tuple[Column, ...], tuple[Column, ...]] = {}
    for i, rest in enumerate(rests):
        if not rest:
            continue
        order: list[Column] = []
        for field, value in rest.items():
            items = value.items() if field == PARTS else (("", value),)
            for key, one in items:
                column = (field, key)
                values = columns.get(column)
                if values is None:
                    values = columns[column] = [None] * size
                values[i] = one
                order.append(column)
        shared = tuple(order)
        columns[ORDER][i] = orders.setdefault(shared, shared)
    kept: dict[Column, list[Any]] = {}
    blob = _pickled(columns)
    if blob is None:  # keep the columns that do not pickle as they are
        for column in [c for c in columns if c != ORDER]:
            if _pickled({column: columns[column]}) is None:
                kept[column] = columns.pop(column)
        blob = _pickled(columns)
        if blob is None:  # (together they still do not: keep them all)
            kept.update((c, v) for c, v in columns.items() if c != ORDER)
            columns = {ORDER: columns[ORDER]}
            blob = _pickled(columns) or b""
    return Packed(size, zlib.compress(blob, 1), MappingProxyType(kept))
