"""Inbound mail as data: MIME → :class:`InboundMail`, and replies → RFC 5322 bytes.

Pure (no network): used by ``handle`` (pipe mode), the IMAP loop and the embedded
SMTP listener alike.  Python's ``email`` package does the MIME work; this module
only chooses the text, decides which mail must never be answered (COMMANDS.md §1)
and refuses header injection in what it sends.

A reply is serialised once (:func:`message_bytes`, into an :class:`Outgoing`) on the
outbox's composer thread; the deliveries write those bytes as they are.
"""

from __future__ import annotations

import binascii
import email.policy
import email.quoprimime
import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.generator import BytesGenerator
from email.header import Header, decode_header, make_header
from email.message import Message
from email.parser import BytesParser, HeaderParser
from email.utils import format_datetime, formataddr, getaddresses, parseaddr
from io import BytesIO

import lxml.etree
import lxml.html

from ..inbound import BouncedRecipient, DeliveryReport, InboundMail, is_valid_address

MAX_BODY_CHARS = 200_000
"""Longer bodies are cut: no command needs more, and replies quote the original."""
MAX_BODY_LINES = 5_000
"""and at most this many lines: the reply trimmer runs a few patterns a line
(200,000 empty lines took 0.6 s), and a command and its comment come first"""
MAX_SUBJECT_CHARS = 2_000
MAX_HEADER_BYTES = 64 * 1024
"""The header block read at all: a longer one is refused before the parser sees it."""
MAX_HEADER_FIELDS = 300
MAX_FIELD_BYTES = 8 * 1024
"""One header field (Subject, To, …) is cut to this before it is decoded or parsed."""
MAX_MIME_LINES = 500
"""Body lines that begin with ``--`` (MIME delimiters, signatures): more, and the body is refused unread."""
MAX_MIME_TYPES = 100
"""``Content-Type`` fields in the body (the parts, at any depth): more, and the body is refused unread."""
MAX_NESTING = 20
"""``multipart/`` and ``message/`` types in the body: the email parser recurses once per level."""
MAX_PARSED_BODY = 256 * 1024
"""Of the body (after the header block), only this much is given to the email
parser, cut at a line end: it reads a body a line at a time in Python (6 million
empty lines took 3.5 s), and the text a command needs comes first."""
MAX_REPORT_BODY = 32 * 1024
"""Of a delivery report's body (``report-type=delivery-status`` in its header
block), only this much: what it says comes first (the notice, the status part,
the returned mail's headers), and the parser makes a message object of every
block of a status part (256 kB of blocks took 5 times as long as as much text)."""
MAX_PART_BYTES = 4 * MAX_BODY_CHARS
"""Of the chosen text part, only this much is decoded and read."""
MAX_HTML_CHARS = 512 * 1024
"""Of an HTML-only mail, only this much markup is parsed."""
LIMITS = {
    "header block": f"{MAX_HEADER_BYTES // 1024} kB",
    "header fields": str(MAX_HEADER_FIELDS),
    "one header field": f"{MAX_FIELD_BYTES // 1024} kB (cut)",
    "MIME parts": str(MAX_MIME_TYPES),
    "MIME delimiter lines": str(MAX_MIME_LINES),
    "nested multiparts": str(MAX_NESTING),
    "body parsed": f"{MAX_PARSED_BODY // 1024} kB (cut at a line end)",
    "delivery report body parsed": f"{MAX_REPORT_BODY // 1024} kB (cut at a line end)",
    "text read": f"{MAX_BODY_CHARS:,} characters, {MAX_BODY_LINES:,} lines",
    "HTML parsed": f"{MAX_HTML_CHARS // 1024} kB",
}
"""What :func:`parse_message` reads at most (SECURITY.md's table)."""
_MSGID = re.compile(r"<[!-;=?-~]{1,250}>")
"""a Message-ID of printable ASCII (no control characters reach our headers or logs)"""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


_BLOCK_TAGS = frozenset(
    ("p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "blockquote", "pre", "ul", "ol", "dl",
     "dt", "dd", "hr", "section", "article", "header", "footer")
)  # fmt: skip
_DROP_TAGS = frozenset(("script", "style", "head", "title", "template", "noscript"))


