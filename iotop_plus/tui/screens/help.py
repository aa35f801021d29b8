"""The help screen: the keys, and one line per column on what it means and when it misleads."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from iotop_plus.sampling.figures import notes
from iotop_plus.tui.keys import as_binding, help_lines, key_display, own_bindings_of, tab_of
from iotop_plus.tui.process_rows import MEANINGS
from iotop_plus.tui.screens.modal import Modal
from iotop_plus.tui.widgets.pressure import HELP as PRESSURE_HELP

PALETTE_HELP = "command palette: every action by name"

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
    from iotop_plus.tui.app import IotopPlusApp
    from iotop_plus.tui.screens.main import MainScreen
    from iotop_plus.tui.widgets.device_table import DeviceTable

    # The screen's bindings of panel keys are listed with their tab, under panel_lines.
    screen = [b for b in map(as_binding, MainScreen.BINDINGS) if tab_of(b) is None]
    lines = help_lines([*IotopPlusApp.BINDINGS, *screen, *DeviceTable.BINDINGS])
    lines.append((key_display(IotopPlusApp.COMMAND_PALETTE_BINDING), PALETTE_HELP))
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


def help_text() -> str:
    """The help as plain text (Rich markup for bold)."""
    lines = ["[b]Keys[/b]"]
    lines += [f"  [b]{k:<{NAME_WIDTH}}[/b] {v}" for k, v in key_lines()]
    lines += ["", "[b]Side panel keys[/b] (while the tab is shown)"]
    lines += [f"  [b]{k:<{NAME_WIDTH}}[/b] {v}" for k, v in panel_lines()]
    lines += ["", "[b]Columns[/b] (iostat -x; rates per second of the measured interval)"]
    for name, means, misleads in column_lines():
        lines.append(f"  [b]{name:<{NAME_WIDTH}}[/b] {means}. [i]Misleads:[/i] {misleads}.")
    lines += ["", "[b]Processes columns[/b] (per process; rates over the measured interval)"]
    lines += [f"  [b]{name:<{NAME_WIDTH}}[/b] {means}." for name, means in MEANINGS]
    lines += ["", THRESHOLDS]
    lines += ["", PRESSURE_HELP]
    lines += ["", PROBE_HELP]
    return "\n".join(lines)


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
            yield Static(help_text(), id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()
        self.query_one("#help-body").border_title = "iotop-plus help (Esc closes)"
