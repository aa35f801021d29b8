"""Frames kept compactly in memory: the disk counters as numbers, rebuilt into a Frame on demand.

A frame's disk part is, per device, a tuple of 17 Python ints (about 650 bytes with the int
objects), and its rates hold the tuples of the frame before. Fifteen minutes at 0.25 s with
60 devices made 3,601 frames of those: about 380 bytes per device per frame after sharing,
where a recording needs about 6 (#25). Here the counters of a frame are stored as their
differences from the frame before (zlib over a ``"q"`` array: a few bytes a device, most
counters do not move in 0.25 s), with full values every :data:`KEY_EVERY` frames and in the
oldest frame kept, so any frame is rebuilt from at most that many arrays. The rates are
rebuilt from the counters of the frame before and the interval, which is what they hold, and
are stored as they are only when they are something else (a frame after a dropped one, a
device whose counters went back). Everything else in the frame (processes, cgroups, issuers,
memory, health, events...) is kept as it was, already stripped by the ring.
"""

from __future__ import annotations

import copyreg
import dataclasses
import io
import pickle
import zlib
from array import array
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from iotop_plus.sampling.diskstats import DiskCounters
from iotop_plus.sampling.frame import Frame
from iotop_plus.sampling.health_part import HealthFrame
from iotop_plus.sampling.rates import DeviceRates

KEY_EVERY = 32
"""A frame with the full counter values at least every this many frames."""

_NO_COUNTERS: Mapping[str, DiskCounters] = MappingProxyType({})
_NO_RATES: Mapping[str, DeviceRates | None] = MappingProxyType({})

# The parts of a frame made anew each frame (the top processes, the active cgroups, the
# issuers, each device's health with its age, the latency histograms...) are pickled and
# compressed together: a tenth to a fifth of their objects' size. The health part alone was
# ~3 KB a frame at 60 devices.
_PICKLED = (
    "processes",
    "cgroups",
    "issuers",
    "health",
    "latency",
    "pressure",
    "memory",
    "throttles",
)


