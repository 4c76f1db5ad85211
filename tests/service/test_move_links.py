"""Tap to move (issue 39 part 1): the HTML part of a board mail to the player to
move lists the moves as ``mailto:`` links to that player's reply-key address; a
reply composed from a link, as the main mail clients send it, plays the move."""

from __future__ import annotations

import html
import random
import re
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.utils import make_msgid, parseaddr
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.render.html import HTML_CLIP_BYTES, move_links_html

from .harness import Harness, Reply, mine, raw_mail

_HREF = re.compile(r'<a href="(mailto:[^"]{1,2000})"')


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "bob")
    yield harness
    harness.close()


def links(reply: Reply) -> list[str]:
    """The mailto: URLs of a mail's HTML part, as a client reads them."""
    return [html.unescape(href) for href in _HREF.findall(reply.html)]


def compose(url: str) -> tuple[str, str, str]:
    """(To, Subject, body) of the mail a client opens for a ``mailto:`` link."""
    parts = urlsplit(url)
    assert parts.scheme == "mailto"
    query = parse_qs(parts.query, strict_parsing=True)
    assert set(query) == {"subject", "body"}
    return unquote(parts.path), query["subject"][0], query["body"][0]


def client_mail(sender: str, url: str, shape: str) -> bytes:
    """The mail a client sends from ``url`` as the player leaves it: ``plain`` (the
    body alone), ``signature`` (the client's signature under it, as iOS Mail and
    Outlook add), ``html`` (multipart with an HTML part, as Gmail and Apple Mail
    send), ``html-only`` (Outlook on the web)."""
    to, subject, body = compose(url)
    if shape == "plain":
        return raw_mail(sender, subject, body, extra={"To": to})
    if shape == "signature":
        return raw_mail(sender, subject, f"{body}\n\n-- \nSent from my iPhone\n", extra={"To": to})
    markup = f'<div dir="ltr">{html.escape(body)}</div><br><div>--<br>Sent from my phone</div>'
    msg: MIMEMultipart | MIMEText
    if shape == "html":
        msg = MIMEMultipart("alternative")
        msg.attach(MIMEText(f"{body}\n\n--\nSent from my phone\n", "plain", "utf-8"))
        msg.attach(MIMEText(markup, "html", "utf-8"))
    else:
        msg = MIMEText(markup, "html", "utf-8")
    msg["From"], msg["To"], msg["Subject"] = sender, to, subject
    msg["Message-ID"] = make_msgid(domain="players.test")
    return msg.as_bytes()


def test_only_the_movers_copy_has_links_to_their_own_key_address(h):
    replies = h.challenge("ann", "bob")
    ann, bob = mine(replies, "ann"), mine(replies, "bob")
    found = links(ann)
    assert found and not links(bob) and "tap one to answer" not in bob.html
    address = parseaddr(ann.headers["reply-to"])[1]
    assert address != parseaddr(bob.headers["reply-to"])[1]
    assert {compose(url)[:2] for url in found} == {(address, "Re: " + ann.subject)}
    rules = GAME_TYPES["terrace"].board
    start = rules.start(rules.two_player_setups[0])
    assert sorted(compose(url)[2] for url in found) == sorted(
        move for _, targets in rules.move_choices(start) for _, move, _ in targets
    )
    # the plain part is the record: no links in it
    assert "mailto:" not in ann.body and "tap one" not in ann.body
    # the next mail: the links go to bob, with bob's new key
    after = h.move(101, "ann", "d2-e3")
    assert not links(mine(after, "ann"))
    bob_next = mine(after, "bob")
    assert {compose(url)[0] for url in links(bob_next)} == {parseaddr(bob_next.headers["reply-to"])[1]}


def test_links_are_text_and_touch_sized(h):
    ann = mine(h.challenge("ann", "bob"), "ann")
    block = ann.html[ann.html.index("Your move: tap one") :]
    assert "&#8594;" in block and "aria-label=" in block and "text-decoration:underline" in block
    assert "<style" not in ann.html
    assert ann.html.count("mailto:") == len(links(ann))


