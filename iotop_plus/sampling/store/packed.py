"""Frames kept compactly in memory: the disk counters as numbers, rebuilt into a Frame on demand.

A frame's disk part is, per device, a tuple of 17 Python ints (about 650 bytes with the int
objects), and its rates hold the tuples of the frame before. Fifteen minutes at 0.25 s with
60 devices make 3,601 frames of those: far more per device per frame than a recording
needs (docs/performance.md). Here the counters of a frame are stored as their
difference from the frame before's (zlib over a ``"q"`` array's bytes: a few bytes a device,
most counters do not move in 0.25 s), taken as one subtraction of the two arrays' bytes as
big numbers (:func:`_minus`: subtracting 3,400 counters one by one took 0.3 ms a frame at 200
devices; an XOR kept the ring 6 % bigger), with full values every :data:`KEY_EVERY` frames
and in the first frame packed, so any frame is rebuilt from at most that many arrays. The
rates are rebuilt from the counters of the frame before and the interval, which is what they
hold, and are stored as they are only when they are something else (a frame after a dropped
one, a device whose counters went back). The parts made anew each frame (processes, cgroups,
issuers, health, memory...) are kept as bytes by :mod:`~iotop_plus.sampling.store.packed_parts`,
and the rest of the frame (its "shell") is a template shared by the frames after it, while
they differ from it only in plain values (times, sequence number, flags), which are kept with
the parts.
"""

from __future__ import annotations

import dataclasses
import pickle
import zlib
from array import array
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.rates import DeviceRates
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.frame.model import NO_PARTS, Frame
from iotop_plus.sampling.store.packed_parts import (
    LEVEL,
    PICKLED,
    SAME,
    HealthPickle,
    compressed,
    dumped,
    part_values,
    parts_of,
    pickled,
)

KEY_EVERY = 32
"""A frame with the full counter values at least every this many frames."""

_NO_COUNTERS: Mapping[str, DiskCounters] = MappingProxyType({})
_NO_RATES: Mapping[str, DeviceRates | None] = MappingProxyType({})

# (name, major, minor, n_fields, n_values) per device, in the frame's order.
Keys = tuple[tuple[str, int, int, int, int], ...]


class PackedFrame:
    """One frame: its shell (a Frame without counters and rates) and its numbers, packed."""

    __slots__ = (
        "blob",
        "elapsed",
        "is_key",
        "keys",
        "none_rates",
        "parts",
        "parts_base",
        "rate_names",
        "rate_set",
        "rates",
        "shell",
    )

    def __init__(
        self,
        shell: Frame,
        keys: Keys,
        blob: bytes,
        is_key: bool,
        rate_names: tuple[str, ...],
        none_rates: frozenset[str],
        rates: Mapping[str, DeviceRates | None] | None,
        parts: bytes | None = None,
        parts_base: bytes | None = None,
        elapsed: float | None = None,
    ) -> None:
        self.shell = shell
        """The frame with empty counters and rates, or a template shared with other frames,
        which differs from the frame only in the plain values kept with the parts."""
        self.keys = keys
        """Which device each group of numbers is (shared between frames while unchanged)."""
        self.blob = blob
        """zlib of the ``"q"`` array's bytes: full values (``is_key``) or their difference
        from the frame before's (:func:`_minus`)."""
        self.is_key = is_key
        """Whether ``blob`` holds full values."""
        self.rate_names = rate_names
        """The frame's rates keys, in order."""
        self.rate_set = frozenset(rate_names)
        """The same, for lookups."""
        self.none_rates = none_rates
        """Devices whose rates are None."""
        self.rates = rates
        """The rates as they were, when they are not rebuilt from the counters; else None."""
        self.elapsed = elapsed
        """The interval the rates cover."""
        self.parts = parts
        """The pickled processes, cgroups and issuers (then None in the shell), or None."""
        self.parts_base = parts_base
        """The compressed parts of the base frame whose pickled bytes were the preset
        dictionary of ``parts`` (shared by the frames after it); None: ``parts`` alone."""


