"""Drive the server the way ``pbmserv-terrace handle --print`` does: raw RFC 5322
bytes in, an mbox of replies out (parsed back with :mod:`mailbox`)."""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import mailbox
import tempfile
import uuid
from dataclasses import dataclass
from email.message import Message
from email.utils import make_msgid
from pathlib import Path

from pbmserv_terrace.app.pipe import handle_raw
from pbmserv_terrace.config import load_config
from pbmserv_terrace.service import HandleResult, Service
from pbmserv_terrace.store import Database

SERVER = "pbmserv@terrace.test"


@dataclass
class Reply:
    to: str
    subject: str
    body: str
    """the text/plain part"""
    headers: dict[str, str]
    message: Message | None = None

    @property
    def html(self) -> str:
        return part_text(self.message, "text/html") if self.message is not None else ""


def part_text(msg: Message, ctype: str) -> str:
    """The first part of type ``ctype``, decoded ('' when there is none)."""
    for part in msg.walk():
        if part.get_content_type() == ctype:
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                return payload.decode(part.get_content_charset() or "utf-8").replace("\r\n", "\n")
    return ""


def raw_mail(
    sender: str, subject: str, body: str = "", *, message_id: str | None = None, extra: dict[str, str] | None = None
) -> bytes:
    """A plain-text mail as a client writes it; odd subjects become RFC 2047 words."""
    if subject.isascii() and subject.isprintable():
        subj = subject
    else:
        data = subject.encode("utf-8", "surrogatepass")
        subj = " ".join(f"=?utf-8?b?{base64.b64encode(data[i : i + 45]).decode()}?=" for i in range(0, len(data), 45))
    headers = {
        "From": sender,
        "To": (extra or {}).pop("To", SERVER),
        "Subject": subj,
        # (not make_msgid alone: its random part comes from the random module, which
        # hypothesis seeds the same for every example, and two mails handled in one
        # hundredth of a second then had one Message-ID: the second was a duplicate)
        "Message-ID": message_id or make_msgid(idstring=uuid.uuid4().hex, domain="players.test"),
        "MIME-Version": "1.0",
        "Content-Type": 'text/plain; charset="utf-8"',
        "Content-Transfer-Encoding": "base64",
        **(extra or {}),
    }
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    payload = base64.encodebytes((body or "\n").encode("utf-8", "surrogatepass")).decode().replace("\n", "\r\n")
    return (head + "\r\n" + payload).encode("ascii")


class Harness:
    """A server on a fresh SQLite (or the given URL) and one event loop."""

    _ids = itertools.count(1)

    def __init__(self, url: str | None = None) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        url = url or f"sqlite+aiosqlite:///{Path(self.tmp.name) / 'h.db'}"
        self.config = load_config(
            None,
            {
                "PBMSERV_DATABASE_URL": url,
                "PBMSERV_ADDRESS": SERVER,
                "PBMSERV_IMAP_FAILED_FOLDER": str(Path(self.tmp.name) / "failed"),
                # no game reviews (issue 42) unless a test turns them on (tests/service/test_reviews.py):
                # the other tests count the mails a game's end makes
                "PBMSERV_REVIEW_NODES": "0",
            },
        )
        self.loop = asyncio.new_event_loop()
        self.db = Database(url)
        self.loop.run_until_complete(self.db.migrate())
        self.service = Service(self.db, self.config)
        self.last: HandleResult | None = None

    def close(self) -> None:
        self.loop.run_until_complete(self.db.close())
        self.loop.close()
        self.tmp.cleanup()

    def raw(self, data: bytes) -> list[Reply]:
        out = io.BytesIO()
        self.last = self.loop.run_until_complete(handle_raw(self.config, data, print_to=out, service=self.service))
        with tempfile.NamedTemporaryFile(suffix=".mbox") as f:
            f.write(out.getvalue())
            f.flush()
            box = mailbox.mbox(f.name)
            replies = [
                Reply(m["To"], str(m["Subject"]), part_text(m, "text/plain"), {k.lower(): str(v) for k, v in m.items()}, m)
                for m in box
            ]
            box.close()
        return replies

    def send(self, sender: str, subject: str, body: str = "", **kw: object) -> list[Reply]:
        if "@" not in sender:
            sender = f"{sender}@players.test"
        return self.raw(raw_mail(sender, subject, body, **kw))  # type: ignore[arg-type]

    def signup(self, *names: str) -> None:
        """Sign each one up from NAME@players.test and confirm the address by Reply
        (issue 36: an address gets mail only once it is confirmed)."""
        for name in names:
            replies = self.send(name, f"signup {name} pw-{name}")
            assert len(replies) == 1 and "Welcome" in replies[0].body, replies
            confirm(self, replies[0])

    def challenge(self, *players: str, options: str = "", game: str = "terrace", body: str = "") -> list[Reply]:
        """The first player challenges the others with their password (the form
        that needs no confirmation)."""
        first, rest = players[0], " ".join(players[1:])
        return self.send(first, f"{game} challenge {first} pw-{first} {rest} {options}".strip(), body)

    def move(self, board: int, user: str, move: str, body: str = "", game: str = "terrace") -> list[Reply]:
        return self.send(user, f"{game} move {board} {user} pw-{user} {move}", body)


