"""The device table's columns and colours: which figures it shows, how wide, and when red.

Names, units and meanings come from :mod:`iotop_plus.sampling.disks.figures`; this module adds
what only the table needs: widths, which columns go first when the terminal is narrow, the
column sets ``c`` cycles through, and the thresholds that colour a cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from iotop_plus.config import Config
from iotop_plus.sampling.disks.figures import FIGURES, LATENCY_FIGURES, Figure, figure
from iotop_plus.text import table_figure as format_value

if TYPE_CHECKING:  # (the histograms' module loads with the first traced frame)
    from iotop_plus.sampling.latency.hist import LatencyFrame


@dataclass(frozen=True)
class Column:
    """One iostat -x column of the table."""

    figure: Figure
    """What it shows: names, unit and meaning."""
    priority: int
    """Lower numbers are kept first when the width is short (basic set)."""

    @property
    def key(self) -> str:
        """DeviceRates attribute shown."""
        return self.figure.key

    @property
    def title(self) -> str:
        """Header, as iostat prints it."""
        return self.figure.title

    @property
    def unit(self) -> str:
        """Unit shown under the header."""
        return self.figure.unit

    @property
    def width(self) -> int:
        """Characters, including one space of padding on the left."""
        return max(8, len(self.figure.title) + 1)


def _column(key: str, priority: int) -> Column:
    return Column(figure(key), priority)


_ALL: dict[str, Column] = {
    c.key: c
    for c in (
        _column("r_s", 0),
        _column("w_s", 1),
        _column("rkb_s", 6),
        _column("wkb_s", 7),
        _column("rrqm_s", 20),
        _column("wrqm_s", 21),
        _column("rrqm_pct", 22),
        _column("wrqm_pct", 23),
        _column("r_await", 2),
        _column("w_await", 3),
        _column("rareq_sz", 10),
        _column("wareq_sz", 11),
        _column("d_s", 30),
        _column("dkb_s", 31),
        _column("drqm_s", 34),
        _column("drqm_pct", 35),
        _column("d_await", 32),
        _column("dareq_sz", 33),
        _column("f_s", 36),
        _column("f_await", 37),
        _column("aqu_sz", 5),
        _column("util", 4),
        _column("in_flight", 8),
    )
}

COLUMN_SETS: dict[str, tuple[Column, ...]] = {
    "basic": tuple(
        _ALL[k] for k in ("r_s", "w_s", "rkb_s", "wkb_s", "r_await", "w_await", "aqu_sz", "util")
    ),
    # iostat -x order (the registry's), plus in-flight.
    "extended": tuple(_ALL[f.key] for f in FIGURES),
    # Read and write percentiles from the block tracer; showing this set starts it.
    "latency": (
        _ALL["r_s"],
        _ALL["w_s"],
        *(Column(f, p) for f, p in zip(LATENCY_FIGURES, (2, 3, 6, 8, 4, 5, 7, 9), strict=True)),
    ),
}
"""Column sets the ``c`` key cycles through."""

LATENCY_SET = "latency"
"""The column set that needs the latency tracer."""
LATENCY_KEYS = frozenset(f.key for f in LATENCY_FIGURES)
"""Columns whose values come from the frame's latency part, not DeviceRates."""

EXTENDED_PRIORITY: tuple[str, ...] = (
    "r_s",
    "w_s",
    "r_await",
    "w_await",
    "rrqm_s",
    "wrqm_s",
    "rrqm_pct",
    "wrqm_pct",
    "rareq_sz",
    "wareq_sz",
    "in_flight",
    "d_s",
    "dkb_s",
    "d_await",
    "f_s",
    "f_await",
    "aqu_sz",
    "util",
    "rkb_s",
    "wkb_s",
    "drqm_s",
    "drqm_pct",
    "dareq_sz",
)
"""What the extended set keeps first when narrowed: the awaits (latency is what an incident
is about), then the figures the basic set does not show."""

DEVICE_TITLE = "Device"
"""The first column's title."""

NOT_SATURATION_MARK = "~"
"""Appended to %util where 100% does not mean saturated (parallel devices)."""

# Explicit colours, not the ANSI names: Textual maps "yellow" through its terminal theme to an
# orange that a 16-colour terminal (TERM=screen, no COLORTERM, over SSH) shows as bright red,
# so "high" looked "bad". These stay yellow (93 / 220) and red (91 / 203) in 16 and 256 colours.
SEVERITY_WARN = "#ffd000"
"""The colour of a high figure (yellow in 16, 256 and true colour)."""
SEVERITY_BAD = "#ff3030"
"""The colour of a bad figure (red in 16, 256 and true colour)."""
WARN = Style(color=SEVERITY_WARN, bold=True)
BAD = Style(color=SEVERITY_BAD, bold=True)
DIM = Style(dim=True)
PLAIN = Style()

_AWAITS = frozenset({"r_await", "w_await", "d_await", "f_await"})
_QUEUES = frozenset({"aqu_sz", "in_flight"})


SCALE_2_BELOW = 9_999.995
"""Figures below this are written with 2 decimals (they round to at most 9999.99)."""