def _flat(frame: Frame) -> tuple[Keys, array[int]]:
    keys: list[tuple[str, int, int, int, int]] = []
    flat: array[int] = array("q")
    for name, c in frame.sample.counters.items():
        keys.append((name, c.major, c.minor, c.n_fields, len(c.values)))
        flat.extend(c.values)
    return tuple(keys), flat


def _minus(a: bytes, b: bytes) -> bytes:
    """``a - b`` as numbers of ``len(a)`` little-endian bytes, modulo their range (so
    :func:`_plus` undoes it exactly). Counters that grew by a little give fields with zero
    high bytes, as subtracting them one by one does; where one fell, the borrow runs into the
    next field, which stays exact and rare."""
    return _modulo_range(int.from_bytes(a, "little") - int.from_bytes(b, "little"), len(a))


def _plus(a: bytes, b: bytes) -> bytes:
    """``a + b`` as numbers of ``len(a)`` little-endian bytes, modulo their range."""
    return _modulo_range(int.from_bytes(a, "little") + int.from_bytes(b, "little"), len(a))


def _modulo_range(number: int, n: int) -> bytes:
    """``number`` modulo 256 ** ``n``, as ``n`` little-endian bytes."""
    return (number % (1 << (8 * n))).to_bytes(n, "little")


def _rebuildable(frame: Frame, prev: Mapping[str, DiskCounters] | None) -> bool:
    """Whether every rate of ``frame`` is (counters before, counters now, the interval)."""
    if prev is None or frame.elapsed_s is None:
        return False
    counters = frame.sample.counters
    elapsed = frame.elapsed_s
    for name, r in frame.rates.items():
        if r is None:
            continue
        now = counters.get(name)
        before = prev.get(name)
        if now is None or before is None or r.elapsed_s != elapsed:
            return False
        if r.after is not now.values and r.after != now.values:
            return False
        if r.before is not before.values and r.before != before.values:
            return False
    return True


def _shell(frame: Frame, prev: PackedFrame | None, pickled: bool) -> Frame:
    """``frame`` without counters, rates and (``pickled``) the pickled parts; the sets and
    mappings equal to the frame before's are that frame's objects."""
    changes: dict[str, Any] = dict.fromkeys(PICKLED) if pickled else {}
    if pickled:
        changes["parts"] = NO_PARTS
    if prev is not None:
        before = prev.shell
        for name in ("ever_used", "nr_requests"):
            if getattr(frame, name) == getattr(before, name):
                changes[name] = getattr(before, name)
    return dataclasses.replace(
        frame,
        sample=dataclasses.replace(frame.sample, counters=_NO_COUNTERS),
        rates=_NO_RATES,
        **changes,
    )


def _plain(value: Any) -> bool:
    return value is None or type(value) in (bool, int, float, str) or value == ()


