"""The command palette's entries: every command of the main screen, run on that screen."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from textual.app import SystemCommand

if TYPE_CHECKING:
    from iotop_plus.tui.screens.main import MainScreen


def screen_commands(screen: MainScreen) -> Iterator[SystemCommand]:
    """A palette entry for each of ``screen``'s commands (the same list as its keys)."""
    for title, help_text, action in screen.commands():
        yield SystemCommand(title, help_text, _runner(screen, action))


def _runner(screen: MainScreen, action: str) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        await screen.run_action(action)

    return run
