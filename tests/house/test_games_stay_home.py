"""Each game owns its board (issue 37): outside ``games/`` and ``gametypes/`` no
module names a game or imports one.  Adding a game is one folder
(``games/NAME/``), its adapter (``gametypes/NAME.py``), one table entry and its
help template; nothing else may have to know it.

The check reads every module's syntax tree: its imports, and the names and
string constants of its code (docstrings and comments are prose, not code, and
are left out; so is the package's own name, ``pbmserv_terrace``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import pbmserv_terrace
from pbmserv_terrace.gametypes import GAME_TYPES

PACKAGE = Path(pbmserv_terrace.__file__).parent
HOMES = ("games", "gametypes")


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in HOMES)


def game_words() -> re.Pattern[str]:
    words = {g.name for g in GAME_TYPES.values()} | {g.title for g in GAME_TYPES.values()}
    alternatives = "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))
    # not the package's own name (pbmserv_terrace, pbmserv-terrace)
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w])", re.IGNORECASE)


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (or other bare string statements)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def offences(text: str, where: Path, pattern: re.Pattern[str]) -> list[str]:
    """What the module ``text``, standing at ``where`` in the package, names or imports of a game."""
    tree = ast.parse(text, str(where))
    prose = docstrings(tree)
    package = where.relative_to(PACKAGE).parent.parts
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:  # relative: resolve against the module's package
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = target.removeprefix("pbmserv_terrace.")
            if target.split(".")[0] == "games":
                found.append(f"line {node.lineno}: imports {target}")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: imports {a.name}" for a in node.names if a.name.startswith("pbmserv_terrace.games")]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            if pattern.search(node.value):
                found.append(f"line {node.lineno}: the string {node.value[:60]!r}")
        elif isinstance(node, ast.Name | ast.arg | ast.FunctionDef | ast.ClassDef | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg) else (
                node.attr if isinstance(node, ast.Attribute) else node.name)  # fmt: skip
            if pattern.search(name.replace("_", " ")):
                found.append(f"line {node.lineno}: the name {name}")
    return sorted(found, key=lambda f: int(f.split(":")[0].split()[1]))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_outside_the_games_names_a_game_or_imports_one(path: Path) -> None:
    assert offences(path.read_text(), path, game_words()) == []


def test_the_check_finds_what_it_looks_for() -> None:
    """It fails on a module that names or imports a game (so its silence means something)."""
    text = 'from ..games.terrace import parse_tpn\nKIND = "patience"\ndef terrace_only():\n    """Terrace: prose."""\n'
    found = offences(text, PACKAGE / "service" / "core.py", game_words())
    assert [f.split(":")[0] for f in found] == ["line 1", "line 2", "line 3"], found
    assert offences('"""Terrace and patience in prose."""\nNAME = "pbmserv-terrace"\n', PACKAGE / "cli" / "x.py", game_words()) == []
