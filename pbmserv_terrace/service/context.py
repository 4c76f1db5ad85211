"""What a command handler sees while it runs: the :class:`Ctx` (Unit of Work, the
mail being answered, the clock, the replies it queues) and :class:`CommandError`,
the one way a handler says "no".

The context is typed against :class:`ServicePort`, the few things it needs from the
service, so this module does not import the service (no import cycle).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ..config import Config
from ..inbound import InboundMail
from ..render import render
from ..store import Bounces, Game, UnitOfWork, User
from .bounces import cleared_lines, working_addresses
from .guards import GuardJournal, GuessGuard
from .passwords import PasswordCache, needs_rehash
from .replykeys import SECRET_NAME, board_version, key_address, make_key


class CommandError(Exception):
    """A command that cannot be carried out: ``reason`` is one sentence for the player.
    The error reply adds the command's usage unless ``usage`` gives another."""

    def __init__(self, reason: str, usage: str = "", *, board: int | None = None, game_type: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.usage = usage
        self.board = board
        self.game_type = game_type


@dataclass
class Mail:
    """A reply before it becomes outbox rows (one per address)."""

    to: list[str]
    subject: str
    body: str
    for_sender: bool = False
    """an answer to the sender (merged into one mail for ``multiple``)"""
    reply_to: str | None = None
    """Reply-To with a reply key (board mails to a player)"""
    reply_key: str | None = None
    html: str | None = None
    """the HTML part (board mails to users who want the picture)"""
    picture: dict[str, object] | None = None
    """what the board picture shows (see render.picture)"""
    about_board: tuple[str, int] | None = None
    """(game, board) an error reply is about: it gets that board's reply key when
    its sender is a player of it who proved it (:func:`.keyed.key_error_replies`)"""


class ServicePort(Protocol):
    """What a context needs from the service that runs it."""

    config: Config
    passwords: PasswordCache
    guessing: GuessGuard
    dummy_hash: str


class Ctx:
    """What a handler sees: the Unit of Work, the mail, the clock, and the replies.

    ``mail`` is None for work the server does by itself (timers, operator commands):
    such work sends mails to players but has no sender to answer."""

    def __init__(self, service: ServicePort, uow: UnitOfWork, now: datetime, mail: InboundMail | None = None) -> None:
        self.service = service
        self.uow = uow
        self.mail = mail
        self.now = now
        self.config = service.config
        self.out: list[Mail] = []
        self.user: str = ""
        self.board: str = ""
        self.rating_lines: list[str] = []
        """rating changes of a game that just ended, for its mail"""
        self._subscribers: dict[int, list[User]] = {}
        self.keyed_user: User | None = None
        """the user a verified reply key names: :meth:`auth` needs no password for them"""
        self._reply_secret: bytes | None = None
        self.guard = GuardJournal(service.guessing)
        """this work's password outcomes; the service applies them once it is final"""
        self.password_users: set[int] = set()
        """users this mail gave the right password of (:meth:`addresses_of`)"""
        self.quiet_users: set[int] = set()
        """users whose board mails this work leaves out: a Reply to a digest
        answers its sender with one summary instead (:mod:`.digests`)"""

    def acted(self, user: User) -> bool:
        """``user`` wrote this mail (their password, or their reply key): what it
        makes for them is the answer to their own mail, never held for a digest."""
        return user.id in self.password_users or (self.keyed_user is not None and self.keyed_user.id == user.id)

    @property
    def sender(self) -> str:
        if self.mail is None:
            raise RuntimeError("this work answers no mail")
        return self.mail.sender

    async def subscribers(self, game_id: int) -> list[User]:
        """A board's subscribers, read once per mail (every board mail shows them)."""
        if game_id not in self._subscribers:
            self._subscribers[game_id] = await self.uow.watchers.subscribers(game_id)
        return self._subscribers[game_id]

    def forget_subscribers(self, game_id: int | None = None) -> None:
        """Read them again (after a subscription changed, or everything after a rollback)."""
        if game_id is None:
            self._subscribers.clear()
        else:
            self._subscribers.pop(game_id, None)

    @property
    def server_name(self) -> str:
        return self.config.server.name

    def reply(self, subject: str, template: str, **values: object) -> None:
        """A mail to the sender only."""
        self.out.append(Mail([self.sender], subject, render(template, **values), for_sender=True))

    def addresses_of(self, user: User) -> list[str]:
        """Where mail to ``user`` goes: their confirmed addresses, and the sender of
        this mail when it gave ``user``'s right password from one of ``user``'s
        addresses still waiting for its confirmation (the answer to a player's own
        mail goes to its From, as on pbmserv; issue 36).  Nothing else goes to an
        unconfirmed address, nor to one marked bouncing (:mod:`.bounces`)."""
        found = working_addresses(user)
        if self.mail is not None and user.id in self.password_users:
            sender = self.mail.sender.lower()
            if sender in {a.lower() for a in user.pending_addresses} and sender not in {a.lower() for a in found}:
                found.append(self.mail.sender)
        return found

    def send(self, users: list[User], subject: str, body: str) -> None:
        """One mail to every (confirmed) address of each user (signed-off users get none)."""
        addresses: list[str] = []
        for user in users:
            if user.signed_off:
                continue
            for addr in self.addresses_of(user):
                if addr not in addresses:
                    addresses.append(addr)
        if addresses:
            self.out.append(Mail(addresses, subject, body))

    async def reply_secret(self) -> bytes:
        """The reply-key secret, read once per piece of work (every worker reads the
        same row, so a rotation takes effect everywhere at once)."""
        if self._reply_secret is None:
            value = await self.uow.secrets.get(SECRET_NAME)
            if value is None:  # a database migrated before 0003's secret: make one
                value = secrets.token_hex(32)
                await self.uow.secrets.put(SECRET_NAME, value)
            self._reply_secret = bytes.fromhex(value)
        return self._reply_secret

    async def reply_address(self, game_type: str, board: int, user: User, ply: int) -> tuple[str, str]:
        """(Reply-To address, key) of a mail to ``user`` about ``board``, naming ``ply``."""
        key = make_key(await self.reply_secret(), game_type, board, user.id, ply, user.key_generation)
        return key_address(self.config.server.address, key), key

    async def board_reply_address(self, game: Game, user: User) -> tuple[str, str]:
        """(Reply-To address, key) of a board mail to ``user``: the key names the
        board's version (:func:`.replykeys.board_version`), so it is outdated by the
        next move or undo and never valid again."""
        key = make_key(
            await self.reply_secret(), game.game_type, game.board_number, user.id, board_version(game), user.key_generation,
            versioned=True,
        )  # fmt: skip
        return key_address(self.config.server.address, key), key

    async def auth(self, userid: str, password: str, known: Iterable[User] = ()) -> User:
        """The user, if the password is right; the same error for unknown users and
        wrong passwords, after the same (slow) work.  ``known``: users already
        loaded (a board's players), looked at before the database.  In a reply with
        a verified key, the key's user needs no password."""
        self.user = userid.lower()
        if self.keyed_user is not None and self.keyed_user.userid == self.user:
            await self.writes_again(self.keyed_user)
            return self.keyed_user
        guard = self.guard
        # wrong passwords count per (userid, sender), per sender and per userid
        # (guards.GuessGuard): other addresses cannot lock a player out of their own
        user = next((u for u in known if u.userid == self.user), None) or await self.uow.users.get(userid)
        sender = self.mail.sender.lower() if self.mail is not None else ""
        own = user is not None and sender in {a.lower() for a in user.addresses}
        wait = guard.locked_for(self.user, time.monotonic(), sender=sender, own=own)
        if wait:
            unit = "minute" if wait == 1 else "minutes"
            raise CommandError(f"too many wrong passwords for {self.user[:32]}; try again in {wait} {unit}")
        stored = user.password_hash if user is not None else self.service.dummy_hash
        ok = await self.service.passwords.check_async(self.user, stored, password)
        if user is None or not ok or user.is_deleted:
            guard.failed(self.user, time.monotonic(), sender=sender)
            raise CommandError("the userid or the password is not correct")
        guard.succeeded(self.user, sender=sender)
        self.password_users.add(user.id)
        await self.writes_again(user)
        if needs_rehash(user.password_hash):
            # an older hash (scrypt, or weaker argon2 parameters): replace it now that
            # the password is known; the cache entry of the old hash simply expires
            user.password_hash = await self.service.passwords.hash_async(password)
        return user

    async def writes_again(self, user: User) -> None:
        """``user`` proved who they are in this mail: if some of their addresses are
        marked bouncing and the mail came from a confirmed address of theirs, the
        marks go (issue 43: the player is reachable again) and they are told.  In
        the command's transaction: an error that undoes the command keeps them."""
        if not user.bouncing or self.mail is None or user.is_robot:
            return
        if self.mail.sender.lower() not in {a.lower() for a in user.addresses}:
            return
        marked = list(user.bouncing)
        user.bouncing = []
        events = await Bounces(self.uow.session).clear(marked, self.now)
        self.reply(f"{self.server_name}: mail to you goes out again", "notice.txt",
                   lines=cleared_lines(marked, events), comment=None)  # fmt: skip
