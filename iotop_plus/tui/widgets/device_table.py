"""The device table: iostat -x columns as a virtualised Line-API widget.

A DataTable re-renders every cell it is given; at 200 devices x 22 columns once a second
that costs ~18% of a core. This widget keeps plain data, renders only the rows on screen,
caches one Strip per row keyed by what the row shows, and repaints only the lines whose
text or colour changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip

from iotop_plus.config import Config
from iotop_plus.sampling.disks.rates import DeviceRates, FigureColumns
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory, shown_by_default
from iotop_plus.text import printable
from iotop_plus.tui.engine.refresh_batch import BatchedRepaint
from iotop_plus.tui.messages import DeviceSelected
from iotop_plus.tui.shown import Shown
from iotop_plus.tui.widgets.cursor_list import CursorList, cursor_bindings
from iotop_plus.tui.widgets.device_rows import (
    SEVERITY_MARK,
    Latency,
    TableRow,
    device_label,
    figure_sort_keys,
    hidden_note,
    named_hidden,
    natural_key,
    severity_marks,
    throttled_devices,
)
from iotop_plus.tui.widgets.line_regions import line_regions
from iotop_plus.tui.widgets.table_columns import (
    COLUMN_SETS,
    DEVICE_TITLE,
    DIM,
    EXTENDED_PRIORITY,
    LATENCY_KEYS,
    PLAIN,
    SCALE_2_BELOW,
    Column,
    cell,
    column_scale,
    header_strips,
    latency_cell,
    row_strip,
)

HEADER_LINES = 2
"""Column names, then units."""

SELECT_HELP = "select a device (charts and panel follow)"
"""The help screen's line for the cursor keys."""

MAX_DEVICE_WIDTH = 16
"""Longer labels are cut with an ellipsis, so the figures keep their room at 80 columns."""

RowContent = tuple[bool, tuple[tuple[str, Style], ...]]
"""What a row shows: (under the cursor, (text, style) per cell); also its cache key."""

NO_MATCH = Style(color="yellow", italic=True)
"""The line an empty filtered table shows."""
BUSY = Style(color="#ffd000", bold=True)
"""The line naming a busy hidden device (gold: ANSI yellow reads as red in 16 colours)."""


