"""Incident bundles: one self-contained recording file of a window, with the inventory and
the settings and probe journals, to attach to a ticket. ``open_timeline(FILE)`` reads it."""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from iotop_plus.record.chunks import ChunkWriter
from iotop_plus.record.format import MAX_INFLATED_FRAME
from iotop_plus.record.recorded_who import CommandLines, rebundled
from iotop_plus.record.timeline import RecordingTimeline


class BundleError(Exception):
    """The bundle cannot be written; one line."""


def create_exclusive(path: Path, force: bool) -> int:
    """A new 0600 file at ``path``, never through a symlink; replaces one only with ``force``."""
    if force:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISDIR(st.st_mode):
                raise BundleError(f"{path} is a directory")
            os.unlink(path)  # removes a symlink itself, never its target
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags, 0o600)
    except FileExistsError:
        raise BundleError(f"{path} exists; not overwriting it without --force") from None
    except OSError as exc:
        raise BundleError(f"cannot create {path}: {exc.strerror or exc}") from None


HEADER_ROOM = MAX_INFLATED_FRAME - (1 << 20)
"""The header's JSON is kept this small (room for the inventory, which comes first)."""


def _fit_header(header: dict[str, Any], keys: tuple[str, ...]) -> int:
    """Drop the oldest journal records until the header's JSON fits; how many were dropped."""
    dropped = 0
    size = len(json.dumps(header, separators=(",", ":")).encode())
    while size > HEADER_ROOM:
        lists = [k for k in keys if isinstance(header.get(k), list) and header[k]]
        if not lists:
            break
        key = max(lists, key=lambda k: len(header[k]))
        # Drop a share at a time: one JSON size check per step, not one per record.
        n = max(1, len(header[key]) * (size - HEADER_ROOM) // size + 1)
        header[key] = header[key][n:]
        dropped += n
        size = len(json.dumps(header, separators=(",", ":")).encode())
    return dropped


def write_bundle(
    timeline: RecordingTimeline,
    start: float,
    end: float,
    out: Path,
    *,
    force: bool = False,
    journals: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
    warn: Callable[[str], object] | None = None,
) -> int:
    """Write the samples from ``start`` to ``end`` to a new file ``out``; returns the count.

    The journals go in the header, which a reader takes only up to
    :data:`~iotop_plus.record.format.MAX_INFLATED_FRAME`: their oldest records are left out
    until it fits, and ``warn`` says how many.

    Raises:
        BundleError: the file exists (without ``force``), cannot be made, or the disk is full
            (the partial file is removed).
    """
    header = dict(timeline.header)
    header.update(timeline.inventory_doc(start))
    header["bundle"] = {
        "created_ns": time.time_ns(),
        "start_ns": round(start * 1e9),
        "end_ns": round(end * 1e9),
    }
    for name, records in (journals or {}).items():
        header[name] = [dict(r) for r in records]
    left_out = _fit_header(header, tuple(journals or ()))
    if left_out and warn is not None:
        warn(
            f"the journals are too big for a bundle's header: left out their oldest "
            f"{left_out:,} records"
        )
    fd = create_exclusive(out, force)
    n = 0
    try:
        writer = ChunkWriter(fd, header, sync=False)
        last_doc: dict[str, Any] | None = None
        lines = CommandLines()  # each bundle chunk names its processes (type N)
        for rs, frame in timeline.frames(start, end):
            if n and frame.inventory_changed:
                doc = timeline.inventory_doc(frame.wall_time)
                if doc != last_doc:
                    writer.inventory(doc)
                    last_doc = doc
            writer.append(rebundled(rs, frame, lines))
            n += 1
        writer.close_chunk()
        os.fdatasync(fd)
    except OSError as exc:
        os.close(fd)
        os.unlink(out)
        what = "the disk is full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
        raise BundleError(f"cannot write {out}: {what}") from None
    os.close(fd)
    return n
