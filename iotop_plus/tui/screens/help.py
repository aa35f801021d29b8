"""The help screen: the keys, and one line per column on what it means and when it misleads."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("q, Ctrl-C", "quit (SIGTERM and SIGHUP also quit cleanly)"),
    ("space", "freeze the display; sampling and the chart history continue"),
    ("+ / -", "sample more / less often (0.25 s to 10 s)"),
    ("/", "filter devices by name (Enter keeps it, Esc clears it)"),
    ("a", "all devices: partitions, loop/ram/zram and never-used ones too"),
    ("c", "cycle column sets: basic, extended (all iostat -x columns)"),
    ("< / >", "sort by the previous / next column; r reverses"),
    ("↑ ↓ PgUp PgDn Home End", "select a device (charts and panel follow)"),
    ("1 / 2 / 3", "narrow terminals: table / charts / side panel"),
    ("R / S", "change the selected device's read-ahead / I/O scheduler (Tune tab)"),
    ("u / U", "undo the last setting change / revert every change of this run"),
    ("p / P", "side panel: Processes (who does the I/O) / Probe (quick fio run)"),
    ("X", "experiment on the selected device: queue-depth sweep or A/B of a setting"),
    ("Ctrl-P", "command palette: every action by name"),
    ("?", "this help; Esc or q closes it"),
)

COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("r/s w/s", "reads / writes completed per second", "merged requests count once"),
    ("rkB/s wkB/s", "KiB read / written per second", "buffered writes land later, at writeback"),
    (
        "r_await w_await",
        "mean ms per request, from queueing to completion",
        "includes time waiting in the queue: high await with high aqu-sz is queueing, "
        "not a slow device; a mean hides rare slow requests",
    ),
    (
        "aqu-sz",
        "mean requests queued or in service",
        "compare it with the queue's nr_requests (red at 80%): a full queue blocks submitters",
    ),
    (
        "%util",
        "share of the interval with at least one request in flight",
        "means saturation only on a disk that serves one request at a time; SSD, NVMe, "
        "RAID and virtual disks serve many at once, so 100% there can be far from full. "
        "Such devices show '~' and dim text: read aqu-sz and await instead",
    ),
    ("rrqm/s wrqm/s", "requests merged into others per second", "high is good for sequential I/O"),
    ("%rrqm %wrqm", "share of requests merged", "0 with scheduler none and random I/O is normal"),
    ("rareq-sz wareq-sz", "mean request size in KiB", "after merging; small means random"),
    ("d/s dkB/s d_await ...", "discards (TRIM): rate, KiB, latency", "0 unless fstrim/discard"),
    ("f/s f_await", "cache flushes per second and their latency", "partitions never count them"),
    ("inflight", "requests in flight at the end of the interval", "a gauge, not a mean"),
)

THRESHOLDS = (
    "Colours: yellow = high, red = bad. await: spinning disk 20 / 50 ms, SSD/NVMe/virtual "
    "5 / 20 ms (configurable in config.toml); aqu-sz or inflight at 80% of nr_requests; "
    "%util at 90% on a spinning disk. '-' means no rate yet (first sample or device reset)."
)


def help_text() -> str:
    """The help as plain text (Rich markup for bold)."""
    lines = ["[b]Keys[/b]"]
    lines += [f"  [b]{k:<24}[/b] {v}" for k, v in KEYS]
    lines += ["", "[b]Columns[/b] (iostat -x; rates per second of the measured interval)"]
    for name, means, misleads in COLUMNS:
        lines.append(f"  [b]{name:<24}[/b] {means}. [i]Misleads:[/i] {misleads}.")
    lines += ["", THRESHOLDS]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    """Keys and columns, scrollable with the keyboard."""

    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 95%; height: 90%; border: round $accent;
                                  background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(help_text(), id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()
        self.query_one("#help-body").border_title = "iotop-plus help (Esc closes)"
