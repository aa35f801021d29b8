"""Run iotop-plus as the unprivileged user (uid 65534), the way an attacker or a plain user
would: ``setpriv --reuid=65534 --regid=65534 --clear-groups``.

The venv's python may live under /root (0700); the system python of the same version then
runs our code with the venv's site-packages on PYTHONPATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOBODY_UID = 65534
NOBODY = [
    shutil.which("setpriv") or "/usr/bin/setpriv",
    f"--reuid={NOBODY_UID}",
    f"--regid={NOBODY_UID}",
    "--clear-groups",
]


def _python_for_nobody() -> str | None:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        probe = subprocess.run(
            [*NOBODY, candidate, "-c", "import psutil, iotop_plus"],
            capture_output=True,
            env=nobody_env("/usr/bin:/bin"),
            cwd="/",
            check=False,
        )
        if probe.returncode == 0:
            return candidate
    return None


def nobody_env(path: str) -> dict[str, str]:
    """A small environment for uid 65534 with our code importable and ``PATH`` as given."""
    site = sysconfig.get_paths()["purelib"]
    return {
        "PATH": path,
        "PYTHONPATH": f"{REPO}{os.pathsep}{site}",
        "LANG": "C.UTF-8",
        "HOME": "/nonexistent",
    }


def nobody_python() -> list[str]:
    """argv prefix running python as uid 65534; skips the test with the reason otherwise."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to uid 65534")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    python = _python_for_nobody()
    if python is None:
        pytest.skip("no python that uid 65534 can run with our packages")
    return [*NOBODY, python]


@contextmanager
def nobody_directory() -> Iterator[Path]:
    """A new directory in /tmp owned by uid 65534 (mode 0755); removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="iotop-plus-test-"))
    try:
        os.chmod(path, 0o755)
        os.chown(path, NOBODY_UID, NOBODY_UID)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
