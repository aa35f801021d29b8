"""The queue settings of the selected device, with edit actions, a change log and undo.

Interface for the screen (:class:`~iotop_plus.tui.screens.main.MainScreen`):

* ``SettingsPanel(tuner, roots)``; ``set_device(name)`` shows a device (None: nothing) and
  reads its values; ``show_settings(name, values)`` shows values the screen read (None: not
  read yet), so moving the table's cursor reads no sysfs here; ``reload()`` re-reads them.
* Messages posted up:

  - :class:`SettingsPanel.Changed` for every write that took effect: a set, an undo or one
    step of revert-all (``change.action`` says which). The screen turns it into a chart mark
    with ``History.mark(Mark(...))`` so the before/after shows on the charts.
  - :class:`SettingsPanel.Failed` with one plain line when a change was refused.

Keys (active when focus is in the panel): ``R`` read-ahead presets or a typed value, ``S``
scheduler from the device's own list, ``A`` show or hide the advanced settings
(nr_requests, max_sectors_kb, nomerges, rq_affinity, wbt_lat_usec), ``enter`` edit the
highlighted setting, ``u`` undo the last change, ``U`` revert every change of this run (a
setting changed since this run set it, by another run or by hand, is asked about first: put
the original back, or leave it: the ``ConflictScreen`` of the settings modals),
``E`` export the kept changes as a udev rules file and a shell script (new files next to the
journal, in the state directory; the paths are shown).
:func:`~iotop_plus.tui.keys.find_clashes` checks them against the main screen's and the other
panels' keys (tests/tui/test_keys.py).

Without root the values are shown read-only with the reason, and the keys say why instead of
opening a picker. Writes run in a thread worker; the panel only changes in the handler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from iotop_plus.devices.changes import Change
from iotop_plus.devices.conflicts import ASK, LEAVE, PUT_BACK, Conflict, ConflictError, TuningError
from iotop_plus.devices.journal import default_journal_path
from iotop_plus.devices.settings import SETTINGS, SettingError, SettingValue, valid_range
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from iotop_plus.text import printable
from iotop_plus.tui.keys import TUNE, panel_bindings
from iotop_plus.tui.screens.settings_modals import ConflictScreen, setting_picker

#: Shown without asking for the advanced section.
BASIC_SETTINGS = ("read_ahead_kb", "scheduler")
#: Shown when the advanced section is open.
ADVANCED_SETTINGS = tuple(n for n in SETTINGS if n not in BASIC_SETTINGS)


class SettingsPanel(VerticalScroll, can_focus=False):
    """A device's queue settings with edit actions and this run's change log."""

    DEFAULT_CSS = """
    SettingsPanel { height: auto; max-height: 100%; }
    SettingsPanel #settings-list { height: auto; }
    SettingsPanel #settings-log { height: auto; }
    """

    BINDINGS = panel_bindings(TUNE)
    """From the key registry: ``R`` ``S`` ``u`` ``U`` are the screen's commands too (one id)."""

    @dataclass
    class Changed(Message):
        """A setting was written and read back (a set, an undo or a revert step)."""

        change: Change
        """The journaled change: device, setting, old, effective, action, time."""

    @dataclass
    class Failed(Message):
        """A change was refused or could not be undone; ``text`` is one plain line."""

        text: str
        """What went wrong, for people."""

    def __init__(self, tuner: Tuner, roots: Roots, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tuner = tuner
        """Applies, journals and undoes the changes."""
        self.roots = roots
        """Where sysfs is."""
        self.device: str | None = None
        """The device shown."""
        self.values: dict[str, SettingValue] = {}
        """Its settings as last read, by name."""
        self.advanced = False
        """Whether the advanced settings are listed."""
        self.last_result = ""
        """The last outcome line shown (old -> effective, or the error)."""
        self.shown_lines: tuple[str, ...] = ()
        """The title, read-only reason and setting lines as shown (plain text)."""
        self.log_text = "(none)"
        """The change log as shown (plain text)."""

    def compose(self) -> ComposeResult:
        yield Static("No device selected.", id="settings-device", markup=False)
        yield Static("", id="settings-readonly", markup=False)
        yield OptionList(id="settings-list", markup=False)
        yield Static("", id="settings-result", markup=False)
        yield Label("Changes this run (u undo, U revert all)", classes="heading")
        yield Static("(none)", id="settings-log", markup=False)

    def on_mount(self) -> None:
        self._render_log()

    # --- the screen calls these ---------------------------------------------------------

    def set_device(self, name: str | None) -> None:
        """Show ``name``'s settings (None: no device)."""
        self._switch_to(name)
        self.reload()

    def show_settings(self, name: str | None, settings: Sequence[SettingValue] | None) -> None:
        """Show ``name`` with ``settings`` already read (None: still being read)."""
        self._switch_to(name)
        self.values = {v.setting.name: v for v in settings or ()}
        self._render_values()

    def _switch_to(self, name: str | None) -> None:
        if name != self.device:
            self.device = name
            self.last_result = ""
            self.query_one("#settings-result", Static).update("")

    def reload(self) -> None:
        """Re-read the shown device's settings and repaint them."""
        self.values = (
            {v.setting.name: v for v in self.tuner.read(self.device)} if self.device else {}
        )
        self._render_values()

    # --- actions ---------------------------------------------------------------------------

    def action_edit(self, name: str) -> None:
        """Open the picker for setting ``name`` of the shown device."""
        value = self._writable(name)
        if value is None:
            return
        device = value.device

        def validate(text: str) -> str:
            return self.tuner.validate(device, name, text)

        hint = f"valid: {valid_range(self.roots, value)}"
        if value.queue_device != value.device:
            hint += f"\n{device} is a partition: this changes {value.queue_device}'s queue"

        def picked(text: str | None) -> None:
            if text is not None:
                self._apply(device, name, text)

        self.app.push_screen(setting_picker(value, validate, hint), picked)

    def action_toggle_advanced(self) -> None:
        """Show or hide nr_requests, max_sectors_kb, nomerges, rq_affinity, wbt_lat_usec."""
        self.advanced = not self.advanced
        self._render_values()

    def action_undo(self) -> None:
        """Undo the last change still in effect."""
        if not self.tuner.active:
            self._show_result("nothing to undo", error=True)
            return
        self._undo(all_changes=False)

    def action_revert_all(self) -> None:
        """Undo every change of this run, newest first."""
        if not self.tuner.active:
            self._show_result("nothing to revert", error=True)
            return
        self._undo(all_changes=True)

    def action_export(self) -> None:
        """Write the kept changes as udev rules and a shell script next to the journal."""
        if not self.tuner.net_settings():
            self._show_result("nothing to export: no change is in effect", error=True)
            return
        directory = (self.tuner.journal.path or default_journal_path()).parent
        try:
            rules, script = self.tuner.export(directory)
        except OSError as exc:
            self._show_result(f"export failed: {exc.strerror or exc}", error=True)
            return
        self._show_result(f"exported {rules} and {script}")

    @on(OptionList.OptionSelected, "#settings-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.action_edit(event.option.id)

    # --- workers and their results ---------------------------------------------------------

    @work(thread=True, group="tuning", exit_on_error=False)
    def _apply(self, device: str, name: str, text: str) -> None:
        try:
            change = self.tuner.apply(device, name, text)
        except SettingError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        self.app.call_from_thread(self._done, (change,), change.summary)

    @work(thread=True, group="tuning", exit_on_error=False)
    def _undo(self, all_changes: bool) -> None:
        before = len(self.tuner.journal.entries)
        error = None
        headline = ""
        conflict: Conflict | None = None
        try:
            if all_changes:
                reverts = self.tuner.revert_all(on_conflict=ASK)
                headline = f"reverted {len(reverts)} change{'s' if len(reverts) != 1 else ''}"
            else:
                headline = "undone: " + self.tuner.undo(on_conflict=ASK).summary
        except ConflictError as exc:
            conflict = exc.conflicts[0]  # the others are asked after this one is answered
        except TuningError as exc:
            error = str(exc)
        # Every write an undo made (side effects too) is a moment the charts should mark.
        written = self.tuner.journal.entries[before:]
        self.app.call_from_thread(self._done, written, headline)
        if error:
            self.app.call_from_thread(self._failed, error)
        if conflict is not None:
            self.app.call_from_thread(self._ask, conflict, all_changes)

    def _ask(self, conflict: Conflict, all_changes: bool) -> None:
        """Ask whether to put back a setting changed since this run set it."""

        def answered(choice: str | None) -> None:
            if choice in (PUT_BACK, LEAVE):
                self._resolve(conflict, choice == PUT_BACK, all_changes)
            else:
                self._show_result(f"left for now: {conflict.question()}", error=True)

        self.app.push_screen(ConflictScreen(conflict), answered)

    @work(thread=True, group="tuning", exit_on_error=False)
    def _resolve(self, conflict: Conflict, put_back: bool, all_changes: bool) -> None:
        before = len(self.tuner.journal.entries)
        try:
            undo = self.tuner.resolve(conflict, put_back)
        except TuningError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        written = self.tuner.journal.entries[before:]
        where = f"{conflict.where} {conflict.setting}"
        headline = f"undone: {undo.summary}" if undo else f"left {where} at {conflict.now}"
        self.app.call_from_thread(self._done, written, headline)
        if all_changes and self.tuner.active:
            self.app.call_from_thread(self._undo, True)  # the rest of revert-all

    def _done(self, changes: tuple[Change, ...], headline: str) -> None:
        for change in changes:
            self.post_message(self.Changed(change))
        if headline:
            self._show_result(headline)
        if self.tuner.journal.problem:
            self.notify(self.tuner.journal.problem, severity="warning", markup=False)
        self.reload()
        self._render_log()

    def _failed(self, text: str) -> None:
        self._show_result(text, error=True)
        self.post_message(self.Failed(text))
        self.reload()

    # --- rendering -------------------------------------------------------------------------

    def _writable(self, name: str) -> SettingValue | None:
        if self.device is None:
            self._show_result("no device selected", error=True)
            return None
        value = self.tuner.read_one(self.device, name)
        if not value.writable:
            self._show_result(f"{value.setting.name}: {value.reason}", error=True)
            return None
        return value

    def _show_result(self, text: str, *, error: bool = False) -> None:
        self.last_result = text
        result = self.query_one("#settings-result", Static)
        result.update(text)
        result.set_class(error, "error")

    def _render_values(self) -> None:
        title = self.query_one("#settings-device", Static)
        readonly = self.query_one("#settings-readonly", Static)
        options = self.query_one("#settings-list", OptionList)
        highlighted = options.highlighted
        options.clear_options()
        if self.device is None:
            title.update("No device selected.")
            readonly.update("")
            self.shown_lines = ("No device selected.",)
            return
        queue = next(iter(self.values.values())).queue_device if self.values else self.device
        via = f" (settings of {queue}'s queue)" if queue != self.device else ""
        heading = printable(f"Queue settings of {self.device}{via}")
        title.update(heading)
        reasons = {v.reason for v in self.values.values() if v.present and v.reason}
        why = "; ".join(sorted(r for r in reasons if r))
        readonly.update(why)
        lines = [heading, why]
        names = BASIC_SETTINGS + (ADVANCED_SETTINGS if self.advanced else ())
        keys = {"read_ahead_kb": "R", "scheduler": "S"}
        for name in names:
            value = self.values.get(name)
            if value is None:
                continue
            shown = value.display_with_choices if value.present else (value.reason or "n/a")
            key = f" [{keys[name]}]" if name in keys else ""
            line = f"{value.setting.label:<21} {shown}{key}"
            lines.append(line)
            options.add_option(
                Option(
                    line,
                    id=name,
                    disabled=not value.present,
                )
            )
        if not self.advanced:
            lines.append("advanced settings ... [A]")
            options.add_option(Option("advanced settings ... [A]", disabled=True))
        self.shown_lines = tuple(lines)
        if highlighted is not None and options.option_count:
            options.highlighted = min(highlighted, options.option_count - 1)

    def _render_log(self) -> None:
        entries = self.tuner.journal.entries
        log = self.query_one("#settings-log", Static)
        if not entries:
            self.log_text = "(none)"
            log.update(self.log_text)
            return
        active = {c.sequence for c in self.tuner.active}
        lines = []
        for change in entries[-10:]:
            state = "" if change.action != "set" or change.sequence in active else "  (undone)"
            lines.append(f"#{change.sequence} {change.summary}{state}")
        self.log_text = "\n".join(lines)
        log.update(self.log_text)

    @property
    def text(self) -> str:
        """The shown values, last result and change log as plain text (for tests)."""
        return "\n".join((*self.shown_lines, self.last_result, self.log_text))
