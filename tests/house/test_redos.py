"""Every regular expression of the package, scanned by a ReDoS finder (issue 36):
regexploit looks for repeats that can match the same text in more than one way
(the shape behind catastrophic backtracking).  The patterns are collected from the
imported modules (so patterns built with f-strings are scanned too) and from the
string literals passed to ``re`` functions in the source."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import warnings
from pathlib import Path

import pytest
from regexploit.ast.sre import SreOpParser
from regexploit.languages.python_node_visitor import PythonNodeVisitor
from regexploit.redos import find

import pbmserv_terrace

PACKAGE = Path(pbmserv_terrace.__file__).parent

ANSWERED: dict[str, str] = {}
"""pattern → why its finding is harmless (none so far)"""


def compiled_patterns() -> dict[str, tuple[str, int]]:
    """pattern text → (where, flags) for every compiled pattern a module holds."""
    found: dict[str, tuple[str, int]] = {}
    for info in pkgutil.walk_packages([str(PACKAGE)], "pbmserv_terrace."):
        if info.name.endswith("__main__"):
            continue  # (runs the command line)
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found.setdefault(value.pattern, (f"{info.name}.{name}", value.flags))
    return found


def literal_patterns() -> dict[str, tuple[str, int]]:
    found: dict[str, tuple[str, int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        visitor = PythonNodeVisitor()
        visitor.visit(ast.parse(path.read_bytes()))
        for regex in visitor.patterns:
            found.setdefault(regex.pattern, (f"{path.relative_to(PACKAGE)}:{regex.lineno}", regex.flags))
    return found


def findings(pattern: str, flags: int) -> list[str]:
    try:
        parsed = SreOpParser().parse_sre(pattern, flags)
    except re.error:
        return []  # a string that is no regular expression
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return [f"starriness {r.starriness}: {r.example_prefix!r} + {r.redos_sequence!r}..." for r in find(parsed) if r.starriness > 2]


def test_the_scan_sees_the_package_patterns():
    patterns = {**literal_patterns(), **compiled_patterns()}
    assert len(patterns) >= 40
    assert any("multipart" in p for p in patterns) and any("[tabcd]" in p for p in patterns)  # f-string ones too


def test_a_backtracking_pattern_is_found():
    """The finder itself works: a classic catastrophic pattern is reported."""
    assert findings(r"^(a+)+$", 0) and findings(r"(\w+\s?)*x", 0)


@pytest.mark.parametrize("source", ["compiled", "literal"])
def test_no_pattern_backtracks_catastrophically(source):
    patterns = compiled_patterns() if source == "compiled" else literal_patterns()
    bad = {
        f"{where}: {pattern!r}": found
        for pattern, (where, flags) in patterns.items()
        if pattern not in ANSWERED and (found := findings(pattern, flags))
    }
    assert not bad, bad
