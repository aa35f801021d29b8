"""Dirty and writeback memory: the usual cause of write-latency storms.

Formats accepted:

* ``/proc/meminfo``: ``Dirty:              3032 kB`` and ``Writeback:             0 kB`` (kB,
  ``fs/proc/meminfo.c``); other lines are skipped.
* ``/proc/vmstat``: ``nr_dirty_threshold 1199753`` and ``nr_dirty_background_threshold
  599144``, in pages (``mm/vmstat.c``): times the page size. These are the kernel's current
  limits, computed from ``vm.dirty_ratio``/``dirty_bytes`` and ``vm.dirty_background_*``
  against the memory that can be dirtied. And ``nr_written``, the pages written back since
  boot: the verdict sees writeback going on without the tracer.

When dirty memory reaches the background threshold the flusher threads start writing it
back; at the (foreground) threshold, writers are throttled in ``balance_dirty_pages``.
Reading both costs about 55 µs here (median of 3,000 reads on the 2-core VM, of which the
two ``read()`` calls are 35 µs; a whole frame of this host is about 180 µs), so the frame
carries them every time, like pressure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.part import FramePart
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded
from iotop_plus.text import cgroup_bytes

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.model import FrameEvent
    from iotop_plus.sampling.frame.part import ReadContext

WRITEBACK = "writeback"
"""The frame event kind of a crossing of the background threshold (a chart mark)."""
JSON_KEYS = ("dirty_kB", "writeback_kB", "dirty_threshold_kB", "dirty_background_threshold_kB")
"""The keys of ``statistics[].memory``, in order."""
FALL_BELOW = 0.9
"""Dirty must fall below this share of the background threshold before a new crossing is
marked: one mark per storm, not one per tick while it hovers at the threshold."""

MISSING = "no dirty/writeback figures"
"""How every line about missing memory figures starts."""

_MEMINFO = {"Dirty:": "dirty_kB", "Writeback:": "writeback_kB"}
_VMSTAT = {
    "nr_dirty_threshold": "dirty_threshold_kB",
    "nr_dirty_background_threshold": "dirty_background_threshold_kB",
}


@dataclass(frozen=True)
class Memory:
    """Dirty and writeback memory and the kernel's thresholds at one instant (kB)."""

    dirty_kB: int | None
    """``Dirty`` in /proc/meminfo: page cache waiting to be written."""
    writeback_kB: int | None
    """``Writeback`` in /proc/meminfo: being written now."""
    dirty_threshold_kB: int | None
    """Where writers get throttled (``nr_dirty_threshold`` × page size)."""
    dirty_background_threshold_kB: int | None
    """Where the flusher starts (``nr_dirty_background_threshold`` × page size)."""
    problem: str | None = None
    """One line saying what could not be read, and how to get it."""
    written_pages: int | None = None
    """``nr_written`` in /proc/vmstat: pages written back since boot (not recorded)."""

    def as_json(self) -> dict[str, int | None]:
        """The ``statistics[].memory`` object of ``snapshot`` JSON."""
        return {key: getattr(self, key) for key in JSON_KEYS}

    @property
    def has_figures(self) -> bool:
        """Whether dirty and the background threshold are both known."""
        return self.dirty_kB is not None and self.dirty_background_threshold_kB is not None

    @property
    def over_background(self) -> bool:
        """Dirty is at or above the background threshold (the flusher is writing back)."""
        return (
            self.dirty_kB is not None
            and self.dirty_background_threshold_kB is not None
            and self.dirty_background_threshold_kB > 0
            and self.dirty_kB >= self.dirty_background_threshold_kB
        )

    def summary(self) -> str:
        """One short line: ``dirty 12M (bg 2.3G, max 4.6G)  writeback 0``."""
        if self.dirty_kB is None:
            return "no dirty/writeback figures (meminfo/vmstat not readable)"
        bg, top, wb = (
            self.dirty_background_threshold_kB,
            self.dirty_threshold_kB,
            self.writeback_kB,
        )
        limits = f" (bg {_kb(bg)}, max {_kb(top)})" if bg is not None and top is not None else ""
        return f"dirty {_kb(self.dirty_kB)}{limits}  writeback {_kb(wb)}"


def _kb(value: int | None) -> str:
    return "-" if value is None else cgroup_bytes(value * 1024)


def memory_from_json(doc: Any) -> Memory | None:
    """A recorded ``M`` part back as :class:`Memory`; None when it is not one (wrong types)."""
    if not isinstance(doc, Mapping):
        return None
    values: list[int | None] = []
    for key in JSON_KEYS:
        value = doc.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return None
        values.append(value)
    return _memory(values)


def _lines_of(text: str, key: str) -> list[str]:
    """The lines of ``text`` whose first word is ``key`` (found by search: these files run to
    hundreds of lines, and only two are wanted from each)."""
    padded = "\n" + text
    found = []
    at = padded.find("\n" + key)
    while at >= 0:
        end = padded.find("\n", at + 1)
        line = padded[at + 1 : end if end >= 0 else None]
        if line.split(maxsplit=1)[0] == key:
            found.append(line)
        at = padded.find("\n" + key, at + 1)
    return found


