"""Finds, in iotop_plus's own source, every use of a name Textual keeps to itself.

"Private" is any ``_name`` Textual defines (a module, a function, a class, a method, an
attribute assigned in its code, a slot) and any hook it does not document
(:data:`UNDOCUMENTED`). A module uses one when it

- imports a ``textual._*`` module, or a ``_name`` from any Textual module;
- reads or writes ``x._name`` where ``x`` is something imported from Textual, or ``self`` in a
  class that is (or is mixed into) a subclass of a Textual class whose own code defines
  ``_name``, or any other object when ``_name`` is Textual's and iotop_plus's own code never
  defines it (then it can only be Textual's);
- passes such a name to ``getattr``/``setattr``/``hasattr``/``delattr``;
- defines, in a class that is (or is mixed into) a subclass of a Textual class, a method named
  as one of that class's private ones, or one of Textual's private handler names
  (``_on_*``, ``_watch_*``, ``_compute_*``, ``_validate_*``), which Textual calls by name;
- touches a name in :data:`UNDOCUMENTED`.

Resolution is by the AST for the names and by importing the module for the classes (their
method resolution order), so a subclass of a subclass of a Textual widget is seen as one.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from pathlib import Path

import textual

UNDOCUMENTED = frozenset({"bindings_updated_signal"})
"""Public names of Textual's that its documentation does not describe (hooks that may change
in any release)."""

HANDLER_PREFIXES = ("_on_", "_watch_", "_compute_", "_validate_")
"""Textual's private handler names: it calls such a method by its name."""

TEXTUAL_DIR = Path(textual.__file__).parent


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and len(name) > 1


@dataclass(frozen=True)
class Use:
    """One use of a private name: where, and what."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _stored(node: ast.AST) -> Iterator[str]:
    """The names ``node`` defines: a def, a class, a name or attribute assigned, a slot."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        yield node.id
    elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        yield node.attr
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.Assign) and any(
        isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
    ):
        for item in ast.walk(node.value):
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                yield item.value


def _names_defined(tree: ast.AST) -> tuple[set[str], dict[str, set[str]]]:
    """The private names a (Textual) module's code defines anywhere, and per class (by
    qualified name) those its body and methods define (``self._x = ...``)."""
    every = {name for node in ast.walk(tree) for name in _stored(node) if is_private(name)}
    per_class: dict[str, set[str]] = {}

    def visit_class(node: ast.ClassDef, qualname: str) -> None:
        names = per_class.setdefault(qualname, set())
        for child in ast.walk(node):
            if child is not node:
                names.update(name for name in _stored(child) if is_private(name))
            if isinstance(child, ast.ClassDef) and child is not node:
                visit_class(child, f"{qualname}.{child.name}")

    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            visit_class(node, node.name)
    return every, per_class


@cache
def _textual_module(path: Path) -> tuple[set[str], dict[str, set[str]]]:
    return _names_defined(ast.parse(path.read_text(encoding="utf-8")))


@cache
def textual_private_names() -> frozenset[str]:
    """Every private name Textual's code defines."""
    names: set[str] = set()
    for path in TEXTUAL_DIR.rglob("*.py"):
        names |= _textual_module(path)[0]
        names.update(part for part in path.relative_to(TEXTUAL_DIR).with_suffix("").parts)
    return frozenset(name for name in names if is_private(name))


def _is_textual(cls: type) -> bool:
    return (cls.__module__ or "").split(".")[0] == "textual"


def _textual_class_names(cls: type) -> set[str]:
    """The private names a Textual class's own code defines (body, methods, slots)."""
    try:
        path = Path(inspect.getfile(cls))
    except (TypeError, OSError):
        return set()
    names = {name for name in vars(cls) if is_private(name)}
    if path.is_relative_to(TEXTUAL_DIR):
        names |= _textual_module(path)[1].get(cls.__qualname__, set())
    return names


def _textual_side(cls: type, ours: list[type]) -> set[str] | None:
    """The private names of the Textual classes ``cls`` is (or is mixed into) a subclass of;
    None when it is not on Textual's side."""
    mros = [cls.__mro__] + [other.__mro__ for other in ours if cls in other.__mro__[1:]]
    textuals = {base for mro in mros for base in mro if _is_textual(base)}
    if not textuals:
        return None
    return set().union(*(_textual_class_names(base) for base in textuals))


