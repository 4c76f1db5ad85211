"""Reading a local Maildir (the embedded default's) in the order its mails arrived
(issue 38 item 14): ``inbox`` prints them so, ``send --reply-to-last`` answers
the last.

The Date header says the second only, and a file's mtime is the kernel's coarse
clock (a few ms): the replies of one claim are written within it.  So the order
comes from the Maildir name, which starts with the time of delivery to the
microsecond (``<seconds>.M<µs>…``: the server's names carry the time its reply
was made, Python's ``mailbox`` and Dovecot the time they wrote the file), then
the name's ``Q<n>`` sequence (Python's ``mailbox`` counts its deliveries so),
then the mtime in ns, then the name.  A name of another form is placed by its
mtime.
"""

from __future__ import annotations

import argparse
import mailbox
import os
from email.message import Message
from pathlib import Path

from ..mail.delivery import MaildirDelivery
from .common import CliError, config_from_args

ArrivalKey = tuple[int, int, int, str]


def _leading_int(text: str) -> int | None:
    """The decimal number ``text`` starts with (None: it starts with no digit)."""
    end = 0
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    return int(text[:end]) if end else None


def arrival_key(name: str, mtime_ns: int) -> ArrivalKey:
    """How a Maildir file named ``name`` (``:2,flags`` and all) sorts among the
    others of its folder: (µs since the epoch, sequence, mtime in ns, name)."""
    seconds, dot, rest = name.partition(".")
    unique = rest.split(".", 1)[0].split(":", 1)[0]
    micro = _leading_int(unique[1:]) if unique.startswith("M") else None
    if not (dot and seconds.isascii() and seconds.isdigit() and micro is not None and micro < 1_000_000):
        return (mtime_ns // 1000, 0, mtime_ns, name)
    q = unique.find("Q")
    sequence = (_leading_int(unique[q + 1 :]) or 0) if q > 0 else 0
    return (int(seconds) * 1_000_000 + micro, sequence, mtime_ns, name)


def by_arrival(folder: Path) -> list[mailbox.MaildirMessage]:
    """The mails of the Maildir ``folder`` (``new/`` and ``cur/``), oldest first."""
    found: list[tuple[ArrivalKey, str]] = []
    for sub in ("new", "cur"):
        try:
            entries = list(os.scandir(folder / sub))
        except FileNotFoundError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_file():
                continue
            try:
                found.append((arrival_key(entry.name, entry.stat().st_mtime_ns), entry.path))
            except FileNotFoundError:  # (moved or deleted meanwhile)
                continue
    found.sort()
    messages = []
    for _, path in found:
        try:
            messages.append(mailbox.MaildirMessage(Path(path).read_bytes()))
        except FileNotFoundError:
            continue
    return messages


def newest_mail(folder: Path, address: str) -> mailbox.MaildirMessage:
    """The mail that arrived last in ``address``'s Maildir ``folder``."""
    if not folder.exists():
        raise CliError(f"no mail for {address} yet ({folder} does not exist): nothing to reply to")
    messages = by_arrival(folder)
    if not messages:
        raise CliError(f"no mail for {address} yet: nothing to reply to")
    return messages[-1]


def mail_text(msg: Message) -> str:
    """The plain-text part of a mail (the first one), decoded."""
    part = next((p for p in msg.walk() if p.get_content_type() == "text/plain"), msg)
    payload = part.get_payload(decode=True)
    text = payload.decode(part.get_content_charset() or "utf-8", "replace") if isinstance(payload, bytes) else ""
    return text.replace("\r\n", "\n").rstrip("\n")


def cmd_inbox(args: argparse.Namespace) -> int:
    """``inbox ADDRESS [--last N]``: the mails of a local Maildir, in order of arrival."""
    cfg = config_from_args(args)
    folder = MaildirDelivery(cfg.embedded.maildir_root).folder(args.address)
    if not folder.exists():
        raise CliError(f"no mail for {args.address} yet ({folder} does not exist)")
    messages = by_arrival(folder)
    if args.last:
        messages = messages[-args.last :]
    for i, msg in enumerate(messages):
        if i:
            print("\n" + "=" * 72 + "\n")
        for header in ("From", "To", "Reply-To", "Date", "Subject"):
            if msg[header] is not None:
                print(f"{header}: {msg[header]}")
        print()
        print(mail_text(msg))
    if not messages:
        print(f"(no mail for {args.address})")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Point the ``inbox`` command (declared with the server's commands in
    :mod:`.serve`, whose ``send --reply-to-last`` should take :func:`newest_mail`
    and :func:`mail_text` from here too) at :func:`cmd_inbox`."""
    sub.choices["inbox"].set_defaults(handler=cmd_inbox)
