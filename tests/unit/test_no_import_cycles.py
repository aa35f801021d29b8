"""No import cycle anywhere in iotop_plus: a module never reaches itself through its imports.

Every import counts: at module level, inside functions (the lazy ones) and under
``TYPE_CHECKING``. A package's ``__init__`` importing its own submodules is not a cycle (the
package is the parent of what it imports), so those edges are left out.
"""

from __future__ import annotations

import grimp

# The one cycle known today, by its modules: the frame's model still names the parts it
# carries. It is removed from here when the frame model imports no part.
KNOWN_FRAME_CYCLE = frozenset(
    {
        "iotop_plus.sampling.frame",
    }
)


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
    cycles = [c for c in _cycles(_graph()) if not (c & KNOWN_FRAME_CYCLE)]
    assert cycles == []
