"""Every name is imported from the module that defines it: no module passes on another's.

A re-export keeps an old import path alive after a split and hides which module a name
lives in. Imports inside functions and under ``TYPE_CHECKING`` count, in iotop_plus, tests,
benchmarks and scripts; importing a module from its package (``from iotop_plus.sampling
import frame``) is not a re-export.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("iotop_plus", "tests", "benchmarks", "scripts")


def _module_file(module: str) -> Path | None:
    path = REPO / (module.replace(".", "/") + ".py")
    return path if path.is_file() else None


def _bindings(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names a module defines, names it only imports), at its top level (ifs and trys too)."""
    defined: set[str] = set()
    imported: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                defined |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            todo += node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
            for handler in getattr(node, "handlers", []):
                todo += handler.body
    return defined, imported - defined


def test_no_name_is_imported_through_a_module_that_does_not_define_it() -> None:
    cache: dict[str, tuple[set[str], set[str]]] = {}
    found = []
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            if {"fixtures", "__snapshots__"} & set(path.parts):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                    continue
                if not node.module.startswith("iotop_plus"):
                    continue
                source = _module_file(node.module)
                if source is None:
                    continue  # a package: its names are its modules
                if node.module not in cache:
                    cache[node.module] = _bindings(ast.parse(source.read_text()))
                only_imported = cache[node.module][1]
                for alias in node.names:
                    if alias.name in only_imported:
                        where = f"{path.relative_to(REPO)}:{node.lineno}"
                        found.append(f"{where}: {alias.name} from {node.module}")
    assert found == []