def _differing(obj: Any, template: Any, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The fields of ``obj`` that are not ``template``'s, or None when one is not plain."""
    out: dict[str, Any] = {}
    for name in names:
        value, kept = getattr(obj, name), getattr(template, name)
        if value is kept or (_plain(value) and type(value) is type(kept) and value == kept):
            continue
        if not _plain(value):
            return None
        out[name] = value
    return out


_FRAME_FIELDS = tuple(f.name for f in dataclasses.fields(Frame) if f.name != "sample")
_SAMPLE_FIELDS = tuple(f.name for f in dataclasses.fields(Sample) if f.name != "counters")

# (the frame's fields, its sample's) that differ from its shell's, a template's.
ShellChanges = tuple[dict[str, Any], dict[str, Any]]


def _changes(shell: Frame, template: Frame) -> ShellChanges | None:
    """What ``shell`` has that ``template`` has not, if only plain values (times, sequence
    number, flags): a frame's shell was ~400 bytes, the same as the one before but for those."""
    frame = _differing(shell, template, _FRAME_FIELDS)
    sample = _differing(shell.sample, template.sample, _SAMPLE_FIELDS)
    if frame is None or sample is None:
        return None
    return frame, sample


class Packer:
    """Packs frames in order and unpacks them; the owner keeps the list of packed frames."""

    def __init__(self) -> None:
        """No base parts yet."""
        self._base: tuple[bytes, bytes, tuple[bytes, ...]] | None = None
        """The current base frame's parts: compressed, pickled, and each part pickled."""
        self._since_base = 0
        self._template: Frame | None = None
        """The shell later frames are kept as changes of, while only plain values change."""
        self._health = HealthPickle()
        """The health part's last pickle, pickled again only when the part changed."""

    def _on_template(self, shell: Frame) -> tuple[Frame, ShellChanges | None]:
        """The shell to keep for ``shell`` and its changes: the template and what differs
        from it, or ``shell`` itself (then the new template) and None."""
        if self._template is not None:
            changes = _changes(shell, self._template)
            if changes is not None:
                return self._template, changes
        self._template = shell
        return shell, None

    def _pack_parts(
        self, frame: Frame, chained: bool, changes: ShellChanges | None
    ) -> tuple[bytes | None, bytes | None]:
        """``frame``'s pickled parts and its shell's ``changes`` compressed, and the base
        they need (or None).

        ``chained``: the frame follows the last one packed (the first frame, or the first
        after the wall clock stepped back, does not, and leaves the base alone). A new base
        every :data:`KEY_EVERY` frames.
        """
        parts = pickled(frame, self._health)
        if parts is None:
            return None, None
        try:
            parts += (dumped(changes),)
        except (pickle.PicklingError, TypeError, AttributeError):
            return None, None
        if not chained:
            return compressed(dumped(parts), None), None
        if self._base is None or self._since_base + 1 >= KEY_EVERY:
            raw = dumped(parts)
            self._base, self._since_base = (compressed(raw, None), raw, parts), 0
            return self._base[0], None
        self._since_base += 1
        base, base_raw, base_parts = self._base
        stored = tuple(SAME if p == b else p for p, b in zip(parts, base_parts, strict=True))
        return compressed(dumped(stored), base_raw), base

    def pack(
        self,
        frame: Frame,
        prev: PackedFrame | None,
        prev_counters: Mapping[str, DiskCounters] | None,
        prev_flat: array[int] | None,
        since_key: int,
    ) -> tuple[PackedFrame, array[int]]:
        """``frame`` packed after ``prev`` (whose counters and flat values are given).

        Returns the packed frame and its flat counter values (the next frame's base).
        """
        keys, flat = _flat(frame)
        if prev is not None and prev.keys == keys:
            keys = prev.keys  # one tuple shared while the devices stay
        is_key = prev is None or prev_flat is None or keys is not prev.keys
        is_key = is_key or since_key + 1 >= KEY_EVERY
        raw = flat.tobytes()
        data = raw if is_key or prev_flat is None else _minus(raw, prev_flat.tobytes())
        rebuild = _rebuildable(frame, prev_counters)
        shell, changes = self._on_template(_shell(frame, prev, True))
        parts, parts_base = self._pack_parts(frame, prev is not None, changes)
        if parts is None:  # the parts stay in the frame's own shell
            shell = _shell(frame, prev, False)
        packed = PackedFrame(
            shell=shell,
            keys=keys,
            blob=zlib.compress(data, LEVEL),
            is_key=is_key,
            rate_names=tuple(frame.rates),
            none_rates=frozenset(n for n, r in frame.rates.items() if r is None),
            rates=None if rebuild else frame.rates,
            parts=parts,
            parts_base=parts_base,
            elapsed=frame.elapsed_s,
        )
        if prev is not None:  # one object for what did not change since the frame before
            if packed.rate_names == prev.rate_names:
                packed.rate_names, packed.rate_set = prev.rate_names, prev.rate_set
            if packed.none_rates == prev.none_rates:
                packed.none_rates = prev.none_rates
        return packed, flat

    @staticmethod
    def values(packed: PackedFrame, base: array[int] | None) -> array[int]:
        """The flat counter values of ``packed``; ``base`` is the frame before's."""
        raw = zlib.decompress(packed.blob)
        if not packed.is_key:
            if base is None:
                raise ValueError("a packed frame of changes needs the frame before")
            raw = _plus(raw, base.tobytes())
        data: array[int] = array("q")
        data.frombytes(raw)
        return data

    @staticmethod
    def counters(packed: PackedFrame, flat: array[int]) -> Mapping[str, DiskCounters]:
        """The frame's counters by name, from its flat values (each built when read)."""
        return _Counters(packed.keys, flat)

    @staticmethod
    def frame(
        packed: PackedFrame,
        counters: Mapping[str, DiskCounters],
        prev_counters: Mapping[str, DiskCounters] | None,
    ) -> Frame:
        """The frame again, with its counters and rates."""
        rates: Mapping[str, DeviceRates | None]
        if packed.rates is not None:
            rates = packed.rates
        else:
            if prev_counters is None or packed.elapsed is None:
                raise ValueError("rebuilt rates need the frame before")
            rates = _Rates(packed, counters, prev_counters, packed.elapsed)
        shell = packed.shell
        parts: dict[str, Any] = {}
        sample_changes: dict[str, Any] = {}
        if packed.parts is not None:
            *values, changes = parts_of(packed.parts, packed.parts_base)
            parts = dict(zip(PICKLED, values, strict=True))
            if changes is not None:
                frame_changes, sample_changes = changes
                parts.update(frame_changes)
        sample = dataclasses.replace(shell.sample, counters=counters, **sample_changes)
        if "parts" in parts:
            parts["parts"] = part_values(parts["parts"], sample.monotonic)
        return dataclasses.replace(shell, sample=sample, rates=rates, **parts)


_INDEXES: dict[int, tuple[Keys, dict[str, tuple[int, int]]]] = {}


def _index(keys: Keys) -> dict[str, tuple[int, int]]:
    """Name -> (position in ``keys``, offset in the flat values); kept for a few key tuples."""
    hit = _INDEXES.get(id(keys))
    if hit is not None and hit[0] is keys:
        return hit[1]
    index: dict[str, tuple[int, int]] = {}
    at = 0
    for i, key in enumerate(keys):
        index[key[0]] = (i, at)
        at += key[4]
    if len(_INDEXES) >= 8:
        _INDEXES.pop(next(iter(_INDEXES)))
    _INDEXES[id(keys)] = (keys, index)
    return index


class _Counters(Mapping[str, DiskCounters]):
    """A frame's counters, read-only; a device's DiskCounters is made when it is read.

    A scrubbed frame or the few frames the verdict looks back on need one device or a
    screenful, not thousands.
    """

    __slots__ = ("_flat", "_keys", "_made")

    def __init__(self, keys: Keys, flat: array[int]) -> None:
        self._keys = keys
        self._flat = flat
        self._made: dict[str, DiskCounters] = {}

    def __getitem__(self, name: str) -> DiskCounters:
        made = self._made.get(name)
        if made is not None:
            return made
        i, at = _index(self._keys)[name]
        _, major, minor, n_fields, n = self._keys[i]
        made = self._made[name] = DiskCounters(
            major, minor, name, tuple(self._flat[at : at + n]), n_fields
        )
        return made

    def __contains__(self, name: object) -> bool:
        return name in _index(self._keys)

    def __iter__(self) -> Iterator[str]:
        return (key[0] for key in self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"mappingproxy({dict(self)!r})"


class _Rates(Mapping[str, "DeviceRates | None"]):
    """A frame's rates rebuilt from its counters and the frame before's, each when read."""

    __slots__ = ("_before", "_counters", "_elapsed", "_packed")

    def __init__(
        self,
        packed: PackedFrame,
        counters: Mapping[str, DiskCounters],
        before: Mapping[str, DiskCounters],
        elapsed: float,
    ) -> None:
        self._packed = packed
        self._counters = counters
        self._before = before
        self._elapsed = elapsed

    def __getitem__(self, name: str) -> DeviceRates | None:
        if name not in self._packed.rate_set:
            raise KeyError(name)
        if name in self._packed.none_rates:
            return None
        now = self._counters[name].values
        return DeviceRates(self._before[name].values, now, self._elapsed)

    def __contains__(self, name: object) -> bool:
        return name in self._packed.rate_set

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed.rate_names)

    def __len__(self) -> int:
        return len(self._packed.rate_names)

    def __repr__(self) -> str:
        return f"mappingproxy({dict(self)!r})"
