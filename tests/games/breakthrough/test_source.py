"""The package is pure: it imports the standard library, Pillow and itself only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pbmserv_terrace.games.breakthrough as package

ROOT = Path(package.__file__).parent


def test_imports_are_the_standard_library_pillow_and_the_package_itself() -> None:
    allowed = set(sys.stdlib_module_names) | {"PIL"}
    for path in sorted(ROOT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] in allowed for a in node.names), (path.name, ast.dump(node))
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 1 or (node.module or "").split(".")[0] in allowed, (path.name, ast.dump(node))
                if node.level:
                    assert node.level == 1, path.name  # nothing outside games/breakthrough


def test_only_the_picture_uses_pillow() -> None:
    for path in sorted(ROOT.glob("*.py")):
        if path.name != "picture.py":
            assert "PIL" not in path.read_text(), path.name
