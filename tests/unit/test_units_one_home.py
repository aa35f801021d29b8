"""One home for the number formats: each style named, the deliberate ones (iotop, lsblk) kept.

The formats lived in eleven places (tui/, commands/, probe/, sampling/); they now live in
``iotop_plus.text`` and every former home imports from there.
"""

from __future__ import annotations

import ast
from pathlib import Path

import iotop_plus
from iotop_plus import text as units

PACKAGE = Path(iotop_plus.__file__).parent


def test_iotop_style_rates_and_lsblk_style_sizes_are_kept() -> None:
    assert units.iotop_rate(0) == "0.00 B/s"
    assert units.iotop_rate(4 * 1024 * 1024) == "4.00 M/s"
    assert units.iotop_rate(None) == "?"
    assert units.lsblk_size(512) == "512 B"
    assert units.lsblk_size(16 * 1024 * 1024) == "16.0 MiB"
    assert units.cgroup_bytes(2097152) == "2M" and units.cgroup_bytes(1536) == "1.5K"


def test_column_formats_keep_their_width() -> None:
    for x in (0.0, 0.42, 12.3, 452, 4521, 45_200, 452_000, 1_200_000, 99_000_000):
        assert len(units.five_chars(x)) <= 5, x
        assert len(units.table_figure(x)) <= 7, x
        assert len(units.compact_bytes(x)) <= 7, x


def test_no_module_defines_its_own_copy_of_a_units_format() -> None:
    """A function with the body of one of the units formats, anywhere else in the package."""

    def body_of(node: ast.FunctionDef) -> str:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        return ast.dump(ast.Module(body, []))

    bodies = {}
    home = Path(units.__file__)
    tree = ast.parse(home.read_text())
    for top in tree.body:
        if isinstance(top, ast.FunctionDef):
            bodies[body_of(top)] = top.name
    copies = []
    for path in PACKAGE.rglob("*.py"):
        if path == home:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                body = body_of(node)
                if body in bodies:
                    copies.append(f"{path.relative_to(PACKAGE)}:{node.name} = {bodies[body]}")
    assert copies == []
