"""#17 "Also: colours over SSH": without COLORTERM (TERM=screen, TERM=xterm-256color) the
severity colours must still read as what they mean: high in yellow, bad in red, and the two
must differ. Under TERM=screen the ANSI "yellow" of the terminal theme (an orange) came out as
bright red (91), so a merely high await looked bad.

The canned app (the tui_host fixture, deterministic figures) runs in tmux with TERM set and
COLORTERM removed; the cells are read back with their SGR escapes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.color import Color, ColorSystem

from tests.support.tmux import TmuxSession, tmux_available

pytestmark = pytest.mark.slow  # the TUI in tmux

REPO = Path(__file__).resolve().parents[2]
SGR = re.compile(r"\x1b\[([0-9;]*)m")
YELLOW = {"33", "93"}
RED = {"31", "91"}


@pytest.fixture
def canned_script(tmp_path: Path) -> Iterator[Path]:
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    script = tmp_path / "canned_run.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from tests.tui.canned import canned_app\ncanned_app().run()\n"
        # The canned sampler's thread can outlive run(); this script only needs the screen.
        "import os\nos._exit(0)\n"
    )
    yield script


def codes_before(line: str, figure: str) -> list[str]:
    """The SGR parameters in force where ``figure`` starts on ``line``."""
    at = SGR.sub(lambda m: "\0" * len(m.group(0)), line).index(figure)
    codes: list[str] = []
    for m in SGR.finditer(line[:at]):
        params = m.group(1) or "0"
        codes = [] if params == "0" else codes + params.split(";")
    return codes


def row(screen: str, device: str) -> str:
    for line in screen.split("\n"):
        if SGR.sub("", line).startswith(f"{device} "):
            return line
    raise AssertionError(f"no {device} row in:\n{SGR.sub('', screen)}")


def run_canned(term: str, script: Path) -> str:
    with TmuxSession(160, 40) as tmux:
        tmux.send_text(f"env -u COLORTERM TERM={term} {sys.executable} {script}\n")
        tmux.wait_for(re.compile(r"sdb\s+150\.00"), timeout=30)
        screen = tmux.capture(escapes=True)
        tmux.send_keys("q")
        tmux.wait_gone("palette", timeout=15)  # the app has exited: its footer is gone
    return screen


def test_colours_over_ssh_term_screen_warn_is_yellow_and_bad_is_red(canned_script: Path) -> None:
    screen = run_canned("screen", canned_script)
    # sda's 30 ms write await is high for a spinning disk; sdb's 93 ms read await is bad.
    warn = codes_before(row(screen, "sda"), "  30.00")
    bad = codes_before(row(screen, "sdb"), "  93.33")
    assert YELLOW & set(warn), warn
    assert RED & set(bad), bad
    assert not (RED & set(warn)) and not (YELLOW & set(bad))


def test_colours_over_ssh_term_xterm_256color_warn_and_bad_differ(canned_script: Path) -> None:
    screen = run_canned("xterm-256color", canned_script)
    warn = codes_before(row(screen, "sda"), "  30.00")
    bad = codes_before(row(screen, "sdb"), "  93.33")
    assert "38" in warn and "38" in bad
    assert warn[warn.index("38") :][:3] != bad[bad.index("38") :][:3], (warn, bad)


def test_pressure_gauge_colours_differ_in_16_and_256_colours() -> None:
    """The gauge's warn and high colours (app.tcss) stay apart when the terminal has fewer."""
    tcss = (REPO / "iotop_plus" / "tui" / "app.tcss").read_text()
    found = dict(
        re.findall(r"PressureGauge\.(psi-warn|psi-high) \{ color: (#[0-9a-fA-F]{6});", tcss)
    )
    assert set(found) == {"psi-warn", "psi-high"}, found
    for system in (ColorSystem.STANDARD, ColorSystem.EIGHT_BIT):
        warn, high = (Color.parse(found[k]).downgrade(system) for k in ("psi-warn", "psi-high"))
        assert warn.get_ansi_codes() != high.get_ansi_codes(), system
    standard = Color.parse(found["psi-warn"]).downgrade(ColorSystem.STANDARD).get_ansi_codes()
    assert set(standard) & YELLOW
