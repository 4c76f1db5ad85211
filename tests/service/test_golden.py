"""Golden files: the full text of the main mails, reviewed against COMMANDS.md §5
and pinned.  Regenerate with PBMSERV_UPDATE_GOLDEN=1 after a deliberate change,
then read the diff before committing it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from .harness import Harness

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden"


@pytest.fixture(scope="module")
def mails() -> dict[str, str]:
    h = Harness()
    try:
        h.signup("alice", "bob", "carol")
        h.send("carol", "terrace subscribe carol pw-carol all")
        out: dict[str, str] = {}
        new = h.send("alice", "terrace challenge alice pw-alice bob", "Good luck, Bob!\n-- \nAlice")
        out["new_game"] = _mail(new[0])
        h.move(101, "alice", "d2-e3")
        update = h.move(101, "bob", "C-e7-d6", "Your turn.\n\nOn Monday, alice wrote:\n> old stuff")
        out["move_update"] = _mail(update[0])
        for player, m in (("alice", "c2-d2"), ("bob", "b7-b6")):
            assert "played" in h.move(101, player, m)[0].body
        out["summary"] = _mail(h.send("carol", "terrace show 101")[0])
        out["error"] = _mail(h.move(101, "bob", "b4-c3")[0])
        h.signup("dave")
        h.send("dave", "terrace challenge dave pw-dave carol -short")
        h.send("carol", "terrace challenge carol pw-carol alice bob")
        out["games"] = _mail(h.send("carol", "terrace games")[0])
        h.move(102, "dave", "resign")  # first round: board removed, unrated
        h.send("bob", "terrace resign 101 bob pw-bob")  # pending: it is alice's turn
        assert "Game over: alice wins (bob resigned)" in h.move(101, "alice", "a2-a3")[0].body
        out["standings"] = _mail(h.send("carol", "terrace standings")[0])
        return out
    finally:
        h.close()


def _mail(reply) -> str:
    # the play link's reply key differs on every run (the server's secret is random)
    body = re.sub(r"/play/[a-z2-7]{31}\n", "/play/KEY\n", reply.body)
    return f"To: {reply.to}\nSubject: {reply.subject}\n\n{body}"


@pytest.mark.parametrize("name", ["new_game", "move_update", "summary", "error", "games", "standings"])
def test_golden(mails, name):
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("PBMSERV_UPDATE_GOLDEN"):
        path.write_text(mails[name], encoding="utf-8")
    assert mails[name] == path.read_text(encoding="utf-8")
