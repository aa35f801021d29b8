"""Modal pickers for queue settings, and the keep-or-revert question asked on exit.

* :class:`ValuePickerScreen` picks from a list (read-ahead presets, the device's schedulers,
  0/1/2 settings) and/or takes a typed value, checked by a ``validate`` callback before it
  closes: the error shows inline and nothing is written until the value passes.
  :func:`read_ahead_picker`, :func:`scheduler_picker` and :func:`setting_picker` build one for
  a :class:`~iotop_plus.devices.settings.SettingValue`. Dismissed with the value to write, or
  None on escape.
* :class:`KeepOrRevertScreen` lists this run's changes and returns ``"keep"``, ``"revert"``,
  or None (escape: do not quit after all).
* :class:`RestoreLeftoversScreen` lists what a run that died left changed, at start, and
  returns ``"restore"``, ``"keep"`` or None (leave them for now).
* :class:`ConflictScreen` asks when an undo, a revert or a restore finds the setting changed
  since ("loop3 read_ahead_kb is 2048 now; this run set 64, the original was 128") and
  returns ``"put_back"``, ``"leave"`` or None (decide later: nothing is written).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from iotop_plus.devices.changes import Change
from iotop_plus.devices.conflicts import LEAVE, PUT_BACK, Conflict
from iotop_plus.devices.leftovers import Leftover
from iotop_plus.devices.settings import SettingError, SettingValue
from iotop_plus.tui.screens.modal import Modal

#: Read-ahead presets in KiB, with what each suits.
READ_AHEAD_PRESETS: tuple[tuple[int, str], ...] = (
    (0, "off: random I/O only (databases on O_DIRECT)"),
    (16, "small: random reads, index lookups"),
    (128, "the kernel's usual default"),
    (256, "mixed workloads"),
    (1024, "sequential scans"),
    (4096, "large streaming reads"),
)

Validator = Callable[[str], str]
"""Takes the typed text, returns the value to write, raises SettingError when refused."""


class ValuePickerScreen(Modal[str | None]):
    """Pick a value from a list or type one; returns the validated value or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        hint: str,
        options: Sequence[tuple[str, str]],
        validate: Validator,
        *,
        typed: bool = True,
        current: str | None = None,
    ) -> None:
        """Args:
        title: What is being changed (``loop3 read-ahead``).
        hint: The valid range and the current value, in one or two lines.
        options: (label, value) pairs to pick from; may be empty when ``typed``.
        validate: Checks a value before the screen closes.
        typed: Whether an input for a typed value is shown.
        current: The current value, highlighted in the list.
        """
        super().__init__()
        self.title_text = title
        self.hint = hint
        self.options = tuple(options)
        self.validate = validate
        self.typed = typed
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, classes="title", markup=False)
            yield Static(self.hint, classes="hint", markup=False)
            if self.options:
                yield OptionList(
                    *(Option(label, id=f"value-{i}") for i, (label, _) in enumerate(self.options)),
                    id="picker-options",
                    markup=False,
                )
            if self.typed:
                yield Input(
                    placeholder="or type a value, then enter",
                    id="picker-input",
                    # Focus arrives after the first digit is put in: selecting it then would
                    # let the second digit replace it ("16" became "6").
                    select_on_focus=False,
                )
            yield Static("", id="picker-error", classes="error", markup=False)

    def on_mount(self) -> None:
        if self.options:
            options = self.query_one("#picker-options", OptionList)
            values = [v for _, v in self.options]
            options.highlighted = values.index(self.current) if self.current in values else 0
            # set_focus at once: a deferred focus() could land after digits typed in the same
            # burst had moved focus to the input, and Enter would pick from the list.
            self.set_focus(options)
        elif self.typed:
            self.set_focus(self.query_one("#picker-input", Input))

    def on_key(self, event: events.Key) -> None:
        # "or type a value": a digit typed while the list has focus starts the typed value.
        char = event.character
        if not self.typed or char is None or not (char.isdigit() or char == "-"):
            return
        # The input stops the keys it takes: one that bubbles here went to the list, even when
        # the input has focus by now (keys queued for the list behind the first digit).
        box = self.query_one("#picker-input", Input)
        event.stop()
        event.prevent_default()
        # At once, not box.focus()'s later: keys typed in the same burst (the next digits,
        # Enter) must reach the input, not the list (Enter there picked the highlighted value).
        self.set_focus(box)
        box.insert_text_at_cursor(char)

    def _try(self, text: str) -> None:
        try:
            value = self.validate(text)
        except SettingError as exc:
            self.query_one("#picker-error", Static).update(exc.message)
            return
        self.dismiss(value)

    @on(OptionList.OptionSelected, "#picker-options")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._try(self.options[event.option_index][1])

    @on(Input.Submitted, "#picker-input")
    def _typed(self, event: Input.Submitted) -> None:
        event.stop()
        # Surrounding spaces from typing are not the user's value; inner ones are refused.
        self._try(event.value.strip())

    def action_cancel(self) -> None:
        """Close without a value."""
        self.dismiss(None)


