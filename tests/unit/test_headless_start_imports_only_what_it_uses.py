"""#25: ``--version``, ``--help`` and ``snapshot`` import only what they use.

The modules a fresh interpreter has loaded when the command is done are checked (a set, not a
timing): no asyncio, pyudev, prometheus_client or Textual on these paths, and ``--version``
loads no sampling code and no subcommand. The subcommands' help lines kept in cli.py for
``--help`` are checked against the modules' own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from iotop_plus import cli

#: Runs ``cli.main`` on argv (JSON in argv[1]); writes the loaded modules as JSON to argv[2].
RUNNER = """
import json, sys
from iotop_plus.cli import main
try:
    code = main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
with open(sys.argv[2], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""

HEAVY = ("asyncio", "pyudev", "prometheus_client", "textual")


def loaded_by(argv: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    """(exit code, modules loaded) of ``iotop-plus ARGV`` in a fresh interpreter."""
    report = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(argv), str(report)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=120,
    )
    assert report.exists(), proc.stderr
    got = json.loads(report.read_text())
    return got["code"], set(got["modules"])


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_version_imports_no_subcommand_no_sampling_and_nothing_heavy(tmp_path: Path) -> None:
    code, modules = loaded_by(["--version"], tmp_path)
    assert code == 0
    assert heavy(modules) == []
    ours = sorted(m for m in modules if m.startswith("iotop_plus."))
    assert [m for m in ours if m.startswith(("iotop_plus.sampling", "iotop_plus.record"))] == []
    assert [m for m in ours if m.startswith("iotop_plus.commands.")] == [
        "iotop_plus.commands.common"
    ]


def test_help_lists_every_subcommand_without_importing_them(tmp_path: Path) -> None:
    code, modules = loaded_by(["--help"], tmp_path)
    assert code == 0
    assert heavy(modules) == []
    assert [
        m
        for m in modules
        if m.startswith("iotop_plus.commands.") and m != "iotop_plus.commands.common"
    ] == []


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_snapshot_loads_no_asyncio_pyudev_prometheus_or_textual(tmp_path: Path, fmt: str) -> None:
    argv = ["--state-dir", str(tmp_path / "state"), "snapshot", "-c", "1", "-i", "0.1", "-f", fmt]
    code, modules = loaded_by(argv, tmp_path)
    assert code == 0
    assert heavy(modules) == []
    others = {f"iotop_plus.commands.{n}" for n in cli.COMMANDS} - {"iotop_plus.commands.snapshot"}
    assert sorted(modules & others) == []


def test_the_help_lines_in_cli_are_the_subcommands_own() -> None:
    parser = cli.build_parser()  # every subcommand's real parser
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    real = {action.dest: action.help for action in sub._choices_actions}
    assert real == cli.COMMANDS
    assert list(real) == list(cli.COMMANDS)
    assert tuple(parser.intervals or {}) == cli.INTERVAL_COMMANDS


def test_each_subcommand_parses_as_before_when_only_it_is_loaded() -> None:
    for name in cli.COMMANDS:
        alone = cli.build_parser([name])
        assert alone.commands == tuple(cli.COMMANDS)
        # the typed subcommand has its real parser (its options), the others are stand-ins
        sub = next(a for a in alone._actions if isinstance(a, argparse._SubParsersAction))
        assert len(sub.choices[name]._actions) > 1, name
