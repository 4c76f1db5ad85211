"""Delivery reports read by ``mail.message.parse_message`` (issue 43 part 3): each
MTA's shape, written by hand after real ones, under tests/data/mail/bounces/."""

from __future__ import annotations

from pathlib import Path

import pytest

from pbmserv_terrace.inbound import BouncedRecipient
from pbmserv_terrace.mail.message import MAX_REPORT_BODY, MAX_REPORT_RECIPIENTS, parse_message

BOUNCES = Path(__file__).parent.parent / "data" / "mail" / "bounces"
ORIGINAL = "<176433960900.12345.aaaaaaaaaaaa@terrace.test>"


def read(name: str) -> bytes:
    return (BOUNCES / name).read_bytes().replace(b"\n", b"\r\n")


@pytest.mark.parametrize(
    ("name", "status"),
    [("postfix.eml", "5.1.1"), ("exim.eml", "5.0.0"), ("gmail.eml", "5.1.1"), ("microsoft.eml", "5.1.10")],
)
def test_a_permanent_failure_names_its_recipient_status_and_the_mail_returned(name: str, status: str) -> None:
    mail = parse_message(read(name))
    assert mail.report is not None and mail.report.dsn
    assert mail.report.recipients == [BouncedRecipient("ann@players.test", "failed", status)]
    assert all(r.hard for r in mail.report.recipients)
    assert mail.report.returned_ids == [ORIGINAL]


def test_the_verp_address_is_among_the_recipients() -> None:
    for name in ("postfix.eml", "gmail.eml", "microsoft.eml"):
        assert "pbmserv+bounce-7-aaaaaaaaaaaaaaaa@terrace.test" in parse_message(read(name)).recipients, name


def test_a_delay_is_no_hard_bounce() -> None:
    mail = parse_message(read("postfix-delayed.eml"))
    assert mail.report is not None
    assert mail.report.recipients == [BouncedRecipient("ann@players.test", "delayed", "4.4.1")]
    assert not any(r.hard for r in mail.report.recipients)


def test_exims_plain_bounce_has_only_its_header() -> None:
    """No MIME report: the X-Failed-Recipients header (Exim's, permanent failures
    only) names the address; the copy of the mail in the text is not read."""
    mail = parse_message(read("exim-plain.eml"))
    assert mail.report is not None and not mail.report.dsn
    assert mail.report.recipients == [BouncedRecipient("ann@players.test", "failed", "5.0.0")]
    assert mail.report.returned_ids == []


def test_a_player_mail_is_no_report() -> None:
    raw = b"From: ann@players.test\r\nTo: pbmserv@terrace.test\r\nSubject: help\r\nMessage-ID: <1@p>\r\n\r\nhelp\r\n"
    assert parse_message(raw).report is None
    # a multipart/report of another kind (a read receipt) is no delivery report
    mdn = (
        b"From: ann@players.test\r\nSubject: Read\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/report; report-type=disposition-notification; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/plain\r\n\r\nread\r\n--b--\r\n"
    )
    assert parse_message(mdn).report is None


def test_a_report_is_read_within_its_caps() -> None:
    """A report naming thousands of recipients is read up to the cap (and the
    body caps of parse_message hold before that)."""
    blocks = "".join(
        f"Final-Recipient: rfc822; p{i}@players.test\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\n" for i in range(3000)
    )
    raw = (
        "From: MAILER-DAEMON@mx.test\r\nTo: pbmserv@terrace.test\r\nSubject: x\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n'
        "--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.test\r\n\r\n" + blocks + "--b--\r\n"
    ).encode()
    mail = parse_message(raw)
    assert mail.report is not None
    assert 0 < len(mail.report.recipients) <= MAX_REPORT_RECIPIENTS


def test_odd_values_give_no_recipient() -> None:
    raw = (
        b"From: MAILER-DAEMON@mx.test\r\nTo: pbmserv@terrace.test\r\nSubject: x\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.test\r\n\r\n"
        b"Final-Recipient: rfc822; not an address\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\n"
        b"Final-Recipient: rfc822; <ok@players.test>\r\nAction: FAILED\r\nStatus: five\r\n\r\n--b--\r\n"
    )
    mail = parse_message(raw)
    assert mail.report is not None
    assert mail.report.recipients == [BouncedRecipient("ok@players.test", "failed", "")]
    assert not mail.report.recipients[0].hard  # no 5.x.x status: not counted


def test_a_report_body_is_cut_at_its_own_cap() -> None:
    """Only MAX_REPORT_BODY of a report is parsed (the parser makes a message of
    every status block): a status part that begins after it is not read."""
    notice = "x" * 70 + "\r\n"
    raw = (
        "From: MAILER-DAEMON@mx.test\r\nTo: pbmserv@terrace.test\r\nSubject: x\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n'
        "--b\r\nContent-Type: text/plain\r\n\r\n" + notice * (MAX_REPORT_BODY // len(notice) + 10) + "--b\r\n"
        "Content-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.test\r\n\r\n"
        "Final-Recipient: rfc822; ann@players.test\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\n--b--\r\n"
    ).encode()
    mail = parse_message(raw)
    assert mail.report is not None and mail.report.recipients == []
    # the same report with a short notice is read
    short = raw.replace(notice.encode() * (MAX_REPORT_BODY // len(notice) + 10), notice.encode())
    assert parse_message(short).report.recipients == [BouncedRecipient("ann@players.test", "failed", "5.1.1")]  # type: ignore[union-attr]