class DeviceTable(BatchedRepaint, CursorList[TableRow]):
    """Live iostat -x table of the block devices; the cursor selects a device. The column
    set, the sort and the filter are reactives: setting one re-lays the table out."""

    HEADER_LINES = HEADER_LINES
    BINDINGS = cursor_bindings(SELECT_HELP)

    class HiddenChanged(Message):
        """What it hides may differ (a re-layout, a frame): the header names a busy one."""

    COMPONENT_CLASSES = {"device-table--header", "device-table--cursor", "device-table--sorted"}

    DEFAULT_CSS = """
    DeviceTable { height: 1fr; }
    DeviceTable > .device-table--cursor { background: $block-cursor-background;
                                          color: $block-cursor-foreground; }
    """

    column_set: reactive[str] = reactive("basic", init=False, repaint=False)
    """Name of the shown column set."""
    show_all: reactive[bool] = reactive(False, init=False, repaint=False)
    """Show partitions, loop/ram/zram and never-used devices too."""
    name_filter: reactive[str] = reactive("", init=False, repaint=False)
    """Case-insensitive substring the device name (or dm name) must contain."""
    sort_column: reactive[int] = reactive(0, init=False, repaint=False)
    """0 sorts by device name; n sorts by the n-th shown value column."""
    sort_reverse: reactive[bool] = reactive(False, init=False, repaint=False)
    """Flip the sort order."""

    def __init__(
        self, config: Config | None = None, *, only: Sequence[str] = (), id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.config = config or Config()
        self.set_reactive(DeviceTable.column_set, self.config.column_set)
        self.set_reactive(DeviceTable.show_all, self.config.show_all)
        self._shown_inventory: Inventory | None = None  # the devices of the frame shown last
        self._hidden_told: tuple[object, ...] = ()  # the hidden devices last told
        self.only = frozenset(only)
        """Devices named on the command line: shown even if hidden by default, and no others
        (until ``a`` shows all)."""
        self.chosen: str | None = only[0] if only else None
        """The device the user chose (the cursor keys, a click, Enter in the filter), or the
        starting device: the first named on the command line, else the busiest shown one when
        the first rates arrive. The cursor follows this *name* across re-filtering and
        re-sorting; while the filter (or ``a``) hides it, the first row is under the cursor,
        and it comes back when it is shown again."""
        self.selected: str | None = None
        """Kernel name under the cursor: what R, S, d and X act on (None: no row, no device)."""
        self.hidden = 0
        """Devices the default selection hides now (partitions, loop/ram/zram, never used)."""
        self.busy_hidden: str | None = None
        """A hidden device a cgroup is throttled on, else one doing at least BUSY_IOPS and as
        much as the busiest shown one."""
        self.hidden_why = "busy"
        """Why :attr:`busy_hidden` is named: ``throttled`` or ``busy``."""
        self._throttled: frozenset[str] = frozenset()
        """Devices some cgroup is throttled on (at >= 90 % of a limit) in this frame."""
        self._hidden_names: list[str] = []
        self._rates_seen = False
        """A frame with rates has arrived (the starting device is picked from the first)."""
        self._rates: Mapping[str, DeviceRates | None] = {}
        self._latency: Latency = None
        self.marks: dict[str, str] = {}
        """Devices marked for their health (I/O errors, failing, worn), with why."""
        self._inventory = Inventory({})
        self._counters_names: list[str] = []
        self._scales: dict[str, int] = {}
        """Each value column's number format for this frame (see ``column_scale``)."""
        self._ever_used: frozenset[str] = frozenset()
        self._nr_requests: Mapping[str, int] = {}
        self._columns: tuple[Column, ...] = ()
        self._device_width = 10
        self._cache: dict[str, tuple[tuple[RowContent, int, TableRow], Strip]] = {}
        self._checked: dict[str, bool] = {}
        """Rows whose cached strip :meth:`_refresh_changed_lines` found current this frame,
        with whether they were under the cursor: painted from the cache without building their
        content again. Forgotten with new data or a whole repaint (or at another width)."""
        self._fitted_width = -1  # the width the columns were last fitted to
        self._header_strips: tuple[Strip, ...] | None = None
        self._row_order_dirty = True

    # ---- data in -------------------------------------------------------------------------

    def update_devices(
        self,
        rates: Mapping[str, DeviceRates | None],
        inventory: Inventory,
        ever_used: frozenset[str],
        nr_requests: Mapping[str, int],
        devices_changed: bool,
    ) -> None:
        """Show a new tick; repaint only the visible lines whose content changed."""
        self._checked.clear()
        self._rates = rates
        self._nr_requests = nr_requests
        self._scales = {}  # refitted below, once the rows are known
        if devices_changed or inventory is not self._inventory or ever_used != self._ever_used:
            self._inventory = inventory
            self._counters_names = list(rates)
            self._ever_used = ever_used
            self._row_order_dirty = True
        first_rates = not self._rates_seen and any(r is not None for r in rates.values())
        self._rates_seen |= first_rates
        if self._row_order_dirty or self.sort_column != 0 or first_rates:
            self._rebuild_rows()
            if first_rates and self.chosen is None:
                self._choose_busiest()
            self._find_busy_hidden()
            self.refresh()
            return
        self._find_busy_hidden()
        self._refresh_changed_lines()

    def _iops(self, name: str) -> float:
        return r.r_s + r.w_s if (r := self._rates.get(name)) is not None else -1.0

    def _choose_busiest(self) -> None:
        """The starting device, unless one was named or the user moved the cursor: the shown
        device with the most r/s + w/s in the first frame with rates (ties by name)."""
        if self.rows:
            busiest = min(self.rows, key=lambda r: (-self._iops(r.name), natural_key(r.name)))
            self.chosen = busiest.name
            self._place_cursor()

    def _find_busy_hidden(self) -> None:
        """Name the hidden device :func:`named_hidden` picks, and why."""
        # A partition's I/O is its disk's too: hidden, it hides nothing.
        hidden = [(n, self._inventory.get(n)) for n in self._hidden_names]
        candidates = [n for n, dev in hidden if not getattr(dev, "is_partition", False)]
        shown = max((self._iops(r.name) for r in self.rows), default=-1.0)
        busy, why = named_hidden(candidates, self._throttled, self._iops, shown)
        if (busy, why) != (self.busy_hidden, self.hidden_why):
            self.busy_hidden, self.hidden_why = busy, why
            # Repaint the line under the rows that names them, not the whole table.
            line = HEADER_LINES + len(self.rows) - self.scroll_offset.y
            if HEADER_LINES <= line < self.size.height:
                self.refresh(Region(0, line, self.size.width, 1))

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: its figures, latency and health marks (a scrub can
        skip the frame where the devices changed); says when what it hides changed."""
        frame = shown.frame
        if frame is None:
            return
        before, self._shown_inventory = self._shown_inventory, frame.inventory
        changed = frame.inventory_changed or (before is not None and frame.inventory is not before)
        self._latency = frame.latency  # (update_devices forgets the rows' checks)
        marks = severity_marks(frame)
        self._row_order_dirty |= marks.keys() != self.marks.keys()  # the Device column widens
        self.marks = marks
        self._throttled = throttled_devices(frame)
        self.update_devices(
            frame.rates, frame.inventory, frame.ever_used, frame.nr_requests, changed
        )
        if (hidden := (self.hidden, self.busy_hidden, self.hidden_why)) != self._hidden_told:
            self._hidden_told = hidden
            self.post_message(self.HiddenChanged())

    def visible_names(self) -> list[str]:
        """Kernel names of all rows (in order), scrolled out of view or not."""
        return [row.name for row in self.rows]

    @property
    def columns(self) -> tuple[Column, ...]:
        """The value columns that fit the current width, in display order."""
        return self._columns

    @property
    def sort_title(self) -> str:
        """Title of the sort column."""
        if self.sort_column == 0 or self.sort_column > len(self._columns):
            return DEVICE_TITLE
        return self._columns[self.sort_column - 1].title

    # ---- settings from the screen ---------------------------------------------------------

    def set_filter(self, text: str) -> None:
        """Show only devices whose name contains ``text``."""
        self.name_filter = text.strip()

    def toggle_all(self) -> None:
        """Switch between iostat's default selection and every device."""
        self.show_all = not self.show_all

    def cycle_columns(self) -> str:
        """Next column set, keeping the sort figure where the new set shows it; returns its name.

        The selected device stays selected (rows are placed by name, not by position).
        """
        names = list(COLUMN_SETS)
        key = (
            self._columns[self.sort_column - 1].key
            if 0 < self.sort_column <= len(self._columns)
            else None
        )
        self.set_reactive(DeviceTable.sort_column, 0)
        self.column_set = names[(names.index(self.column_set) + 1) % len(names)]
        keys = [c.key for c in self._columns]
        if key in keys:
            self.sort_column = keys.index(key) + 1  # the same figure, in its new place
        return self.column_set

    def move_sort(self, step: int) -> str:
        """Sort by the column left (-1) or right (+1) of the current one; returns its title."""
        self.sort_column = (self.sort_column + step) % (len(self._columns) + 1)
        return self.sort_title

    def reverse_sort(self) -> None:
        """Flip the sort order."""
        self.sort_reverse = not self.sort_reverse

    def watch_column_set(self) -> None:
        self._relayout()

    def watch_show_all(self) -> None:
        self._relayout()

    def watch_name_filter(self) -> None:
        self._relayout()

    def watch_sort_column(self) -> None:
        self._relayout()

    def watch_sort_reverse(self) -> None:
        self._relayout()

    def _relayout(self) -> None:
        self._row_order_dirty = True
        self._header_strips = None
        self._cache.clear()
        self._checked.clear()
        self._rebuild_rows()
        self._find_busy_hidden()
        self.refresh()
        self.post_message(self.HiddenChanged())

    # ---- building rows -------------------------------------------------------------------

    def _wanted(self, name: str, dev: BlockDevice | None) -> bool:
        if self.only and not self.show_all and name not in self.only:
            return False
        if self.name_filter:
            needle = self.name_filter.lower()
            dm_name = dev.dm_name.lower() if dev is not None and dev.dm_name else ""
            return needle in name.lower() or needle in dm_name
        return shown_by_default(
            name,
            dev,  # None: not described yet (first frame of a big host): judged by name
            name in self._ever_used,
            show_all=self.show_all or bool(self.only),
            hide_virtual=True,
        )

    def _rebuild_rows(self) -> None:
        inv = self._inventory
        names = [n for n in self._counters_names if self._wanted(n, inv.get(n))]
        if self.name_filter or self.show_all:
            self._hidden_names = []
        else:
            wanted = set(names)
            self._hidden_names = [n for n in self._counters_names if n not in wanted]
        hidden = len(self._hidden_names)
        if hidden != self.hidden:
            self.hidden = hidden
            self._header_strips = None
            self.refresh()
        shown = set(names)
        top: list[str] = []
        children: dict[str, list[str]] = {}
        for name in names:
            dev = inv.get(name)
            parent = dev.parent if dev is not None else None
            if parent is not None and parent in shown:
                children.setdefault(parent, []).append(name)
            else:
                top.append(name)
        top.sort(key=self._sort_keys(top), reverse=self._reverse_effective())
        rows: list[TableRow] = []
        for name in top:
            rows.append(self._make_row(name, 0))
            for child in sorted(children.get(name, ()), key=natural_key):
                rows.append(self._make_row(child, 1))
        self._scales = {}
        self.rows = rows
        self._row_order_dirty = False
        width = max((len(r.label) + (r.name in self.marks) for r in rows), default=8)
        device_width = min(max(width, len(DEVICE_TITLE)), MAX_DEVICE_WIDTH) + 1
        if device_width != self._device_width:
            self._device_width = device_width
            self._header_strips = None
            self._cache.clear()
            self._checked.clear()
        self._fit_columns()
        self.fit_virtual_size()
        self._place_cursor()

    def _reverse_effective(self) -> bool:
        # Names read best A→Z; figures read best busiest first.
        return self.sort_reverse if self.sort_column == 0 else not self.sort_reverse

    def _sort_keys(self, names: list[str]) -> Callable[[str], tuple[object, ...]]:
        if self.sort_column == 0 or self.sort_column > len(self._columns):
            return natural_key
        key = self._columns[self.sort_column - 1].key
        return figure_sort_keys(names, self._rates, self._latency, key)

    def _make_row(self, name: str, depth: int) -> TableRow:
        dev = self._inventory.get(name)
        # The device class, not the kernel's rotational flag (1 on every virtio disk).
        rotational = dev.seeks if dev is not None else None
        queue_owner = dev.parent if dev is not None and dev.parent else name
        return TableRow(
            name, device_label(dev, name, depth), rotational, self._nr_requests.get(queue_owner)
        )

    def _fit_columns(self) -> None:
        wanted = COLUMN_SETS[self.column_set]
        room = max(self.size.width, 1) - self._device_width
        keep: set[str] = set()
        if self.column_set == "extended":
            order = sorted(wanted, key=lambda c: EXTENDED_PRIORITY.index(c.key))
        else:
            order = sorted(wanted, key=lambda c: c.priority)
        for col in order:
            if col.width <= room:
                keep.add(col.key)
                room -= col.width
        columns = tuple(c for c in wanted if c.key in keep)
        if columns != self._columns:
            self._columns = columns
            self._cache.clear()
            self._checked.clear()
            self._header_strips = None
            # Clamped quietly: the caller is already laying the table out.
            self.set_reactive(DeviceTable.sort_column, min(self.sort_column, len(columns)))

    def _place_cursor(self) -> None:
        """Put the cursor on the chosen device by name; while it is not shown, on the first
        row (the first match of a filter); with no rows, nowhere: nothing is selected."""
        names = [r.name for r in self.rows]
        old = self.cursor
        if self.chosen in names:
            self.cursor = names.index(self.chosen)
        else:
            self.cursor = 0 if names else -1
        if self.cursor != old and self.cursor >= 0:
            self.scroll_cursor_into_view()
        self._select(names[self.cursor] if self.cursor >= 0 else None)

    def _select(self, name: str | None) -> None:
        if name != self.selected:
            self.selected = name
            self.post_message(DeviceSelected(name))

    # ---- rendering -----------------------------------------------------------------------

    def on_resize(self) -> None:
        self._refit()
        self.fit_virtual_size()

    def _refit(self) -> None:
        self._fitted_width = self.size.width
        self._header_strips = None
        self._fit_columns()

    def render_lines(self, crop: Region) -> list[Strip]:
        # Textual paints a new screen before its first Resize: rows given before the layout
        # (the main screen's early frames) were fitted at width 0, without figures.
        if self.size.width != self._fitted_width:
            self._refit()
        return super().render_lines(crop)

    def _fitted_scales(self) -> dict[str, int]:
        """Each figure column's one number format, fitted to its largest figure among the
        rows: every column at once, the rows' rates and the counters' deltas once."""
        keys = () if self._scales else [c.key for c in self._columns if not c.figure.integer]
        if keys := [k for k in keys if k not in LATENCY_KEYS]:
            figures = FigureColumns([r for row in self.rows if (r := self._rates.get(row.name))])
            for key in keys:
                self._scales[key] = column_scale(figures.top(key, enough=SCALE_2_BELOW))
        return self._scales

    def _row_content(self, row: TableRow, selected: bool) -> RowContent:
        """What a row shows: (text, style) per cell. Also the cache key."""
        rates = self._rates.get(row.name)
        mark = SEVERITY_MARK if row.name in self.marks else ""
        cells: list[tuple[str, Style]] = [(mark + row.label, PLAIN)]
        scales = self._fitted_scales() if rates is not None else {}
        rotational, nr_requests, config = row.rotational, row.nr_requests, self.config
        for col in self._columns:
            if (key := col.key) in LATENCY_KEYS:
                cells.append(latency_cell(key, self._latency, row.name))
            elif rates is None:
                cells.append(("-", DIM))
            else:
                value = getattr(rates, key)
                cells.append(cell(col, value, rotational, nr_requests, config, scales.get(key)))
        return (selected, tuple(cells))

    def _render_row(self, content: RowContent, width: int) -> Strip:
        selected, cells = content
        strip = row_strip(cells, self._columns, self._device_width, width)
        if not selected:
            return strip
        return strip.apply_style(self.component_style("device-table--cursor"))

    def _header(self, width: int) -> tuple[Strip, ...]:
        if self._header_strips is None:
            self._header_strips = header_strips(
                self._columns,
                self._device_width,
                width,
                (self.sort_column, "▲" if not self._reverse_effective() else "▼"),
                self.hidden,
                (
                    self.get_component_rich_style("device-table--header"),
                    self.get_component_rich_style("device-table--sorted"),
                ),
            )
        return self._header_strips

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y < HEADER_LINES:
            return self._header(width)[y]
        index = y - HEADER_LINES + self.scroll_offset.y
        if index >= len(self.rows):
            if index == 0 and self.name_filter:
                # An empty table must not look like a host with no disks.
                text = f" no device matches {printable(self.name_filter)!r} (Esc clears)"
                return Strip([Segment(text[:width].ljust(width), NO_MATCH)], width)
            if index == len(self.rows) and self.hidden:
                text = " " + hidden_note(self.hidden, self.busy_hidden, width - 1, self.hidden_why)
                style = BUSY if self.busy_hidden else DIM
                return Strip([Segment(text[:width].ljust(width), style)], width)
            return Strip.blank(width)
        return self._strip_for(index, width)

    def refresh(self, *regions: Region, **kwargs: bool) -> DeviceTable:
        """As Textual's; a repaint of the whole table builds every row's content again."""
        if not regions:
            self._checked.clear()
        return super().refresh(*regions, **kwargs)

    def _strip_for(self, index: int, width: int) -> Strip:
        row = self.rows[index]
        selected = index == self.cursor
        cached = self._cache.get(row.name)
        if cached is not None and self._checked.get(row.name) is selected:
            key = cached[0]
            if key[1] == width and key[2] == row:
                return cached[1]
        content = self._row_content(row, selected)
        key = (content, width, row)
        if cached is not None and cached[0] == key:
            return cached[1]
        strip = self._render_row(content, width)
        self._cache[row.name] = (key, strip)
        return strip

    def _refresh_changed_lines(self) -> None:
        """Repaint only the visible rows whose text or colour changed since last painted."""
        width = self.size.width
        first = self.scroll_offset.y
        changed: list[int] = []
        for line in range(max(self.size.height - HEADER_LINES, 0)):
            index = first + line
            if index >= len(self.rows):
                break
            row = self.rows[index]
            cached = self._cache.get(row.name)
            selected = index == self.cursor
            content = self._row_content(row, selected)
            key = (content, width, row)
            if cached is None or cached[0] != key:
                # Drawn now, once: the paint takes it from the cache.
                self._cache[row.name] = (key, self._render_row(content, width))
                changed.append(line + HEADER_LINES)
            self._checked[row.name] = selected
        if changed:
            self.refresh(*line_regions(changed, width))  # adjacent rows: one region

    # ---- cursor --------------------------------------------------------------------------

    def cursor_moved(self, old: int) -> None:
        super().cursor_moved(old)
        self.chosen = self.rows[self.cursor].name  # the user's choice, followed by name
        self._select(self.chosen)

    def select_name(self, name: str) -> bool:
        """Move the cursor to the device ``name``; False when it is not shown."""
        i = next((i for i, row in enumerate(self.rows) if row.name == name), None)
        if i is not None:
            self.move_cursor(i)
        return i is not None

    def pick(self, text: str) -> str | None:
        """Enter in the filter: apply ``text`` now, then select the device named exactly,
        else the first match in the current sort order; returns it (None: nothing matches,
        nothing is selected, and the earlier choice comes back when the filter is cleared)."""
        self.set_filter(text)
        needle = self.name_filter.lower()
        if not needle:
            return self.selected
        for i, row in enumerate(self.rows):
            dev = self._inventory.get(row.name)
            dm_name = dev.dm_name.lower() if dev is not None and dev.dm_name else ""
            if needle in (row.name.lower(), dm_name):
                self.move_cursor(i)
                return self.selected
        if self.rows:
            self.move_cursor(0)
        else:
            self.cursor = -1
            self._select(None)
        return self.selected

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.refresh()

    def on_click(self, event: object) -> None:
        y = getattr(event, "y", None)
        if isinstance(y, int) and y >= HEADER_LINES:
            self.move_cursor(self.scroll_offset.y + y - HEADER_LINES)
