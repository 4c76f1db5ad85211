"""What a new patience player reads (issue 38 items 2, 3, 11 and 15), through the
whole mail path in process: the examples in a board mail are legal and make
progress, the end of a game says how to start a new deal, the standings say how
hints and undos count, and "1 card", "1 move", "1 deal" read as English."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from pbmserv_terrace.games.patience import replay

from .harness import Harness, Reply, answer


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    harness.signup("ann", "ben")
    yield harness
    harness.close()


def new(h: Harness, user: str = "ann", extra: str = "-terrace --deal=4") -> Reply:
    [r] = h.send(user, f"patience new {user} pw-{user} {extra}")
    return r


def examples_in(mail: Reply) -> list[str]:
    """Every move the mail offers: the reply line's example and the status line's."""
    found = re.findall(r"your moves \(e\.g\. ([^)]+)\) on the first line", mail.body)
    text = " ".join(mail.body.split())
    for listed in re.findall(r"e\.g\. ([^()]+?)(?: \(|\)|\.)", text):
        found += [t.strip() for t in re.split(r",| or ", listed)]
    return [t for t in found if t]


def test_following_the_mails_example_makes_progress_and_every_example_is_legal(h: Harness) -> None:
    mail = new(h, extra="-wood --deal=3")
    played: list[str] = []
    tables: set[str] = set()
    for _ in range(40):
        table = mail.body[mail.body.index("Terrace patience:") : mail.body.index("Moves:")]
        assert table not in tables, "a table came back: the examples went round in circles"
        tables.add(table)
        shown = examples_in(mail)
        assert shown, mail.body
        for move in shown:
            replay("wood", 3, [*played, move])  # legal now (raises if not)
        example = re.search(r"your moves \(e\.g\. ([^)]+)\)", mail.body)
        assert example is not None
        played.append(example.group(1))
        [mail] = answer(h, mail, example.group(1))
        assert "Stopped" not in mail.body and "Error" not in mail.subject, mail.body
    assert "r-f1, w-t2, t4-t1" not in mail.body


def test_the_table_says_which_end_of_the_reserve_is_the_top(h: Harness) -> None:
    r = new(h)
    assert "Piles read bottom to top: the last card shown is the top card." in r.body
    assert re.search(r"Reserve 11, top (\w+): .* \1\n", r.body), r.body


def test_the_end_of_a_game_says_how_to_start_a_new_deal(h: Harness) -> None:
    first = new(h)
    [moved] = answer(h, first, "base 1")
    [end] = answer(h, moved, "resign")
    assert "Game over: resigned, score 1/104 in 1 move." in end.body
    assert "Resigned with 1 card on the foundations." in end.body
    last = end.body.rstrip("\n").splitlines()[-1]
    assert last == (
        "Reply to this mail with new on the first line to start a new deal (or show), or send patience new USERID PASSWORD."
    )
    assert "start a new deal with new" not in end.body and "start a new deal with new" not in end.html
    [late] = h.send("ann", "patience move 101 ann pw-ann flip")
    assert "board 101 is over (resigned, score 1/104 in 1 move); to start a new deal, reply new to a mail of the board, " \
           "or send patience new USERID PASSWORD" in " ".join(late.body.split())  # fmt: skip


def test_the_standings_say_how_hints_and_undos_count_and_show_them(h: Harness) -> None:
    first = new(h)
    answer(h, first, "base 1 flip")
    h.send("ann", "patience hint 101 ann pw-ann")
    h.send("ann", "patience undo 101 ann pw-ann")
    h.send("ann", "patience resign 101 ann pw-ann")
    b = new(h, "ben")
    answer(h, b, "base 1")
    h.send("ben", "patience resign 102 ben pw-ben")
    [s] = h.send("ben", "patience standings")
    assert s.body.startswith("Patience standings: 2 finished games on 1 deal\n"), s.body
    assert "Hints and undos change no points" in s.body
    assert "(moves taken back by undo are not counted)" in " ".join(s.body.split())
    header = next(line for line in s.body.splitlines() if "player" in line)
    assert header.split()[-2:] == ["hints", "undos"]
    rows = {line.split()[1]: line.split() for line in s.body.splitlines() if re.match(r"\s+\d+ \w", line)}
    assert rows["ann"][-2:] == ["1", "1"] and rows["ben"][-2:] == ["0", "0"], s.body
    assert "1 card in 1 move with 1 hint and 1 undo (board 101)" in s.body
    assert "1 card in 1 move (board 102)" in s.body
    assert all(len(line) <= 79 for line in s.body.splitlines() if "Points:" not in line), s.body


def test_one_game_on_one_deal_reads_as_english(h: Harness) -> None:
    new(h)
    h.send("ann", "patience resign 101 ann pw-ann")
    [s] = h.send("ben", "patience standings")
    assert "Patience standings: 1 finished game on 1 deal" in s.body
    [g] = h.send("ann", "patience games")
    assert re.search(r"\b0 moves, score 0/104; resigned, score 0/104 in 0 moves", g.body), g.body
    new(h, "ann", "-wood --deal=1")
    h.send("ann", "patience move 102 ann pw-ann flip")
    [listing] = h.send("ben", "list patience")
    assert re.search(r"\b1 move, score", listing.body), listing.body
