"""Reading an inbound mail takes short cuts for the usual header values (issue
18): a plain address is not run through the address parser, a header without an
encoded word is not decoded.  Whatever the value, the result is the ``email``
package's."""

from __future__ import annotations

from email.header import decode_header, make_header
from email.utils import getaddresses, parseaddr

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pbmserv_terrace.mail.message import decode_header_value, parse_address, parse_addresses

from .addresses import values

VALUES = values(12)


@given(VALUES)
@settings(max_examples=1500, deadline=None)
@example("ann@x.test")
@example("Ann <ann@x.test>")
@example("a..b@x")
@example(".a@x")
@example("")
def test_parseaddr(value: str) -> None:
    assert parse_address(value) == parseaddr(value)


@given(st.lists(VALUES, max_size=4))
@settings(max_examples=1500, deadline=None)
@example(["pbm@srv.test", "pbm+key@srv.test"])
@example(["pbm@srv.test", "<ann@x.test"])
@example(['"pbm@srv.test', 'ann@x.test"'])
def test_getaddresses(values: list[str]) -> None:
    assert parse_addresses(values) == getaddresses(values)


@given(st.text(max_size=40) | VALUES)
@settings(max_examples=1000, deadline=None)
@example("=?utf-8?q?J=C3=B6rg?= moves")
@example("terrace move 101 ann pw d2-e3")
@example(" lead and trail ")
def test_decode_header(value: str) -> None:
    try:
        theirs = str(make_header(decode_header(value)))
    except Exception:
        theirs = value
    assert decode_header_value(value) == theirs
