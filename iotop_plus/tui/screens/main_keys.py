"""The main screen's keys: one record each, for its bindings, the palette and the help."""

from __future__ import annotations

from iotop_plus.sampling.clock import MAX_INTERVAL, MIN_INTERVAL
from iotop_plus.sampling.disks.figures import figure
from iotop_plus.tui.keys import (
    READ_AHEAD_KEY,
    REVERT_ALL_KEY,
    SCHEDULER_KEY,
    UNDO_KEY,
    Command,
)
from iotop_plus.tui.widgets.table_columns import COLUMN_SETS, EXTENDED_PRIORITY, LATENCY_SET


def column_sets_help() -> str:
    """What ``c`` cycles through: each set's columns, from the sets themselves."""
    basic = " ".join(c.title for c in COLUMN_SETS["basic"])
    extended = " ".join(figure(key).title for key in EXTENDED_PRIORITY)
    latency = " ".join(c.title for c in COLUMN_SETS[LATENCY_SET])
    return (
        f"cycle column sets: basic ({basic}); extended (every iostat -x column, as many as "
        f"fit the width, kept in this order: {extended}); latency ({latency}: read and write "
        "percentiles from the block tracer, with the latency view under the table)"
    )


MAIN_KEYS: tuple[Command, ...] = (
    Command(
        "space",
        "pause",
        "Pause",
        "Pause / resume",
        "freeze the display; sampling and the chart history continue",
    ),
    Command(
        "plus,equals_sign",
        "faster",
        "Faster",
        "Faster refresh",
        "sample more / less often (0.25 s to 10 s)",
    ),
    Command(
        "minus",
        "slower",
        "Slower",
        "Slower refresh",
        "sample more / less often (0.25 s to 10 s)",
    ),
    # Priority: handled as the key arrives, so the name typed right after it (queued in
    # the same burst, as a paste or a fast typist over SSH delivers it) finds the filter
    # focused. check_action lets "/" through to any text box that has focus.
    Command(
        "slash",
        "filter",
        "Filter",
        "Filter devices",
        "filter devices by name (Enter keeps it, Esc clears it)",
        priority=True,
    ),
    Command(
        "escape",
        "clear_filter",
        "Clear filter",
        "Clear filter",
        "show devices again regardless of name",
        show=False,
    ),
    Command(
        "a",
        "toggle_all",
        "All",
        "All devices",
        "all devices: partitions, loop/ram/zram and never-used ones too",
    ),
    Command(
        "c",
        "cycle_columns",
        "Columns",
        "Column set",
        column_sets_help(),
    ),
    Command(
        "left_square_bracket",
        "step(-1)",
        "Back",
        "History: one sample back",
        "history: one sample back / forward (pauses the view; sampling goes on)",
    ),
    Command(
        "right_square_bracket",
        "step(1)",
        "Fwd",
        "History: one sample forward",
        "history: one sample back / forward (pauses the view; sampling goes on)",
        show=False,
    ),
    Command(
        "left_curly_bracket",
        "seek(-60)",
        "-1min",
        "History: one minute back",
        "history: one minute back / forward",
        show=False,
    ),
    Command(
        "right_curly_bracket",
        "seek(60)",
        "+1min",
        "History: one minute forward",
        "history: one minute back / forward",
        show=False,
    ),
    Command(
        "g",
        "jump",
        "Go to",
        "History: go to a time",
        "history: go to a time (14:05, 10m ago, 2026-11-23T14:05, 14:05+01:00)",
    ),
    Command(
        "l",
        "live",
        "Live",
        "Back to live",
        "back to live from history (in a replay: to the end of the recording)",
    ),
    Command(
        "less_than_sign",
        "sort(-1)",
        "<Sort",
        "Sort by previous column",
        "sort by the previous / next column",
        show=False,
    ),
    Command(
        "greater_than_sign",
        "sort(1)",
        "Sort>",
        "Sort by next column",
        "sort by the previous / next column",
        show=False,
    ),
    Command("r", "reverse_sort", "Reverse", "Reverse sort", "reverse the sort", show=False),
    Command(
        "question_mark",
        "help",
        "Help",
        "Help",
        "this help: keys, and what each column means and when it misleads (Esc closes)",
    ),
    Command(
        "1",
        "view('view-table')",
        "Table",
        "View: device table",
        "narrow terminals: table / charts / side panel",
        show=False,
    ),
    Command(
        "2",
        "view('view-charts')",
        "Charts",
        "View: charts",
        "narrow terminals: table / charts / side panel",
        show=False,
    ),
    Command(
        "3",
        "view('view-panel')",
        "Panel",
        "View: side panel",
        "narrow terminals: table / charts / side panel",
        show=False,
    ),
    READ_AHEAD_KEY,
    SCHEDULER_KEY,
    UNDO_KEY,
    REVERT_ALL_KEY,
    Command(
        "I",
        "panel_tab('tab-device')",
        "Device",
        "Device",
        "side panel: Device, the selected device's facts and why it is slow (why, who, health)",
        show=False,
    ),
    Command(
        "p",
        "panel_tab('tab-processes')",
        "Processes",
        "Processes",
        "side panel: Processes, who does the I/O (iotop: per process read/write rates, IO%)",
        show=False,
    ),
    Command(
        "C",
        "panel_tab('tab-cgroups')",
        "Cgroups",
        "Cgroups",
        "side panel: Cgroups (which service, container or pod does the I/O, with io.pressure)",
        show=False,
    ),
    Command(
        "B",
        "panel_tab('tab-blocked')",
        "Blocked",
        "Blocked",
        "side panel: Blocked, threads stuck in D state: why (frozen filesystem, journal, page "
        "I/O, full queue, writeback throttling), on which file or mount, for how long",
        show=False,
    ),
    Command(
        "F",
        "panel_tab('tab-files')",
        "Files",
        "Files",
        "side panel: Files, the selected device's busiest files and who reads and writes them",
        show=False,
    ),
    Command(
        "P",
        "panel_tab('tab-probe')",
        "Probe",
        "Probe",
        "side panel: Probe, a quick fio run on a directory's file or the selected device",
        show=False,
    ),
    Command(
        "Y",
        "panel_tab('tab-sync')",
        "Sync",
        "Sync",
        "side panel: Sync, the selected device's fsync/fdatasync latency by file and its "
        "journal's commits (traced as root; O_SYNC/O_DSYNC writes are not syncs)",
        show=False,
    ),
    Command(
        "m",
        "mark_window('a')",
        "Mark A",
        "Mark window A",
        "what changed: mark window A (the diff_minutes ending at the frame shown), then M",
        show=False,
    ),
    Command(
        "M",
        "mark_window('b')",
        "Mark B",
        "Mark window B",
        "what changed: mark window B, then see the ranked changes from A (as iotop-plus diff)",
        show=False,
    ),
    Command(
        "w",
        "compare_recent",
        "Changed",
        "What changed",
        "what changed: the last diff_minutes (default 10) against the ones before, ranked",
        show=False,
    ),
    Command(
        "X",
        "experiment",
        "Experiment",
        "Experiment",
        "experiment on the selected device: queue-depth sweep or A/B of a setting",
        show=False,
    ),
)
"""Every key of the main screen, in the order the help lists them."""


INTERVAL_STEPS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
"""What ``+`` and ``-`` step through (seconds)."""


def step_interval(seconds: float, step: int) -> float:
    """The interval after ``+`` (``step`` -1: the next shorter one) or ``-`` (1: longer)."""
    if step < 0:
        shorter = [s for s in INTERVAL_STEPS if s < seconds - 1e-9]
        return shorter[-1] if shorter else MIN_INTERVAL
    longer = [s for s in INTERVAL_STEPS if s > seconds + 1e-9]
    return longer[0] if longer else MAX_INTERVAL
