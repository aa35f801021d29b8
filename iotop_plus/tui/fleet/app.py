"""The fleet view: hosts x devices ranked by what matters now, and one device's last hour.

Queries run on worker threads (:mod:`iotop_plus.export.fleet`); the UI changes only in the
handlers of the messages they post. Untrusted text (instance and device labels, errors) is
never parsed as markup.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable
from datetime import datetime

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.message import Message
from textual.widgets import DataTable, Footer, Input, Static

from iotop_plus.export.fleet import (
    HISTORY_QUERIES,
    FleetRound,
    FleetRow,
    PrometheusClient,
    PrometheusError,
    device_history,
    fleet_round,
)
from iotop_plus.text import printable, two_decimals
from iotop_plus.tui.widgets.braille_chart import BrailleChart
from iotop_plus.tui.widgets.chart_scale import Line
from iotop_plus.tui.widgets.charts import READ_STYLE, WRITE_STYLE, joins

HISTORY_SECONDS = 3600.0
"""The charts' window: the selected device's last hour."""
CHART_KINDS = {"iops": "iops", "await_ms": "ms", "util_pct": "pct", "aqu_sz": "req"}
"""Chart key -> the axis kind of :class:`BrailleChart` (MB/s: plain numbers)."""

#: (key, title) of the table's columns; the first two are text, the rest numbers.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("instance", "host"),
    ("device", "device"),
    ("rank", "rank"),
    ("await_ms", "await ms"),
    ("p99_ms", "p99 ms"),
    ("util_pct", "%util"),
    ("psi_full_pct", "PSI io full %"),
    ("aqu_sz", "aqu-sz"),
    ("iops", "IOPS"),
    ("bytes_s", "MB/s"),
    ("diagnosis", "why"),
)


def row_cells(row: FleetRow) -> tuple[Text, ...]:
    """The table cells of one row: plain text, never markup (labels come from the server)."""
    cells = (
        printable(row.instance),
        printable(row.device),
        str(row.rank) if row.rank else "-",
        two_decimals(row.await_ms),
        two_decimals(row.p99_ms),
        two_decimals(row.util_pct),
        two_decimals(row.psi_full_pct),
        two_decimals(row.aqu_sz),
        two_decimals(row.iops),
        two_decimals(row.bytes_s, 1e6),
        printable(row.diagnosis) or "-",
    )
    return tuple(Text(cell) for cell in cells)


def row_key(instance: str, device: str) -> str:
    """The table's key of a row: any two label values, told apart and read back exactly."""
    return json.dumps([instance, device])


class RoundDone(Message):
    """A query round finished (or failed)."""

    def __init__(self, result: FleetRound) -> None:
        super().__init__()
        self.result = result


class HistoryDone(Message):
    """A device's range queries finished."""

    def __init__(self, key: tuple[str, str], history: dict | None, error: str | None) -> None:
        super().__init__()
        self.key = key
        self.history = history
        self.error = error


