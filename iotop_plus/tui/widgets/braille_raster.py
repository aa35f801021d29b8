"""Braille bits of a chart's lines, drawn whole or moved on from the last frame's.

A line is drawn by dot-column runs (:func:`~iotop_plus.tui.widgets.chart_scale.columns`):
each run is one dot column's points, drawn as a vertical stroke over their range, joined to the
run before by strokes through the columns between. In an anchored chart (each dot column a
fixed slice of time), a new frame mostly adds a point to the newest column and drops the
oldest point: the runs in between are the same points, moved left by the columns the window
moved. :class:`LineRaster` keeps the last frame's bits, moves them, and draws again only the
runs at either end that changed; the five charts drew ~1,100 rows of dots a frame before,
for a picture that changed in one or two columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# Bit of the dot at (sub-column, sub-row) in a braille cell (U+2800 + bits).
DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))

_LEFT = 0x47
"""The dots of a cell's left dot column."""
_RIGHT = 0xB8
"""... and of its right one."""

Run = tuple[int, int, int, bool]
"""(dot column, first index, end index, joined to the run before)."""

# A cell's right dot column moved to its left one, and its left one to the right one (bits of
# the other column dropped): a picture moved by one dot column, a cell at a time.
_RIGHT_TO_LEFT = bytes(sum(DOTS[0][k] for k in range(4) if b & DOTS[1][k]) for b in range(256))
_LEFT_TO_RIGHT = bytes(sum(DOTS[1][k] for k in range(4) if b & DOTS[0][k]) for b in range(256))


def raster(
    runs: Sequence[Run],
    values: Sequence[float],
    to_row: Callable[[float], int],
    width: int,
    height: int,
) -> bytearray:
    """Braille bits per cell (``width`` x ``height`` cells) of one line through ``values``,
    grouped into dot-column ``runs``. Each column shows its points' whole range (spikes stay
    visible); a run is joined to the one before it only where ``joined`` says so (no line is
    drawn over missing samples)."""
    bits = bytearray(width * height)
    draw_runs(bits, width, runs, 0, len(runs), values, to_row)
    return bits


def draw_runs(
    bits: bytearray,
    width: int,
    runs: Sequence[Run],
    first: int,
    end: int,
    values: Sequence[float],
    to_row: Callable[[float], int],
) -> None:
    """Draw ``runs[first:end]`` into ``bits``, the first joined to the run before it (whose
    last point is read again) where it says so."""
    prev_c = prev_r = -1
    if first > 0:
        prev_c = runs[first - 1][0]
        prev_r = to_row(values[runs[first - 1][2] - 1])
    for i in range(first, end):
        c, lo_i, hi_i, joined = runs[i]
        if hi_i - lo_i == 1:  # one point in the column (most, at 1 s): one row
            r_first = r_last = r_top = r_bottom = to_row(values[lo_i])
        else:
            seg = values[lo_i:hi_i]
            r_first, r_last = to_row(seg[0]), to_row(seg[-1])
            r_top, r_bottom = to_row(max(seg)), to_row(min(seg))
        if joined and prev_c >= 0:
            # Every dot column between the two gets a vertical run to the line's height
            # there, so steep changes stay continuous.
            dc = c - prev_c
            last_r = prev_r
            for k in range(1, dc):
                rr = prev_r + (r_first - prev_r) * k // dc
                vline(bits, width, prev_c + k, last_r, rr)
                last_r = rr
            r_top = min(r_top, last_r)
            r_bottom = max(r_bottom, last_r)
        vline(bits, width, c, r_top, r_bottom)
        prev_c, prev_r = c, r_last


def vline(bits: bytearray, width: int, col: int, r0: int, r1: int) -> None:
    """The dots of dot column ``col`` from dot row ``r0`` to ``r1`` (either order) set."""
    lo, hi = (r0, r1) if r0 <= r1 else (r1, r0)
    cell = col >> 1
    dots = DOTS[col & 1]
    for y in range(lo, hi + 1):
        bits[(y >> 2) * width + cell] |= dots[y & 3]


def shifted(bits: bytearray, width: int, height: int, by: int) -> bytearray:
    """``bits`` moved left by ``by`` dot columns (0 <= by), blank where nothing came in."""
    cells, half = divmod(by, 2)
    size = width * height
    if cells >= width:
        return bytearray(size)
    moved = bytearray(bits[cells:]) + bytearray(cells)
    if half:
        left = moved.translate(_RIGHT_TO_LEFT)
        right = (moved[1:] + b"\0").translate(_LEFT_TO_RIGHT)
        joined = int.from_bytes(left, "little") | int.from_bytes(right, "little")
        moved = bytearray(joined.to_bytes(size, "little"))
    # What moved in from the next row's start at each row's end goes: whole cells, and the
    # right half of the cell before them (the dot column that came in).
    if cells:
        zeros = bytes(cells)
        for row in range(1, height + 1):
            moved[row * width - cells : row * width] = zeros
    if half:
        for row in range(1, height + 1):
            moved[row * width - cells - 1] &= _LEFT
    return moved


