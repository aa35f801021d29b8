"""Keys: one record per command, from which the bindings, the palette and the help are made.

A :class:`Command` holds what the footer, the command palette and the help screen each say
about one key, and builds its Textual :class:`~textual.binding.Binding` (the explanation goes
in the binding's tooltip). :func:`find_clashes` checks a screen's keys against its widgets'
keys, by the project's rule: a key clashes when, on one screen, it can run two different
commands depending on which visible widget has focus, or when a widget's key is shadowed by
a priority key of the screen or app. Navigation keys inside a focused list are exempt.

A side-panel tab's keys are declared once, here (:data:`PANEL_COMMANDS`), and bound twice
from that one record: by its panel (:func:`panel_bindings`, run when it has focus) and by the
screen, limited to while that tab is shown (:func:`panel_key`), so they work from anywhere.
Both bindings carry one id (:func:`panel_id`): one command, no clash. The queue-setting keys
(``R`` ``S`` ``u`` ``U``) are the screen's own, and the Tune panel binds them too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.keys import format_key
from textual.screen import Screen

NAVIGATION_KEYS = frozenset(
    {"up", "down", "left", "right", "home", "end", "pageup", "pagedown", "enter", "escape"}
)
"""Keys a focused list may use for itself: never a clash."""

TUNE = "tab-tune"
PROCESSES = "tab-processes"
CGROUPS = "tab-cgroups"
PROBE = "tab-probe"
"""The side-panel tabs whose panels have keys."""

TUNE_READ_AHEAD = "tune.read_ahead_kb"
TUNE_SCHEDULER = "tune.scheduler"
TUNE_UNDO = "tune.undo"
TUNE_REVERT_ALL = "tune.revert_all"
"""Ids of the Tune commands that the screen and the Tune panel both bind (one command)."""

_LIBRARIES = frozenset({"textual", "textual_plotext", "builtins"})
"""Modules whose widget classes' bindings the clash check leaves out."""

_DISPLAY = {
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
    "escape": "Esc",
    "enter": "Enter",
}


@dataclass(frozen=True)
class Command:
    """One key of a screen: the binding, and what the palette and help say about it."""

    keys: str
    """Textual key names, comma-separated (``"plus,equals_sign"``); the first is shown."""
    action: str
    """The action run, as Textual writes it (``"sort(1)"``)."""
    label: str
    """Short footer text."""
    title: str
    """Command palette title."""
    explain: str
    """One line for the help screen and the palette; commands next to each other with the
    same text share one help line."""
    show: bool = True
    """Shown in the footer."""
    priority: bool = False
    """Handled before the focused widget sees the key."""
    id: str | None = None
    """Names the command when a widget binds the same key to the same command."""
    tab: str | None = None
    """The side-panel tab whose panel the command acts on (None: the screen's own). The key
    works only while that tab is shown; the palette shows the tab first."""
    panel_action: str | None = None
    """The action the panel itself binds the key to (None: no panel binds it)."""
    panel_show: bool | None = None
    """Shown in the footer while the panel has focus (None: as :attr:`show`)."""

    @property
    def palette_action(self) -> str:
        """The action the palette runs: a panel command switches to its tab first."""
        if self.tab is None:
            return self.action
        return self.action.replace("panel_key(", "panel_command(", 1)

    def binding(self) -> Binding:
        """The Textual binding."""
        return Binding(
            self.keys,
            self.action,
            self.label,
            show=self.show,
            priority=self.priority,
            tooltip=self.explain,
            id=self.id,
        )

    def panel_binding(self) -> Binding:
        """The binding the panel declares (its own action, the same id)."""
        assert self.panel_action is not None
        return Binding(
            self.keys,
            self.panel_action,
            self.label,
            show=self.show if self.panel_show is None else self.panel_show,
            tooltip=self.explain,
            id=self.id,
        )


QUIT_HELP = "quit (SIGTERM and SIGHUP also quit cleanly)"
"""The help screen's line for the quit keys."""

APP_KEYS = (
    Command("q", "quit", "Quit", "Quit", QUIT_HELP),
    Command("ctrl+c", "quit", "Quit", "Quit", QUIT_HELP, show=False, priority=True),
)
"""The app's own keys (quit); every other key is the main screen's or a widget's."""


def panel_id(tab: str, action: str) -> str:
    """The binding id of a panel's command that the screen also binds (while ``tab`` shows)."""
    return f"{tab}:{action}"


def tab_of(binding: Binding) -> str | None:
    """The side-panel tab a screen binding is limited to (made by :func:`panel_id`), or None."""
    if binding.id is None or ":" not in binding.id:
        return None
    return binding.id.split(":", 1)[0]