def html_to_text(markup: str) -> str:
    """Plain text of an HTML body: block tags become line breaks, scripts and
    styles go, entities are decoded.  Enough for command lines and comments.

    libxml2's HTML parser (lxml) reads the markup in one linear pass, in C; the
    tree is walked without recursion.  Regular expressions over the markup took
    quadratic time on shapes like ``"<p" * 50000`` (and so does the standard
    library's ``html.parser``); at most :data:`MAX_HTML_CHARS` are read."""
    markup = markup[:MAX_HTML_CHARS]
    if not markup.strip():
        return ""
    try:
        root = lxml.html.document_fromstring(markup, parser=_HTML_PARSER)
    except (lxml.etree.ParserError, ValueError):  # nothing parseable in it
        return ""
    for element in list(root.iter(*_DROP_TAGS)):
        element.drop_tree()  # its text goes, its tail stays
    pieces: list[str] = []
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        block = element.tag in _BLOCK_TAGS
        if event == "start":
            if block:
                pieces.append("\n")
            if element.text and isinstance(element.tag, str):
                pieces.append(element.text)
        else:
            if block and element.tag != "br":
                pieces.append("\n")
            if element.tail and element is not root:
                pieces.append(element.tail)
    text = "".join(pieces).replace("\xa0", " ")
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(lines).strip("\n")


_HTML_PARSER = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, no_network=True, recover=True)