def column_scale(top: float) -> int:
    """How a column whose largest figure is ``top`` writes all its figures, in 7 characters:
    2 or 1 decimals, 0 (whole numbers), or -3 (thousands, ``k``).

    One format per column: "41600" under "3840.00" read as two different units.
    """
    if top < SCALE_2_BELOW:
        return 2
    if top < 99_999.95:
        return 1
    if top < 9_999_999.5:
        return 0
    return -3


def cell(
    column: Column,
    value: float,
    rotational: bool | None,
    nr_requests: int | None,
    config: Config,
    scale: int | None = None,
) -> tuple[str, Style]:
    """The text of one figure and its colour, from the thresholds in ``config``.

    Args:
        column: The column shown.
        value: The figure.
        rotational: Judged as a spinning disk (True: class hdd, or dm/md over hdd), as fast
            storage (False: SSD, NVMe, and virtual and loop devices, whose speed the host or
            the backing file decides, so a seek-time allowance would hide trouble) or unknown.
        nr_requests: The queue's capacity, for the aqu-sz and inflight warning.
        config: Where the thresholds are.
        scale: The column's format (:func:`column_scale`); None: the value's own.
    """
    text = str(value) if column.figure.integer else format_value(value, scale)
    key = column.key
    if key in _AWAITS:
        warn, bad = (
            (config.await_warn_ms_rotational, config.await_bad_ms_rotational)
            if rotational
            else (config.await_warn_ms_solid, config.await_bad_ms_solid)
        )
        return text, BAD if value >= bad else WARN if value >= warn else PLAIN
    if key in _QUEUES and nr_requests:
        return text, BAD if value >= config.queue_warn_fraction * nr_requests else PLAIN
    if key == "util":
        if rotational:
            return text, BAD if value >= config.util_bad_pct_rotational else PLAIN
        if rotational is False:
            return text + NOT_SATURATION_MARK, DIM
    return text, PLAIN


def latency_cell(key: str, latency: LatencyFrame | None, name: str) -> tuple[str, Style]:
    """A latency column's text for device ``name``: ms, ``…`` while the tracer starts, ``-``
    where nothing completed or the tracer cannot run."""
    if latency is None or not latency.has_figures:
        return ("…" if latency is not None and latency.starting else "-"), DIM
    dev = latency.devices.get(name)
    op, _, which = key.partition("_")
    hist = dev.op("read" if op == "r" else "write") if dev is not None else None
    if hist is None or not hist.count:
        return "-", DIM
    ns = float(hist.max_ns) if which == "max" else hist.percentile(_RANKS[which])
    if ns is None:
        return "-", DIM
    return format_value(ns / 1e6), PLAIN


_RANKS = {"p50": 50.0, "p99": 99.0, "p999": 99.9}


def row_strip(
    cells: tuple[tuple[str, Style], ...],
    columns: tuple[Column, ...],
    device_width: int,
    width: int,
) -> Strip:
    """One table row, ``width`` cells wide: the device label (cut with an ellipsis to fit
    ``device_width``), then each cell right-aligned in its column."""
    label = cells[0][0]
    room = device_width - 1
    if len(label) > room:
        label = label[: room - 1] + "…"
    label = label.ljust(device_width)
    segments = [Segment(label)]
    length = cell_len(label)
    for (text, style), col in zip(cells[1:], columns, strict=False):
        cell = str(text)
        pad = col.width - len(cell)
        if cell.endswith(NOT_SATURATION_MARK):
            cell = " " * pad + cell
        else:
            # Keep the digits aligned with rows that carry the "~" mark.
            cell = " " * (pad - 1) + cell + " "
        segments.append(Segment(cell, style))
        length += len(cell) if cell.isascii() else cell_len(cell)
    if length > width:
        return Strip(segments, length).crop_extend(0, width, None)
    if length < width:
        segments.append(Segment(" " * (width - length)))
    return Strip(segments, width)  # the length known: not measured again


def header_strips(
    columns: tuple[Column, ...],
    device_width: int,
    width: int,
    sort: tuple[int, str],
    hidden: int,
    styles: tuple[Style, Style],
) -> tuple[Strip, Strip]:
    """The table's two header lines: the titles (the sort column's with its ``sort`` arrow,
    in the sorted style of ``styles``), then the units under a count of ``hidden`` devices.

    Args:
        columns: The value columns shown.
        device_width: The Device column's width.
        width: The table's width.
        sort: (0 for the device name or the n-th value column, the arrow).
        hidden: Devices the default selection hides.
        styles: (the header's style, the sort column's).
    """
    column, arrow = sort
    style, sorted_style = styles
    names = [
        Segment(
            (DEVICE_TITLE + (arrow if column == 0 else "")).ljust(device_width),
            sorted_style if column == 0 else style,
        )
    ]
    room = device_width - 1
    count = ""
    if hidden:  # "4 hidden", or "4 hid." in a narrow column, never a cut word
        forms = (f"{hidden} hidden", f"{hidden} hid.", f"+{hidden}")
        count = next((f for f in forms if len(f) <= room), forms[-1][:room])
    units = [Segment(count.ljust(device_width), DIM)]
    for i, col in enumerate(columns, start=1):
        title = col.title + (arrow if column == i else "")
        names.append(
            Segment(title.rjust(col.width - 1) + " ", sorted_style if column == i else style)
        )
        units.append(Segment(col.unit.rjust(col.width - 1) + " ", DIM))
    return Strip(names).crop_extend(0, width, style), Strip(units).crop_extend(0, width, None)