def parse_memory(meminfo: str, vmstat: str, page_size: int) -> tuple[dict[str, int], list[str]]:
    """The four figures (kB) found in the two files' texts (absent lines left out), and the
    Dirty/Writeback/threshold lines that are not numbers (quoted, each left out)."""
    found: dict[str, int] = {}
    bad: list[str] = []
    for name, text, keys, scale, counts in (
        ("meminfo", meminfo, _MEMINFO, None, (2, 3)),  # "Dirty:  3032 kB"
        ("vmstat", vmstat, _VMSTAT, page_size, (2,)),  # "nr_dirty_threshold 1199753"
    ):
        for key, json_key in keys.items():
            for line in _lines_of(text, key):
                words = line.split()
                if len(words) not in counts or not words[1].isdigit():
                    bad.append(f"{name}: {line.strip()[:80]!r}")
                    continue
                value = int(words[1])
                found[json_key] = value if scale is None else value * scale // 1024
    return found, bad


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def page_size_of(roots: Roots, meminfo: str, vmstat: str) -> int:
    """The page size: this host's; for a captured tree, ``Dirty`` kB over ``nr_dirty`` pages
    when both are there (another architecture may have 16 or 64 kB pages)."""
    if not roots.is_live:
        dirty_kb = _first_number(meminfo, "Dirty:")
        pages = _first_number(vmstat, "nr_dirty")
        if dirty_kb and pages:
            ratio = dirty_kb * 1024 / pages
            for size in (4096, 16384, 65536):
                if abs(ratio - size) < size / 4:
                    return size
    return _PAGE_SIZE


def _first_number(text: str, key: str) -> int | None:
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == key and words[1].isdigit():
            return int(words[1])
    return None


def read_memory(roots: Roots) -> Memory:
    """Dirty, writeback and the thresholds from ``<proc>/meminfo`` and ``<proc>/vmstat``.

    Never raises: what is missing or malformed is None, named in ``problem``.
    """
    texts: list[str] = []
    problems: list[str] = []
    missing: list[str] = []
    for name in ("meminfo", "vmstat"):
        path = roots.proc / name
        try:
            texts.append(read_bounded(path, MAX_ATTRIBUTE_BYTES))
        except FileNotFoundError:
            texts.append("")
            missing.append(name)
        except OSError as exc:
            texts.append("")
            problems.append(f"{MISSING}: cannot read {path}: {exc.strerror or exc}")
    if missing:  # one line: a captured tree without either file
        what = " and ".join(missing)
        problems.append(f"{MISSING}: {what} missing in {roots.proc} (copy them into the tree)")
    found, bad = parse_memory(texts[0], texts[1], page_size_of(roots, texts[0], texts[1]))
    if bad:
        problems.append(f"{MISSING}: malformed {roots.proc}/{', '.join(bad)}")
    if not problems and len(found) < len(JSON_KEYS):
        absent = ", ".join(k for k in JSON_KEYS if k not in found)
        problems.append(f"{MISSING}: {roots.proc}/meminfo or vmstat has no {absent}")
    written = _lines_of(texts[1], "nr_written")
    pages = written[0].split() if written else []
    memory = _memory([found.get(k) for k in JSON_KEYS], "; ".join(problems) or None)
    if len(pages) == 2 and pages[1].isdigit():
        return replace(memory, written_pages=int(pages[1]))
    return memory


def _memory(values: list[int | None], problem: str | None = None) -> Memory:
    dirty, writeback, threshold, background = values
    return Memory(dirty, writeback, threshold, background, problem)


class MemoryReader:
    """Reads :class:`Memory` for each frame and marks when dirty crosses the background
    threshold (an event of kind :data:`WRITEBACK`, drawn on every device's charts)."""

    def __init__(self, roots: Roots) -> None:
        """Args:
        roots: Where /proc is.
        """
        self.roots = roots
        self._above: bool | None = None

    def read(self, ctx: ReadContext | None = None) -> tuple[Memory, tuple[FrameEvent, ...]]:  # noqa: ARG002
        """The figures now, and the crossing since the previous read (if one)."""
        memory = read_memory(self.roots)
        return memory, self.crossing(memory)

    def close(self) -> None:
        """Nothing held open."""

    def crossing(self, memory: Memory) -> tuple[FrameEvent, ...]:
        """The event when ``memory`` crosses the background threshold (up at it, down below
        :data:`FALL_BELOW` of it); none on the first read, which only sets the state."""
        from iotop_plus.sampling.frame.model import FrameEvent

        if not memory.has_figures:
            return ()
        was = self._above
        bg = memory.dirty_background_threshold_kB or 0
        dirty = memory.dirty_kB or 0
        if memory.over_background:
            self._above = True
        elif was is None or dirty < bg * FALL_BELOW:
            self._above = False
        if was is None or was == self._above:
            return ()
        if self._above:
            text = f"dirty {_kb(dirty)} ≥ background threshold {_kb(bg)}: writeback starts"
        else:
            text = f"dirty {_kb(dirty)} back below background threshold {_kb(bg)}"
        return (FrameEvent(WRITEBACK, text),)


class MemoryPart(FramePart[Memory]):
    """Dirty and writeback memory and their thresholds: read with the disks (cheap), recorded
    as ``M``."""

    key = "memory"
    letter = "M"
    always = True

    def reader(self, roots: Roots) -> MemoryReader:
        """Reads ``/proc/meminfo`` and ``/proc/vmstat``."""
        return MemoryReader(roots)

    def to_json(self, value: Memory) -> Any:
        """:meth:`Memory.as_json`."""
        return value.as_json()

    def from_json(self, doc: Any) -> Memory | None:
        """:func:`memory_from_json`."""
        return memory_from_json(doc)
