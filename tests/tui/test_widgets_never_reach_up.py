"""No widget reaches up to the screen it is on: what it shows comes from the shown frame, what
else it needs is passed in when it is made, told to it, or said in a message.

An AST scan of every module under ``iotop_plus/tui/widgets``: no ``ancestors`` walk, no
``getattr``/``hasattr`` on a ``.screen``, and no attribute of a ``.screen`` (``self.screen``,
``self.app.screen``) but the Textual API listed here.
"""

from __future__ import annotations

import ast
from pathlib import Path

WIDGETS = Path(__file__).resolve().parents[2] / "iotop_plus" / "tui" / "widgets"

SCREEN_API = frozenset({"screen_layout_refresh_signal"})
"""Attributes of a screen a widget may use: Textual's own (the signal a widget subscribes to
to learn whether it is on screen)."""

REACHING = frozenset({"ancestors", "ancestors_with_self"})


def _is_screen(node: ast.expr) -> bool:
    """``<anything>.screen``."""
    return isinstance(node, ast.Attribute) and node.attr == "screen"


def reaches_up(source: str, name: str = "<widget>") -> list[str]:
    """Each place in ``source`` where a widget reaches up to its screen, one line each."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Attribute):
            if node.attr in REACHING:
                found.append(f"{name}:{node.lineno}: .{node.attr}")
            elif _is_screen(node.value) and node.attr not in SCREEN_API:
                found.append(f"{name}:{node.lineno}: .screen.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and node.args
            and _is_screen(node.args[0])
        ):
            found.append(f"{name}:{node.lineno}: {node.func.id}(….screen, …)")
    return sorted(found, key=lambda line: int(line.split(":")[1]))


def test_no_widget_reaches_up_to_the_screen() -> None:
    found = [
        line
        for path in sorted(WIDGETS.glob("*.py"))
        for line in reaches_up(path.read_text(), path.name)
    ]
    assert found == [], "\n".join(found)


def test_the_scan_finds_each_way_of_reaching_up() -> None:
    source = """
class Panel:
    def on_mount(self):
        feed = getattr(self.screen, "feed", None)
        owner = next(a for a in self.ancestors if a)
        frame = self.screen.shown_frame
        mode = self.app.screen.scrubber.mode
        hasattr(self.app.screen, "x")
        self.screen.screen_layout_refresh_signal.subscribe(self, print)
"""
    found = reaches_up(source)
    assert [line.split(": ", 1)[1] for line in found] == [
        "getattr(….screen, …)",
        ".ancestors",
        ".screen.shown_frame",
        ".screen.scrubber",
        "hasattr(….screen, …)",
    ]
