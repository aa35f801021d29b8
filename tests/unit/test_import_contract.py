"""The import-linter contracts in pyproject.toml hold, and they do fail on a broken layering."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports on ``project`` (its pyproject.toml and its own iotop_plus copy)."""
    env = dict(os.environ, PYTHONPATH=str(project))
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", "--config", str(project / "pyproject.toml")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _clean_copy(tmp_path: Path) -> None:
    """A copy of the package and pyproject.toml in ``tmp_path``, shown to keep its contracts."""
    shutil.copytree(
        REPO / "iotop_plus", tmp_path / "iotop_plus", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    clean = _lint_imports(tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_the_project_keeps_its_contracts() -> None:
    done = _lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " kept, 0 broken" in done.stdout


def test_the_contracts_fail_when_sampling_imports_the_tui(tmp_path: Path) -> None:
    """A copy of the package where a pure module imports upwards and loads rich."""
    _clean_copy(tmp_path)

    figures = tmp_path / ("iotop_plus.sampling.disks.figures".replace(".", "/") + ".py")
    figures.write_text(
        figures.read_text() + "\nimport rich.text  # noqa\nimport iotop_plus.tui.keys  # noqa\n"
    )
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    # The layers and the no-textual-below-tui contracts break (the tui ones do not apply).
    assert " kept, 2 broken" in broken.stdout, broken.stdout
    assert "above roots BROKEN" in broken.stdout and "textual or rich BROKEN" in broken.stdout
    # The report names the copy's offending import, so the copy (not the repo) was checked.
    assert "iotop_plus.sampling.disks.figures -> iotop_plus.tui.keys" in broken.stdout
    assert "iotop_plus.sampling.disks.figures -> rich (" in broken.stdout


UPWARD_IMPORTS = {
    # module file -> an import that goes up the layers from it
    "state.py": "iotop_plus.sampling.disks.figures",
    "programs.py": "iotop_plus.devices.settings",
    "config.py": "iotop_plus.probe.presets",
    "commands/bundle.py": "iotop_plus.cli",
}


def test_state_config_programs_and_cli_importing_upwards_break_the_layers(tmp_path: Path) -> None:
    """The layers place cli on top and state, config and programs low: each importing
    upwards in a copy breaks the layers, naming the import."""
    _clean_copy(tmp_path)

    for name, target in UPWARD_IMPORTS.items():
        module = tmp_path / "iotop_plus" / name
        module.write_text(module.read_text() + f"\nimport {target}  # noqa\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "above roots BROKEN" in broken.stdout, broken.stdout
    for name, target in UPWARD_IMPORTS.items():
        source = "iotop_plus." + name.removesuffix(".py").replace("/", ".")
        assert f"{source} -> {target}" in broken.stdout, (source, broken.stdout)
