"""A game review through the real mail path (issue 42 item 1): ann plays robot2 by
mail through Dovecot and ``serve`` (its robots' worker pool), leaves her T to be
taken, and her mailbox gets the game-end mail and then, after it, the review that
names her losing move, with the chart and the board at the turning point."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..mailservers import Players, ServeProcess, body

BLUNDER = ("1A6/8/8/2tT4/6a1/8/4D3/5b2 1", "c5-c4", "T-c5-c4")
"""a position where ann (army 1, to move) loses her T by this one move only"""


def test_the_review_arrives_after_the_game_end_mail(dovecot, relay, players: Players, tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path, dovecot, relay, f"sqlite:///{tmp_path}/serve.db", env={"PBMSERV_REVIEW_NODES": "10000"})
    serve.start()
    try:
        players.signup("ann")
        players.send("ann", "terrace challenge ann pw-ann robot2")
        assert "New Terrace Board 101" in str(players.wait("ann")[0]["Subject"])
        tpn, written, recorded = BLUNDER
        with sqlite3.connect(tmp_path / "serve.db") as conn:  # the constructed position, as the board's start
            conn.execute("UPDATE games SET position = ?, start_position = ? WHERE board_number = 101", (tpn, tpn))
        players.send("ann", f"terrace move 101 ann pw-ann {written}")
        mails = players.wait("ann", 3, timeout=90.0)  # her move's board mail, robot2's winning move, the review
        texts = [body(m) for m in mails]
        ended = next(i for i, t in enumerate(texts) if "Game over: robot2 wins" in t)
        review = next(i for i, m in enumerate(mails) if "the review of your game against robot2" in str(m["Subject"]))
        assert ended < review  # in the order the mailbox took them
        text = texts[review]
        assert f"The turning point: ply 1, when you played {recorded}" in text
        assert f"ply 1: {recorded}; better " in text and "leaves its T to be taken" in text
        pictures = [p for p in mails[review].walk() if p.get_content_type() == "image/png"]
        assert len(pictures) == 2 and all(p.get_payload(decode=True).startswith(b"\x89PNG") for p in pictures)
        players.quiet("ann", 1.0)  # once, not twice
        with sqlite3.connect(tmp_path / "serve.db") as conn:
            assert conn.execute("SELECT state FROM reviews").fetchall() == [("sent",)]
        assert serve.stop() == 0
    finally:
        serve.close()
