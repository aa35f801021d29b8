"""#22 item 12, the TUI's part: help, labels and the histogram must say what happens.

`c`'s help said "all iostat -x columns" while extended drops aqu-sz and %util at most widths
and a third set exists; `p` and `P` had the same help text; wrapped help lines restarted at
column 0; the replay header said "not root: settings read-only" to root; the latency
histogram wrapped the busiest bucket's count onto its own line and its labels drifted.
"""

from __future__ import annotations

import re

from textual.geometry import Region
from textual.widget import Widget

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.latency.hist import (
    RUNNING,
    DeviceLatency,
    Histogram,
    LatencyFrame,
    OpLatency,
)
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.screens.help import NAME_WIDTH, HelpScreen, key_lines
from iotop_plus.tui.screens.main_keys import MAIN_KEYS
from iotop_plus.tui.widgets.header import HostHeader
from iotop_plus.tui.widgets.latency_view import ROW_EDGES_US, LatencyView
from iotop_plus.tui.widgets.table_columns import COLUMN_SETS
from tests.tui.canned import HOST_ROOTS, canned_app
from tests.tui.helpers import started, wait_for
from tests.tui.history_frames import fill, varying_frames


def shown_lines(widget: Widget) -> list[str]:
    """The widget's lines as the terminal shows them (wrapped, cut to its width), with its
    border and padding."""
    width, height = widget.outer_size
    return [strip.text.rstrip() for strip in widget.render_lines(Region(0, 0, width, height))]


def test_c_help_says_what_each_column_set_holds() -> None:
    text = dict(key_lines())["c"]
    for name, columns in COLUMN_SETS.items():
        assert name in text
        for column in columns:
            assert column.title in text, (name, column.title)
    # Extended keeps aqu-sz and %util only where the width allows: the help says so.
    assert "as many as fit the width" in text
    assert "all iostat -x columns" not in text


def test_every_key_has_its_own_help_text_unless_it_shares_a_line() -> None:
    """Two commands share a help text only as neighbours (+ / -), which share one line."""
    seen: dict[str, int] = {}
    for i, command in enumerate(MAIN_KEYS):
        first = seen.setdefault(command.explain, i)
        assert first == i or all(c.explain == command.explain for c in MAIN_KEYS[first : i + 1]), (
            f"{command.keys!r} repeats the help of {MAIN_KEYS[first].keys!r}"
        )
    lines = dict(key_lines())
    assert lines["p"] != lines["P"]
    assert "Processes" in lines["p"] and "Probe" not in lines["p"]
    assert "Probe" in lines["P"] and "Processes" not in lines["P"]


async def test_wrapped_help_lines_continue_under_their_text_at_80_columns() -> None:
    app = canned_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        body = app.screen.query_one("#help-text", Widget)
        await pilot.pause()
        lines = shown_lines(body)
        indent = 2 + NAME_WIDTH + 1
        start = next(i for i, line in enumerate(lines) if line.startswith("  c "))
        assert lines[start][indent:].startswith("cycle column sets")
        following = lines[start + 1 : start + 4]
        assert following, lines
        for line in following:  # c's text is long: it wraps, under its first line
            assert line[:indent].strip() == "" and line[indent] != " ", (line, lines)
        assert max(map(len, lines)) <= body.size.width
        # A column's explanation wraps under itself too.
        util = next(i for i, line in enumerate(lines) if line.startswith("  %util"))
        assert lines[util + 1][:indent].strip() == ""


async def test_the_replay_header_says_settings_are_not_changed_not_not_root() -> None:
    frames = varying_frames(30, 1_790_000_000.0)
    timeline = fill(FrameStore(minutes=5, interval=1.0), frames)  # no host facts: "recording"
    app = make_replay_app(HOST_ROOTS, timeline, None)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame is not None)
        text = app.main_screen.query_one(HostHeader).text
        assert "REPLAY at" in text
        assert "not root" not in text and "read-only" not in text, text
        assert "settings not changed in replay" in text


def busy_latency(count: int) -> LatencyFrame:
    """One device whose requests mostly took ~100 us, a few ~5 ms: the busiest bucket's count
    has as many digits as ``count``."""
    hist = Histogram.of([100_000] * count + [5_000_000] * 7)
    reads = OpLatency(hist, queue_sum_ns=4_000_000, queue_count=10)
    return LatencyFrame(RUNNING, {"sda": DeviceLatency({"read": reads})}, span_s=1.0)


def check_rows(rows: list[str], width: int) -> None:
    assert len(rows) == len(ROW_EDGES_US), rows
    bars = {row.index("│") for row in rows}
    assert len(bars) == 1, rows  # every label the same width: the bars line up
    for row in rows:
        assert len(row) <= width, (len(row), width, row)
        assert re.fullmatch(r"\s*≥\d+(us|ms) .*│(■* \d+)?", row), row


def test_histogram_rows_fit_with_their_counts_from_80_columns_up() -> None:
    for width in (78, 98, 118, 198):  # the view's text width at 80, 100, 120, 200 columns
        view = LatencyView()
        lat = busy_latency(123_456)
        for _ in range(60):  # a full heatmap
            view.record(lat)
        rows = view.render_text(lat, "sda", width).plain.split("\n")[1:]
        check_rows(rows, width)
        busiest = next(row for row in rows if row.endswith(" 123456"))
        assert "■" * 4 in busiest


async def test_at_80_columns_the_histogram_shows_count_and_label_on_one_line() -> None:
    app = canned_app()
    async with app.run_test(size=(80, 40)) as pilot:  # 80 columns, room for the view
        await started(pilot, app)
        # Shown without asking for the tracer: the canned frames (every 10 s) carry none.
        view = LatencyView(id="latency-view")
        await app.main_screen.query_one("#left").mount(view)
        lat = busy_latency(123_456)
        for _ in range(60):
            view.show_latency(lat, "sda")
        await wait_for(pilot, lambda: view.size.height > len(ROW_EDGES_US))
        lines = shown_lines(view)
        rows = [line.strip() for line in lines if "│" in line]
        assert any(row.endswith(" 123456") for row in rows), lines
        assert not any(re.fullmatch(r"\d+", line.strip()) for line in lines), lines
        check_rows([line.removeprefix(" ") for line in lines if "│" in line], view.size.width)