def panel_key(
    keys: str,
    tab: str,
    action: str,
    label: str,
    title: str,
    explain: str,
    show: bool = True,
) -> Command:
    """A key of a side-panel tab's panel that the screen binds too, so that it works from
    anywhere while the tab is shown (not only once the panel has focus); on Enter, Esc and
    the arrows, the focused list's own key, which the palette lists."""
    return Command(
        keys,
        f"panel_key({tab!r}, {action!r})",
        label,
        title,
        explain,
        show=show,
        id=panel_id(tab, action),
        tab=tab,
        panel_action=action,
    )


TUNE_HELP = "change the selected device's read-ahead / I/O scheduler (Tune tab)"
UNDO_HELP = "undo the last setting change / revert every change of this run"

READ_AHEAD_KEY = Command(
    "R",
    "tune('read_ahead_kb')",
    "Read-ahead",
    "Set read-ahead",
    TUNE_HELP,
    id=TUNE_READ_AHEAD,
    panel_action="edit('read_ahead_kb')",
)
SCHEDULER_KEY = Command(
    "S",
    "tune('scheduler')",
    "Scheduler",
    "Set I/O scheduler",
    TUNE_HELP,
    id=TUNE_SCHEDULER,
    panel_action="edit('scheduler')",
)
UNDO_KEY = Command(
    "u",
    "undo_setting",
    "Undo",
    "Undo setting change",
    UNDO_HELP,
    show=False,
    id=TUNE_UNDO,
    panel_action="undo",
    panel_show=True,
)
REVERT_ALL_KEY = Command(
    "U",
    "revert_settings",
    "Revert all",
    "Revert all settings",
    UNDO_HELP,
    show=False,
    id=TUNE_REVERT_ALL,
    panel_action="revert_all",
    panel_show=True,
)
"""The queue-setting keys: the screen's own (from anywhere), bound by the Tune panel too."""


PANEL_COMMANDS: dict[str, tuple[Command, ...]] = {
    TUNE: (
        READ_AHEAD_KEY,
        SCHEDULER_KEY,
        panel_key(
            "A",
            TUNE,
            "toggle_advanced",
            "Advanced",
            "Tune: advanced settings",
            "Tune: show / hide nr_requests, max_sectors_kb, nomerges, rq_affinity, wbt_lat_usec",
        ),
        UNDO_KEY,
        REVERT_ALL_KEY,
        panel_key(
            "E",
            TUNE,
            "export",
            "Export",
            "Tune: export changes",
            "Tune: write the changes in effect as udev rules and a shell script",
        ),
    ),
    PROCESSES: (
        panel_key(
            "o",
            PROCESSES,
            "toggle_only_active",
            "Only I/O",
            "Processes: only those doing I/O",
            "Processes: only those doing I/O now, or all",
        ),
        panel_key(
            "t",
            PROCESSES,
            "toggle_totals",
            "Totals",
            "Processes: totals / rates",
            "Processes: bytes since the tab opened, or rates",
        ),
        panel_key(
            "left",
            PROCESSES,
            "sort(-1)",
            "Sort <",
            "Processes: sort by previous column",
            "Processes: sort by the previous column",
            show=False,
        ),
        panel_key(
            "right",
            PROCESSES,
            "sort(1)",
            "Sort >",
            "Processes: sort by next column",
            "Processes: sort by the next column",
            show=False,
        ),
        panel_key(
            "i",
            PROCESSES,
            "invert_sort",
            "Invert",
            "Processes: invert sort",
            "Processes: reverse the sort order",
            show=False,
        ),
        panel_key(
            "f",
            PROCESSES,
            "filter",
            "Find process",
            "Processes: find",
            "Processes: filter by command, user, pid or cgroup",
        ),
        panel_key(
            "v",
            PROCESSES,
            "toggle_device_only",
            "This device",
            "Processes: this device only",
            "Processes: only the selected device's issuers, with their device latency (traced "
            "as root), or every process",
        ),
        panel_key(
            "enter",
            PROCESSES,
            "details",
            "Threads/files",
            "Processes: threads and open files",
            "Processes: threads and open block-device files of the selected process",
        ),
        panel_key(
            "D",
            PROCESSES,
            "toggle_delayacct",
            "Delay acct",
            "Processes: delay accounting",
            "Processes: switch kernel delay accounting (IO%) on or off (root; a host setting, "
            "journaled: u undoes it, quit and restore offer it)",
        ),
        panel_key(
            "escape",
            PROCESSES,
            "close",
            "Close",
            "Processes: close details / filter",
            "Processes: close the details, else clear the filter",
            show=False,
        ),
    ),
    CGROUPS: (
        panel_key(
            "o",
            CGROUPS,
            "toggle_only_active",
            "Only I/O",
            "Cgroups: only those doing I/O",
            "Cgroups: only those doing I/O now, or all",
        ),
        panel_key(
            "left",
            CGROUPS,
            "sort(-1)",
            "Sort <",
            "Cgroups: sort by previous column",
            "Cgroups: sort by the previous column",
            show=False,
        ),
        panel_key(
            "right",
            CGROUPS,
            "sort(1)",
            "Sort >",
            "Cgroups: sort by next column",
            "Cgroups: sort by the next column",
            show=False,
        ),
        panel_key(
            "i",
            CGROUPS,
            "invert_sort",
            "Invert",
            "Cgroups: invert sort",
            "Cgroups: reverse the sort order",
            show=False,
        ),
        panel_key(
            "f",
            CGROUPS,
            "filter",
            "Find cgroup",
            "Cgroups: find",
            "Cgroups: filter by path or name",
        ),
        panel_key(
            "enter",
            CGROUPS,
            "members",
            "Processes",
            "Cgroups: list its processes",
            "Cgroups: the processes of the selected cgroup",
        ),
        panel_key(
            "escape",
            CGROUPS,
            "close",
            "Close",
            "Cgroups: close processes / filter",
            "Cgroups: close the process list, else clear the filter",
            show=False,
        ),
    ),
    PROBE: (
        panel_key(
            "enter",
            PROBE,
            "start",
            "Start probe",
            "Probe: start",
            "Probe: start the highlighted preset (Enter on the Probe tab)",
        ),
        panel_key(
            "x",
            PROBE,
            "cancel",
            "Cancel probe",
            "Probe: cancel",
            "Probe: cancel the running probe (its file is removed)",
        ),
        panel_key(
            "d",
            PROBE,
            "use_device",
            "Probe device",
            "Probe: target the selected device",
            "Probe: target the device selected in the table (read presets run read-only)",
        ),
    ),
}
"""Every side-panel key, by tab, in the order its panel binds them: the panel's bindings
(:func:`panel_bindings`) and the screen's (:data:`PANEL_KEYS`) are made from these."""

