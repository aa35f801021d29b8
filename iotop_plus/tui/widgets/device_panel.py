"""The Device tab: what the selected device is, and its queue settings as they read now."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widgets import Static

from iotop_plus.devices.settings import SettingValue
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.topology.inventory import BlockDevice
from iotop_plus.text import lsblk_size, printable
from iotop_plus.tui.engine.refresh_batch import BatchedRepaint
from iotop_plus.tui.health_lines import health_facts
from iotop_plus.tui.issuer_lines import issuer_facts
from iotop_plus.tui.shown import Shown
from iotop_plus.tui.why_lines import verdict_facts, why_facts


def device_facts(
    dev: BlockDevice, settings: Sequence[SettingValue] | None
) -> list[tuple[str, str]]:
    """(label, value) lines the Device tab shows, in order."""
    facts: list[tuple[str, str]] = [("device", f"/dev/{dev.name}  ({dev.kind})")]
    if dev.dm_name:
        facts.append(("dm name", f"/dev/mapper/{dev.dm_name}"))
    if dev.md_level:
        facts.append(("md level", dev.md_level))
    facts += [
        ("model", dev.model or "-"),
        ("vendor", dev.vendor or "-"),
        ("serial", dev.serial or "-"),
        ("size", lsblk_size(dev.size_bytes)),
        # What the device is, from transport, driver and rotational together: the kernel's
        # rotational flag alone calls every virtio disk a spinning one.
        ("type", dev.class_text),
        (
            "block size",
            f"logical {dev.logical_block_size or '?'} B, "
            f"physical {dev.physical_block_size or '?'} B",
        ),
    ]
    by_name = {s.setting.name: s for s in settings or ()}
    for name in ("scheduler", "read_ahead_kb", "nr_requests", "max_sectors_kb"):
        value = by_name.get(name)
        if value is None:
            facts.append((name, "…"))
            continue
        text = value.display
        if value.value is not None and value.queue_device != value.device:
            text += f" (of {value.queue_device})"
        elif value.value is None and value.reason:
            text = value.reason
        facts.append((name, text))
    facts.append(
        (
            "mounts",
            ", ".join(f"{m} ({f})" for m, f in zip(dev.mounts, dev.fstypes, strict=False))
            or ("swap" if dev.swap else "-"),
        )
    )
    if dev.partitions:
        facts.append(("partitions", " ".join(dev.partitions)))
    if dev.parent:
        facts.append(("parent", dev.parent))
    facts.append(("holders", " ".join(dev.holders) or "-"))
    facts.append(("slaves", " ".join(dev.slaves) or "-"))
    if dev.kind == "loop":
        facts.append(("backing file", dev.loop_backing_file or "(none)"))
    if settings:
        reasons = {s.reason for s in settings if s.present and s.reason}
        if reasons:
            facts.append(("settings", "; ".join(sorted(reasons))))
    return facts


FactLine = tuple[str, str]
"""One line of the facts: the label's cell (the label, or blank under it, padded to the
label column) and that line of the value (padded to the value column)."""


def fact_lines(facts: Sequence[tuple[str, str]], width: int, console: Console) -> list[FactLine]:
    """The facts as two columns, each value wrapped beside its label, as a grid Table would
    draw them, at a small part of the cost: the panel repaints every frame.

    Plain strings, not a Rich ``Text``: a frame that moves one figure made the whole text
    again, split it into lines and compared each line's spans (docs/performance.md)."""
    label_w = max(cell_len(label) for label, _ in facts)
    values = [printable(value) for _, value in facts]
    # The value column: as wide as the widest value, at most what is left beside the labels.
    widest = max(cell_len(value) for value in values)
    value_w = min(widest, max(1, width - label_w - 1)) if width > 0 else widest
    blank = " " * (label_w + 1)
    lines: list[FactLine] = []
    for (label, _), value in zip(facts, values, strict=True):
        for i, line in enumerate(_wrapped(value, value_w, console)):
            lines.append((label.ljust(label_w + 1) if i == 0 else blank, line))
    return lines


@functools.lru_cache(maxsize=512)
def _wrapped(value: str, width: int, console: Console) -> tuple[str, ...]:
    """``value`` wrapped (words, long ones folded) and padded to ``width`` cells: most facts
    are the same from frame to frame, so each is wrapped once."""
    lines = Text(value, overflow="fold").wrap(console, width)
    return tuple(line.plain + " " * (width - line.cell_len) for line in lines)


LABEL_STYLE = Style(bold=True)
_NO_LINE = Strip([])
"""The blank lines that keep the facts' height (one strip: the same from frame to frame)."""


