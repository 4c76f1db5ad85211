"""A tournament through a real Dovecot (issue 41): ``serve`` with mail in over IMAP
and replies out over SMTP; four players sign up, join, and play a round robin to
the end by resigning, each reading their own mailbox: every round's mail names the
hand-computed Berger pairings, and the final table is the hand-computed one."""

from __future__ import annotations

import re
from email.message import Message

from ..mailservers import Players, body

PEOPLE = ("ann", "ben", "cat", "dan")
# Berger for four (seeds by joining order: all are rated 1600)
ROUNDS = [[("ann", "dan"), ("ben", "cat")], [("dan", "cat"), ("ann", "ben")], [("ben", "dan"), ("cat", "ann")]]
_GAME = re.compile(r"^  (\S+) - (\S+): board (\d+), in play$", re.MULTILINE)
_ROW = re.compile(r"^\s+\d+\. (\S+)\s+([\d.]+)\s+([\d.]+)\s+\+\d+ =\d+ -\d+$", re.MULTILINE)


def until(players: Players, name: str, subject_end: str, timeout: float = 90.0) -> Message:
    """Read ``name``'s new mails up to the one whose Subject ends so."""
    while True:
        mail = players.wait(name, timeout=timeout)[0]
        if str(mail["Subject"]).endswith(subject_end):
            return mail


def test_a_round_robin_played_to_the_end_through_dovecot(serve_factory, relay, players, dovecot):
    serve = serve_factory(relay).start()
    for name in PEOPLE:
        players.signup(name)
    players.send("ann", "terrace tournament new ann pw-ann Dovecot cup -roundrobin --players=4")
    assert "is open" in str(until(players, "ann", "Dovecot cup is open")["Subject"])
    for name in PEOPLE:
        players.send(name, f"terrace tournament join 1 {name} pw-{name}")
        until(players, name, f"{name} joined")
    players.send("ann", "terrace tournament start 1 ann pw-ann")
    for round_no, expected in enumerate(ROUNDS, start=1):
        found: dict[tuple[str, str], int] = {}
        for name in PEOPLE:
            mail = until(players, name, f"T1: round {round_no}")
            for white, black, board in _GAME.findall(body(mail)):
                found[(white, black)] = int(board)
        assert sorted(found) == sorted(expected), (round_no, found)
        for white, black in expected:
            loser = max(white, black, key=PEOPLE.index)  # the better seed wins
            players.send(loser, f"terrace resign {found[(white, black)]} {loser} pw-{loser}")
    finals = [until(players, name, "T1: ann wins") for name in PEOPLE]
    text = body(finals[0])
    assert "is over after 3 rounds: ann wins." in text
    # by hand: points 3, 2, 1, 0; Sonneborn-Berger: ann 2+1+0 = 3, ben 1+0 = 1, cat 0, dan 0
    assert [(n, float(p), float(sb)) for n, p, sb in _ROW.findall(text)] == [
        ("ann", 3.0, 3.0), ("ben", 2.0, 1.0), ("cat", 1.0, 0.0), ("dan", 0.0, 0.0)]  # fmt: skip
    assert all(_ROW.findall(body(m)) == _ROW.findall(text) for m in finals)
    assert serve.stop() == 0
    assert "command=terrace tournament result=ok" in serve.log.read_text()