def read_ahead_picker(current: SettingValue, validate: Validator, hint: str) -> ValuePickerScreen:
    """Presets 0/16/128/256/1024/4096 KiB or a typed number of KiB."""
    options = [
        (f"{kib:>5} KiB ({kib * 2} sectors)  {why}", str(kib)) for kib, why in READ_AHEAD_PRESETS
    ]
    return ValuePickerScreen(
        f"{current.device} read-ahead (now {current.display})",
        hint,
        options,
        validate,
        current=current.value,
    )


def scheduler_picker(current: SettingValue, validate: Validator, hint: str) -> ValuePickerScreen:
    """The device's own scheduler list."""
    options = [
        (f"{name}{'  (current)' if name == current.value else ''}", name)
        for name in current.choices
    ]
    return ValuePickerScreen(
        f"{current.device} I/O scheduler (now {current.value})",
        hint,
        options,
        validate,
        typed=False,
        current=current.value,
    )


def setting_picker(current: SettingValue, validate: Validator, hint: str) -> ValuePickerScreen:
    """Any other setting: its fixed choices if it has them, else a typed value."""
    if current.setting.name == "read_ahead_kb":
        return read_ahead_picker(current, validate, hint)
    if current.setting.name == "scheduler":
        return scheduler_picker(current, validate, hint)
    options = [(value, value) for value in current.setting.choices]
    return ValuePickerScreen(
        f"{current.device} {current.setting.label} ({current.setting.name}, now {current.display})",
        f"{current.setting.description}\n{hint}",
        options,
        validate,
        typed=not options,
        current=current.value,
    )


class KeepOrRevertScreen(Modal[str | None]):
    """Asked on quit when settings were changed: keep them, revert them, or stay."""

    BINDINGS = [
        Binding("k", "choose('keep')", "Keep"),
        Binding("v", "choose('revert')", "Revert"),
        Binding("escape", "choose(None)", "Stay"),
    ]

    def __init__(self, changes: Sequence[Change]) -> None:
        """Args: changes: The changes still in effect (``Tuner.active``)."""
        super().__init__()
        self.changes = tuple(changes)

    def compose(self) -> ComposeResult:
        with Vertical():
            count = len(self.changes)
            yield Label(
                f"{count} setting change{'s' if count != 1 else ''} made in this run",
                classes="title",
            )
            yield Static(
                "\n".join(c.summary for c in self.changes[-12:]), id="keep-changes", markup=False
            )
            if count > 12:
                yield Static(f"... and {count - 12} earlier", classes="hint")
            yield Static(
                "k keeps them (they last until reboot), v reverts them all, escape stays.",
                classes="hint",
            )
            with Horizontal():
                yield Button("Keep (k)", id="keep", variant="primary")
                yield Button("Revert all (v)", id="revert", variant="warning")
                yield Button("Stay (esc)", id="stay")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss({"keep": "keep", "revert": "revert"}.get(event.button.id or ""))

    def action_choose(self, choice: str | None) -> None:
        """Close with ``keep``, ``revert`` or None."""
        self.dismiss(choice)


