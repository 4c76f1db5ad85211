"""Tests test through public names (issue 37 part 6): no test module under
``tests/`` reads or sets a ``_private`` attribute of our package's objects,
imports a ``_private`` name from it, or names one in ``setattr``/``getattr``
(``monkeypatch.setattr(module, "_NAME", ...)``).  Where a test truly needs a
handle, the package offers a small public one (e.g. ``OutboxSenders.recent_sends``,
``mail.imap.searched_uids``, ``mail.delivery.SYNCFS``).

One ``ast`` walk per test module.  An attribute counts as ours when our package
defines that ``_name`` somewhere (``test_imports.private_names_defined``: the
functions, classes, assignments and attributes of its modules) and the test
module does not define it itself (a test's own helper class may keep ``self._x``);
a private name that only a third-party library has (httpx's ``client._transport``,
asyncio's ``loop._selector``) is not ours and not looked at."""

from __future__ import annotations

import ast
from pathlib import Path

from .test_imports import PACKAGE, modules, private_names_defined

TESTS = Path(__file__).resolve().parents[1]

ALLOWED = {
    # aiosmtpd's own address parser, the reference the embedded listener's
    # SmtpSession.read_address must equal (the name is aiosmtpd's hook, which
    # SmtpSession also defines as an alias)
    ("mail/test_embedded_addresses.py", "_getaddr"),
    # The password cache's memory holds no password: the test reads what it keeps.
    # service/passwords.py has no public view of it yet (service/ is being edited
    # elsewhere; a public `PasswordCache` accessor would retire this entry).
    ("service/test_passwords.py", "_seen"),
    # The move patterns of commands/reply.py and games/terrace/notation.py, imported
    # to check that what a reply's parser takes is what notation reads (commands/
    # and games/ are being edited elsewhere: public names for them retire these).
    ("commands/test_reply.py", "_MOVE_SHAPE"),
    ("commands/test_reply.py", "_MOVE"),
    # games/ are pure modules under another engineer's hands: these tests compare
    # the fast paths with the module's own slow reference functions and caches.
    # Public names for them belong in games/ (retire each entry with them).
    ("games/terrace/test_hot_path.py", "_MOVE"),
    ("games/terrace/test_notation_forms.py", "_MOVE"),
    ("games/terrace/test_hot_path.py", "_read_tpn"),
    ("games/terrace/test_hot_path.py", "_cache"),
    ("games/terrace/test_hot_path.py", "_draw"),
    ("games/terrace/test_hot_path.py", "_cell"),
    ("games/terrace/test_picture.py", "_ink"),
    ("games/terrace/test_picture.py", "_draw"),
    ("games/terrace/test_picture.py", "_reach"),
    ("games/patience/test_picture.py", "_font_dir"),
    ("games/patience/test_picture.py", "_font"),
    ("games/patience/test_picture.py", "_text_tile"),
    ("games/patience/test_picture.py", "_card_tile"),
    ("games/patience/test_picture.py", "_background"),
    ("games/patience/test_picture.py", "_palette"),
}
"""(test module under tests/, private name) pairs still used, each with its reason"""


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_here(tree: ast.Module) -> set[str]:
    """``_names`` a test module defines for itself: its functions, classes and
    variables, and attributes it sets on ``self`` (a helper class's own state)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            out.add(node.attr)
    return {n for n in out if private(n)}


def uses(tree: ast.Module, ours: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each private name of ours that ``tree`` uses and does not define."""
    own = defined_here(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pbmserv_terrace"):
            found += [(node.lineno, a.name) for a in node.names if private(a.name)]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) in ("setattr", "getattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
        ):
            found.append((node.lineno, node.args[1].value))
    # (an imported private name is ours whatever it is; an attribute only when our package defines it)
    return sorted((line, name) for line, name in found if name in ours and name not in own)


def ours() -> set[str]:
    return set().union(*(private_names_defined(tree) for tree in modules().values()))


def test_no_test_uses_a_private_name_of_the_package():
    names = ours()
    pokes, allowed_seen = [], set()
    for path in sorted(TESTS.rglob("*.py")):
        where = path.relative_to(TESTS).as_posix()
        for line, name in uses(ast.parse(path.read_text(), str(path)), names):
            if (where, name) in ALLOWED:
                allowed_seen.add((where, name))
            else:
                pokes.append(f"tests/{where}:{line} uses {name}")
    assert pokes == []
    assert ALLOWED - allowed_seen == set(), "allow-list entries no longer needed: remove them"


def test_the_check_sees_pokes():
    """The walk must find real pokes, or the test above passes on nothing."""
    names = {"_sent_at", "_parseaddr", "_SYNCFS", "_mine"}
    tree = ast.parse(
        "from pbmserv_terrace.mail.message import _parseaddr\n"
        "import email.utils\n"
        "x = senders._sent_at\n"
        "monkeypatch.setattr(delivery, '_SYNCFS', None)\n"
        "loop._selector\n"
        "email.utils._parseaddr\n"  # (a third-party module with a name like ours: counted, on the safe side)
        "class Own:\n    def f(self):\n        self._mine = 1\n        return self._mine\n"
        "senders._sent_at = 2\n"  # (setting one is a poke too, unless on self)
    )
    assert uses(tree, names) == [(1, "_parseaddr"), (3, "_sent_at"), (4, "_SYNCFS"), (6, "_parseaddr"), (11, "_sent_at")]
    assert defined_here(tree) == {"_mine"}
    assert PACKAGE.name == "pbmserv_terrace" and "_sent_at" in ours()