PANEL_KEYS: tuple[Command, ...] = tuple(
    c
    for commands in PANEL_COMMANDS.values()
    for c in commands
    if c.tab is not None and c.keys not in NAVIGATION_KEYS
)
"""The panels' letter keys, bound on the screen too (while their tab is shown)."""

PANEL_PALETTE: tuple[Command, ...] = tuple(
    c for commands in PANEL_COMMANDS.values() for c in commands if c.keys in NAVIGATION_KEYS
)
"""Panel actions on Enter, Esc and the arrows: the focused list's own keys, so they are not
bound on the screen; the palette lists them."""


def panel_bindings(tab: str) -> list[BindingType]:
    """The bindings of ``tab``'s panel, from :data:`PANEL_COMMANDS`."""
    return [c.panel_binding() for c in PANEL_COMMANDS[tab]]


def bindings(commands: Iterable[Command]) -> list[BindingType]:
    """The bindings of ``commands``, in order."""
    return [c.binding() for c in commands]


def as_binding(item: BindingType) -> Binding:
    """A binding, from a Binding or a (key, action[, description]) tuple."""
    return item if isinstance(item, Binding) else Binding(*item)


def key_display(key: str) -> str:
    """How the help writes a Textual key name: ``+``, ``/``, ``Ctrl-C``, ``PgUp``."""
    if key in _DISPLAY:
        return _DISPLAY[key]
    if key.startswith("ctrl+"):
        return "Ctrl-" + key.removeprefix("ctrl+").upper()
    return format_key(key)


def _first_key(binding: Binding) -> str:
    return binding.key.split(",")[0].strip()


def help_lines(items: Iterable[BindingType]) -> list[tuple[str, str]]:
    """(keys, explanation) lines, from the bindings' tooltips (or their descriptions).

    Neighbouring bindings with the same explanation share a line: ``+ / -``.
    """
    lines: list[tuple[list[str], str]] = []
    for binding in map(as_binding, items):
        text = binding.tooltip or binding.description
        key = key_display(_first_key(binding))
        if lines and lines[-1][1] == text:
            lines[-1][0].append(key)
        else:
            lines.append(([key], text))
    return [(" / ".join(keys) if len(keys) == 2 else " ".join(keys), text) for keys, text in lines]


def palette_entries(commands: Iterable[Command]) -> list[tuple[str, str, str]]:
    """(title, help, action) per command, for the command palette."""
    return [
        (c.title, f"{c.explain} ({key_display(c.keys.split(',')[0])})", c.palette_action)
        for c in commands
    ]


