"""No import cycle anywhere in iotop_plus: a module never reaches itself through its imports.

Every import counts: at module level, inside functions (the lazy ones) and under
``TYPE_CHECKING``. A package's ``__init__`` importing its own submodules is not a cycle (the
package is the parent of what it imports), so those edges are left out.
"""

from __future__ import annotations

import grimp


def _graph() -> grimp.ImportGraph:
    graph = grimp.build_graph("iotop_plus", include_external_packages=False, cache_dir=None)
    for module in list(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith(module + "."):
                graph.remove_import(importer=module, imported=imported)
    return graph


def _cycles(graph: grimp.ImportGraph) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_no_import_cycle() -> None:
    cycles = [sorted(c) for c in _cycles(_graph())]
    assert cycles == []


def test_the_cycle_finder_sees_imports_inside_functions_and_for_type_checking() -> None:
    """A graph with a cycle closed by a lazy import and one closed under TYPE_CHECKING."""
    graph = grimp.ImportGraph()
    for module in ("p.a", "p.b", "p.c", "p.d", "p"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")  # as `def f(): from p import a`
    graph.add_import(importer="p.c", imported="p.d")
    graph.add_import(importer="p.d", imported="p.c")  # as `if TYPE_CHECKING: from p import c`
    graph.add_import(importer="p", imported="p.a")  # a package importing its own module
    assert sorted(sorted(c) for c in _cycles(graph)) == [["p.a", "p.b"], ["p.c", "p.d"]]


def test_grimp_counts_lazy_and_type_checking_imports() -> None:
    """The real graph holds edges that exist only inside a function or for the type checker."""
    graph = _graph()
    # main_history imports the settings only for the type checker
    assert "iotop_plus.config" in graph.find_modules_directly_imported_by(
        "iotop_plus.tui.screens.main_history"
    )
    # snapshot imports snapshot_health only inside a function
    assert "iotop_plus.commands.snapshot_health" in graph.find_modules_directly_imported_by(
        "iotop_plus.commands.snapshot"
    )