def _play_links(h: Harness, first: Reply, game: str, shapes: list[str], rng: random.Random) -> None:
    """Play by links alone, a move in each shape, the player to move each time."""
    mail = first
    players = {"ann", "bob"}
    for shape in shapes:
        urls = links(mail)
        assert urls, mail.html[:200]
        url = rng.choice(urls)
        move = compose(url)[2]
        player = mail.to.split("@")[0]
        replies = h.raw(client_mail(mail.to, url, shape))
        assert h.last is not None and h.last.status == "ok", (shape, move, h.last, [r.body for r in replies])
        other = (players - {player}).pop()
        mail = mine(replies, other)
        assert f"{player} played" in mail.body, (shape, move, mail.body[:300])
        assert mail.subject.endswith(other) or "finished" in mail.subject


@pytest.mark.parametrize("game", ["terrace", "terrace6x6", "breakthrough"])
def test_a_reply_composed_from_a_link_plays_the_move(h, game):
    first = mine(h.challenge("ann", "bob", game=game), "ann")
    _play_links(h, first, game, ["plain", "signature", "html", "html-only"] * 2, random.Random(game))


def test_a_capture_link_plays_the_capture(h):
    rules = GAME_TYPES["breakthrough"].board
    mail = mine(h.challenge("ann", "bob", game="breakthrough"), "ann")
    for move in ("d2-d3", "e7-e6", "d3-d4", "e6-e5"):
        replies = h.move(101, mail.to.split("@")[0], move, game="breakthrough")
        mail = next(r for r in replies if links(r))
    pos = rules.load(rules.dump(rules.start("8x8")))
    for move in ("d2-d3", "e7-e6", "d3-d4", "e6-e5"):
        pos = rules.play(pos, rules.parse_move(pos, move))
    captures = [url for url in links(mail) if rules.format_move(pos, rules.parse_move(pos, compose(url)[2])) == "d4xe5"]
    assert len(captures) == 1 and compose(captures[0])[2] == "d4-e5"  # (the form a reply's first line is read as)
    assert ">&#215;e5</a>" in mail.html and 'aria-label="W d4 takes e5"' in mail.html
    replies = h.raw(client_mail(mail.to, captures[0], "plain"))
    assert "ann played d4xe5" in mine(replies, "bob").body


def test_patience_links_offer_the_useful_moves_and_play_them():
    h = Harness()
    try:
        h.signup("ann")
        [mail] = h.send("ann", "patience new ann pw-ann --deal=7")
        rng = random.Random(7)
        for shape in ["plain", "signature", "html", "html-only"] * 3:
            urls = links(mail)
            if not urls:
                break
            assert "tap one to answer" in mail.html
            assert {compose(u)[0] for u in urls} == {parseaddr(mail.headers["reply-to"])[1]}
            url = urls[0] if rng.random() < 0.7 else rng.choice(urls)
            replies = h.raw(client_mail(mail.to, url, shape))
            assert h.last is not None and h.last.status == "ok", (shape, compose(url), [r.body for r in replies])
            [mail] = replies
        assert "Moves: " in mail.body and "Moves: 0 " not in mail.body
    finally:
        h.close()


@pytest.mark.parametrize("game", [name for name, kind in GAME_TYPES.items() if kind.family == "board"])
def test_the_largest_move_list_stays_within_the_clip(h, game):
    """The mover's HTML part with the most moves seen in random playouts of every
    setup stays under :data:`HTML_CLIP_BYTES` (bench/move_links.py prints the figures)."""
    rules = GAME_TYPES[game].board
    ann = mine(h.challenge("ann", "bob", game=game), "ann")
    address = parseaddr(ann.headers["reply-to"])[1]
    start_block = move_links_html(
        rules.move_choices(rules.start(rules.two_player_setups[0])), address=address, subject=ann.subject, heading="x", note="y"
    )
    rest = len(ann.html.encode()) - len(start_block.encode())
    most = 0
    for setup in {*rules.two_player_setups, *(rules.setup_for(n, None) for n in (3, 4) if _plays(rules, n))}:
        for seed in range(10):
            rng, pos = random.Random(seed), rules.start(setup)
            while not pos.is_over():
                choices = rules.move_choices(pos)
                block = move_links_html(choices, address=address, subject=ann.subject + " ** x", heading="x", note="y")
                most = max(most, len(block.encode()))
                _, targets = rng.choice(choices)
                pos = rules.play(pos, rules.parse_move(pos, rng.choice(targets)[1]))
    assert rest + most < HTML_CLIP_BYTES, (rest, most)


def _plays(rules, players: int) -> bool:
    try:
        rules.setup_for(players, None)
    except ValueError:
        return False
    return True
