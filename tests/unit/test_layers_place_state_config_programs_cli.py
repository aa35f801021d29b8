"""The layers contract places cli on top and state, config and programs low: a copy of the
package where each of them imports upwards breaks it, naming the import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

UPWARD_IMPORTS = {
    # module file -> an import that goes up the layers from it
    "state.py": "iotop_plus.sampling.figures",
    "programs.py": "iotop_plus.devices.settings",
    "config.py": "iotop_plus.probe.presets",
    "commands/bundle.py": "iotop_plus.cli",
}


def _lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(project))
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", "--config", str(project / "pyproject.toml")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_state_config_programs_and_cli_importing_upwards_break_the_layers(tmp_path: Path) -> None:
    shutil.copytree(
        REPO / "iotop_plus", tmp_path / "iotop_plus", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    clean = _lint_imports(tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    for name, target in UPWARD_IMPORTS.items():
        module = tmp_path / "iotop_plus" / name
        module.write_text(module.read_text() + f"\nimport {target}  # noqa\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "above roots BROKEN" in broken.stdout, broken.stdout
    for name, target in UPWARD_IMPORTS.items():
        source = "iotop_plus." + name.removesuffix(".py").replace("/", ".")
        assert f"{source} -> {target}" in broken.stdout, (source, broken.stdout)
