"""A deal of Terrace patience won by mail through a real Dovecot and a real
``serve`` (issue 21): the player starts a deal, presses Reply on each board
mail with the next stretch of moves (quoted under Gmail's and Thunderbird's
attribution lines), asks for a hint, takes a move back, and wins; then the
standings rank the deal."""

from __future__ import annotations

import re

from pbmserv_terrace.games.patience import format_move, new_game, solve

from ..mailservers import Players, body
from .test_reply_dovecot import press_reply

DEAL = ("terrace", 4)
PER_MAIL = 50


def test_a_deal_won_by_reply_through_dovecot(serve_factory, relay, players: Players) -> None:
    serve = serve_factory(relay).start()
    players.signup("ann")
    variant, deal = DEAL
    players.send("ann", f"patience new ann pw-ann -{variant} --deal={deal}")
    [last] = players.wait("ann")
    assert str(last["Subject"]) == "New Patience Board 101 ann"
    assert "Choose the base card from t1-t4" in body(last)
    line = [format_move(m) for m in solve(new_game(variant, deal), max_seconds=5).line]
    assert line, "the solver wins this deal"
    # a hint by reply, then the first move, a move taken back and played again
    press_reply(players, "ann", last, "hint", 0)
    [last] = players.wait("ann")
    assert re.search(r"Hint: \S+", body(last)), body(last)
    press_reply(players, "ann", last, line[0], 1)
    [last] = players.wait("ann")
    press_reply(players, "ann", last, "undo", 0)
    [last] = players.wait("ann")
    assert f"ann took back move ({line[0]})" in body(last)
    for shape, i in enumerate(range(0, len(line), PER_MAIL)):
        press_reply(players, "ann", last, " ".join(line[i : i + PER_MAIL]), shape)
        [last] = players.wait("ann")
        assert "Stopped" not in body(last) and "Error" not in str(last["Subject"]), body(last)[:600]
    text = body(last)
    assert f"Game over: won, score 104/104 in {len(line)} moves" in text
    assert "Undos: 1   Hints: 1" in text
    players.send("ann", "standings patience")
    [standings] = players.wait("ann")
    assert re.search(r"^\s+1 ann\s+0\s+0\s+1\s+1\s+104.0\s+" + str(len(line)), body(standings), re.M), body(standings)
    assert serve.stop() == 0
    log = serve.log.read_text()
    assert "result=error" not in log and "Traceback" not in log
