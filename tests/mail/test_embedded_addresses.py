"""The embedded listener reads plain addresses in MAIL FROM and RCPT TO itself
(issue 18): whatever the argument, it gives what aiosmtpd's own parser gives."""

from __future__ import annotations

from collections.abc import Callable

from aiosmtpd.smtp import SMTP
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pbmserv_terrace.mail.embedded import _Listener


class _Quiet:
    """A handler with no hooks: only the parsing is looked at."""


PIECES = [
    "a",
    "Zed",
    "0",
    "+tag",
    "-",
    ".",
    "..",
    "@",
    "<",
    ">",
    " ",
    "\t",
    "(c)",
    '"q"',
    "[1.2.3.4]",
    "ä",
    "=",
    ",",
    ";",
    "SIZE=12",
    " BODY=8BITMIME",
    "\\",
]


@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
@settings(max_examples=1500, deadline=None)
@example("<ann@x.test>")
@example(" <ann.b+c@mail.x.test> SIZE=1234 BODY=8BITMIME")
@example("<a@b>(comment) SIZE=1")
@example("<" + "l" * 65 + "@x.test>")
@example("<>")
def test_an_address_is_read_as_aiosmtpd_reads_it(arg: str) -> None:
    ours = _Listener(_Quiet())
    assert outcome(ours._getaddr, arg) == outcome(lambda a: SMTP._getaddr(ours, a), arg)


def outcome(read: Callable[[str], object], arg: str) -> object:
    """What reading ``arg`` gives, or the kind of exception it raises (aiosmtpd's
    parser raises IndexError for a lone ``<``, for one)."""
    try:
        return read(arg)
    except Exception as exc:
        return type(exc)


def test_the_local_part_limit_still_holds() -> None:
    ours = _Listener(_Quiet())
    ours.local_part_limit = 64
    long = "<" + "l" * 65 + "@x.test> SIZE=1"
    assert ours._getaddr(long) == (None, None) == SMTP._getaddr(ours, long)
    assert ours._getaddr("<" + "l" * 64 + "@x.test>") == ("l" * 64 + "@x.test", "")
