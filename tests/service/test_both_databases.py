"""The queries that list a player's boards, on both databases: PostgreSQL has no
equality for json columns, so a SELECT DISTINCT over the games table fails there
(it did: ``games USER``, ``show USER``, ``delete`` and the robots' work list)."""

from __future__ import annotations

import pytest

from .harness import Harness


@pytest.fixture
def h(db_url: str):
    harness = Harness(db_url)
    harness.signup("ann", "ben")
    yield harness
    harness.close()


def test_listing_a_players_boards(h: Harness) -> None:
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.send("ann", "terrace challenge ann pw-ann robot1")
    h.send("ann", "patience new ann pw-ann --deal=4")
    [r] = h.send("ben", "terrace games ann")
    assert "101" in r.body and "102" in r.body and "robot1" in r.body, r.body
    [r] = h.send("ben", "terrace show ann")
    assert r.subject == "Terrace summaries (2 boards)", r.subject
    [r] = h.send("ann", "all show ann")
    assert "Terrace Board 101" in r.body
    [r] = h.send("ben", "patience games ann")
    assert "board 103" in r.body and "deal 4" in r.body
    replies = h.send("ann", "delete ann pw-ann")
    notice = next(r for r in replies if "has been deleted" in r.body)
    assert "terrace 101" in notice.body and "patience 103" in notice.body, notice.body
    assert h.last is not None and h.last.status != "failed"
