"""The header's pressure gauge: I/O some/full avg10 with a trend arrow, memory and cpu some.

It sits at the right of the header line (its own widget, so the header's text stays the
header's). Its colour comes from a class (``psi-ok``, ``psi-warn``, ``psi-high``) that app.tcss
styles; the thresholds that pick the class are here. The trend compares avg10 with avg60:
pressure of the last 10 s above that of the last minute is rising, whatever the frame rate,
live or replayed.
"""

from __future__ import annotations

from textual.widgets import Static

from iotop_plus.sampling.pressure import Pressure, PressureLine
from iotop_plus.tui.engine.refresh_batch import BatchedRepaint
from iotop_plus.tui.shown import Shown

WARN_SOME = 10.0
"""io some avg10 (%) from which the gauge is ``psi-warn``."""
WARN_FULL = 5.0
"""io full avg10 (%) from which the gauge is ``psi-warn``."""
HIGH_SOME = 40.0
"""io some avg10 (%) from which the gauge is ``psi-high``."""
HIGH_FULL = 20.0
"""io full avg10 (%) from which the gauge is ``psi-high``."""
TREND_POINTS = 1.0
"""avg10 this many points above (below) avg60 shows a rising (falling) arrow."""
WIDE = 140
"""From this many columns of screen, memory and cpu are shown too, and the words in full."""

LEVELS = ("psi-ok", "psi-warn", "psi-high", "psi-missing")
MISSING_TEXT = "no PSI"
"""What the gauge says where the kernel has no pressure figures (the help says why)."""

HELP = (
    "Pressure (PSI, /proc/pressure): IO some = % of the last 10 s in which at least one task "
    "waited on I/O; IO full = % in which every runnable task waited on I/O at once (time "
    "lost outright). The arrow compares avg10 with avg60. Unlike %iowait, which only counts "
    "idle CPUs with I/O pending (it drops to 0 when the CPUs are busy, and says nothing about "
    "which tasks wait), PSI measures the tasks' lost time itself. mem and cpu are 'some' too. "
    "'no PSI': kernel without CONFIG_PSI, or booted with psi=0 (RHEL 8: add psi=1). Yellow: "
    f"some >= {WARN_SOME:g}% or full >= {WARN_FULL:g}%; red: some >= {HIGH_SOME:g}% or "
    f"full >= {HIGH_FULL:g}%."
)


def trend(line: PressureLine | None) -> str:
    """``↑``, ``↓`` or ``→``: avg10 against avg60."""
    if line is None:
        return ""
    if line.avg10 > line.avg60 + TREND_POINTS:
        return "↑"
    if line.avg10 < line.avg60 - TREND_POINTS:
        return "↓"
    return "→"


def level(pressure: Pressure | None) -> str:
    """The class for the gauge's colour."""
    io = pressure.io if pressure is not None else None
    if io is None:
        return "psi-missing"
    some = io.some.avg10 if io.some else 0.0
    full = io.full.avg10 if io.full else 0.0
    if some >= HIGH_SOME or full >= HIGH_FULL:
        return "psi-high"
    if some >= WARN_SOME or full >= WARN_FULL:
        return "psi-warn"
    return "psi-ok"


def gauge_text(pressure: Pressure | None, width: int) -> str:
    """``IO some 1.2% full 0.3% ↑  mem 0.0%  cpu 4.1%`` (wide) or ``IO 1.2/0.3% ↑`` (80 columns)."""
    io = pressure.io if pressure is not None else None
    if pressure is None or io is None:
        return MISSING_TEXT
    some = f"{io.some.avg10:.1f}" if io.some else "-"
    full = f"{io.full.avg10:.1f}" if io.full else "-"
    arrow = trend(io.some)
    if width < WIDE:
        return f"IO {some}/{full}% {arrow}".rstrip()
    parts = [f"IO some {some}% full {full}% {arrow}".rstrip()]
    for name, short in (("memory", "mem"), ("cpu", "cpu")):
        res = pressure.resources.get(name)
        if res is not None and res.some is not None:
            parts.append(f"{short} {res.some.avg10:.1f}%")
    return "  ".join(parts)


class PressureGauge(BatchedRepaint, Static):
    """Host-wide pressure from the frame shown; hidden until a frame carries pressure."""

    DEFAULT_CSS = """
    PressureGauge { width: auto; height: 1; padding: 0 1; display: none; }
    PressureGauge.shown { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.pressure: Pressure | None = None
        """The pressure shown."""
        self._shown = ""

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: show its pressure (fitted to the app's width)."""
        if shown.frame is not None:
            self.show(shown.frame.pressure, self.app.size.width)

    def show(self, pressure: Pressure | None, screen_width: int) -> None:
        """Show ``pressure`` (None: the frame did not read it, so the gauge stays hidden)."""
        self.pressure = pressure
        if pressure is None:
            self.remove_class("shown")
            return
        text = gauge_text(pressure, screen_width)
        self.add_class("shown")
        chosen = level(pressure)
        for name in LEVELS:
            self.set_class(name == chosen, name)
        if pressure.io is None and pressure.problem:
            self.tooltip = pressure.problem
        if text != self._shown:
            # Its width follows its text: a reflow only when the length changed.
            self.update(text, layout=len(text) != len(self._shown))
            self._shown = text

    @property
    def text(self) -> str:
        """What the gauge says."""
        return self._shown
