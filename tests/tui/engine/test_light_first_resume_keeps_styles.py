"""#25: the main screen's first resume does not restyle its nodes (each was styled as it
mounted, just before). These tests check that skipping it changes no node's style, and that
later resumes are left to Textual."""

from __future__ import annotations

from typing import Any

import pytest
from textual import events
from textual.dom import DOMNode
from textual.screen import Screen

from iotop_plus.config import Config
from tests.tui.canned import canned_app
from tests.tui.helpers import started

pytestmark = pytest.mark.usefixtures("step_clock")


Rules = dict[str, object]


def styles_of(screen: Screen[Any]) -> dict[int, tuple[str, Rules, dict[str, Rules]]]:
    """Every node's CSS rules and its component classes' rules, by node."""
    found: dict[int, tuple[str, Rules, dict[str, Rules]]] = {}
    node: DOMNode
    for node in screen.walk_children(with_self=True):
        components: dict[str, Rules] = {
            name: dict(styles.get_rules())
            for name, styles in sorted(node._component_styles.items())
        }
        found[id(node)] = (repr(node), dict(node._css_styles.get_rules()), components)
    return found


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
async def test_the_first_resume_leaves_every_node_styled_as_a_full_restyle_would(
    size: tuple[int, int],
) -> None:
    app = canned_app(Config(interval=1.0), with_history=False)
    async with app.run_test(size=size) as pilot:
        await started(pilot, app, parts=False)
        screen = app.main_screen
        assert screen.resumed
        shown = styles_of(screen)
        app.update_styles(screen, animate=False)  # what Textual's resume would have done
        again = styles_of(screen)
        # The first screen (the screen, its header row, the table and the key hints: 8 nodes)
        # and, when they came in the meantime, the charts and the side panel.
        assert shown.keys() == again.keys() and len(shown) >= 8
        for key, (name, rules, components) in shown.items():
            assert (rules, components) == again[key][1:], name


def test_only_the_first_resume_is_not_restyled() -> None:
    screen = canned_app(Config(interval=1.0), with_history=False).main_screen
    first, second = events.ScreenResume(), events.ScreenResume()
    screen._on_screen_resume(first)
    screen._on_screen_resume(second)
    assert (first.refresh_styles, second.refresh_styles) == (False, True)