def module_name(path: Path, package_dir: Path) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def uses_in(paths: list[Path], package_dir: Path) -> list[Use]:
    """Every use of a private Textual name in the modules at ``paths``."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in paths}
    modules = {  # (a ``__main__`` runs when imported: its classes are not resolved)
        path: None if path.name == "__main__.py" else import_module(module_name(path, package_dir))
        for path in paths
    }
    our_classes = [
        value
        for module in modules.values()
        if module is not None
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == module.__name__
    ]
    scans = [
        _Scan(str(path.relative_to(package_dir.parent)), modules[path], our_classes)
        for path in paths
    ]
    for scan, tree in zip(scans, trees.values(), strict=True):
        scan.visit(tree)
    ours = set().union(*(scan.ours for scan in scans))
    only_textual = textual_private_names() - ours
    return [use for scan in scans for use in scan.uses(only_textual)]


class _Scan(ast.NodeVisitor):
    """One module's uses: certain ones at once, those that hang on a name being Textual's
    alone (:meth:`uses`) once every module's own names are known."""

    def __init__(self, where: str, module: object, our_classes: list[type]) -> None:
        self.where = where
        self.module = module
        self.our_classes = our_classes
        self.found: list[Use] = []
        self.maybe: list[tuple[str, Use]] = []
        """Uses of a name that count when iotop_plus's own code does not define it."""
        self.ours: set[str] = set()
        """The private names this module defines for itself."""
        self.imported: dict[str, bool] = {}
        """Local names bound by an import: whether to something of Textual's."""
        self.side: set[str] | None = None
        """The private names of the Textual classes the class being visited is on the side of
        (None: it is on none's)."""
        self.qualname = ""

    def use(self, node: ast.AST, what: str) -> None:
        self.found.append(Use(self.where, getattr(node, "lineno", 0), what))

    def uses(self, only_textual: frozenset[str] | set[str]) -> list[Use]:
        return self.found + [use for name, use in self.maybe if name in only_textual]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            textual_one = alias.name.split(".")[0] == "textual"
            self.imported[(alias.asname or alias.name).split(".")[0]] = textual_one
            if textual_one and any(is_private(part) for part in alias.name.split(".")):
                self.use(node, f"imports {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        textual_one = (node.module or "").split(".")[0] == "textual"
        if textual_one and any(is_private(part) for part in (node.module or "").split(".")):
            self.use(node, f"imports from {node.module}")
        for alias in node.names:
            self.imported[alias.asname or alias.name] = textual_one
            if textual_one and is_private(alias.name):
                self.use(node, f"imports {alias.name} from {node.module}")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        outer, outer_name = self.side, self.qualname
        self.qualname = f"{outer_name}.{node.name}" if outer_name else node.name
        value: object = self.module
        for part in self.qualname.split("."):
            value = getattr(value, part, None)
        self.side = _textual_side(value, self.our_classes) if isinstance(value, type) else None
        self.ours.add(node.name)
        for item in node.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if self.side is not None and (
                item.name in self.side or item.name.startswith(HANDLER_PREFIXES)
            ):
                self.use(item, f"{node.name} overrides Textual's {item.name}")
            else:
                self.ours.add(item.name)
        for item in node.body:
            self.visit(item)
        self.side, self.qualname = outer, outer_name

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if not self.qualname:
            self.ours.add(node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self.ours.add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)
        name = node.attr
        if name in UNDOCUMENTED:
            self.use(node, f"undocumented {name}")
            return
        if not is_private(name):
            return
        receiver = node.value
        root: ast.expr = receiver
        while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
            root = root.func if isinstance(root, ast.Call) else root.value
        on_self = (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")) or (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "super"
        )
        if isinstance(root, ast.Name) and root.id in self.imported:
            if self.imported[root.id] and name in textual_private_names():
                self.use(node, f"Textual's {name}")
        elif on_self:
            if self.side is not None and name in self.side:
                self.use(node, f"Textual's {name} on self")
            elif isinstance(node.ctx, ast.Store):
                self.ours.add(name)
        else:
            self.maybe.append((name, Use(self.where, node.lineno, f"Textual's {name}")))

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if called not in ("getattr", "setattr", "hasattr", "delattr") or len(node.args) < 2:
            return
        name = node.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            what = f"{called} of Textual's {name.value}"
            if name.value in UNDOCUMENTED:
                self.use(node, what)
            elif is_private(name.value):
                self.maybe.append((name.value, Use(self.where, node.lineno, what)))
