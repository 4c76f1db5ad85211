"""Reply to play through a real Dovecot (issue 14): the players press Reply on the
board mails in their IMAP mailboxes; the replies go to ``pbmserv+KEY@…``, which
Dovecot delivers to the server's INBOX (``recipient_delimiter = +``)."""

from __future__ import annotations

import random
from email.message import Message
from email.utils import make_msgid, parseaddr

from pbmserv_terrace.games.terrace import start_position

from ..mailservers import SERVER, Players, addr, body
from ..service.policy import choose
from ..service.test_games import shortest_seed

SHAPES = [
    # Thunderbird, bottom-posted
    "On 23/11/2026 10:02, Test PBM Server wrote:\r\n{quote}\r\n\r\n{move}\r\n",
    # Gmail web, top-posted
    "{move}\r\n\r\nOn Mon, Nov 23, 2026 at 10:02 AM Test PBM Server <{server}> wrote:\r\n{quote}\r\n",
    # Outlook desktop, top-posted, no quote marks
    "{move}\r\n\r\n________________________________\r\nFrom: Test PBM Server <{server}>\r\nSent: Monday, 23 November 2026 10:02\r\n"
    "To: player\r\nSubject: Terrace Board\r\n\r\n{plain}\r\n",
    # iOS
    "{move}\r\n\r\nSent from my iPhone\r\n\r\n> On 23 Nov 2026, at 10:02, Test PBM Server <{server}> wrote:\r\n{quote}\r\n",
]


def press_reply(players: Players, name: str, mail: Message, text: str, shape: int) -> None:
    """What a mail client does on Reply: To = the Reply-To, In-Reply-To, the quote."""
    to = parseaddr(mail["Reply-To"])[1]
    assert to.startswith("pbmserv+") and to.endswith("@terrace.test"), to
    original = body(mail)
    quote = "\r\n".join("> " + line for line in original.splitlines())
    text_body = SHAPES[shape % len(SHAPES)].format(move=text, quote=quote, plain=original.replace("\n", "\r\n"), server=SERVER)
    data = (
        f"From: {name.capitalize()} <{addr(name)}>\r\nTo: Test PBM Server <{to}>\r\nSubject: Re: {mail['Subject']}\r\n"
        f"Message-ID: {make_msgid(domain='players.test')}\r\nIn-Reply-To: {mail['Message-ID']}\r\n"
        f"References: {mail['Message-ID']}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text_body}"
    ).encode()
    players.relay.send(addr(name), to, data)


def test_a_game_by_reply_through_dovecot(serve_factory, relay, players):
    serve = serve_factory(relay).start()
    for name in ("ann", "ben"):
        players.signup(name)
    players.send("ann", "terrace challenge ann pw-ann ben -short")
    last = {name: players.wait(name)[0] for name in ("ann", "ben")}
    assert "Reply to this mail with your move" in body(last["ann"])
    # a reply to an older mail, after the board moved on, changes nothing
    pos = start_position("short", 8)
    rng = random.Random(shortest_seed("short", 8))
    names = ["ann", "ben"]
    first = last["ann"]
    ply = 0
    while pos.outcome() is None:
        mover = names[pos.to_move - 1]
        move = choose(pos, rng)
        squares = f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}"
        press_reply(players, mover, last[mover], squares, ply)
        pos = pos.play(move)
        ply += 1
        for name in names:
            last[name] = players.wait(name)[0]
            assert f"{mover} played" in body(last[name]), body(last[name])[:300]
        if ply == 2:
            press_reply(players, "ann", first, "d1-d2", 1)
            stale = players.wait("ann")[0]
            assert "your move d1-d2 was not played: board 101 has moved on since the mail you answered (ply 3 is to play now)" in body(stale)
            last["ann"] = stale  # its fresh key is as good as the newest board mail's
    assert "Game over" in body(last["ann"]) and "wins" in body(last["ann"])
    assert serve.stop() == 0
    assert "result=error: outdated reply" in serve.log.read_text()
