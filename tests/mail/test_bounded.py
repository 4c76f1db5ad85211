"""Bounded work before parsing, linear work after (issue 36): every shape that
once held the event loop for seconds, read at n and 4n, costs at most ~4x the
calls (a quadratic parse would cost 16x); over a cap, the body is refused unread."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbmserv_terrace.commands import parse_mail
from pbmserv_terrace.commands.reply import reply_command
from pbmserv_terrace.mail.message import (
    MAX_BODY_CHARS,
    MAX_BODY_LINES,
    MAX_HEADER_BYTES,
    MAX_SUBJECT_CHARS,
    html_to_text,
    parse_message,
)

from .work import calls

HEAD = b"From: Ann <ann@players.test>\r\nTo: pbmserv@terrace.test\r\nMessage-ID: <x1@players.test>\r\n"


def html_mail(markup: bytes) -> bytes:
    folded = b"\r\n".join(markup[i : i + 900] for i in range(0, len(markup), 900))
    return HEAD + b"Subject: \r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + folded + b"\r\n"


def nested(depth: int) -> bytes:
    opening = b"".join(b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i) for i in range(depth))
    return HEAD + b"Subject: help\r\n" + opening + b"Content-Type: text/plain\r\n\r\nhi\r\n"


def parts(count: int) -> bytes:
    body = b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n" * count
    return HEAD + b"Subject: help\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" + body + b"--b--\r\n"


SHAPES: dict[str, Callable[[int], bytes]] = {
    "script": lambda n: html_mail(b"<html>help" + b"<script>" * n),
    "lt": lambda n: html_mail(b"<" * (8 * n)),
    "p": lambda n: html_mail(b"<p" * (4 * n)),
    "div": lambda n: html_mail(b"<div>" * (2 * n)),
    "comment": lambda n: html_mail(b"<!--" * (2 * n)),
    "entities": lambda n: html_mail(b"&#x" * (3 * n)),
    "subject": lambda n: HEAD + b"Subject: " + b"=?utf-8?q?a?= " * n + b"\r\n\r\nhi\r\n",
    "to": lambda n: b"From: a@b.test\r\nMessage-ID: <1@b>\r\nTo: " + b'"x" <a@b.c>, ' * n + b"\r\n\r\nhi\r\n",
    "folded": lambda n: HEAD + b"Subject: x\r\n" + b" y\r\n" * n + b"\r\nhi\r\n",
    "fields": lambda n: HEAD + b"X-A: b\r\n" * n + b"\r\nhi\r\n",
    "nested": nested,
    "parts": parts,
    "flowed": lambda n: HEAD + b"Content-Type: text/plain; format=flowed\r\n\r\n" + b"a \r\n" * (4 * n),
    "quotes": lambda n: HEAD + b"Subject: help\r\n\r\n" + b"> " * n + b"x\r\n" + b">\r\n" * n,
    "empty lines": lambda n: HEAD + b"Subject: help\r\n\r\n" + b"\r\n" * (100 * n),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_work_grows_linearly_or_not_at_all(shape):
    make = SHAPES[shape]
    small, large = make(3_000), make(12_000)
    parse_message(small)  # (first-use caches)
    ratio = calls(lambda: parse_message(large)) / calls(lambda: parse_message(small))
    assert ratio < 5.0, f"{shape}: 4x the input cost {ratio:.1f}x the calls"


def test_the_issue_shapes_are_read_or_refused_without_crashing():
    # ~100 kB of <script> after "help": the command is found, the rest costs nothing
    mail = parse_message(html_mail(b"<html>help" + b"<script>" * 12_500))
    assert mail.problem is None and mail.body == "help" and mail.parsed.commands[0].verb == "help"
    # 3,000 nested multiparts: the parser recursed until RecursionError
    deep = parse_message(nested(3_000))
    assert deep.problem is not None and "MIME" in deep.problem and deep.body == ""
    assert deep.sender == "ann@players.test" and deep.subject == "help"
    many = parse_message(parts(200_000))
    assert many.problem is not None and "MIME" in many.problem
    # a huge Subject and To are cut before they are decoded or parsed
    subject = parse_message(SHAPES["subject"](60_000))  # 840 kB: over the header block's cap
    assert subject.problem is not None and "header block" in subject.problem and subject.sender == "ann@players.test"
    subject = parse_message(SHAPES["subject"](3_000))  # 42 kB: the field is cut to 8 kB before decoding
    assert subject.problem is None and 0 < len(subject.subject) <= MAX_SUBJECT_CHARS
    to = parse_message(SHAPES["to"](30_000))
    assert to.sender == "a@b.test" and len(to.recipients) <= 20
    # a header block with no end in sight
    endless = parse_message(HEAD + b"X-A: " + b"b" * (2 * MAX_HEADER_BYTES))
    assert endless.problem is not None and "header block" in endless.problem and endless.sender == "ann@players.test"
    fields = parse_message(SHAPES["fields"](1_000))  # 8 kB: under the block's cap, over the count
    assert fields.problem is not None and "header fields" in fields.problem
    plain = parse_message(HEAD + b"Subject: help\r\n\r\n" + b"word " * 2_000_000)
    assert plain.problem is None and len(plain.body) == MAX_BODY_CHARS
    lines = parse_message(HEAD + b"Subject: help\r\n\r\nfirst\r\n" + b"\r\n" * 150_000)
    assert lines.body.startswith("first\n") and lines.body.count("\n") == MAX_BODY_LINES - 1


def test_a_few_nested_parts_and_a_normal_multipart_are_still_read():
    mail = parse_message(nested(5))
    assert mail.problem is None and mail.body.strip() == "hi"
    assert parse_message(parts(40)).problem is None


@pytest.mark.parametrize(
    ("markup", "text"),
    [
        ("<html><body><p>terrace move 101 ann pw d2-e3</p><p>Hi&nbsp;there &amp; you</p></body></html>",
         "terrace move 101 ann pw d2-e3\n\nHi there & you"),
        ("<div dir=ltr>d2-e3<div><br></div><div>nice<!-- hidden --> game</div></div>", "d2-e3\n\n\n\nnice game"),
        ("<head><title>T</title><style>p {}</style></head>help<script>x()</script> me", "help me"),
        ("a<br>b<BR/>c", "a\nb\nc"),
        ("<blockquote>quoted</blockquote>after", "quoted\nafter"),
        ("<" * 10, "<" * 10),
        ("<p" * 1000, ""),
        ("", ""),
        ("plain words", "plain words"),
    ],
)  # fmt: skip
def test_html_to_text(markup, text):
    assert html_to_text(markup) == text


def test_raw_utf8_headers_are_read_as_utf8_and_control_characters_go():
    raw = (
        "From: Zoë Ünal <zoe@players.test>\r\nTo: pbmserv@terrace.test\r\n"
        "Subject: terrace help\x1b[31m ünïcode\r\nMessage-ID: <a\x00b\x1bc@players.test>\r\n\r\nhi\r\n"
    ).encode()
    mail = parse_message(raw)
    assert mail.sender == "zoe@players.test"
    assert mail.subject == "terrace help [31m ünïcode"
    assert mail.message_id == "<abc@players.test>" and mail.message_id.isprintable()


FRAGMENTS = [
    b"<p", b"<", b"<script>", b"</", b"&#", b"=?utf-8?q?", b"?=", b"--b", b"\r\n", b"\r\n\r\n", b" ", b"\t",
    b"Content-Type: multipart/mixed; boundary=b\r\n", b"Content-Type: text/html\r\n", b"Content-Transfer-Encoding: base64\r\n",
    b"Subject: ", b"To: ", b"From: ", b'"', b"<a@b.c>", b",", b"\x00", b"\xff", b"\xc3\xa9", b"> ", b"-- \r\n", b"terrace move 101 ",
]  # fmt: skip


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.integers(1, 400)), max_size=12))
def test_adversarial_shapes_never_crash_and_stay_bounded(pieces):
    raw = HEAD + b"".join(fragment * times for fragment, times in pieces)
    mail = parse_message(raw)
    assert len(mail.subject) <= MAX_SUBJECT_CHARS and len(mail.body) <= MAX_BODY_CHARS
    assert mail.message_id.isprintable() and len(mail.message_id) <= 250
    assert all(r.isprintable() for r in mail.references)
    parsed = parse_mail(mail.subject, mail.body)
    assert parsed.commands or parsed.error
    reply_command(mail.body)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["move ", "101 ", "ann ", "pw ", "> ", "\n", "-- \n", "On Mon ann wrote:\n",
                                           "d2-e3", "#", "--opt=", "-long ", "Re: ", "** ", "multiple\n", "\n\n"]),
                          st.integers(1, 300)), max_size=10))  # fmt: skip
def test_the_command_parser_is_linear_on_adversarial_text(pieces):
    text = "".join(piece * times for piece, times in pieces) * 4  # (past the shape's first few words)
    small = calls(lambda: (parse_mail(text, text), reply_command(text)))
    large = calls(lambda: (parse_mail(text * 4, text * 4), reply_command(text * 4)))
    assert large <= 5 * small + 2_000


INSTRUCTIONS = """
import sys
from tests.mail.test_bounded import SHAPES
from pbmserv_terrace.mail.message import parse_message
n = int(sys.argv[1])
for name in sys.argv[2:]:
    parse_message(SHAPES[name](n)) if n else parse_message(SHAPES[name](1))
"""


def instructions(n: int, shapes: list[str]) -> int:
    """Machine instructions of a Python process that parses each shape at size
    ``n`` (valgrind's count: the same on any machine, however busy)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", INSTRUCTIONS, str(n), *shapes],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found is not None, done.stderr[-2000:]
    return int(found.group(1))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (./scripts/test installs it as root)")
def test_the_html_and_header_shapes_cost_linear_machine_work():
    """The C parsers too (lxml, the regexes, the email package's C parts): the
    call counts above see only Python.  Instructions at 0, n and 4n, one process
    each for every shape together: a quadratic shape would make the 4n run cost
    16x its share of the n run."""
    shapes = ["script", "lt", "p", "div", "comment", "subject", "to", "nested"]
    base = instructions(0, shapes)
    small = instructions(4_000, shapes) - base
    large = instructions(16_000, shapes) - base
    assert small > 0 and large <= 5 * small, f"4x the input cost {large / small:.1f}x the instructions"