def _part_text(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    payload = payload[:MAX_PART_BYTES]  # (decoding, unflowing and HTML are linear, but need not see more)
    charset = part.get_content_charset() or "us-ascii"
    try:
        text = payload.decode(charset, errors="replace")
    except LookupError:  # unknown charset name
        text = payload.decode("latin-1", errors="replace")
    if _param(part, "format") == "flowed":
        text = unflow(text, delsp=_param(part, "delsp") == "yes")
    return text


def _param(part: Message, name: str) -> str:
    value = part.get_param(name, "")
    return value.lower() if isinstance(value, str) else ""


def unflow(text: str, *, delsp: bool = False) -> str:
    """Undo RFC 3676 format=flowed: a line ending in a space continues on the next
    (quote depth and the signature line "-- " are respected)."""
    out: list[str] = []
    pending: str | None = None
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw[1:] if raw.startswith(" ") else raw  # space-stuffing
        flowed = line.endswith(" ") and line != "-- "
        if flowed and delsp:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not flowed:
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return "\n".join(out)


def _choose_text(msg: Message) -> str:
    """The plain-text part if there is one, else the HTML part converted."""
    plain: str | None = None
    markup: str | None = None
    for part in msg.walk():
        if part.is_multipart():
            continue
        disposition = (part.get("Content-Disposition") or "").lower()
        if disposition.startswith("attachment"):
            continue
        ctype = part.get_content_type()
        if ctype == "text/plain" and plain is None:
            plain = _part_text(part)
        elif ctype == "text/html" and markup is None:
            markup = _part_text(part)
        elif ctype == "message/rfc822":
            continue
    if plain is not None:
        return plain
    if markup is not None:
        return html_to_text(markup)
    return ""


def _fields(msg: Message) -> dict[str, list[str]]:
    """The header fields by lower-case name, in order, as raw text.  Raw 8-bit
    bytes (an SMTPUTF8 header) are read as UTF-8 (the parser keeps them as
    surrogates; ``msg.get`` would turn them into U+FFFD)."""
    fields: dict[str, list[str]] = {}
    for name, value in msg.raw_items():
        if not value.isascii():
            value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        fields.setdefault(name.lower(), []).append(value)
    return fields


def _first(fields: dict[str, list[str]], name: str) -> str:
    values = fields.get(name.lower())
    return values[0] if values else ""


_HEADER_END = re.compile(rb"\r?\n\r?\n")
_FIELD_START = re.compile(rb"\n(?![ \t])")


def bounded(raw: bytes) -> tuple[bytes, str | None]:
    """``raw`` made safe for the ``email`` parser, and why the body was refused
    (None when it was not).  Linear work in C over the bytes, before any parsing:
    the header block must end within :data:`MAX_HEADER_BYTES` and hold at most
    :data:`MAX_HEADER_FIELDS` fields, each cut to :data:`MAX_FIELD_BYTES` (the
    stdlib's header decoding and address parsing are superlinear: a 900 kB
    Subject of encoded words took 11.6 s); a body with more MIME structure than
    the caps allow is dropped unread (the parser recursed once per nested
    multipart, raising RecursionError at ~1,000, and 200,000 parts took 6.5 s)."""
    end = _HEADER_END.search(raw, 0, MAX_HEADER_BYTES + 4)
    if end is None:
        if len(raw) <= MAX_HEADER_BYTES:  # headers only
            head, body = raw, b""
        else:
            cut = raw.rfind(b"\n", 0, MAX_HEADER_BYTES)
            return _bounded_head(raw[: max(cut, 0)]) + b"\n\n", f"its header block is over {MAX_HEADER_BYTES // 1024} kB"
    else:
        head, body = raw[: end.start()], raw[end.end() :]
    cap = MAX_REPORT_BODY if b"delivery-status" in head.lower() else MAX_PARSED_BODY
    if len(body) > cap:
        body = body[: body.rfind(b"\n", 0, cap) + 1 or cap]
    problem: str | None = None
    if _FIELD_START.subn(b"", head)[1] >= MAX_HEADER_FIELDS:
        problem = f"it has more than {MAX_HEADER_FIELDS} header fields"
    elif body.count(b"\n--") + body.startswith(b"--") > MAX_MIME_LINES:
        problem = f"it has more than {MAX_MIME_LINES} MIME delimiter lines"
    else:
        lower = body.lower()
        if lower.count(b"content-type:") > MAX_MIME_TYPES:
            problem = f"it has more than {MAX_MIME_TYPES} MIME parts"
        elif lower.count(b"multipart/") + lower.count(b"message/") > MAX_NESTING:
            problem = f"it nests more than {MAX_NESTING} multiparts"
    head = _bounded_head(head)
    if problem is not None:
        return head + b"\n\n", problem
    return head + b"\n\n" + body, None


def _bounded_head(head: bytes) -> bytes:
    """The header block with each field cut to :data:`MAX_FIELD_BYTES` and at
    most :data:`MAX_HEADER_FIELDS` fields (a block under the caps is returned as it is)."""
    if len(head) <= MAX_FIELD_BYTES:
        return head
    starts = [0, *(m.end() for m in _FIELD_START.finditer(head))][:MAX_HEADER_FIELDS]
    if len(starts) < MAX_HEADER_FIELDS and all(
        b - a <= MAX_FIELD_BYTES for a, b in zip(starts, [*starts[1:], len(head)], strict=True)
    ):
        return head
    out: list[bytes] = []
    for i, start in enumerate(starts):
        stop = starts[i + 1] if i + 1 < len(starts) else len(head)
        field = head[start:stop].rstrip(b"\r\n")
        if len(field) > MAX_FIELD_BYTES:
            field = field[:MAX_FIELD_BYTES]
            cut = max(field.rfind(b","), field.rfind(b" "))  # at a boundary of addresses or words
            field = field[:cut] if cut > MAX_FIELD_BYTES // 2 else field
        out.append(field)
    return b"\n".join(out)


_ATEXT = r"[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+"
DOT_ATOM_ADDRESS = rf"{_ATEXT}(?:\.{_ATEXT})*@{_ATEXT}(?:\.{_ATEXT})*"
"""``local@domain`` whose halves are dot-atoms (RFC 5322 3.2.3): the address
parsers give it back as it is (this module's and mail/embedded.py's short cuts)"""
_PLAIN_ADDRESS = re.compile(DOT_ATOM_ADDRESS)


def parse_address(value: str) -> tuple[str, str]:
    """``email.utils.parseaddr``; a bare plain address (most headers a mail
    client writes into To, and what an MTA writes into X-Original-To) is
    ('', itself) without the character-by-character parser."""
    return ("", value) if _PLAIN_ADDRESS.fullmatch(value) else parseaddr(value)


def parse_addresses(values: list[str]) -> list[tuple[str, str]]:
    """``email.utils.getaddresses``, the same short cut when every value is a
    bare plain address (the parser reads the values joined by commas, so one
    value that is not could swallow the next)."""
    if all(_PLAIN_ADDRESS.fullmatch(v) for v in values):
        return [("", v) for v in values]
    return getaddresses(values)


def with_envelope_recipients(raw: bytes, recipients: list[str]) -> bytes:
    """``raw`` with an ``X-Original-To`` header per envelope recipient in front."""
    head = b"".join(
        b"X-Original-To: " + r.encode("ascii", "replace").replace(b"\r", b"").replace(b"\n", b"") + b"\r\n" for r in recipients
    )
    return head + raw


def parse_message(raw: bytes) -> InboundMail:
    """Read a raw RFC 5322 message.  Never raises on malformed input: whatever the
    ``email`` package recovers is used; a missing Message-ID gets a stable one made
    from the content, so a second delivery of the same bytes is still recognised."""
    safe, problem = bounded(raw)
    try:
        msg = BytesParser(policy=email.policy.compat32).parsebytes(safe)
    except RecursionError:  # (the caps keep nesting shallow: a last line of defence)
        msg, problem = BytesParser(policy=email.policy.compat32).parsebytes(safe, headersonly=True), "it nests too deeply"
    fields = _fields(msg)
    name_addr = parse_address(_first(fields, "From").replace("\r", " ").replace("\n", " "))[1]
    sender = name_addr.strip()
    if "@" in sender:
        local, _, domain = sender.rpartition("@")
        sender = f"{local}@{domain.lower()}"
    subject = decode_header_value(_first(fields, "Subject"))
    subject = " ".join(_CONTROL.sub(" ", subject).split())[:MAX_SUBJECT_CHARS]
    body = "" if problem else _choose_text(msg)
    body = body.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")[:MAX_BODY_CHARS]
    if body.count("\n", 0, MAX_BODY_CHARS) >= MAX_BODY_LINES:  # (the reply trimmer looks at every line)
        body = "\n".join(body.split("\n", MAX_BODY_LINES)[:MAX_BODY_LINES])
    message_id = _message_id(_first(fields, "Message-ID"), raw)
    headers: dict[str, str] = {
        name: " ".join(_CONTROL.sub(" ", fields[name][0]).split())[:300]
        for name in (
            "auto-submitted",
            "precedence",
            "list-id",
            "list-unsubscribe",
            "x-autoreply",
            "x-auto-response-suppress",
            "return-path",
        )
        if name in fields
    }
    recipients: list[str] = []
    for name in ("x-original-to", "delivered-to", "to", "cc"):
        values = fields.get(name, [])
        for _, addr in parse_addresses([" ".join(v.split()) for v in values]):
            if addr and addr not in recipients:
                recipients.append(addr)
    references = _MSGID.findall(_first(fields, "In-Reply-To"))
    references += [m for m in reversed(_MSGID.findall(_first(fields, "References"))) if m not in references]
    return InboundMail(
        sender=sender,
        recipients=recipients[:20],
        references=references[:20],
        subject=subject,
        body=body,
        message_id=message_id,
        headers=headers,
        is_report=msg.get_content_type() == "multipart/report",
        report=delivery_report(msg, fields),
        raw_size=len(raw),
        problem=f"the server did not read your mail's text: {problem}; send your command as a plain mail" if problem else None,
    )


MAX_REPORT_RECIPIENTS = 20
"""Recipients read from one delivery report (each a few header lines)."""
MAX_REPORT_CHARS = 16 * 1024
"""Of a report's status part or returned headers given as text, only this much is read."""
_DSN_STATUS = re.compile(r"[245]\.\d{1,3}\.\d{1,3}")
_REPORT_TYPES = ("message/delivery-status", "message/global-delivery-status")
_RETURNED_TYPES = ("message/rfc822", "text/rfc822-headers", "message/global", "message/global-headers")


def delivery_report(msg: Message, fields: dict[str, list[str]]) -> DeliveryReport | None:
    """What a bounce says, or None when ``msg`` is not one: an RFC 3464 delivery
    status notification (``multipart/report; report-type=delivery-status``: each
    recipient's Final-Recipient, else Original-Recipient, with its Action and
    Status, and the Message-ID of the mail returned with it), or a mail with an
    ``X-Failed-Recipients`` header (Exim's, for permanent failures: status
    5.0.0).  Nothing is read from free text.  ``msg`` has passed :func:`bounded`
    (at most 100 parts); of the report only :data:`MAX_REPORT_RECIPIENTS`
    recipients and :data:`MAX_REPORT_CHARS` of text are read."""
    failed = _first(fields, "X-Failed-Recipients")
    dsn = msg.get_content_type() == "multipart/report" and _param(msg, "report-type") == "delivery-status"
    if not dsn and not failed:
        return None
    report = DeliveryReport(dsn=dsn)
    if dsn:
        for part in msg.walk():
            ctype = part.get_content_type()
            if ctype in _REPORT_TYPES and not report.recipients:
                report.recipients = _dsn_recipients(part)
            elif ctype in _RETURNED_TYPES and not report.returned_ids:
                report.returned_ids = _returned_ids(part)
    if not report.recipients and failed:
        values = [" ".join(failed[:MAX_FIELD_BYTES].split())]
        report.recipients = [
            BouncedRecipient(addr.lower(), "failed", "5.0.0")
            for _, addr in parse_addresses(values)[:MAX_REPORT_RECIPIENTS]
            if "@" in addr
        ]
    return report


def _blocks(part: Message) -> list[Message]:
    """The header blocks of a report part (the parser's, or parsed here from its text)."""
    payload = part.get_payload()
    if isinstance(payload, list):
        return [block for block in payload[: MAX_REPORT_RECIPIENTS + 1] if isinstance(block, Message)]
    if not isinstance(payload, str):
        return []
    text = payload[:MAX_REPORT_CHARS].replace("\r\n", "\n")
    return [
        HeaderParser(policy=email.policy.compat32).parsestr(chunk) for chunk in text.split("\n\n")[: MAX_REPORT_RECIPIENTS + 1]
    ]


def _report_value(block: Message, name: str) -> str:
    value = block.get(name)
    return " ".join(str(value).split())[:320] if value is not None else ""


def _dsn_recipients(part: Message) -> list[BouncedRecipient]:
    """The per-recipient blocks of a ``message/delivery-status`` part (the first
    block is the message's own: Reporting-MTA …, and has no recipient)."""
    found: list[BouncedRecipient] = []
    for block in _blocks(part):
        recipient = _report_value(block, "Final-Recipient") or _report_value(block, "Original-Recipient")
        if not recipient:
            continue
        _, _, address = recipient.rpartition(";")  # "rfc822; ann@example.org"
        address = address.strip().strip("<>").strip().lower()
        if "@" not in address or not is_valid_address(address):
            continue
        status = _DSN_STATUS.match(_report_value(block, "Status"))
        found.append(BouncedRecipient(address, _report_value(block, "Action").lower()[:16], status.group() if status else ""))
    return found[:MAX_REPORT_RECIPIENTS]


def _returned_ids(part: Message) -> list[str]:
    """The Message-ID of the returned mail (a ``message/rfc822`` part, or its
    headers as ``text/rfc822-headers``)."""
    blocks = _blocks(part)
    value = blocks[0].get("Message-ID") if blocks else None
    return _MSGID.findall(str(value))[:1] if value is not None else []


def _message_id(value: str, raw: bytes) -> str:
    """The mail's Message-ID as printable ASCII (it goes into our In-Reply-To and
    the logs); a missing one is made from the content, so a second delivery of
    the same bytes is still recognised."""
    found = _MSGID.search(value)
    if found is not None:
        return found.group()
    cleaned = "".join(ch for ch in value if "!" <= ch <= "~")[:250]
    return cleaned or "<sha256-" + hashlib.sha256(raw).hexdigest()[:40] + "@pbmserv.invalid>"


def decode_header_value(value: str) -> str:
    """A header value as text: ``str(make_header(decode_header(value)))``, the
    value as it is when it holds no encoded word (or cannot be decoded)."""
    if "=?" not in value:  # no encoded word: decoding gives the value as it is
        return value
    try:
        return str(make_header(decode_header(value)))
    except Exception:
        return value


_MAX_LINE = 998  # RFC 5322: longer lines need an encoding
_QP_LINE = 76  # RFC 2045: an encoded line's most


def _one_line(value: str) -> str:
    """A header value on one line: CR/LF and other whitespace runs become one space."""
    return " ".join(value.split())


def build_message(
    *,
    sender: str,
    sender_name: str,
    recipient: str,
    subject: str,
    body: str,
    message_id: str,
    in_reply_to: str | None,
    date: datetime | None = None,
    reply_to: str | None = None,
    html: str | None = None,
    images: Sequence[tuple[str, bytes]] = (),
) -> Message:
    """A reply as a ``Message`` ready to send.  Every header value is flattened to
    one line and the recipient must be a plain address, so no caller can inject
    headers.  Built with the ``compat32`` model (headers are our own, formatted
    here), which costs a hundredth of the parsing ``EmailMessage`` does per header;
    non-ASCII text is still MIME-encoded (RFC 2047 subject, quoted-printable body)."""
    if not is_valid_address(recipient):
        raise ValueError(f"not a deliverable address: {recipient!r}")
    msg = Message(policy=COMPAT32)
    msg["From"] = _from_header(sender_name, sender)
    msg["To"] = recipient
    subject = _one_line(subject)[:900]
    msg["Subject"] = subject if subject.isascii() else Header(subject, "utf-8").encode()
    msg["Date"] = format_datetime(date or datetime.now(UTC))
    msg["Message-ID"] = _one_line(message_id)
    msg["Auto-Submitted"] = "auto-replied"
    msg["X-Auto-Response-Suppress"] = "All"
    msg["Precedence"] = "bulk"
    if in_reply_to:
        msg["In-Reply-To"] = msg["References"] = _one_line(in_reply_to)
    if reply_to:
        if not is_valid_address(reply_to):
            raise ValueError(f"not a usable Reply-To: {reply_to!r}")
        msg["Reply-To"] = formataddr((_one_line(sender_name), reply_to), charset="utf-8")
    msg["MIME-Version"] = "1.0"
    if html is None:
        _set_text(msg, body)
        return msg
    # multipart/alternative: the text part first (the record, as pbmserv sent it),
    # then multipart/related with the HTML and its inline pictures (cid:), which
    # mail clients show where they block SVG and data: URIs
    boundary = _boundary(message_id)
    msg["Content-Type"] = f'multipart/alternative; boundary="alt-{boundary}"'
    text = Message(policy=COMPAT32)
    _set_text(text, body)
    related = Message(policy=COMPAT32)
    related["Content-Type"] = f'multipart/related; type="text/html"; boundary="rel-{boundary}"'
    page = Message(policy=COMPAT32)
    _set_text(page, html, "html")
    related.attach(page)
    for cid, data in images:
        image = Message(policy=COMPAT32)
        image["Content-Type"] = "image/png"
        image["Content-Transfer-Encoding"] = "base64"
        image["Content-ID"] = f"<{_one_line(cid)}>"
        image["Content-Disposition"] = 'inline; filename="board.png"'
        image.set_payload(_base64_lines(data))
        related.attach(image)
    msg.attach(text)
    msg.attach(related)
    return msg


@functools.lru_cache(maxsize=16)
def _from_header(sender_name: str, sender: str) -> str:
    """The From header (the same for every reply a server sends)."""
    return formataddr((_one_line(sender_name), sender), charset="utf-8")


@functools.lru_cache(maxsize=64)
def _base64_lines(data: bytes) -> str:
    """A picture's base64 text, encoded once however many replies carry it (the
    outbox's pictures are cached objects, whose hash Python keeps)."""
    return base64_lines(data)


def base64_lines(data: bytes) -> str:
    """``base64.encodebytes(data)`` as text (lines of 76 characters, each ended by a
    newline), encoded in one C call and cut by a regular expression (both loops in
    C): ``encodebytes`` calls the encoder once per 57 bytes, ~450 times for a board
    picture, a third slower (and a loop over slices in Python is no faster)."""
    return "".join([line + "\n" for line in _BASE64_LINE.findall(binascii.b2a_base64(data, newline=False).decode("ascii"))])


_BASE64_LINE = re.compile(".{1,76}", re.DOTALL)
"""a line of base64 text (over base64's own output, never a user's text)"""


def _set_text(part: Message, body: str, subtype: str = "plain") -> None:
    """ASCII text with lines of legal length goes as it is (7bit: no encoding to
    run, the stdlib's quoted-printable encoder is pure Python); anything else as
    quoted-printable UTF-8."""
    if body.isascii() and max(map(len, body.split("\n"))) <= _MAX_LINE:
        part["Content-Type"] = f'text/{subtype}; charset="us-ascii"'
        part["Content-Transfer-Encoding"] = "7bit"
        part.set_payload(body)
    else:
        # quoted-printable keeps non-ASCII replies readable in any mail client's source view
        part["Content-Type"] = f'text/{subtype}; charset="utf-8"'
        part["Content-Transfer-Encoding"] = "quoted-printable"
        part.set_payload(_quoted_printable(body))


def _quoted_printable(body: str) -> str:
    """``body`` as quoted-printable UTF-8 with lines of at most 76 characters (RFC 2045).
    binascii's encoder (C) does it at a tenth of the cost of the stdlib's pure-Python one
    (a board mail's HTML part is ~30 kB), but it may run two characters over where a line
    ends in an encoded blank: such a body is encoded by the stdlib's instead."""
    encoded = binascii.b2a_qp(body.encode(), istext=True).decode("ascii")
    if max(map(len, encoded.split("\n"))) <= _QP_LINE:
        return encoded
    return email.quoprimime.body_encode(body.encode().decode("latin-1"))


def _boundary(message_id: str) -> str:
    """A MIME boundary that no part's text contains (from the Message-ID's hash)."""
    return _BOUNDARY_MARK + hashlib.sha256(message_id.encode()).hexdigest()[:24]


_BOUNDARY_MARK = "pbmserv-"
_BOUNDARY = _BOUNDARY_MARK + "[0-9a-f]{24}"
"""what :func:`_boundary` makes"""
_BOUNDARY_IN = re.compile(_BOUNDARY)
_BOUNDARY_STANDIN = _BOUNDARY_MARK + "0" * 24
_OUR_MULTIPART = re.compile(r'multipart/(?:alternative|related; type="text/html"); boundary="([a-z]+-' + _BOUNDARY + ')"')
"""the Content-Type of a multipart :func:`build_message` makes: its boundary is
what ``get_boundary`` reads from it (which parses any parameters, slowly)"""


# ------------------------------------------------------------- serialising
_PLAIN_HEADER = re.compile(r"[!-~]+(?: [!-~]+)*")
_NEWLINES = re.compile(r"\r\n|\r|\n")  # as email.generator splits a payload's lines
_ONE_WORD = re.compile(r"[!-+\--:<-~]+")
"""printable ASCII with none of the characters compat32 folds at (space, ``,``, ``;``)"""


class _Compat32(email.policy.Compat32):
    """``compat32``, but a header value of printable ASCII words that fits on its
    line is written as it is, and one longer word (a long Message-ID in
    ``In-Reply-To``) on a line of its own after the name: what compat32's folding
    (an ``email.header.Header`` built and encoded per header) gives for them, at a
    fraction of the cost.
    Anything else (long, non-ASCII, encoded words, line breaks) folds as before,
    and a value with one of our MIME boundaries in it (the long ``Content-Type``
    of each multipart) is folded once per shape: compat32 breaks a line only at
    ``;``, ``,`` and white space, so the boundary's hex digits, all alike to it,
    can be put back into the folded text of a stand-in of the same length."""

    def fold_binary(self, name: str, value: str) -> bytes:
        limit = self.max_line_length
        if isinstance(value, str) and _PLAIN_HEADER.fullmatch(value):
            if not limit or len(name) + 2 + len(value) <= limit:
                return f"{name}: {value}{self.linesep}".encode("ascii")
            if _ONE_WORD.fullmatch(value):  # (a long Message-ID: compat32 cannot split it, it moves it down)
                return f"{name}: {self.linesep} {value}{self.linesep}".encode("ascii")
        if isinstance(value, str) and value.isascii() and value.count(_BOUNDARY_MARK) == 1:
            found = _BOUNDARY_IN.search(value)
            if found is not None:
                shape = value[: found.start()] + _BOUNDARY_STANDIN + value[found.end() :]
                return self._fold_shape(name, shape).replace(_BOUNDARY_STANDIN.encode(), found.group().encode())
        return super().fold_binary(name, value)

    @functools.lru_cache(maxsize=64)  # noqa: B019 (the policies are few and live for good)
    def _fold_shape(self, name: str, value: str) -> bytes:
        return super().fold_binary(name, value)


COMPAT32 = _Compat32()
"""the policy replies are built and serialised with (compat32's model, LF line ends)"""


class _Generator(BytesGenerator):
    """``BytesGenerator`` writing a part's text in one piece: the stdlib writes it
    line by line (a call and an encode per line, ~400 lines for a picture's
    base64); the same line ends are put in here at once.  And a part is not given
    a copy of the policy it already has (the stdlib clones it for every part)."""

    def flatten(self, msg: Message, unixfrom: bool = False, linesep: str | None = None) -> None:
        if linesep is not None and self.policy is not None and linesep == self.policy.linesep:
            linesep = None  # the same policy: no clone of it
        super().flatten(msg, unixfrom, linesep)

    def _write_lines(self, lines: str) -> None:
        if not lines:
            return
        linesep = self.policy.linesep if self.policy is not None else "\n"
        if "\r" in lines:
            lines = _NEWLINES.sub(linesep, lines)
        elif linesep != "\n":
            lines = lines.replace("\n", linesep)
        self.write(lines)


def message_bytes(msg: Message) -> bytes:
    """``msg.as_bytes(policy=email.policy.compat32)``, byte for byte (LF line
    ends, no ``>From`` mangling).  The messages :func:`build_message` makes are
    written by :func:`_plain_bytes`, a tenth of the generator's time; anything
    else goes through the generator (a third of ``as_bytes``'s time)."""
    pieces: list[bytes] = []
    if _plain_bytes(msg, pieces):
        return b"".join(pieces)
    out = BytesIO()
    _Generator(out, mangle_from_=False, policy=COMPAT32).flatten(msg)
    return out.getvalue()


def _plain_bytes(msg: Message, out: list[bytes]) -> bool:
    """Append what the generator writes for ``msg`` to ``out``, for the shapes
    :func:`build_message` makes: compat32 parts whose payload is ASCII text
    (headers, a blank line, the text with its line ends made LF), or a list of
    parts (``multipart/*`` with a boundary and no preamble or epilogue: each part
    after ``--boundary``, then ``--boundary--``).  False, with ``out`` in an
    unknown state, for anything else: the caller then uses the generator."""
    if msg.policy is not COMPAT32 or msg.get_unixfrom() is not None:
        return False
    payload = msg.get_payload()
    ours = _OUR_MULTIPART.fullmatch(str(msg.get("Content-Type", "")))
    maintype = "multipart" if ours else msg.get_content_maintype()
    if isinstance(payload, list):
        boundary = (ours.group(1) if ours else msg.get_boundary()) if maintype == "multipart" else None
        if not boundary or msg.preamble is not None or msg.epilogue is not None:  # (the generator makes one)
            return False
    elif not isinstance(payload, str) or not payload.isascii() or maintype in ("multipart", "message"):
        return False
    for name, value in msg.raw_items():
        out.append(COMPAT32.fold_binary(name, value))
    out.append(b"\n")
    if isinstance(payload, str):
        if "\r" in payload:
            payload = _NEWLINES.sub("\n", payload)
        out.append(payload.encode("ascii"))
        return True
    line = f"--{boundary}\n".encode("ascii")
    out.append(line)
    for i, part in enumerate(payload):
        if i:
            out.append(b"\n" + line)
        if not isinstance(part, Message) or not _plain_bytes(part, out):
            return False
    out.append(f"\n--{boundary}--\n".encode("ascii"))
    return True


_LONE_CR_OR_LF = re.compile(rb"\r\n|\r|\n")


def smtp_data(data: bytes) -> bytes:
    """A message's bytes as SMTP's DATA sends them (RFC 5321 4.1.1.4, 4.5.2):
    CRLF line ends (a lone CR or LF becomes CRLF), a line that begins with "."
    gets another, and CRLF "." CRLF ends it.  What aiosmtplib sends for them,
    byte for byte, without its regular expressions where it can: :func:`message_bytes`
    gives LF line ends only."""
    data = _LONE_CR_OR_LF.sub(b"\r\n", data) if b"\r" in data else data.replace(b"\n", b"\r\n")
    if not data.endswith(b"\r\n"):
        data += b"\r\n"
    data = data.replace(b"\r\n.", b"\r\n..")
    if data.startswith(b"."):
        data = b"." + data
    return data + b".\r\n"


@dataclass(frozen=True)
class Outgoing:
    """A reply ready to go: the message, its bytes (:func:`message_bytes`, LF line
    ends: a Maildir writes them as they are, SMTP sends them with CRLF) and the
    envelope sender."""

    message: Message
    data: bytes
    sender: str

    @classmethod
    def of(cls, message: Message, sender: str) -> Outgoing:
        return cls(message, message_bytes(message), sender)

    def delivered(self) -> bytes:
        """The bytes as a Maildir holds them: with the ``Return-Path`` line a
        delivering MTA writes (RFC 5321 4.4), the envelope sender a bounce or an
        automatic answer goes to."""
        return b"Return-Path: <" + _one_line(self.sender).encode("ascii", "replace") + b">\n" + self.data
