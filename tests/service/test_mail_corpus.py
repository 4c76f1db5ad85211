"""Raw mails as real clients write them (tests/data/mail/*.eml), processed in order
through the ``handle`` path: MIME, charsets, transfer encodings, quoting, replies,
forwards, HTML-only, attachments, and the mails that must never be answered."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Harness, to

CORPUS = Path(__file__).resolve().parent.parent / "data" / "mail"
ANN, BEN = "ann@players.test", "ben@players.test"

# file: (status, recipients, texts every reply body must contain, texts none may contain)
EXPECT: dict[str, tuple[str, list[str], list[str], list[str]]] = {
    "01-thunderbird-move.eml": (
        "ok",
        [ANN, BEN],
        ["ann played C-d2-e3", "ann writes:\nHere we go, the classic opening. Good luck!"],
        ["Chess & Terrace Club"],
    ),
    "02-outlook-alternative-qp.eml": (
        "ok",
        [ANN, BEN],
        ["ben played C-e7-d6", "Let’s see where this goes – a quiet reply."],
        ["<div>"],
    ),
    "03-gmail-alternative-base64.eml": ("ok", [ANN], ["Summary of Terrace Board 101"], []),
    "04-apple-mail-qp.eml": ("ok", [ANN, BEN], ["ann played C-c2-d2", "right about here, and then goes on — with a dash."], []),
    "05-iso-8859-1-8bit.eml": ("ok", [ANN, BEN], ["ben played A-b7-b6", "Très bien, à bientôt !"], []),
    "06-reply-with-quoted-board.eml": (
        "ok",
        [ANN, BEN],
        ["ann played D-a2-a3", "ann writes:\nPushing on the left."],
        ["wrote:", "> Terrace Board"],
    ),
    "07-forwarded.eml": ("ok", [BEN], ["Summary of Terrace Board 101"], ["Forwarded message"]),
    "08-vacation-auto-reply.eml": ("ignored", [], [], []),
    "09-bounce-dsn.eml": ("bounce", [], [], []),  # counted (here: names no reply of ours), never answered
    "10-html-only.eml": ("ok", ["cat@players.test"], ["101    terrace"], []),
    "11-windows-1252-chat.eml": ("ok", [ANN, BEN], ["Chat on Terrace Board 101 from ann", "It’s your move – no hurry."], []),
    "12-encoded-subject.eml": ("ok", ["dan@players.test"], ["Your first game, step by step"], []),
    "17-command-in-body-qp.eml": ("ok", [ANN, BEN], ["ben played C-f7-f6", "A move written in the body"], []),
    "13-attachment.eml": ("ok", [ANN, BEN], ["ann played B-d1-d3", "Photo of my real board attached."], ["iVBOR"]),
    "14-outlook-automatic-reply.eml": ("ignored", [], [], []),
    "15-list-mail.eml": ("ignored", [], [], []),
    "16-no-message-id-wrong-password.eml": ("error", [ANN], ["the userid or the password is not correct"], []),
}


def test_corpus_has_every_file():
    assert sorted(EXPECT) == sorted(p.name for p in CORPUS.glob("*.eml"))
    assert len(EXPECT) >= 15


def test_corpus_processed_in_order():
    h = Harness()
    try:
        h.signup("ann", "ben")
        h.send("ann", "terrace challenge ann pw-ann ben")
        for name, (status, recipients, present, absent) in EXPECT.items():
            replies = h.raw((CORPUS / name).read_bytes())
            assert h.last.status == status, (name, h.last)
            assert to(replies) == sorted(recipients), (name, replies)
            for reply in replies:
                for text in present:
                    assert text in reply.body, (name, text, reply.body)
                for text in absent:
                    assert text not in reply.body, (name, text)
        # the same files again: every one is a repeated Message-ID (or ignored), nothing changes
        for name in EXPECT:
            if name.startswith("16-"):
                continue  # no Message-ID: its stand-in id is the content's hash, so also a repeat
            assert h.raw((CORPUS / name).read_bytes()) == [], name
    finally:
        h.close()


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_each_file_parses(name):
    from pbmserv_terrace.mail.message import parse_message

    mail = parse_message((CORPUS / name).read_bytes())
    assert mail.message_id and mail.sender.endswith(".test")
