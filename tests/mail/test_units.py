"""Pure parts of the mail layer: building replies, reading UID SEARCH answers,
an IMAP command on a dropped connection.  (The outbox senders' order per
recipient is in tests/app/test_outbox_order.py.)"""

from __future__ import annotations

import asyncio
import base64
import email
import email.policy
from datetime import datetime
from email.message import Message

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pbmserv_terrace.mail.imap import ImapError, searched_uids, until_lost
from pbmserv_terrace.mail.message import base64_lines, build_message


def text(msg: Message) -> str:
    return str(msg.get_content()).replace("\r\n", "\n")  # type: ignore[attr-defined]


def reply(**kw: object) -> bytes:
    args = {"sender": "pbm@srv.test", "sender_name": "PBM Server", "recipient": "ann@x.test",
            "subject": "Terrace Board 101 bob", "body": "board\n", "message_id": "<r1@srv.test>",
            "in_reply_to": "<m1@x.test>", "date": datetime(2026, 1, 2, 3, 4, 5)}  # fmt: skip
    args.update(kw)
    return build_message(**args).as_bytes(policy=email.policy.SMTP)  # type: ignore[arg-type]


def test_reply_headers_and_plain_ascii_body():
    raw = reply()
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert msg["From"] == "PBM Server <pbm@srv.test>" and msg["To"] == "ann@x.test"
    assert msg["Message-ID"] == "<r1@srv.test>" and msg["In-Reply-To"] == msg["References"] == "<m1@x.test>"
    assert msg["Auto-Submitted"] == "auto-replied" and msg["Date"] == "Fri, 02 Jan 2026 03:04:05 -0000"
    assert msg["Content-Transfer-Encoding"] == "7bit" and text(msg) == "board\n"
    assert b"\r\n" in raw and b"\n\n" not in raw.replace(b"\r\n", b"")


def test_non_ascii_and_long_lines_are_encoded_and_decode_back():
    body = "Zug von Jörg ♜\n" + "x" * 1500 + "\n"
    msg = email.message_from_bytes(reply(subject="Terrace Board 101 jörg", body=body, sender_name="Spiel-Server ä"),
                                   policy=email.policy.default)  # fmt: skip
    assert msg["Subject"] == "Terrace Board 101 jörg" and msg["From"].addresses[0].display_name == "Spiel-Server ä"
    assert msg["Content-Transfer-Encoding"] == "quoted-printable" and text(msg) == body
    ascii_long = email.message_from_bytes(reply(body="y" * 1200 + "\n"), policy=email.policy.default)
    assert ascii_long["Content-Transfer-Encoding"] == "quoted-printable" and text(ascii_long) == "y" * 1200 + "\n"
    assert all(len(line) <= 998 for line in reply(body="y" * 5000).split(b"\r\n"))


@pytest.mark.parametrize("markup", ["<p>board</p>\n", "<p>Zug von J\u00f6rg \u265c</p>\n", "<p>" + "y" * 1200 + "</p>\n"])
def test_the_html_part_is_html_and_decodes_back(markup: str) -> None:
    msg = email.message_from_bytes(reply(html=markup, images=[("b@srv.test", b"\x89PNG")]), policy=email.policy.default)
    page = next(p for p in msg.walk() if p.get_content_type() == "text/html")
    assert text(page) == markup
    plain = markup.isascii() and len(markup) < 998
    assert page["Content-Transfer-Encoding"] == ("7bit" if plain else "quoted-printable")
    assert page.get_content_charset() == ("us-ascii" if plain else "utf-8")


@settings(max_examples=300, deadline=None)
@example("a" * 68 + " \n")  # binascii alone would write a line of 77
@given(
    st.lists(st.sampled_from([*"ab =\t.\u00e9\u00d7\u2192\u00a0<>&", "\n", " \n", "\t\n", "=\n", "y" * 80]), max_size=120).map(
        "".join
    )
)
def test_quoted_printable_lines_stay_within_76_and_decode_back(body: str) -> None:
    """Whatever the text (blanks before line ends, '=' , non-ASCII, long runs): the
    encoded lines are RFC 2045's at most 76 characters and the text decodes back."""
    body = "\u00e9" + body  # non-ASCII: always quoted-printable
    raw = reply(body=body, html="<p>" + body + "</p>", images=[("b@srv.test", b"\x89PNG")])
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    parts = [p for p in msg.walk() if p.get_content_maintype() == "text"]
    assert [p["Content-Transfer-Encoding"] for p in parts] == ["quoted-printable"] * 2
    assert [text(p) for p in parts] == [body.replace("\r", ""), "<p>" + body.replace("\r", "") + "</p>"]
    body_lines = raw.split(b"\r\n\r\n", 1)[1].split(b"\r\n")
    assert max(map(len, body_lines)) <= 76


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_base64_lines_are_what_the_stdlib_writes(data: bytes) -> None:
    """The picture's base64 (one C call, then cut in lines) is byte for byte
    ``base64.encodebytes``'s: 76 characters a line, each line ended."""
    assert base64_lines(data) == base64.encodebytes(data).decode("ascii")


def test_no_header_injection_through_any_value():
    raw = reply(subject="hi\r\nBcc: evil@x.test", in_reply_to="<a@b>\r\nBcc: evil@x.test", sender_name="S\nBcc: e@x")
    headers = raw.split(b"\r\n\r\n")[0]
    assert not any(line.lower().startswith(b"bcc") for line in headers.split(b"\r\n"))
    with pytest.raises(ValueError):
        reply(recipient="ann@x.test\r\nBcc: evil@x.test")


def test_uid_search_reading_ignores_untagged_news():
    lines = [b"57 EXISTS", b"3 EXPUNGE", b"2 4 9", b"1 RECENT", b"Search completed (0.001 + 0.000 secs)."]

    first = searched_uids(lines)
    lines[2] = b"SEARCH 5 6"
    assert (first, searched_uids(lines)) == ([2, 4, 9], [5, 6])


def test_imap_command_fails_at_once_when_the_connection_drops():
    async def run() -> str:
        lost = asyncio.Event()
        never = asyncio.get_running_loop().create_future()  # aioimaplib's command, left waiting
        asyncio.get_running_loop().call_later(0.05, lost.set)
        try:
            await asyncio.wait_for(until_lost(never, "NOOP", lost), 5)
        except ImapError as exc:
            assert never.cancelled()
            return str(exc)
        return "no error"

    assert "closed the connection during NOOP" in asyncio.run(run())
