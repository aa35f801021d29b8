"""The probes the hot-files part adds to the tracer, and the parser of their maps.

Every tracepoint here carries the filesystem's device (``s_dev``, a kernel dev_t) and the
inode, and none needs kprobes (checked with ``bpftrace -lv`` on Linux 6.18):

* device reads through the page cache: ``filemap:mm_filemap_add_to_page_cache`` fires once
  per folio the reader's context adds (bytes = page size << ``order``), on ext4, XFS and any
  other filesystem alike (XFS's reads are seen there too: ``iomap:iomap_readahead`` and
  ``iomap_readpage`` fire for the same folios, with no file offset, and are not used);
* a folio the same thread adds inside a buffered write of that inode's pages is the write
  extending the file, not a read, and is not counted: each write stamps ``@fi_in[tid]`` with
  (inode, first page, last page) before its folios are added, at
  ``ext4:ext4_da_write_begin``/``ext4_write_begin`` (once per page) and at
  ``xfs:xfs_file_buffered_write`` (once per call, before iomap adds its folios);
* buffered writes by file and process (bytes dirtied): ``copied`` at
  ``ext4:ext4_da_write_end``/``ext4_write_end``/``ext4_journalled_write_end`` (a
  ``write_begin``'s ``len`` is what was asked, and a write that crosses a folio's end asks
  again for the rest, so its sum counts such writes up to twice) and the ``count`` at XFS's;
* bytes reaching the device per inode: ``ext4:ext4_writepages_result`` (``pages_written``)
  and, on XFS and other iomap filesystems, ``iomap:iomap_add_to_ioend`` (each dirty range
  added to a write-back bio: ``dirty_len`` cut at the mapping's end, as the kernel adds it;
  holes are not written), from the flusher and from fsync alike.
  ``iomap:iomap_writeback_folio`` gives the whole folio's size instead, however little of
  it is dirty (a 4k write into a cached 2 MiB folio), so it is not used;
* direct I/O: ``iomap:iomap_dio_rw_begin`` gives the count; its ``ki_flags`` do not say the
  direction for a synchronous call, so the count waits (by thread) for that call's first
  ``iomap:iomap_iter``, whose ``IOMAP_WRITE`` flag does;
* a process's command name when its main thread exits (``sched:sched_process_exit``), so
  one that exits before the frame ends keeps its name.

Metadata reads go through the block device's own page cache (its inode sits on the ``bdev``
pseudo filesystem, not on the device), so they are no file's: they stay in the device's
remainder, as do XFS's metadata and log (its own buffer cache).

``sample`` (a power of two): single-page reads, writes and write-back ranges (a random 4k
reader's or writer's, each one an event) are counted one in ``sample`` and scaled back up in
the program; larger folios, writes and ranges, few per byte, are all counted. Which single
pages are read is a hash of the page and the inode (:func:`picked`), computed alike at a
write and at the folio add it causes: a single-page write stamps ``@fi_in`` only for a page
whose add would be counted, so the exclusion costs a map write one write in ``sample`` and
stays exact. The bytes dirtied and written back, which need no stamp, are picked at random,
so a page written again and again counts its share. On a filesystem whose blocks are larger
than a page, a single-page write adds a larger folio, always counted: one its write did not
stamp is counted as a read. The measured cost (``benchmarks/bench_files_trace.py``) decides
the part's rate (:data:`SAMPLE`), and its output says it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from iotop_plus.sampling.frame.part import TraceProgram

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
"""Bytes in a page: a folio of ``order`` n holds ``PAGE_SIZE << n``."""
PAGE_SHIFT = PAGE_SIZE.bit_length() - 1
CLEAR_WRITING_S = 10
"""How often ``@fi_in`` (the pages each thread last began writing) is emptied, so threads
that ended do not fill it."""
IOMAP_DIRECT = 1 << 4
"""``iomap_iter``'s flag of a direct I/O iteration (``include/linux/iomap.h``)."""
IOMAP_WRITE = 1 << 0
"""``iomap_iter``'s flag of a write."""
IOMAP_WRITTEN_TYPES = (2, 3)
"""``iomap`` mapping types whose write-back ranges reach the device: ``IOMAP_MAPPED`` and
``IOMAP_UNWRITTEN`` (a hole's range is dropped)."""
GOLDEN = 0x9E3779B97F4A7C15
"""2**64 over the golden ratio: the multiplier of :func:`picked`'s hash, which spreads any
stride of pages evenly (no clock is mixed in: reading one would about double the cost of an
event that is not counted)."""
GROUPS = frozenset({"ext4", "xfs", "iomap", "filemap", "sched"})
"""The tracepoint groups the probes use (a filesystem's appear once its module is loaded)."""

