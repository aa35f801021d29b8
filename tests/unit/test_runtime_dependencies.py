"""What ``pip install .`` pulls: only what the tool imports. psutil is the tests' and the
benchmarks' reference parser, in the ``test`` extra."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _imported_top_names() -> set[str]:
    names: set[str] = set()
    for path in (REPO / "iotop_plus").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def test_psutil_is_a_test_dependency_only() -> None:
    project = _project()
    runtime = [d.split(">")[0].split("=")[0].split(";")[0].strip() for d in project["dependencies"]]
    assert "psutil" not in runtime
    assert any(d.startswith("psutil") for d in project["optional-dependencies"]["test"])
    assert "psutil" not in _imported_top_names()