def mine(replies: list[Reply], user: str) -> Reply:
    """The one reply that went to ``user`` (or to the address ``user``)."""
    found = [r for r in replies if (r.to == user if "@" in user else r.to.startswith(user + "@"))]
    assert len(found) == 1, [r.to for r in replies]
    return found[0]


def to(replies: list[Reply]) -> list[str]:
    return sorted(r.to for r in replies)


def set_position(h: Harness, board: int, tpn: str, game_type: str = "terrace") -> None:
    """Test fixture: give a board a constructed position (as its new start)."""
    from pbmserv_terrace.store import UnitOfWork

    async def run() -> None:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get(game_type, board, lock=True)
            assert game is not None
            game.position = game.start_position = tpn
            game.ply = 0
            await uow.moves.delete_from(game.id, 1)
            await uow.commit()

    h.loop.run_until_complete(run())


def run_timers(h: Harness, days_later: float) -> list[Reply]:
    """Run the scheduler as if ``days_later`` days had passed; the mails it queued."""
    from datetime import timedelta

    from sqlalchemy import select

    from pbmserv_terrace.store import OutboxMessage, utcnow

    async def run() -> list[Reply]:
        await h.service.run_timers(utcnow() + timedelta(days=days_later))
        async with h.db.session() as s:
            rows = (await s.execute(select(OutboxMessage).where(OutboxMessage.state == "pending"))).scalars().all()
            out = [Reply(r.recipient, r.subject, r.body, {}) for r in rows]
            for r in rows:
                r.state = "printed"
            await s.commit()
        return out

    return h.loop.run_until_complete(run())


def answer(
    h: Harness, to: Reply, body: str, *, sender: str | None = None, strip_key: bool = False, message_id: str | None = None
) -> list[Reply]:
    """Press Reply on a server mail ``to``: to its Reply-To (its From when the key
    was lost on the way), quoting it under an attribution line, with In-Reply-To."""
    from email.utils import parseaddr

    address = parseaddr(to.headers.get("reply-to", "") or to.headers["from"])[1]
    if strip_key:
        local, _, domain = address.partition("@")
        address = f"{local.split('+')[0]}@{domain}"
    quoted = "\n".join("> " + line for line in to.body.splitlines())
    text = f"{body}\n\nOn Mon, 23 Nov 2026 at 10:02, PBM Server <{SERVER}> wrote:\n{quoted}\n"
    extra = {"To": address, "In-Reply-To": to.headers["message-id"], "References": to.headers["message-id"]}
    return h.raw(raw_mail(sender or to.to, "Re: " + to.subject, text, extra=extra, message_id=message_id))


def confirm(h: Harness, mail: Reply, *, sender: str | None = None) -> list[Reply]:
    """Press Reply on a confirmation mail (an address, or a challenge made
    without a password) and send; its answers."""
    assert mail.subject.startswith("confirm "), mail.subject
    replies = answer(h, mail, "", sender=sender)
    assert h.last is not None and h.last.status == "ok", (h.last, [r.body for r in replies])
    return replies