SAMPLE = 8
"""The part's rate for single-page events: one in 8, because counting each costs more than the
0.3 us an event may cost (``bench_files_trace.py`` measures it; docs/performance.md)."""
MAPS = ("@fi_rd", "@fi_wr", "@fi_wb", "@fi_dio", "@fi_ex")
"""The maps printed and cleared at each tick (``@fi_in`` and ``@fi_dc`` live per call)."""

FileKey = tuple[int, int]
"""(kernel dev_t of the filesystem, inode)."""


def picked(page: str, ino: str, sample: int) -> str:
    """A BPF test: is ``page`` of inode ``ino`` one of the ``1 / sample`` counted?"""
    if sample == 1:
        return "1"
    bits = sample.bit_length() - 1
    return f"(((({page}) ^ ({ino})) * {GOLDEN:#x}) >> {64 - bits}) == 0"


def file_program(sample: int = 1, groups: Iterable[str] = GROUPS) -> str:
    """The probe text for the tracepoint ``groups`` there are (see the module's docstring);
    ``sample`` is a power of two."""
    if sample < 1 or sample & (sample - 1):
        raise ValueError(f"sample must be a power of two, not {sample}")
    have = set(groups)
    page, shift = PAGE_SIZE, PAGE_SHIFT
    one = f"(rand & {sample - 1}) == 0" if sample > 1 else "1"
    text = ""
    if "ext4" in have:
        text += f"""tracepoint:ext4:ext4_da_write_begin, tracepoint:ext4:ext4_write_begin
/args->len > {page} || {picked(f"args->pos >> {shift}", "args->ino", sample)}/ {{
  @fi_in[tid] = (args->ino, args->pos >> {shift}, (args->pos + args->len - 1) >> {shift});
}}
tracepoint:ext4:ext4_da_write_end, tracepoint:ext4:ext4_write_end,
tracepoint:ext4:ext4_journalled_write_end /args->copied > {page} || {one}/ {{
  @fi_wr[args->dev, args->ino, pid] = sum(args->copied > {page} ? args->copied
                                                                : args->copied * {sample});
}}
tracepoint:ext4:ext4_writepages_result /args->pages_written > 0/ {{
  @fi_wb[args->dev, args->ino] = sum(args->pages_written * {page});
}}
"""
    if "xfs" in have:
        text += f"""tracepoint:xfs:xfs_file_buffered_write /args->count/ {{
  $f = args->offset >> {shift};
  $l = (args->offset + args->count - 1) >> {shift};
  if ($f != $l) {{
    @fi_in[tid] = (args->ino, $f, $l);
    @fi_wr[args->dev, args->ino, pid] = sum(args->count);
  }} else {{
    if ({picked("$f", "args->ino", sample)}) {{
      @fi_in[tid] = (args->ino, $f, $l);
    }}
    if ({one}) {{
      @fi_wr[args->dev, args->ino, pid] = sum(args->count * {sample});
    }}
  }}
}}
"""
    if "filemap" in have:
        counted = picked("args->index", "args->i_ino", sample)
        text += f"""tracepoint:filemap:mm_filemap_add_to_page_cache
/args->s_dev && (args->order || {counted})/ {{
  $w = @fi_in[tid];
  if ($w.0 != args->i_ino || $w.2 < args->index || $w.1 >= args->index + (1 << args->order)) {{
    @fi_rd[args->s_dev, args->i_ino, pid] = sum(args->order ? {page} << args->order
                                                            : {page * sample});
  }}
}}
interval:s:{CLEAR_WRITING_S} {{
  clear(@fi_in);
}}
"""
    if "iomap" in have:
        written = " || ".join(f"args->type == {t}" for t in IOMAP_WRITTEN_TYPES)
        text += f"""tracepoint:iomap:iomap_add_to_ioend
/({written}) && (args->dirty_len > {page} || {one})/ {{
  $m = args->offset + args->length - args->pos;
  $n = $m < args->dirty_len ? $m : args->dirty_len;
  @fi_wb[args->dev, args->ino] = sum(args->dirty_len > {page} ? $n : $n * {sample});
}}
tracepoint:iomap:iomap_dio_rw_begin {{
  @fi_dc[tid] = args->count;
}}
tracepoint:iomap:iomap_iter /args->flags & {IOMAP_DIRECT}/ {{
  $c = @fi_dc[tid];
  if ($c) {{
    @fi_dio[args->dev, args->ino, pid, args->flags & {IOMAP_WRITE}] = sum($c);
    delete(@fi_dc[tid]);
  }}
}}
"""
    if "sched" in have:
        text += """tracepoint:sched:sched_process_exit /pid == tid/ {
  @fi_ex[pid] = comm;
}
"""
    return text


