"""Textual's private names and undocumented hooks are used under ``iotop_plus/tui/engine/``
only, found by walking every module's AST (:mod:`tests.tui.engine.private_names`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import iotop_plus
from tests.tui.engine.private_names import Use, textual_private_names, uses_in

PACKAGE = Path(iotop_plus.__file__).parent
ENGINE = PACKAGE / "tui" / "engine"


@cache
def every_use() -> tuple[Use, ...]:
    return tuple(uses_in(sorted(PACKAGE.rglob("*.py")), PACKAGE))


def test_no_module_outside_the_engine_uses_a_private_textual_name() -> None:
    outside = [str(use) for use in every_use() if not use.path.startswith("iotop_plus/tui/engine/")]
    assert outside == [], "\n".join(outside)


def test_the_walk_finds_each_kind_of_use_in_the_engine() -> None:
    # The engine's own uses, one of each kind, are found: the walk can fail the test above.
    found = {(use.path.rsplit("/", 1)[-1], use.what) for use in every_use()}
    for expected in (
        ("compositor.py", "imports from textual._compositor"),  # a private module
        ("compositor.py", "DirtyOnlyCompositor overrides Textual's _get_renders"),
        ("compositor.py", "Textual's _compositor"),  # another object's attribute
        ("first_resume.py", "StyledAsMounted overrides Textual's _on_screen_resume"),  # a mixin
        ("input_driver.py", "Textual's _debug on self"),  # inherited from a Textual class
        ("input_driver.py", "getattr of Textual's _timeout_time"),
        ("keys.py", "Textual's _forward_event"),
        ("bindings.py", "getattr of Textual's bindings_updated_signal"),  # undocumented
        ("refresh_batch.py", "Textual's _dirty_widgets"),
    ):
        assert expected in found, expected


def test_every_private_name_is_found_where_textual_defines_it() -> None:
    names = textual_private_names()
    assert {"_compositor", "_dirty_widgets", "_repaint_required", "_forward_event"} <= names
    assert "_on_screen_resume" in names and "_xterm_parser" in names
    assert not any(name.startswith("__") for name in names)


def test_the_engine_is_one_package() -> None:
    assert (ENGINE / "__init__.py").is_file()
    assert any(use.path.startswith("iotop_plus/tui/engine/") for use in every_use())
