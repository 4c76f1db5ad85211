"""The package is pure: it imports the standard library, Pillow, itself and the
pieces every game shares (games/png, games/ranking, games/verdict: pure too) only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pbmserv_terrace.games.breakthrough as package

ROOT = Path(package.__file__).parent
SHARED = {"png", "ranking", "verdict"}
"""the modules of games/ that every game may use (no other game's package)"""


def test_imports_are_the_standard_library_pillow_and_the_package_itself() -> None:
    allowed = set(sys.stdlib_module_names) | {"PIL"}
    for path in sorted(ROOT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] in allowed for a in node.names), (path.name, ast.dump(node))
            elif isinstance(node, ast.ImportFrom):
                shared = node.level == 2 and node.module in SHARED
                assert node.level == 1 or shared or (node.module or "").split(".")[0] in allowed, (path.name, ast.dump(node))
                if node.level:
                    assert node.level == 1 or shared, path.name  # nothing else outside games/breakthrough


def test_only_the_picture_uses_pillow() -> None:
    for path in sorted(ROOT.glob("*.py")):
        if path.name != "picture.py":
            assert "PIL" not in path.read_text(), path.name
