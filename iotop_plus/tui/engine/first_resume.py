"""A screen whose first resume does not restyle the nodes it has just mounted.

On every resume, Textual's ``Screen`` handler restyles each node of the screen. The first time
a screen is shown, each node was styled as it mounted, just before: on the main screen, doing
it again was ~20 ms of the start, a quarter of the main thread's work from the end of the
imports to the first paint (25 of the 70 stylesheet applications). Later resumes are left to
Textual, and so is every resume while the engine is off.
"""

from __future__ import annotations

from textual import events

from iotop_plus.tui import engine


class StyledAsMounted:
    """Mix into a Screen subclass, before ``Screen``: Textual calls each class's handler in
    the order of the MRO, so this one changes the event before ``Screen``'s sees it."""

    resumed = False
    """Whether the screen was resumed (shown) once."""

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        if not self.resumed:
            self.resumed = True
            if engine.active():
                event.refresh_styles = False
