"""Textual's internals, in one place: the only package of iotop_plus that uses them.

The TUI's paint and input build on parts of Textual it keeps to itself: its compositor
(:mod:`.compositor`), a widget's repaint flags and the screen's set of dirty widgets
(:mod:`.refresh_batch`), the caches of ``Strip`` (:mod:`.strip_cycles`), the xterm parser
(:mod:`.input_driver`), the screen's resume handler (:mod:`.first_resume`), the bindings' signal
(:mod:`.bindings`) and the forwarding of a key (:mod:`.keys`). The garbage collector's policy
(:mod:`.gc_policy`) counts on the painted lines making no cycles. Nothing outside this package
touches a name Textual keeps private or does not document (``tests/tui/engine`` checks it).

Each of them works on the Textual versions in :data:`TESTED_TEXTUAL` only. On any other
version, or with ``IOTOP_PLUS_STOCK_TEXTUAL=1``, the engine is off (:func:`active`): every part
takes Textual's own way (stock Textual, slower paint, same screen), and :func:`announce` says so
on stderr, outside the alternate screen.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import TextIO

TESTED_TEXTUAL = ("8.2.8",)
"""The Textual versions the engine was tested on (``pyproject.toml`` pins the same)."""

STOCK_ENV = "IOTOP_PLUS_STOCK_TEXTUAL"
"""Set to 1: stock Textual, the engine off, whatever the version."""


@cache
def textual_version() -> str:
    """The installed Textual's version, from its ``dist-info`` directory beside the package
    (reading it through ``importlib.metadata`` took 30-150 ms of the start)."""
    import textual

    site = os.path.dirname(os.path.dirname(textual.__file__))
    try:
        found = [
            name[len("textual-") : -len(".dist-info")]
            for name in os.listdir(site)
            if name.startswith("textual-") and name.endswith(".dist-info")
        ]
    except OSError:
        found = []
    if len(found) == 1:
        return found[0]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("textual")
    except PackageNotFoundError:
        return "unknown"


def stock_asked() -> bool:
    """Whether ``IOTOP_PLUS_STOCK_TEXTUAL`` asks for stock Textual (set, and not 0)."""
    return os.environ.get(STOCK_ENV, "") not in ("", "0")


def tested() -> bool:
    """Whether the installed Textual is one the engine was tested on."""
    return textual_version() in TESTED_TEXTUAL


def active() -> bool:
    """Whether the engine's parts are on (else every one takes Textual's own way)."""
    return tested() and not stock_asked()


def notice() -> str | None:
    """The line saying the engine is off and why; None while it is on."""
    if not tested():
        versions = ", ".join(TESTED_TEXTUAL)
        return (
            f"iotop-plus: Textual {textual_version()} is not a tested version ({versions}): "
            "running on stock Textual (slower paint)"
        )
    if stock_asked():
        return f"iotop-plus: {STOCK_ENV} is set: running on stock Textual (slower paint)"
    return None


def announce(stream: TextIO | None = None) -> None:
    """Write :func:`notice` on ``stream`` (stderr), if any: before the app takes the screen."""
    line = notice()
    if line is not None:
        print(line, file=stream or sys.stderr, flush=True)
