"""The Device tab: what the selected device is, and its queue settings as they read now."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from iotop_plus.devices.settings import SettingValue
from iotop_plus.sampling.diskstats import printable
from iotop_plus.sampling.frame import Frame
from iotop_plus.sampling.inventory import BlockDevice
from iotop_plus.sampling.units import lsblk_size
from iotop_plus.tui.health_lines import health_facts
from iotop_plus.tui.issuer_lines import issuer_facts
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


def _shape(facts: object, width: int, console: Console) -> object:
    """What decides the facts' height at ``width`` cells: their labels and how many lines
    each value wraps to beside them."""
    if not isinstance(facts, list) or not facts:
        return facts
    label_w = max(cell_len(label) for label, _ in facts)
    value_w = max(1, width - label_w - 1)
    return [
        (label, len(Text(printable(value), overflow="fold").wrap(console, value_w)))
        for label, value in facts
    ]


class DevicePanel(VerticalScroll):
    """The facts and queue settings of the selected device."""

    DEFAULT_CSS = """
    DevicePanel { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.device: BlockDevice | None = None
        """The device shown."""
        self.settings: tuple[SettingValue, ...] | None = None
        """Its settings as last read."""
        self._shown: object = None

    def compose(self) -> ComposeResult:
        yield Static("No device selected.", id="device-facts")

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
            facts = verdict_facts(dev.name, frame) + who + facts  # why first: the question asked
            facts += why_facts(dev.name, frame)
            facts += health_facts(dev.name, frame)
        if facts == self._shown:
            return
        # Figures that change every frame (memory, the verdict) mostly wrap to as many lines
        # as before: then the height stays and no reflow of the screen is needed (#25).
        static = self.query_one("#device-facts", Static)
        width = static.size.width
        layout = _shape(facts, width, self.app.console) != _shape(
            self._shown, width, self.app.console
        )
        self._shown = facts
        if facts is None:
            static.update("No device selected.")
            return
        table = Table.grid(padding=(0, 1))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        for label, value in facts:
            table.add_row(label, Text(printable(value)))
        static.update(table, layout=layout)

    @property
    def text(self) -> str:
        """The facts as plain lines (for tests)."""
        if not isinstance(self._shown, list):
            return ""
        return "\n".join(f"{k}: {v}" for k, v in self._shown)
