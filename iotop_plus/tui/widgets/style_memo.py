"""A widget's component styles and background, worked out once until it is restyled.

Textual works out ``get_component_rich_style`` and ``background_colors`` from the widget's
styles and every ancestor's, and forgets the component styles at every repaint. The widgets
that repaint lines every frame (the charts, the device table) ask for them every frame: a
tenth of the main thread's work for a frame at 8 devices. :class:`StyleMemo` keeps them while
the component's styles are the same object: Textual makes them anew whenever it applies the
style sheet to the widget (a theme, class or pseudo-class change of it or an ancestor, a CSS
reload), and then calls ``notify_style_update``, where the background is forgotten too.
"""

from __future__ import annotations

from typing import cast

from rich.style import Style
from textual.color import Color
from textual.widget import Widget


class StyleMemo:
    """Mixin (before the Textual class) for widgets that look their styles up every frame."""

    _style_memo: dict[tuple[str, ...], tuple[object, Style]] | None = None
    _background_memo: tuple[Color, Color] | None = None

    def component_style(self, *names: str) -> Style:
        """``get_component_rich_style(*names)``, kept while the components are styled as
        they were."""
        memo = self._style_memo
        if memo is None:
            memo = self._style_memo = {}
        widget = cast(Widget, self)  # (mixed into a Widget)
        styled_by = widget.get_component_styles(*names).node  # made anew at each restyle
        kept = memo.get(names)
        if kept is not None and kept[0] is styled_by:
            return kept[1]
        style = widget.get_component_rich_style(*names)
        memo[names] = (styled_by, style)
        return style

    def background_pair(self) -> tuple[Color, Color]:
        """``background_colors`` (the background under the widget, and its own), kept until
        the widget is restyled."""
        pair = self._background_memo
        if pair is None:
            pair = self._background_memo = cast(Widget, self).background_colors
        return pair

    def notify_style_update(self) -> None:
        self._style_memo = None
        self._background_memo = None
        super().notify_style_update()  # type: ignore[misc]


def background_of(widget: Widget) -> Color:
    """The widget's own background colour (kept by a :class:`StyleMemo`)."""
    if isinstance(widget, StyleMemo):
        return widget.background_pair()[1]
    return widget.background_colors[1]