class _Facts(BatchedRepaint, Static):
    """The facts' lines, wrapped again when its width changes (a scroll bar came or went).

    Drawn line by line (Textual's Line API) from the wrapped lines, so a frame that changes
    one figure repaints that line only."""

    def __init__(self, text: str, *, id: str | None = None) -> None:
        super().__init__(text, id=id)
        self._strips: list[Strip] | None = None
        self._lines: list[FactLine] = []
        self._shown_width = 0

    def on_resize(self) -> None:
        panel = self.parent
        if isinstance(panel, DevicePanel):
            panel._paint()

    def show_lines(self, lines: list[FactLine] | None, keep_height: bool = False) -> None:
        """Show ``lines`` (None: the placeholder); only the lines that changed are painted,
        and a reflow is asked for only when the number of lines changed.

        With ``keep_height`` (the same device at the same width), lines that wrap to fewer
        than shown keep the height with blank lines at the end: the memory line wrapping to
        3 lines, then 2 (``writeback 64K``, then ``0``) would ask every frame of a writing
        host for a layout pass, which repaints the whole panel column."""
        if lines is None:
            self._strips, self._lines = None, []
            self.update("No device selected.")
            return
        old, was = self._strips, self._lines
        kept = min(len(was), len(old or ()))  # old may end in blank lines (keep_height)
        strips = [
            old[y]
            if old is not None and y < kept and line == was[y]
            else Strip([Segment(line[0], LABEL_STYLE), Segment(line[1])])
            for y, line in enumerate(lines)
        ]
        same_width = self._shown_width == self.size.width
        if keep_height and same_width and old is not None and len(strips) < len(old):
            strips += [_NO_LINE] * (len(old) - len(strips))
        self._shown_width = self.size.width
        self._strips, self._lines = strips, lines
        if old is None or len(old) != len(strips):
            self.refresh(layout=True)
            return
        width = max(1, self.size.width)
        changed = [
            Region(0, y, width, 1)
            for y, (a, b) in enumerate(zip(old, strips, strict=True))
            if a is not b and a != b
        ]
        if changed:
            self.refresh(*changed)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self._strips is None:
            return super().get_content_height(container, viewport, width)
        return len(self._strips)

    def render_line(self, y: int) -> Strip:
        if self._strips is None:
            return super().render_line(y)
        width, style = self.size.width, self.visual_style.rich_style  # the theme's, now
        if y < len(self._strips):
            return self._strips[y].apply_style(style).crop_extend(0, width, style)
        return Strip.blank(width, style)


class DevicePanel(VerticalScroll):
    """The facts and queue settings of the selected device, with the "why" lines of the
    frame on screen (its verdict is judged off the UI thread and comes with the frame)."""

    DEFAULT_CSS = """
    DevicePanel { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.selected: str | None = None
        """The selected device's name."""
        self.device: BlockDevice | None = None
        """The device shown."""
        self.settings: tuple[SettingValue, ...] | None = None
        """Its settings as last read."""
        self.frame: Frame | None = None
        """The frame on screen."""
        self._shown: object = None
        self._painted_name: str | None = None
        """The device whose facts were painted last (its height is kept, see show_lines)."""

    def compose(self) -> ComposeResult:
        yield _Facts("No device selected.", id="device-facts")

    def set_device(self, name: str | None) -> None:
        """The table's selection moved to ``name`` (its settings are not read yet)."""
        if name != self.selected:
            self.selected, self.settings = name, None
        self._show_selected()

    def show_settings(self, name: str | None, settings: Sequence[SettingValue] | None) -> None:
        """``name`` is selected, with its queue settings as read now (None: not yet)."""
        self.selected = name
        self.settings = tuple(settings) if settings is not None else None
        self._show_selected()

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: its memory and verdict lines move with it."""
        self.frame = shown.frame
        self._show_selected()

    def _show_selected(self) -> None:
        frame, name = self.frame, self.selected
        dev = frame.inventory.get(name) if frame is not None and name is not None else None
        self.show(dev, self.settings, frame)

    def show(
        self,
        dev: BlockDevice | None,
        settings: Sequence[SettingValue] | None,
        frame: Frame | None = None,
    ) -> None:
        """Show ``dev`` (with the memory and verdict lines of ``frame``); repaints only when
        something changed."""
        self.device = dev
        self.settings = tuple(settings) if settings is not None else None
        facts = device_facts(dev, settings) if dev is not None else None
        if facts is not None and dev is not None:
            who = issuer_facts(dev.name, frame)  # then who: the second question
            why = verdict_facts(dev.name, frame)
            # Health right after who, so it is on screen at 80x24 without scrolling.
            health = health_facts(dev.name, frame)
            facts = why + who + health + facts  # why first: the question asked
            facts += why_facts(dev.name, frame)
        if facts == self._shown:
            return
        self._shown = facts
        self._paint()

    def _paint(self) -> None:
        static = self.query_one("#device-facts", _Facts)
        facts = self._shown
        if not isinstance(facts, list) or not facts:
            static.show_lines(None)
            return
        # Figures that change every frame (memory, the verdict) mostly wrap to as many lines
        # as in the last frame: then the height stays and no reflow of the screen is needed.
        name = self.device.name if self.device is not None else None
        same_device, self._painted_name = name == self._painted_name, name
        static.show_lines(fact_lines(facts, static.size.width, self.app.console), same_device)

    @property
    def text(self) -> str:
        """The facts as plain lines (for tests)."""
        if not isinstance(self._shown, list):
            return ""
        return "\n".join(f"{k}: {v}" for k, v in self._shown)
