"""The layering rule: the pure packages and the headless CLI never load textual or rich."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import iotop_plus

PURE_PACKAGES = ("sampling", "devices", "probe")
FORBIDDEN = ("textual", "rich", "iotop_plus.tui")


def _pure_modules() -> list[str]:
    """Every module under the pure packages, found on disk (new ones are covered too)."""
    names = []
    for pkg in PURE_PACKAGES:
        path = [f"{iotop_plus.__path__[0]}/{pkg}"]
        names.append(f"iotop_plus.{pkg}")
        names += [m.name for m in pkgutil.walk_packages(path, f"iotop_plus.{pkg}.")]
    return names


def _loaded_after(code: str) -> list[str]:
    """Modules loaded by ``code`` in a fresh interpreter."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return list(json.loads(out.stdout.splitlines()[-1]))


def _forbidden(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def test_pure_packages_import_no_textual_or_rich() -> None:
    modules = _pure_modules()
    assert "iotop_plus.sampling.disks.diskstats" in modules
    assert "iotop_plus.sampling.disks.rates" in modules
    assert "iotop_plus.devices.settings" in modules
    loaded = _loaded_after("\n".join(f"import {m}" for m in modules))
    assert set(modules) <= set(loaded)
    assert _forbidden(loaded) == []


def test_cli_and_snapshot_path_import_no_textual_or_rich() -> None:
    """Building every subcommand's parser and running snapshot loads no TUI library."""
    code = (
        "import contextlib, io\n"
        "from iotop_plus.cli import build_parser, main\n"
        "build_parser().parse_args(['snapshot', '-i', '0.01'])\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['snapshot', '-i', '0.01', '--format', 'json']) == 0\n"
        "    with contextlib.suppress(SystemExit):\n"
        "        main(['snapshot', '--help'])"
    )
    loaded = _loaded_after(code)
    assert "iotop_plus.commands.snapshot" in loaded
    assert _forbidden(loaded) == []


def test_the_check_itself_can_fail() -> None:
    """Importing the TUI does load textual, so the checks above would notice."""
    loaded = _loaded_after("import textual.app")
    assert "textual" in _forbidden(loaded)
