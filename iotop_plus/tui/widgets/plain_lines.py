"""A Line-API widget's lines painted as they are, where the widget's styles add nothing to them.

Textual paints a widget through its styles cache: for every line painted it calls the
widget's ``render_line``, then, for borders, padding, outline, tint, opacity and hatching,
wraps the line in a new Strip (six caches each), keeps it, and passes it through the app's
line filters. A widget with none of those styles gets back its own segments in a new Strip.
The charts, the header and the device table repaint lines every frame: :func:`plain_lines`
gives Textual the widget's own strips, through the same line filters (a line the ANSI colour
filter would give back unchanged is not copied), and falls back to Textual's path as soon as a
style would change them. In-process, a frame's paint took
1.05-1.12 ms before, 0.84-0.98 ms after (``benchmarks/bench_frame_cost.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.color import Color as RichColor
from textual.filter import ANSIToTruecolor
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from iotop_plus.tui.widgets.style_memo import background_of


def styles_add_nothing(widget: Widget) -> bool:
    """Whether Textual's styles cache would paint ``widget``'s lines as ``render_line`` gives
    them: no border, padding or outline, no tint, full opacity and text opacity, no hatch."""
    styles = widget.styles
    return (
        not any(styles.gutter)
        and not any(kind for kind, _ in styles.outline)
        and styles.tint.a == 0
        and styles.text_opacity == 1.0
        and (not styles.has_rule("hatch") or styles.hatch == "none")
        and widget.opacity == 1.0
    )


def plain_lines(
    widget: Widget, crop: Region, width: int, render_line: Callable[[int], Strip]
) -> list[Strip] | None:
    """The lines of ``crop`` as ``render_line`` gives them (``width`` cells each), through the
    app's line filters; None when the widget's styles would change them (paint them through
    Textual's ``render_lines``)."""
    if widget.BLANK or not styles_add_nothing(widget):
        return None
    strips = [render_line(y) for y in crop.line_range]
    if any(strip.cell_length != width for strip in strips):
        return None  # Textual pads a short line with the widget's background
    filters = widget.get_line_filters()
    if filters:
        background = background_of(widget)
        for line_filter in filters:
            if isinstance(line_filter, ANSIToTruecolor):
                rich_background = background.rich_color
                strips = [
                    strip
                    if truecolor_already(strip, line_filter, rich_background)
                    else strip.apply_filter(line_filter, background)
                    for strip in strips
                ]
            else:
                strips = [strip.apply_filter(line_filter, background) for strip in strips]
    x1, x2 = crop.column_span
    if (x1, x2) != (0, width):
        strips = [strip.crop(x1, x2) for strip in strips]
    return strips


def truecolor_already(strip: Strip, line_filter: ANSIToTruecolor, background: RichColor) -> bool:
    """Whether ``line_filter`` would give ``strip``'s segments back as they are: every style in
    truecolor already (the filter's own answer, which it keeps), no dim colour, no control.
    Then the strip is painted as it is: the filter made a new Strip of each changed line (its
    segments, then six caches): docs/performance.md.

    The filter's answer is kept by style, and rich's styles are equal by value: for a style
    equal to one it saw first (the table's and the charts' plain ``dim``), it gives back that
    first one, which paints the same."""
    truecolor_style = line_filter.truecolor_style
    for _, style, control in strip:
        if control is not None:
            return False
        if style is None or (done := truecolor_style(style, background)) is style:
            continue
        if done != style:  # (an equal style first seen elsewhere paints the same)
            return False
    return True