class FleetApp(App[None]):
    """Hosts x devices from Prometheus, refreshed every ``refresh_s``."""

    TITLE = "iotop-plus fleet"
    AUTO_FOCUS = "#fleet-table"  # not the (hidden) filter box
    CSS = """
    #fleet-header { height: 2; background: $panel; }
    #fleet-filter { display: none; height: 3; }
    #fleet-filter.shown { display: block; }
    #fleet-table { height: 1fr; }
    #fleet-charts { grid-size: 3 2; height: 1fr; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        # Priority, as on the main screen; check_action lets "/" through to the filter box.
        Binding("slash", "filter", "Filter", priority=True),
        Binding("less_than_sign", "sort(-1)", "Sort <"),
        Binding("greater_than_sign", "sort(1)", "Sort >"),
        Binding("r", "reverse", "Reverse"),
        Binding("u", "refresh", "Query now"),
        Binding("escape", "close_filter", "Close filter", show=False),
    ]

    def __init__(
        self, client: PrometheusClient, *, refresh_s: float = 15.0, window: str = "1m"
    ) -> None:
        super().__init__()
        self.client = client
        self.refresh_s = refresh_s
        self.window = window
        self.result: FleetRound | None = None
        """The last query round."""
        self.sort_column = 2  # rank: what matters now, 1 (the worst) first
        self.sort_reverse = False
        self.filter_text = ""
        self.selected: tuple[str, str] | None = None
        """(instance, device) whose history is charted."""
        self.history_error: str | None = None
        self.rounds = 0
        """Rounds received (tests wait on it)."""
        self.histories = 0
        """Histories received (tests wait on it)."""

    def compose(self) -> ComposeResult:
        yield Static("", id="fleet-header", markup=False)
        yield Input(placeholder="filter host or device (Enter to apply)", id="fleet-filter")
        table: DataTable[str] = DataTable(id="fleet-table", cursor_type="row", zebra_stripes=True)
        yield table
        with Grid(id="fleet-charts"):
            for key, (title, _) in HISTORY_QUERIES.items():
                yield BrailleChart(CHART_KINDS.get(key, ""), title, id=f"fleet-chart-{key}")
            yield Static("select a row for its last hour", id="fleet-caption", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#fleet-table", DataTable)
        for key, title in COLUMNS:
            table.add_column(title, key=key)
        self._show_header()
        self.action_refresh()
        self.set_interval(self.refresh_s, self.action_refresh)

    # --- queries (worker threads) -----------------------------------------------------------

    def action_refresh(self) -> None:
        """Run a query round now."""
        self._query_round()

    @work(thread=True, exclusive=True, group="round")
    def _query_round(self) -> None:
        self.post_message(RoundDone(fleet_round(self.client, self.window)))

    @work(thread=True, exclusive=True, group="history")
    def _query_history(self, instance: str, device: str) -> None:
        try:
            history = device_history(self.client, instance, device, window=self.window)
            self.post_message(HistoryDone((instance, device), history, None))
        except PrometheusError as exc:
            self.post_message(HistoryDone((instance, device), None, str(exc)))

    # --- handlers ---------------------------------------------------------------------------

    def on_round_done(self, message: RoundDone) -> None:
        self.result = message.result
        self.rounds += 1
        self._show_header()
        if message.result.rows or message.result.error is None:
            self._fill_table()

    def on_history_done(self, message: HistoryDone) -> None:
        if message.key != self.selected:
            return
        self.histories += 1
        self.history_error = message.error
        self._draw(message.key, message.history or {})
        self._show_header()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key is None:
            return
        instance, device = json.loads(key)
        if (instance, device) != self.selected:
            self.selected = (instance, device)
            self.query_one("#fleet-caption", Static).update(
                f"{printable(instance)} {printable(device)}: querying the last hour..."
            )
            self._query_history(instance, device)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.filter_text = event.value.strip()
        self._fill_table()
        self.action_close_filter()

    # --- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        """While the filter box has focus, "/" is text, not the filter action."""
        return not (action == "filter" and isinstance(self.focused, Input))

    def action_filter(self) -> None:
        """Show the filter input."""
        box = self.query_one("#fleet-filter", Input)
        box.add_class("shown")
        # At once (as the main screen does): the text typed right after "/" may be queued.
        self.set_focus(box)

    def action_close_filter(self) -> None:
        """Hide the filter input (the filter stays applied)."""
        self.query_one("#fleet-filter", Input).remove_class("shown")
        self.query_one("#fleet-table", DataTable).focus()

    def action_sort(self, step: int) -> None:
        """Sort by the previous or next column."""
        self.sort_column = (self.sort_column + step) % len(COLUMNS)
        self._fill_table()
        self._show_header()

    def action_reverse(self) -> None:
        """Reverse the sort order."""
        self.sort_reverse = not self.sort_reverse
        self._fill_table()

    # --- drawing ----------------------------------------------------------------------------

    def visible_rows(self) -> list[FleetRow]:
        """The rows shown: filtered, then sorted."""
        rows: Iterable[FleetRow] = self.result.rows if self.result is not None else ()
        if self.filter_text:
            needle = self.filter_text.lower()
            rows = [r for r in rows if needle in r.instance.lower() or needle in r.device.lower()]
        key = COLUMNS[self.sort_column][0]

        def sort_key(row: FleetRow) -> tuple:
            if key == "rank":
                return (row.rank,)
            value = getattr(row, key)
            if isinstance(value, str):
                return (1, value)
            return (0 if value is None else 1, value or 0.0)

        return sorted(rows, key=sort_key, reverse=self.sort_reverse)

    def _fill_table(self) -> None:
        table = self.query_one("#fleet-table", DataTable)
        cursor_key = self.selected
        rows = [(row_cells(row), row_key(row.instance, row.device)) for row in self.visible_rows()]
        # The columns get their widths here, from the cells, not from DataTable's own measure
        # when it is next idle: a paint before that measure cached the rows cut to the titles'
        # widths ("host-b:9891" as "host"), and they stayed so until the next round.
        table.clear(columns=True)
        for i, (key, title) in enumerate(COLUMNS):
            width = max([cell_len(title), *(cells[i].cell_len for cells, _ in rows)])
            table.add_column(title, key=key, width=width)
        for cells, key in rows:
            table.add_row(*cells, key=key)
        if cursor_key is not None:
            # The row may be gone or filtered out: then the cursor stays where it is.
            with contextlib.suppress(Exception):
                table.move_cursor(row=table.get_row_index(row_key(*cursor_key)))

    def _show_header(self) -> None:
        r = self.result
        sort_title = COLUMNS[self.sort_column][1]
        order = "desc" if self.sort_reverse else "asc"
        line1 = f"Prometheus {self.client.url}  sort: {sort_title} {order}"
        if self.filter_text:
            line1 += f"  filter: {self.filter_text}"
        if r is None:
            line2 = "querying..."
        else:
            at = datetime.fromtimestamp(r.queried_at).strftime("%H:%M:%S")
            line2 = (
                f"last query {at} ({r.elapsed_s * 1000:.0f} ms): "
                f"{len(r.hosts)} hosts, {len(r.rows)} devices"
            )
            if r.error:
                line2 += f"  error: {r.error}"
        if self.history_error:
            line2 += f"  history: {self.history_error}"
        self.query_one("#fleet-header", Static).update(printable(line1) + "\n" + printable(line2))

    def _draw(self, key: tuple[str, str], history: dict) -> None:
        now = time.time()
        points = 0
        styles = (READ_STYLE, WRITE_STYLE)
        for chart in HISTORY_QUERIES:
            lines = []
            for i, (label, series) in enumerate(history.get(chart, [])):
                if not series:
                    continue
                times = [t - now for t, _ in series]
                points += len(series)
                lines.append(
                    Line(
                        printable(label),
                        styles[min(i, 1)],
                        [v for _, v in series],
                        times=times,
                        connect=joins(times),
                    )
                )
            plot = self.query_one(f"#fleet-chart-{chart}", BrailleChart)
            plot.plot((), (), lines, HISTORY_SECONDS)
        caption = f"{printable(key[0])} {printable(key[1])}: last hour, x axis minutes before now"
        if not points:
            caption += "\nno data yet for this device"
        self.query_one("#fleet-caption", Static).update(caption)
