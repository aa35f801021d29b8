"""Make the README's screenshots from the real app, driven by Textual's Pilot.

The host is a SyntheticTree (tests/support/synthetic.py): a fake /proc + /sys with a dozen
disks whose counters a thread advances in real time, so the app's own sampler thread reads
live-looking figures. Before the app starts, three minutes of history are recorded for the
charts by the real Sampler and the real iostat -x formulas over the same tree (advanced one
simulated second per sample), so the charts are not empty.

Writes screenshots/NAME.svg (Textual's own export) and screenshots/NAME.png (rsvg-convert,
when installed: ``apt-get install librsvg2-bin``).

Usage: ``.venv/bin/python scripts/screenshots.py [--out screenshots]`` (``make screenshots``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import html
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import MappingProxyType

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rich.cells import cell_len  # noqa: E402
from textual.pilot import Pilot  # noqa: E402

from iotop_plus.config import Config  # noqa: E402
from iotop_plus.record.store import FrameStore  # noqa: E402
from iotop_plus.sampling.frame.live import LiveSource  # noqa: E402
from iotop_plus.tui.app import IotopPlusApp, make_app  # noqa: E402
from tests.support.synthetic import SyntheticTree  # noqa: E402

DEVICES = 12
"""Disks on the synthetic host: enough to fill the table at 120x36."""
HISTORY_S = 180
"""Seconds of chart history recorded before the app starts."""
TICKS_PER_S = 5
"""Steps per second of the synthetic load (each step adds one burst of I/O)."""

Scene = Callable[[Pilot[int]], Awaitable[None]]


def prefill_history(tree: SyntheticTree, seconds: int) -> FrameStore:
    """Frames of ``seconds`` one-second intervals, ending now, measured on ``tree``."""
    source = LiveSource(tree.roots)
    store = FrameStore(roots=tree.roots)
    start, clock = time.time() - seconds, time.monotonic() - seconds
    try:
        for i in range(seconds + 1):
            for _ in range(TICKS_PER_S):  # the same steps the live thread takes each second
                tree.advance(1.0 / TICKS_PER_S)
            frame = source.next_frame()
            # Measured a few ms apart, the samples stand for a second each: the rates too.
            sample = dataclasses.replace(frame.sample, wall_time=start + i, monotonic=clock + i)
            rates = {n: r._replace(elapsed_s=1.0) if r else r for n, r in frame.rates.items()}
            store.append(
                dataclasses.replace(
                    frame,
                    sample=sample,
                    rates=MappingProxyType(rates),
                    elapsed_s=1.0 if frame.elapsed_s else frame.elapsed_s,
                )
            )
    finally:
        source.close()
    return store


def live(tree: SyntheticTree, stop: threading.Event) -> threading.Thread:
    """A thread that advances ``tree`` in real time until ``stop`` is set."""

    def run() -> None:
        while not stop.wait(1.0 / TICKS_PER_S):
            tree.advance(1.0 / TICKS_PER_S)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def settle(pilot: Pilot[int], app: IotopPlusApp, ticks: int = 3) -> None:
    """Wait until the app has shown ``ticks`` samples (so rates are on screen)."""
    deadline = time.monotonic() + 15
    while app.frames_received < ticks and time.monotonic() < deadline:
        await pilot.pause(0.1)
    await pilot.pause(0.3)


async def shoot(
    tree: SyntheticTree, size: tuple[int, int], name: str, out: Path, scene: Scene | None
) -> Path:
    """Run the app at ``size``, play ``scene``, and save ``out/name.svg``."""
    history = prefill_history(tree, HISTORY_S)
    app = make_app(tree.roots, Config(), store=history, interval=1.0)
    stop = threading.Event()
    thread = live(tree, stop)  # only once the prefill is done: one writer at a time
    try:
        async with app.run_test(size=size) as pilot:
            await settle(pilot, app)
            if scene is not None:
                await scene(pilot)
                await pilot.pause(0.5)
            path = app.save_screenshot(filename=f"{name}.svg", path=str(out))
    finally:
        stop.set()
        thread.join()
    return Path(path)


async def press(pilot: Pilot[int], *keys: str) -> None:
    await pilot.press(*keys)
    await pilot.pause(0.3)


async def scrub_back(pilot: Pilot[int]) -> None:
    """Let the in-memory history gather some frames, then step back one (``[``)."""
    await pilot.pause(6.0)
    await press(pilot, "down", "left_square_bracket")


SCENES: list[tuple[str, tuple[int, int], Scene | None]] = [
    ("main-120x36", (120, 36), lambda p: press(p, "down", "down")),
    ("main-80x24", (80, 24), lambda p: press(p, "down")),
    ("panel-80x24", (80, 24), lambda p: press(p, "down", "3")),
    ("extended-columns-120x36", (120, 36), lambda p: press(p, "c")),
    ("paused-120x36", (120, 36), lambda p: press(p, "space")),
    ("help-120x36", (120, 36), lambda p: press(p, "question_mark")),
    ("history-120x36", (120, 36), lambda p: scrub_back(p)),
    ("main-200x50", (200, 50), lambda p: press(p, "down")),
]


PNG_FONT = '"DejaVu Sans Mono", "DejaVu Sans"'
"""The PNGs' font: DejaVu Sans Mono's box-drawing and bold glyphs fit Textual's 12.2 px cell.
Its braille (absent from fonts-dejavu 2.37's Sans Mono) comes from DejaVu Sans, named
here so the fallback is the same on every machine; each glyph is put in its own cell."""

_TEXT = re.compile(
    r'<text (class="[^"]*") x="([\d.]+)" (y="[\d.]+") textLength="([\d.]+)"([^>]*)>([^<]*)</text>'
)
"""One run of text in Textual's export (Rich's ``export_svg``): class, x, y, textLength."""


def _cell_placed(match: re.Match[str]) -> str:
    """One ``<text>`` of the export with each character in a ``<tspan>`` at its own cell."""
    cls, x, y, length, rest, escaped = match.groups()
    text = html.unescape(escaped)
    width = float(length) / max(cell_len(text), 1)
    left = float(x)
    spans = []
    for char in text:
        # The class again on each tspan: librsvg draws a text's underline only there.
        spans.append(f'<tspan {cls} x="{left:.2f}">{html.escape(char)}</tspan>')
        left += cell_len(char) * width
    return f'<text {cls} {y}{rest} xml:space="preserve">{"".join(spans)}</text>'


def png_svg(svg: str) -> str:
    """Textual's SVG as rsvg-convert should draw it for the PNG.

    Textual places a run of text by its first cell and ``textLength``, which librsvg (2.54)
    ignores, and it asks for Fira Code, which has no braille. librsvg also strips leading
    non-breaking spaces. So with this machine's fonts a run drifts by every glyph whose
    advance is not the cell's (a chart's braille spills out of its box) and a run that
    starts with spaces moves left onto its neighbour (``synthetic6.1.0``, right-aligned
    numbers drawn left-aligned). Here every character gets its cell's x (librsvg 2.54
    ignores a list of x on one text, but not a tspan's x), whitespace is kept, and the
    font is :data:`PNG_FONT`. The SVG files themselves are left as Textual wrote them.
    """
    svg = svg.replace("font-family: Fira Code, monospace;", f"font-family: {PNG_FONT};")
    return _TEXT.sub(_cell_placed, svg)


def to_png(svg: Path) -> Path | None:
    """Convert with rsvg-convert; None (with a note) when it is not installed."""
    tool = shutil.which("rsvg-convert")
    if tool is None:
        print("note: rsvg-convert not found (apt-get install librsvg2-bin): SVG only")
        return None
    png = svg.with_suffix(".png")
    with tempfile.TemporaryDirectory(prefix="png-") as tmp:
        placed = Path(tmp) / svg.name
        placed.write_text(png_svg(svg.read_text(encoding="utf-8")), encoding="utf-8")
        subprocess.run([tool, "--zoom", "1.0", "-o", str(png), str(placed)], check=True)
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "screenshots")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="shots-") as tmp:
        # Three quarters busy, so the table shows idle disks too.
        tree = SyntheticTree(Path(tmp), DEVICES, busy_fraction=0.75)
        for name, size, scene in SCENES:
            svg = asyncio.run(shoot(tree, size, name, args.out, scene))
            png = to_png(svg)
            print(f"wrote {svg}" + (f" and {png.name}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