class RestoreLeftoversScreen(Modal[str | None]):
    """Asked at start when a run that died left settings changed: restore them, keep them, or
    decide later. Every line wraps inside the box, so nothing is cut at 80x24."""

    BINDINGS = [
        Binding("r", "choose('restore')", "Restore"),
        Binding("k", "choose('keep')", "Keep"),
        Binding("escape", "choose(None)", "Later"),
    ]

    #: Leftovers listed one per line; the rest are counted.
    SHOWN = 8

    def __init__(self, leftovers: Sequence[Leftover], restore: str = "iotop-plus restore") -> None:
        """Args:
        leftovers: The leftovers of the journal that can be restored.
        restore: The ``restore`` command as the user would type it (with ``--state-dir``
            when the run has one).
        """
        super().__init__()
        self.leftovers = tuple(leftovers)
        self.restore = restore

    def compose(self) -> ComposeResult:
        with Vertical():
            count = len(self.leftovers)
            yield Static(
                f"{count} setting{'s' if count != 1 else ''} left changed by a run that "
                "ended without undoing or keeping "
                f"{'them' if count != 1 else 'it'} (a crash, kill -9, a dropped SSH link)",
                classes="title",
                id="leftover-title",
                markup=False,
            )
            lines = [
                f"{left.where} {left.setting}: {left.left} (original {left.original})"
                for left in self.leftovers[: self.SHOWN]
            ]
            if count > self.SHOWN:
                more = count - self.SHOWN
                lines.append(f"... and {more} more ({self.restore} -n lists them all)")
            yield Static("\n".join(lines), id="leftover-list", markup=False)
            yield Static(
                "r restores the originals, k keeps these values, escape decides later "
                f"({self.restore}, or {self.restore} --keep).",
                classes="hint",
                id="leftover-hint",
                markup=False,
            )
            with Horizontal():
                yield Button("Restore (r)", id="restore", variant="primary")
                yield Button("Keep (k)", id="keep")
                yield Button("Later (esc)", id="later")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss({"restore": "restore", "keep": "keep"}.get(event.button.id or ""))

    def action_choose(self, choice: str | None) -> None:
        """Close with ``restore``, ``keep`` or None (later)."""
        self.dismiss(choice)


class ConflictScreen(Modal[str | None]):
    """Asked when a setting to put back was changed since (by another run, by hand): put the
    original back, or leave the value it has now. Escape decides later and writes nothing."""

    BINDINGS = [
        Binding("p", "choose('put_back')", "Put back"),
        Binding("l", "choose('leave')", "Leave"),
        Binding("escape", "choose(None)", "Later"),
    ]

    def __init__(self, conflict: Conflict) -> None:
        """Args: conflict: The setting, its value now, what was written and the original."""
        super().__init__()
        self.conflict = conflict

    def compose(self) -> ComposeResult:
        c = self.conflict
        with Vertical():
            yield Static("Changed since it was set", classes="title", markup=False)
            yield Static(
                f"{c.question()}: put back {c.original}, or leave {c.now}?",
                id="conflict-question",
                markup=False,
            )
            yield Static(
                f"p puts {c.original} back, l leaves {c.now}, escape decides later.",
                classes="hint",
                markup=False,
            )
            with Horizontal():
                yield Button("Put back (p)", id=PUT_BACK, variant="warning")
                yield Button("Leave (l)", id=LEAVE, variant="primary")
                yield Button("Later (esc)", id="later")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        choice = event.button.id
        self.dismiss(choice if choice in (PUT_BACK, LEAVE) else None)

    def action_choose(self, choice: str | None) -> None:
        """Close with ``put_back``, ``leave`` or None (later)."""
        self.dismiss(choice)