def clear_columns(bits: bytearray, width: int, height: int, lo: int, hi: int) -> None:
    """Dot columns ``lo`` to ``hi`` (inclusive) blanked."""
    if hi < lo:
        return
    first, last = lo >> 1, hi >> 1
    keep_first = _LEFT if lo & 1 else 0  # clearing from a right half keeps the left dots
    keep_last = 0 if hi & 1 else _RIGHT  # ... up to a left half keeps the right dots
    for row in range(height):
        base = row * width
        if first == last:
            bits[base + first] &= keep_first | keep_last
            continue
        bits[base + first] &= keep_first
        if last > first + 1:
            bits[base + first + 1 : base + last] = bytes(last - first - 1)
        bits[base + last] &= keep_last


def run_match(old: Sequence[Run], new: Sequence[Run], by: int) -> tuple[int, int, int] | None:
    """The longest stretch ``new[i0:i1]`` of runs that are ``old``'s moved left by ``by`` dot
    columns, over the same points ``d`` places further in ``old``'s values: (i0, i1, d), or
    None."""
    if not old or not new:
        return None
    old_by_col = {run[0]: run for run in old}
    best: tuple[int, int, int] | None = None
    i, n = 0, len(new)
    while i < n:
        c, lo, hi, joined = new[i]
        was = old_by_col.get(c + by)
        if was is None or was[3] != joined or was[2] - was[1] != hi - lo:
            i += 1
            continue
        d = was[1] - lo
        j = i + 1
        while j < n:
            c2, lo2, hi2, joined2 = new[j]
            was2 = old_by_col.get(c2 + by)
            if was2 is None or was2[1] != lo2 + d or was2[2] != hi2 + d or was2[3] != joined2:
                break
            j += 1
        if best is None or j - i > best[1] - best[0]:
            best = (i, j, d)
        i = j
    return best


_MATCHES: dict[tuple[int, int, int], tuple[object, object, tuple[int, int, int] | None]] = {}


def run_match_kept(old: Sequence[Run], new: Sequence[Run], by: int) -> tuple[int, int, int] | None:
    """:func:`run_match`, kept for the few last pairs: a frame's charts and lines share their
    runs."""
    key = (id(old), id(new), by)
    hit = _MATCHES.get(key)
    if hit is not None and hit[0] is old and hit[1] is new:
        return hit[2]
    match = run_match(old, new, by)
    if len(_MATCHES) >= 4:
        _MATCHES.clear()
    _MATCHES[key] = (old, new, match)
    return match


class LineRaster:
    """One line's bits, kept from frame to frame; see the module's docstring."""

    __slots__ = ("_bits", "_key", "_runs", "_values")

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._runs: Sequence[Run] = ()
        self._values: Sequence[float] = ()
        self._bits = bytearray()

    def draw(
        self,
        key: tuple[object, ...],
        moved: int | None,
        runs: Sequence[Run],
        values: Sequence[float],
        to_row: Callable[[float], int],
        width: int,
        height: int,
    ) -> bytearray:
        """The bits of ``values`` over ``runs``. ``key`` is what else the picture depends
        on (the plot's size and y scale); ``moved``, the dot columns the window moved since
        the last draw (None: not known, drawn whole)."""
        bits = None
        if key == self._key and moved is not None:
            match = run_match_kept(self._runs, runs, moved)
            if match is not None:
                bits = self._moved_on(moved, match, runs, values, to_row, width, height)
        if bits is None:
            bits = raster(runs, values, to_row, width, height)
        self._key, self._runs, self._values, self._bits = key, runs, values, bits
        return bits

    def _moved_on(
        self,
        moved: int,
        match: tuple[int, int, int],
        runs: Sequence[Run],
        values: Sequence[float],
        to_row: Callable[[float], int],
        width: int,
        height: int,
    ) -> bytearray | None:
        i0, i1, d = match
        lo, hi = runs[i0][1], runs[i1 - 1][2]
        if values[lo:hi] != self._values[lo + d : hi + d]:
            return None
        bits = shifted(self._bits, width, height, moved)
        # Runs i0+1 .. i1-1 are drawn as they were (each joined to an unchanged run); run i0
        # may be joined to a changed one, and the runs before and after are drawn again.
        dots_w = width * 2
        clear_columns(bits, width, height, 0, runs[i0][0])
        clear_columns(bits, width, height, runs[i1 - 1][0] + 1, dots_w - 1)
        draw_runs(bits, width, runs, 0, i0 + 1, values, to_row)
        draw_runs(bits, width, runs, i1, len(runs), values, to_row)
        return bits