@dataclass(frozen=True)
class FileCounts:
    """What the probes counted over one or more ticks (bytes)."""

    read: Mapping[tuple[int, int, int], int] = field(default_factory=lambda: MappingProxyType({}))
    """Device reads per (dev_t, inode, pid)."""
    dirtied: Mapping[tuple[int, int, int], int] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Buffered writes per (dev_t, inode, pid)."""
    written: Mapping[FileKey, int] = field(default_factory=lambda: MappingProxyType({}))
    """Bytes written back to the device per (dev_t, inode)."""
    direct_read: Mapping[tuple[int, int, int], int] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Direct reads per (dev_t, inode, pid)."""
    direct_write: Mapping[tuple[int, int, int], int] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Direct writes per (dev_t, inode, pid)."""
    exited: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))
    """Command names of processes that exited."""
    filled: bool = False
    """A map reached the tracer's key limit: some events were not counted."""
    sample: int = 1
    """Single-page reads and writes were counted one in ``sample`` (scaled back up)."""


def _ints(key: str, n: int) -> tuple[int, ...] | None:
    parts = key.split(",")
    if len(parts) != n:
        return None
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        return None


def _sums(data: object, n: int, scale: int = 1) -> dict[tuple[int, ...], int]:
    out: dict[tuple[int, ...], int] = {}
    if not isinstance(data, Mapping):
        return out
    for key, value in data.items():
        k = _ints(str(key), n)
        if k is None or not isinstance(value, int) or value <= 0:
            continue
        out[k] = out.get(k, 0) + value * scale
    return out


def parser(
    sample: int = SAMPLE, map_keys: int | None = None, groups: Iterable[str] = GROUPS
) -> TraceProgram:
    """The part's :class:`TraceProgram` for the tracepoint ``groups`` there are: probes,
    maps, parse and merge."""
    from iotop_plus.sampling.latency.tracer import MAP_KEYS_MAX

    limit = map_keys or MAP_KEYS_MAX

    def parse(maps: Mapping[str, Mapping[str, object]]) -> FileCounts:
        direct = _sums(maps.get("@fi_dio"), 4)
        exited: dict[int, str] = {}
        ex = maps.get("@fi_ex")
        if isinstance(ex, Mapping):
            for key, value in ex.items():
                if str(key).isdigit() and isinstance(value, str):
                    exited[int(key)] = value
        full = any(isinstance(maps.get(m), Mapping) and len(maps[m]) >= limit for m in MAPS)
        return FileCounts(
            read=_three(_sums(maps.get("@fi_rd"), 3)),
            dirtied=_three(_sums(maps.get("@fi_wr"), 3)),
            written={(k[0], k[1]): v for k, v in _sums(maps.get("@fi_wb"), 2).items()},
            direct_read={(k[0], k[1], k[2]): v for k, v in direct.items() if not k[3]},
            direct_write={(k[0], k[1], k[2]): v for k, v in direct.items() if k[3]},
            exited=exited,
            filled=full,
            sample=sample,
        )

    return TraceProgram(file_program(sample, groups), MAPS, parse, merge_counts)


def _three(d: Mapping[tuple[int, ...], int]) -> dict[tuple[int, int, int], int]:
    return {(k[0], k[1], k[2]): v for k, v in d.items()}


K = TypeVar("K")


def _add(a: Mapping[K, int], b: Mapping[K, int]) -> dict[K, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def merge_counts(a: object, b: object) -> FileCounts:
    """Two ticks' counts summed (either may be None or another type: then the other)."""
    if not isinstance(a, FileCounts):
        return b if isinstance(b, FileCounts) else FileCounts()
    if not isinstance(b, FileCounts):
        return a
    return FileCounts(
        read=_add(a.read, b.read),
        dirtied=_add(a.dirtied, b.dirtied),
        written=_add(a.written, b.written),
        direct_read=_add(a.direct_read, b.direct_read),
        direct_write=_add(a.direct_write, b.direct_write),
        exited={**a.exited, **b.exited},
        filled=a.filled or b.filled,
        sample=max(a.sample, b.sample),
    )