def _proxy(d: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(d)


def _reduce_proxy(m: MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return _proxy, (dict(m),)


_DISPATCH = copyreg.dispatch_table.copy()
_DISPATCH[MappingProxyType] = _reduce_proxy


def _pickled(parts: tuple[Any, ...]) -> bytes | None:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    try:
        pickler.dump(parts)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None  # something that does not pickle: the parts stay as they are
    return buf.getvalue()


# Consecutive frames' parts are mostly the same bytes (the same top processes with their
# command lines, every device's health reading, the cgroup paths): each frame's are
# compressed with the pickled parts of a recent "base" frame as zlib's preset dictionary, so
# only what differs costs (#25: the Processes tab's frames held ~2-3 KB of parts each).
_BASES: dict[int, tuple[bytes, bytes]] = {}
"""Compressed base parts (by id) -> their pickled bytes, for a few bases lately unpacked."""


def _compressed(raw: bytes, base: bytes | None) -> bytes:
    if base is None:
        return zlib.compress(raw, 1)
    comp = zlib.compressobj(1, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, zdict=base)
    return comp.compress(raw) + comp.flush()


def _base_raw(base: bytes) -> bytes:
    hit = _BASES.get(id(base))
    if hit is not None and hit[0] is base:
        return hit[1]
    raw = zlib.decompress(base)
    if len(_BASES) >= 8:
        _BASES.pop(next(iter(_BASES)))
    _BASES[id(base)] = (base, raw)
    return raw


def _ages(health: HealthFrame, monotonic: float) -> dict[str, float]:
    """Each reading's age at ``monotonic``, as the live health part works it out."""
    return {n: max(0.0, monotonic - r.read_monotonic) for n, r in health.readings.items()}


def _packable(frame: Frame, name: str) -> Any:
    """The part ``name`` of ``frame`` as pickled: a live health part without its ages, which
    are rebuilt from the readings and the frame's time (they were a third of the pickled
    parts at 60 devices, and the only thing in health that moves every frame)."""
    value = getattr(frame, name)
    if name == "health" and value is not None and value.age_s == _ages(value, frame.monotonic):
        return dataclasses.replace(value, **{"age_s": None})
    return value


def _with_ages(health: Any, monotonic: float) -> Any:
    if isinstance(health, HealthFrame) and health.age_s is None:
        return dataclasses.replace(health, age_s=MappingProxyType(_ages(health, monotonic)))
    return health


def _parts_of(packed: PackedFrame) -> tuple[Any, ...]:
    assert packed.parts is not None
    if packed.parts_base is None:
        return tuple(pickle.loads(zlib.decompress(packed.parts)))
    comp = zlib.decompressobj(15, zdict=_base_raw(packed.parts_base))
    return tuple(pickle.loads(comp.decompress(packed.parts) + comp.flush()))


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
    ) -> None:
        self.shell = shell
        """The frame with empty counters and rates."""
        self.keys = keys
        """Which device each group of numbers is (shared between frames while unchanged)."""
        self.blob = blob
        """zlib of the ``"q"`` array: full values (``is_key``) or differences."""
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
        self.elapsed = shell.elapsed_s
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
    changes: dict[str, Any] = dict.fromkeys(_PICKLED) if pickled else {}
    if prev is not None:
        before = prev.shell
        for name in ("ever_used", "nr_requests", "queues", "journal_restarted"):
            if getattr(frame, name) == getattr(before, name):
                changes[name] = getattr(before, name)
    return dataclasses.replace(
        frame,
        sample=dataclasses.replace(frame.sample, counters=_NO_COUNTERS),
        rates=_NO_RATES,
        **changes,
    )


class Packer:
    """Packs frames in order and unpacks them; the owner keeps the list of packed frames."""

    def __init__(self) -> None:
        """No base parts yet."""
        self._base: tuple[bytes, bytes] | None = None
        """The current base frame's parts: (compressed, pickled)."""
        self._since_base = 0

    def _pack_parts(self, frame: Frame, chained: bool) -> tuple[bytes | None, bytes | None]:
        """``frame``'s pickled parts compressed, and the base they need (or None).

        ``chained``: the frame follows the last one packed (a re-packed oldest frame does
        not, and leaves the base alone). A new base every :data:`KEY_EVERY` frames.
        """
        raw = _pickled(tuple(_packable(frame, name) for name in _PICKLED))
        if raw is None:
            return None, None
        if not chained:
            return _compressed(raw, None), None
        if self._base is None or self._since_base + 1 >= KEY_EVERY:
            self._base, self._since_base = (_compressed(raw, None), raw), 0
            return self._base[0], None
        self._since_base += 1
        return _compressed(raw, self._base[1]), self._base[0]

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
        if is_key or prev_flat is None:
            data = flat
        else:
            data = array("q", map(int.__sub__, flat, prev_flat))
        rebuild = _rebuildable(frame, prev_counters)
        parts, parts_base = self._pack_parts(frame, prev is not None)
        packed = PackedFrame(
            shell=_shell(frame, prev, parts is not None),
            keys=keys,
            blob=zlib.compress(data.tobytes(), 1),
            is_key=is_key,
            rate_names=tuple(frame.rates),
            none_rates=frozenset(n for n, r in frame.rates.items() if r is None),
            rates=None if rebuild else frame.rates,
            parts=parts,
            parts_base=parts_base,
        )
        if prev is not None:  # one object for what did not change since the frame before
            if packed.rate_names == prev.rate_names:
                packed.rate_names, packed.rate_set = prev.rate_names, prev.rate_set
            if packed.none_rates == prev.none_rates:
                packed.none_rates = prev.none_rates
        return packed, flat

    @staticmethod
    def values(packed: PackedFrame, base: array[int] | None) -> array[int]:
        """The flat counter values of ``packed``; ``base`` is the frame before's (for deltas)."""
        data: array[int] = array("q")
        data.frombytes(zlib.decompress(packed.blob))
        if packed.is_key:
            return data
        if base is None:
            raise ValueError("a packed frame of differences needs the frame before")
        return array("q", map(int.__add__, data, base))

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
        if packed.parts is not None:
            parts = dict(zip(_PICKLED, _parts_of(packed), strict=True))
            parts["health"] = _with_ages(parts["health"], shell.monotonic)
        return dataclasses.replace(
            shell,
            sample=dataclasses.replace(shell.sample, counters=counters),
            rates=rates,
            **parts,
        )


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
