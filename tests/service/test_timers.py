"""Timers (COMMANDS.md §4): nags, forfeits, total time, vacation."""

from __future__ import annotations

import pytest

from .harness import Harness, run_timers, to


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben")
    harness.send("ann", "terrace challenge ann pw-ann ben --nagtime=2 --forfeittime=5")
    harness.move(101, "ann", "d2-e3")
    harness.move(101, "ben", "d7-d6")
    yield harness
    harness.close()


def test_nothing_before_nagtime(h):
    assert run_timers(h, 1) == []


def test_nag_then_forfeit(h):
    nag = run_timers(h, 2.5)
    assert to(nag) == ["ann@players.test"] and nag[0].subject == "Terrace Board 101 ann reminder"
    assert "it is\nyour turn, ann" in nag[0].body
    assert run_timers(h, 3) == []  # nagged once only
    out = run_timers(h, 5.5)
    assert to(out) == ["ann@players.test", "ben@players.test"]
    assert "Game over: ben wins (ann forfeited)" in out[0].body


def test_vacation_stops_timers(h):
    h.send("ann", "terrace vacation ann pw-ann on")
    assert run_timers(h, 10) == []
    h.send("ann", "terrace vacation ann pw-ann off")
    assert "Game over" in run_timers(h, 12)[0].body


def test_a_move_resets_the_clock(h):
    run_timers(h, 2.5)
    h.move(101, "ann", "c2-d2")
    assert run_timers(h, 1) == []


def test_totaltime_forfeit():
    h = Harness()
    try:
        h.signup("ann", "ben")
        h.send("ann", "terrace challenge ann pw-ann ben --totaltime=1")
        h.move(101, "ann", "d2-e3")
        h.move(101, "ben", "d7-d6")
        out = run_timers(h, 1.2)
        assert any("ann forfeits on time" in r.body and "used up the total time" in r.body for r in out)
    finally:
        h.close()
