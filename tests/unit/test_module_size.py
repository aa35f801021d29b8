"""No module under iotop_plus/ over 600 lines (issue #23, "split by job"): a module that grows
past it does several jobs and is split by job, keeping its import path (re-exports)."""

from __future__ import annotations

from pathlib import Path

import iotop_plus

MAX_LINES = 600
PACKAGE = Path(iotop_plus.__file__).resolve().parent


def _lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def test_no_module_under_iotop_plus_is_over_600_lines() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100  # the whole package, not an empty or wrong directory
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}: {n} lines"
        for path in modules
        if (n := _lines(path)) > MAX_LINES
    ]
    assert not offenders, f"over {MAX_LINES} lines (split by job): " + "; ".join(offenders)
