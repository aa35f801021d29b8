"""The help screen: the keys, and one line per column on what it means and when it misleads."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from iotop_plus.sampling.disks.figures import notes
from iotop_plus.tui.health_lines import HEALTH_HELP
from iotop_plus.tui.keys import (
    APP_KEYS,
    as_binding,
    bindings,
    help_lines,
    key_display,
    own_bindings_of,
    tab_of,
)
from iotop_plus.tui.process_rows import MEANINGS
from iotop_plus.tui.screens.main_history import WHO_HISTORY_HELP
from iotop_plus.tui.screens.modal import Modal
from iotop_plus.tui.why_lines import WHY_HELP
from iotop_plus.tui.widgets.pressure import HELP as PRESSURE_HELP

PALETTE_HELP = "command palette: every action by name"

TAB_BAR_HELP = (
    "each tab shows the key that opens it before its name (I Device, p Processes, C Cgroups, "
    "B Blocked, F Files, P Probe, Y Sync; R and S open Tune); when the panel is narrow the "
    "tabs wrap onto a second line. A click picks a tab, and so do the left and right arrows "
    "while the bar has the focus"
)

NAME_WIDTH = 24
"""Characters of the key or column names before their explanation."""


def column_lines() -> list[tuple[str, str, str]]:
    """(titles, meaning, misleads) per help line, from the registry of figures."""
    lines = []
    for figures, note in notes():
        names = ""
        for fig in figures:
            more = f"{names} {fig.title}".strip()
            if len(more) > NAME_WIDTH - 4 and fig is not figures[-1]:
                names += " ..."
                break
            names = more
        lines.append((names, note.meaning, note.misleads))
    return lines


THRESHOLDS = (
    "Colours: yellow = high, red = bad. await: spinning disk 20 / 50 ms, SSD/NVMe/virtual "
    "5 / 20 ms (configurable in config.toml); aqu-sz or inflight at 80% of nr_requests; "
    "%util at 90% on a spinning disk. '-' means no rate yet (first sample or device reset)."
)


def key_lines() -> list[tuple[str, str]]:
    """(keys, explanation) per help line, made from the app's, screen's and table's bindings."""
    from iotop_plus.tui.screens.main_keys import MAIN_KEYS
    from iotop_plus.tui.widgets.device_table import DeviceTable

    # The screen's bindings of panel keys are listed with their tab, under panel_lines.
    screen = [b for b in map(as_binding, bindings(MAIN_KEYS)) if tab_of(b) is None]
    lines = help_lines([*bindings(APP_KEYS), *screen, *DeviceTable.BINDINGS])
    lines.append((key_display(App.COMMAND_PALETTE_BINDING), PALETTE_HELP))
    return lines


def panel_lines() -> list[tuple[str, str]]:
    """(tab, its keys) per side-panel tab, made from the panels' bindings."""
    from iotop_plus.tui.widgets.cgroup_panel import CgroupPanel
    from iotop_plus.tui.widgets.probe_panel import ProbePanel
    from iotop_plus.tui.widgets.process_panel import ProcessPanel
    from iotop_plus.tui.widgets.settings_panel import SettingsPanel

    lines = []
    tabs = (
        ("Tune", SettingsPanel),
        ("Processes", ProcessPanel),
        ("Cgroups", CgroupPanel),
        ("Probe", ProbePanel),
    )
    for tab, panel in tabs:
        keys = [
            f"{key_display(b.key.split(',')[0])} {b.description}"
            for b in own_bindings_of(panel)
            if b.show
        ]
        lines.append((tab, ", ".join(keys)))
    return lines


def _named(name: str, text: str) -> tuple[str, int]:
    """A line of a name and its explanation; wrapped lines continue under the explanation."""
    return f"  [b]{name:<{NAME_WIDTH}}[/b] {text}", 2 + max(len(name), NAME_WIDTH) + 1


def help_entries() -> list[tuple[str, int]]:
    """The help's lines (Rich markup for bold), each with the column its wrapped lines start
    at: under the explanation for a key or a column, at the margin for a paragraph."""
    lines = [("[b]Keys[/b]", 0)]
    lines += [_named(k, v) for k, v in key_lines()]
    lines += [("", 0), ("[b]Side panel keys[/b] (while the tab is shown)", 0)]
    lines += [_named("tab bar", TAB_BAR_HELP)]
    lines += [_named(k, v) for k, v in panel_lines()]
    lines += [("", 0), ("[b]Columns[/b] (iostat -x; rates per second of the measured interval)", 0)]
    for name, means, misleads in column_lines():
        lines.append(_named(name, f"{means}. [i]Misleads:[/i] {misleads}."))
    lines += [
        ("", 0),
        ("[b]Processes columns[/b] (per process; rates over the measured interval)", 0),
    ]
    lines += [_named(name, f"{means}.") for name, means in MEANINGS]
    paragraphs = (THRESHOLDS, PRESSURE_HELP, PROBE_HELP, *HEALTH_HELP, *WHY_HELP, WHO_HISTORY_HELP)
    for paragraph in paragraphs:
        lines += [("", 0), (paragraph, 0)]
    return lines


def help_text() -> str:
    """The help as plain text (Rich markup for bold)."""
    return "\n".join(line for line, _ in help_entries())


MIN_TEXT_WIDTH = 24
"""Below this many cells beside the names, wrapped lines start at the margin instead."""


def wrapped_help(width: int) -> Text:
    """The help wrapped to ``width`` cells, each wrapped line indented under its text."""
    console = Console(width=max(width, 1), no_color=True)
    out = Text()
    for markup, indent in help_entries():
        line = Text.from_markup(markup)
        if width - indent < MIN_TEXT_WIDTH:
            indent = 0
        head, body = line[:indent], line[indent:]
        pieces = body.wrap(console, max(width - indent, 1)) if body.plain else [Text()]
        for i, piece in enumerate(pieces):
            piece.rstrip()
            out.append_text(head if i == 0 else Text(" " * indent))
            out.append_text(piece)
            out.append("\n")
    out.rstrip()
    return out


class HelpText(Static):
    """The help, re-wrapped to its width so that a wrapped line stays under its text."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(help_text(), id=id)
        self._wrapped_for = 0

    def on_resize(self) -> None:
        width = self.content_region.width
        if width > 0 and width != self._wrapped_for:
            self._wrapped_for = width
            self.update(wrapped_help(width))


PROBE_HELP = (
    "[b]Probe results[/b]: [b]clat µs[/b] is fio's completion latency, seen from the program: "
    "it includes the syscall, the filesystem and waits for a CPU. [b]device µs[/b] (as root "
    "with bpftrace) is the block layer's issue-to-completion time of the device's requests "
    "while fio ran. A device p99 far below fio's points at the host; close to it, at the "
    "device. [i]Misleads:[/i] with io_uring and libaio, clat starts when the submit call "
    "returns, after the device has the request, so on a busy CPU device µs can exceed clat "
    "(ioengine=psync times the whole call); other I/O on the device is counted too (a note "
    "says when there was any); on a loop device it measures the backing file."
)


class HelpScreen(Modal[None]):
    """Keys and columns, scrollable with the keyboard: a Modal whose box is a VerticalScroll."""

    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield HelpText(id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()
        self.query_one("#help-body").border_title = "iotop-plus help (Esc closes)"