def own_bindings(node: DOMNode) -> list[Binding]:
    """The bindings a widget's own classes (this package's) declare, inherited ones too."""
    return own_bindings_of(type(node))


def own_bindings_of(widget_class: type[DOMNode]) -> list[Binding]:
    """The bindings a widget class and its bases declare, leaving out Textual's own widgets.

    A text box's editing keys (Ctrl-C copies) are the library's: the rule is about ours.
    """
    found: list[Binding] = []
    for cls in widget_class.__mro__:
        if cls.__module__.split(".")[0] in _LIBRARIES:
            continue
        found += map(as_binding, cls.__dict__.get("BINDINGS", ()))
        if cls.__dict__.get("inherit_bindings", True) is False:
            break
    return found


def _split(binds: Iterable[Binding]) -> list[tuple[str, Binding]]:
    return [(k.strip(), b) for b in binds for k in b.key.split(",") if k.strip()]


def _same_command(a: Binding, b: Binding) -> bool:
    return a.id is not None and a.id == b.id


def _apart(first: str, second: str, tabs: Mapping[str, tuple[str, str]]) -> bool:
    a, b = tabs.get(first), tabs.get(second)
    return a is not None and b is not None and a[0] == b[0] and a[1] != b[1]


def find_clashes(
    upper: Mapping[str, Sequence[Binding]],
    widgets: Mapping[str, Sequence[Binding]],
    tabs: Mapping[str, tuple[str, str]] | None = None,
) -> list[str]:
    """Key clashes on one screen, one line each (empty: none).

    Args:
        upper: The screen's and the app's bindings, by a name for each (``"MainScreen"``).
        widgets: The bindings of each widget that can have focus (or contain one), by name.
        tabs: (tabbed container, tab) of widgets inside tabs: two widgets on different tabs
            of one container are never visible together, so their keys cannot clash.
    """
    problems: list[str] = []
    upper_keys = [(name, k, b) for name, binds in upper.items() for k, b in _split(binds)]
    widget_keys = {name: _split(binds) for name, binds in widgets.items()}
    for name, keys in widget_keys.items():
        for key, binding in keys:
            if key in NAVIGATION_KEYS:
                continue
            where = (tabs or {}).get(name)
            for owner, up_key, up in upper_keys:
                if up_key != key or _same_command(binding, up):
                    continue
                scope = tab_of(up)
                if scope is not None and where is not None and where[1] != scope:
                    continue  # the screen's key for another tab's panel: never both shown
                if up.priority:
                    problems.append(
                        f"{key_display(key)}: {name}'s {binding.action!r} is shadowed by "
                        f"{owner}'s priority {up.action!r}"
                    )
                else:
                    problems.append(
                        f"{key_display(key)}: runs {name}'s {binding.action!r} when it has "
                        f"focus, else {owner}'s {up.action!r}"
                    )
    names = list(widget_keys)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            if _apart(first, second, tabs or {}):
                continue
            for key, a in widget_keys[first]:
                if key in NAVIGATION_KEYS:
                    continue
                for other_key, b in widget_keys[second]:
                    if other_key == key and not _same_command(a, b):
                        problems.append(
                            f"{key_display(key)}: runs {first}'s {a.action!r} or "
                            f"{second}'s {b.action!r}, depending on focus"
                        )
    return problems


def screen_clashes(screen: Screen[Any]) -> list[str]:
    """:func:`find_clashes` for a mounted screen: its keys, the app's, and its widgets'."""
    upper = {type(screen).__name__: own_bindings(screen), "the app": own_bindings(screen.app)}
    widgets: dict[str, list[Binding]] = {}
    tabs: dict[str, tuple[str, str]] = {}
    for node in screen.walk_children(with_self=False):
        binds = own_bindings(node)
        if not binds:
            continue
        name = f"{type(node).__name__}#{node.id}" if node.id else type(node).__name__
        widgets[name] = binds
        tab = tab_holding(node)
        if tab is not None:
            tabs[name] = tab
    return find_clashes(upper, widgets, tabs)


def tab_holding(node: DOMNode) -> tuple[str, str] | None:
    """(tabbed container, tab) of the tab ``node`` is in, if any: a Textual ``TabPane``, or
    a panel of a container that says which tab each child is (``tab_of(child)``, as the main
    screen's side panel does)."""
    from textual.widgets import TabPane  # only the clash check needs it

    for inner in (node, *node.ancestors):
        if isinstance(inner, TabPane):
            return str(id(inner.parent)), str(inner.id)
        tab_of_child = getattr(inner.parent, "tab_of", None)
        if callable(tab_of_child):
            tab = tab_of_child(inner)
            if isinstance(tab, str):
                return str(id(inner.parent)), tab
    return None
