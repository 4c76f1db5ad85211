"""The package's import graph, read from the source with ``ast`` (issue 13):
no import cycle between modules, no function-level import of our own modules
(outside the command line: :data:`LATE_IMPORTS_ALLOWED`), no
``_private`` name of one module used by another.  The layer order itself is
checked by import-linter (``lint-imports``, contracts in pyproject.toml), which
the README's test command runs too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pbmserv_terrace"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, ast.Module]:
    return {module_name(p): ast.parse(p.read_text(), str(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def own_imports(name: str, tree: ast.Module, known: set[str], *, top_level_only: bool) -> list[tuple[str, int, list[str]]]:
    """(module imported, line, names imported from it) for each import of our own modules."""
    is_package = (PACKAGE.parent / Path(*name.split("."))).is_dir()
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            target = resolve(name, is_package, node)
            if not target.startswith("pbmserv_terrace"):
                continue
            names = [a.name for a in node.names]
            # `from . import accounts` imports the module pbmserv_terrace.service.accounts
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
            out.append((target, node.lineno, names))
            out += [(s, node.lineno, []) for s in subs]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno, []) for a in node.names if a.name.startswith("pbmserv_terrace")]
    return out


def graph() -> dict[str, set[str]]:
    trees = modules()
    known = set(trees)
    edges: dict[str, set[str]] = {}
    for name, tree in trees.items():
        targets = set()
        for target, _, _ in own_imports(name, tree, known, top_level_only=False):
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        edges[name] = targets
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_modules():
    # A package's __init__ importing its own submodules is how it exports them,
    # not a cycle of meaning: leave those edges out, count everything else.
    edges = {m: {t for t in ts if not (m != "pbmserv_terrace" and t.startswith(m + "."))} for m, ts in graph().items()}
    assert cycles(edges) == []


LATE_IMPORTS_ALLOWED = "pbmserv_terrace.cli"
"""The one package that may import our modules late.  A run of the command line
does one command, and Postfix's pipe runs one for every mail: the command line
imports only what the command given uses (issue 43: ``--help`` took 1.7 s of CPU
importing the whole server).  ``cli/main.py`` imports the chosen command's module
by name (``importlib``, its ``COMMANDS`` table), and a command that may stop early
imports the rest where it goes on (``cli/pipe.handle_here``).  Everywhere else an
import is at the top, where the graph and the layers can be read."""


def test_no_function_level_import_of_our_own_modules():
    trees = modules()
    known = set(trees)
    late = []
    for name, tree in trees.items():
        if name == LATE_IMPORTS_ALLOWED or name.startswith(LATE_IMPORTS_ALLOWED + "."):
            continue
        top = {(t, line) for t, line, _ in own_imports(name, tree, known, top_level_only=True)}
        for target, line, _ in own_imports(name, tree, known, top_level_only=False):
            if (target, line) not in top:
                late.append(f"{name}:{line} imports {target}")
    assert late == []


def private_names_defined(tree: ast.Module) -> set[str]:
    """``_names`` a module defines: functions, classes, assignments, attributes set
    on ``self`` and ``__slots__`` entries."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("_"):
            out.add(node.value)  # __slots__ = ("_moves", ...)
    return {n for n in out if n.startswith("_") and not n.startswith("__")}


def test_no_private_name_used_outside_its_module():
    """A ``_name`` one of our modules defines is used by that module only (names
    private to the standard library, e.g. a namedtuple's ``_replace``, are not ours)."""
    trees = modules()
    known = set(trees)
    defined = {name: private_names_defined(tree) for name, tree in trees.items()}
    ours = set().union(*defined.values())
    leaks = []
    for name, tree in trees.items():
        for target, line, names in own_imports(name, tree, known, top_level_only=False):
            leaks += [f"{name}:{line} imports {target}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr in ours
                and node.attr not in defined[name]
            ):
                leaks.append(f"{name}:{node.lineno} uses .{node.attr}")
    assert leaks == []


def test_the_graph_is_read_correctly():
    """The reader must see real edges, or the tests above pass on nothing."""
    edges = graph()
    assert "pbmserv_terrace.service.context" in edges["pbmserv_terrace.service.core"]
    assert "pbmserv_terrace.service.accounts" in edges["pbmserv_terrace.service.registry"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    tree = ast.parse("class P:\n    __slots__ = ('_m',)\n    def _f(self):\n        self._x = 1\n")
    assert private_names_defined(tree) == {"_m", "_f", "_x"}
