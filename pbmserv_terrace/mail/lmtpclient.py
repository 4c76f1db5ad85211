"""Hand one mail to an LMTP server and read its outcome (``handle`` passing its mail
to ``serve``'s listener, issue 43).  The standard library's socket only: this runs
in a process Postfix starts for every mail, whose whole cost is its start.

The mail's lines are sent with CRLF ends and dot-stuffed (RFC 5321 4.5.2; a pipe
hands over Unix line ends).  :func:`deliver` returns the outcome, one ``(code,
text)`` for the mail: the recipients' replies are its own (``serve`` handles a mail
once), so the worst one stands; None when nothing listens there (no socket file,
connection refused), so that the caller may handle the mail itself."""

from __future__ import annotations

import contextlib
import socket

Outcome = tuple[int, str]


class LmtpError(Exception):
    """The dialogue broke off (a lost connection, a timeout, a reply that is not one)."""


def _connect(listen: str, timeout: float) -> socket.socket | None:
    text = listen.strip()
    path = text.removeprefix("unix:") if text.startswith(("unix:", "/")) else None
    try:
        if path is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(path)
            except BaseException:
                sock.close()
                raise
            return sock
        host, _, port = text.rpartition(":")
        return socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    except (FileNotFoundError, ConnectionRefusedError):
        return None


class _Dialogue:
    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buffer = sock, b""

    def reply(self) -> Outcome:
        """One reply (its lines joined): (code, text)."""
        lines = []
        while True:
            while b"\n" not in self.buffer:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise LmtpError("the server closed the connection")
                self.buffer += chunk
                if len(self.buffer) > 65536:
                    raise LmtpError("a reply line longer than 64 kB")
            line, _, self.buffer = self.buffer.partition(b"\n")
            text = line.rstrip(b"\r").decode("utf-8", "replace")
            if len(text) < 3 or not text[:3].isdigit():
                raise LmtpError(f"not an LMTP reply: {text[:80]!r}")
            lines.append(text[4:])
            if text[3:4] != "-":
                return int(text[:3]), " ".join(lines)

    def say(self, line: str) -> Outcome:
        self.sock.sendall(line.encode("utf-8") + b"\r\n")
        return self.reply()


def wire_data(raw: bytes) -> bytes:
    """``raw`` as DATA carries it: CRLF line ends, a leading "." doubled, ended by CRLF "." CRLF."""
    body = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if not body.endswith(b"\r\n"):
        body += b"\r\n"
    if body.startswith(b"."):
        body = b"." + body
    return body.replace(b"\r\n.", b"\r\n..") + b".\r\n"


def deliver(listen: str, raw: bytes, sender: str, recipients: list[str], timeout: float = 300.0) -> Outcome | None:
    """Send ``raw`` to the LMTP server at ``listen`` (``unix:/path``, ``/path`` or
    ``host:port``); the mail's outcome, or None when nothing listens there.  Raises
    :class:`LmtpError` (or OSError) when the dialogue breaks off after it began:
    the mail may have been taken, so the caller should have it sent again (a second
    delivery of a handled mail is a no-op: its Message-ID)."""
    if any(c in a for a in [sender, *recipients] for c in "\r\n<> "):
        raise ValueError("an envelope address with a line break, space or angle bracket")
    sock = _connect(listen, timeout)
    if sock is None:
        return None
    with sock:
        talk = _Dialogue(sock)
        for line in ("", "LHLO localhost", f"MAIL FROM:<{sender}>"):  # ("": the greeting)
            code, text = talk.say(line) if line else talk.reply()
            if code >= 400:
                return code, text
        accepted = 0
        worst: Outcome = (250, "")
        for rcpt in recipients:
            code, text = talk.say(f"RCPT TO:<{rcpt}>")
            if code < 400:
                accepted += 1
            elif code > worst[0]:
                worst = (code, text)
        if not accepted:
            return worst
        code, text = talk.say("DATA")
        if code != 354:
            return code, text
        sock.sendall(wire_data(raw))
        outcomes = [talk.reply() for _ in range(accepted)]
        outcome = max([*outcomes, worst], key=lambda o: o[0])
        with contextlib.suppress(OSError, LmtpError):  # (the outcome is known)
            talk.say("QUIT")
        return outcome
