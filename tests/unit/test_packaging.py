"""The package list in pyproject.toml names every package, so the wheel is complete."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")

ROOT = Path(__file__).parents[2]


def test_every_package_directory_is_listed_in_pyproject() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        str(p.parent.relative_to(ROOT)).replace("/", ".")
        for p in (ROOT / "iotop_plus").rglob("__init__.py")
    }
    assert found == listed
