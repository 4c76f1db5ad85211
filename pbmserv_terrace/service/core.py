"""The service layer: one inbound mail → one transaction (ARCHITECTURE.md).

:meth:`Service.handle_mail` checks whether the mail may be answered at all, opens a
Unit of Work, skips a Message-ID it has already processed, runs each command in a
savepoint (an error undoes that command only), writes every reply to the outbox,
records the Message-ID and commits — all or nothing.  Handlers never touch the
network; they append :class:`Mail` objects to the context.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.exc import DBAPIError, IntegrityError

from ..commands import Command, parse_mail, strip_subject
from ..commands.parse import redact
from ..config import Config
from ..mail.message import InboundMail, is_valid_address, never_answer, new_message_id
from ..render import GAME_TITLES, render
from ..store import Database, OutboxMessage, UnitOfWork, User, utcnow
from ..store.repos import Users
from .passwords import PasswordCache, hash_password

log = logging.getLogger("pbmserv.service")
_ERROR_SUBJECT = re.compile(r"^(?:terrace(?:6x6)?\s+(?:board\s+\d+\s+)?error|.*: results of multiple)$", re.IGNORECASE)


class CommandError(Exception):
    """A command that cannot be carried out: ``reason`` is one sentence for the player."""

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


@dataclass
class HandleResult:
    status: str
    """ok | error | ignored | duplicate | throttled | failed | deferred (not begun: shutting down)"""
    detail: str = ""
    replies: int = 0
    board: str = ""
    user: str = ""
    command: str = ""
    ms: float = 0.0
    outbox_ids: list[str] = field(default_factory=list)
    """Message-IDs of the replies queued for this mail"""

    def log_line(self) -> str:
        return (
            f"board={self.board or '-'} user={self.user or '-'} command={self.command or '-'} "
            f"result={self.status}{(': ' + self.detail) if self.detail else ''} replies={self.replies} ms={self.ms:.1f}"
        )


Handler = Callable[["Ctx", Command], Awaitable[None]]
AuthAt = int | Callable[[list[str]], int | None] | None
HANDLERS: dict[tuple[bool, str], Handler] = {}
USAGE: dict[str, str] = {}
AUTH_AT: dict[tuple[bool, str], AuthAt] = {}
PREWARM_PER_MAIL = 4
PER_BOARD = frozenset({"move", "resign", "queue", "submit", "confirm", "chat"})
"""board commands whose effects stay on their board, its players' ratings
(locked rows) and the sender; other commands are ordered against everything"""


def handler(verb: str, *, game: bool, usage: str, auth: AuthAt = None) -> Callable[[Handler], Handler]:
    """Register the handler of ``verb`` (a game command when ``game``).  ``auth``:
    where USERID PASSWORD stand in its words (an index, or a function of the
    words), so ``serve`` can start the password check before the transaction."""

    def register(fn: Handler) -> Handler:
        HANDLERS[(game, verb)] = fn
        USAGE[verb if not game else f"game:{verb}"] = usage
        AUTH_AT[(game, verb)] = auth
        return fn

    return register


def credentials(cmd: Command) -> tuple[str, str] | None:
    """The (userid, password) a command will authenticate with, if known."""
    at = AUTH_AT.get((cmd.is_game, cmd.verb))
    index = at(cmd.words) if callable(at) else at
    if index is None or len(cmd.words) < index + 2:
        return None
    return cmd.words[index].lower(), cmd.words[index + 1]


def usage_of(cmd: Command) -> str:
    if cmd.is_game:
        text = USAGE.get(f"game:{cmd.verb}", "")
        return " | ".join(f"{cmd.game_type} {alt.strip()}" for alt in text.split(" | ")) if text else ""
    return USAGE.get(cmd.verb, "")


class Ctx:
    """What a handler sees: the Unit of Work, the mail, the clock, and the replies."""

    def __init__(self, service: Service, uow: UnitOfWork, mail: InboundMail, now: datetime) -> None:
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

    async def subscribers(self, game_id: int) -> list[User]:
        """A board's subscribers, read once per mail (every board mail shows them)."""
        if game_id not in self._subscribers:
            self._subscribers[game_id] = await self.uow.watchers.subscribers(game_id)
        return self._subscribers[game_id]

    def forget_subscribers(self, game_id: int) -> None:
        self._subscribers.pop(game_id, None)

    @property
    def server_name(self) -> str:
        return self.config.server.name

    def reply(self, subject: str, template: str, **values: object) -> None:
        """A mail to the sender only."""
        self.out.append(Mail([self.mail.sender], subject, render(template, **values), for_sender=True))

    def send(self, users: list[User], subject: str, body: str) -> None:
        """One mail to every address of each user (signed-off users get none)."""
        addresses: list[str] = []
        for user in users:
            if user.signed_off:
                continue
            for addr in user.addresses:
                if addr not in addresses:
                    addresses.append(addr)
        if addresses:
            self.out.append(Mail(addresses, subject, body))

    async def auth(self, userid: str, password: str, known: Iterable[User] = ()) -> User:
        """The user, if the password is right; the same error for unknown users and
        wrong passwords, after the same (slow) work.  ``known``: users already
        loaded (a board's players), looked at before the database."""
        self.user = userid.lower()
        guard = self.service.guessing
        wait = guard.locked_for(self.user, time.monotonic())
        if wait:
            unit = "minute" if wait == 1 else "minutes"
            raise CommandError(f"too many wrong passwords for {self.user[:32]}; try again in {wait} {unit}")
        user = next((u for u in known if u.userid == self.user), None) or await self.uow.users.get(userid)
        stored = user.password_hash if user is not None else self.service.dummy_hash
        ok = await self.service.passwords.check_async(userid.lower(), stored, password)
        if user is None or not ok or user.password_hash.startswith("!"):
            guard.failed(self.user, time.monotonic())
            raise CommandError("the userid or the password is not correct")
        guard.succeeded(self.user)
        return user


class Throttle:
    """Per-sender command counts in a sliding one-minute window (in this process).
    ``check`` says ok, notice (the first mail over the limit) or drop."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._times: dict[str, collections.deque[float]] = {}
        self._noticed: dict[str, float] = {}

    def check(self, sender: str, now: float) -> str:
        times = self._times.setdefault(sender, collections.deque())
        while times and times[0] <= now - 60:
            times.popleft()
        if len(self._times) > 50_000:  # forget quiet senders
            for key in [k for k, v in self._times.items() if not v or v[-1] <= now - 60][:10_000]:
                self._times.pop(key, None)
                self._noticed.pop(key, None)
        if len(times) >= self.per_minute:
            if self._noticed.get(sender, -1e9) > now - 60:
                return "drop"
            self._noticed[sender] = now
            return "notice"
        times.append(now)
        return "ok"


class GuessGuard:
    """Slows password guessing against one userid (known or not, alike): after
    FREE wrong passwords within WINDOW seconds, every further attempt must wait
    1, 2, 4 … (at most 60) minutes after the last failure."""

    FREE, WINDOW = 5, 900.0

    def __init__(self) -> None:
        self._failures: dict[str, list[float]] = {}

    def failed(self, userid: str, now: float) -> None:
        recent = [t for t in self._failures.get(userid, []) if t > now - self.WINDOW]
        recent.append(now)
        self._failures[userid] = recent[-64:]
        if len(self._failures) > 100_000:
            self._failures.pop(next(iter(self._failures)))

    def succeeded(self, userid: str) -> None:
        self._failures.pop(userid, None)

    def locked_for(self, userid: str, now: float) -> int:
        """Minutes still to wait (0 = may try)."""
        recent = [t for t in self._failures.get(userid, []) if t > now - max(self.WINDOW, 3600.0)]
        extra = len(recent) - self.FREE
        if extra < 0:
            return 0
        until = recent[-1] + 60.0 * min(60, 2**extra)
        return 0 if until <= now else int((until - now) // 60) + 1


@functools.cache
def _dummy_hash() -> str:
    """A hash to verify against for unknown users, so they cost what a user costs."""
    return hash_password("not-a-password")


def game_title(game_type: str | None) -> str:
    return GAME_TITLES.get(game_type or "terrace", "Terrace")


class Service:
    """The use cases of the server, driven by ``handle``, ``serve`` and the tests alike."""

    def __init__(self, db: Database, config: Config, passwords: PasswordCache | None = None) -> None:
        self.db = db
        self.config = config
        secret = config.server.secret.encode() or None
        self.passwords = passwords or PasswordCache(secret)
        self.dummy_hash = _dummy_hash()
        self.throttle = Throttle(config.server.rate_limit_per_minute)
        self.guessing = GuessGuard()
        from . import accounts, play, queries, watch  # noqa: F401  (registers the handlers)

    async def run_timers(self, now: datetime | None = None) -> int:
        """Nags and forfeits that are due (see :mod:`.timers`)."""
        from .timers import run_timers

        return await run_timers(self, now or utcnow())

    async def prewarm(self, mails: list[InboundMail]) -> list[list[asyncio.Future[bool]]]:
        """Start, in the background, the password checks these mails will need,
        so their transactions find them done; per mail, the checks still running
        (``serve`` waits for them before it begins the mail's transaction).  Only
        known users; locked-out userids are left alone; nothing is decided here:
        the command's own check is the one that counts."""
        wanted: list[list[tuple[str, str]]] = []
        for mail in mails:
            parsed = parse_mail(mail.subject, mail.body)
            wanted.append([pair for cmd in parsed.commands if (pair := credentials(cmd))][:PREWARM_PER_MAIL])
        userids = sorted({userid for pairs in wanted for userid, _ in pairs})
        if not userids:
            return [[] for _ in mails]
        async with self.db.reading() as session:
            stored = await Users(session).password_hashes(userids)
        clock = time.monotonic()
        running: list[list[asyncio.Future[bool]]] = []
        for pairs in wanted:
            futures = []
            for userid, password in pairs:
                hashed = stored.get(userid)
                if hashed and not hashed.startswith("!") and not self.guessing.locked_for(userid, clock):
                    future = self.passwords.warm(userid, hashed, password)
                    if future is not None:
                        futures.append(future)
            running.append(futures)
        return running

    @staticmethod
    def conflict_keys(mail: InboundMail) -> frozenset[str] | None:
        """What a mail may touch, for running mails side by side (see
        :mod:`pbmserv_terrace.ordering`): its sender, and the board and user of
        each board command; None when it may touch anything else (it then runs
        alone, after every earlier mail and before every later one)."""
        keys = {f"from:{mail.sender.lower()}"}
        for cmd in parse_mail(mail.subject, mail.body).commands:
            if not (cmd.is_game and cmd.verb in PER_BOARD and len(cmd.words) >= 2 and cmd.words[0].isdigit()):
                return None
            keys.add(f"board:{cmd.game_type}:{int(cmd.words[0])}")
            keys.add(f"user:{cmd.words[1].lower()}")
        return frozenset(keys)

    async def handle_mail(self, mail: InboundMail, *, now: datetime | None = None) -> HandleResult:
        started = time.perf_counter()
        try:
            # Optimistic: a mail seen before is rare (a restart between commit and
            # filing), and the processed-id row's primary key refuses it at commit.
            result = await self._handle(mail, now or utcnow(), check_seen=False)
        except IntegrityError:
            # The Message-ID was processed before (or another worker committed it, or
            # this game's ply, first).  Run again: the second pass sees the mail as
            # processed, or the new state.
            log.info("%s: processed before or by a concurrent worker; running it again", mail.message_id)
            result = await self._handle(mail, now or utcnow())
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            log.warning("%s: the database connection was lost; running it again on a fresh one", mail.message_id)
            result = await self._handle(mail, now or utcnow())
        result.ms = (time.perf_counter() - started) * 1000
        return result

    async def _handle(self, mail: InboundMail, now: datetime, *, check_seen: bool = True) -> HandleResult:
        why = never_answer(mail, self.config.server.address)
        if why:
            log.info("not answered: %s (from %r, %s)", why, mail.sender, mail.message_id)
            return HandleResult("ignored", why)
        if not is_valid_address(mail.sender):
            return HandleResult("ignored", f"unusable sender address {mail.sender[:80]!r}")
        verdict = self.throttle.check(mail.sender.lower(), time.monotonic())
        async with UnitOfWork(self.db) as uow:
            if check_seen and await uow.inbound.seen(mail.message_id):
                return HandleResult("duplicate", mail.message_id)
            ctx = Ctx(self, uow, mail, now)
            if verdict != "ok":
                # Over the limit: one notice, then silence; nothing else happens.
                if verdict == "notice":
                    limit = self.throttle.per_minute
                    self._error(ctx, None, CommandError(
                        f"you have sent more than {limit} commands in a minute; the server ignores your mail "
                        "until a minute has passed (this notice is sent once)"), strip_subject(mail.subject))  # fmt: skip
                queued = self._queue_replies(ctx, False, now)
                uow.inbound.record(mail.message_id, now, mail.sender, "throttled")
                await uow.commit()
                return HandleResult("throttled", mail.sender, len(queued), outbox_ids=queued)
            parsed = parse_mail(mail.subject, mail.body)
            results: list[tuple[Command | None, str | None]] = []
            if parsed.error:
                self._error(ctx, None, CommandError(parsed.error), parsed.source_line)
                results.append((None, parsed.error))
            for cmd in parsed.commands:
                if cmd.verb == "invalid":
                    self._error(ctx, cmd, CommandError(cmd.comment), cmd.text)
                    results.append((cmd, cmd.comment))
                    continue
                results.append((cmd, await self._run(ctx, cmd, alone=len(parsed.commands) == 1)))
            queued = self._queue_replies(ctx, parsed.multiple, now)
            uow.inbound.record(mail.message_id, now, mail.sender, redact(parsed.source_line or "")[:200])
            await uow.commit()
        first = parsed.commands[0] if parsed.commands else None
        errors = [err for _, err in results if err]
        return HandleResult(
            "error" if errors and len(errors) == len(results) else "ok",
            "; ".join(errors)[:300],
            len(queued),
            board=ctx.board,
            user=ctx.user,
            command=(f"{first.game_type + ' ' if first.game_type else ''}{first.verb}" if first else "-"),
            outbox_ids=queued,
        )

    async def _run(self, ctx: Ctx, cmd: Command, *, alone: bool = False) -> str | None:
        fn = HANDLERS.get((cmd.is_game, cmd.verb))
        if fn is None:
            self._error(ctx, cmd, CommandError(f"'{cmd.verb}' is not a command here; mail 'help' for the list"), cmd.text)
            return "unknown command"
        mark = len(ctx.out)
        if alone:
            # The mail's only command: on an error undo the whole transaction and start
            # a fresh one for the error reply (cheaper than a savepoint per mail).
            try:
                await fn(ctx, cmd)
                await ctx.uow.flush()
            except CommandError as exc:
                await ctx.uow.session.rollback()
                await ctx.uow.session.begin()
                ctx._subscribers.clear()
                del ctx.out[mark:]
                self._error(ctx, cmd, exc, cmd.text)
                return exc.reason
            return None
        savepoint = await ctx.uow.session.begin_nested()
        try:
            await fn(ctx, cmd)
            await ctx.uow.flush()
        except CommandError as exc:
            await savepoint.rollback()
            del ctx.out[mark:]
            self._error(ctx, cmd, exc, cmd.text)
            return exc.reason
        await savepoint.commit()
        return None

    def _error(self, ctx: Ctx, cmd: Command | None, exc: CommandError, line: str) -> None:
        if _ERROR_SUBJECT.match(strip_subject(ctx.mail.subject)):
            # A reply to one of our error mails that holds no valid command: an
            # auto-responder, or a person who only wants to comment.  Answering it
            # with another error could start a mail loop, so it stays unanswered.
            log.info("not answering %s: a reply to an error mail (%s)", ctx.mail.message_id, exc.reason)
            return
        title = game_title(exc.game_type or (cmd.game_type if cmd else None))
        subject = f"{title} Board {exc.board} Error" if exc.board else f"{title} error"
        usage = exc.usage or (usage_of(cmd) if cmd else "")
        body_lines = [redact(b) for b in ctx.mail.body.rstrip().split("\n")[:60]] if ctx.mail.body.strip() else []
        quoted = [f"Subject: {redact(ctx.mail.subject)}"[:300], *(["", *body_lines] if body_lines else [])]
        hint = "Mail 'help commands' for every command." if not usage else ""
        body = render("error.txt", reason=exc.reason, usage=usage, quoted=[q[:300] for q in quoted], help_hint=hint)
        ctx.out.append(Mail([ctx.mail.sender], subject, body, for_sender=True))

    def _queue_replies(self, ctx: Ctx, multiple: bool, now: datetime) -> list[str]:
        mails = ctx.out
        if multiple:
            mails = self._merge_for_sender(ctx, mails)
        queued: list[str] = []
        seen: set[tuple[str, str, str]] = set()
        for mail in mails:
            for address in mail.to:
                if not is_valid_address(address):
                    log.warning("reply to unusable address %r dropped", address[:80])
                    continue
                key = (address.lower(), mail.subject, mail.body)
                if key in seen:
                    continue
                seen.add(key)
                message_id = new_message_id(self.config.server.address)
                queued.append(message_id)
                ctx.uow.outbox.add(
                    OutboxMessage(
                        message_id=message_id,
                        recipient=address,
                        subject=mail.subject,
                        body=mail.body,
                        in_reply_to=ctx.mail.message_id if not ctx.mail.message_id.endswith("@pbmserv.invalid>") else None,
                        state="pending",
                        attempts=0,
                        next_attempt_at=now,
                        created_at=now,
                    )
                )
        return queued

    def _merge_for_sender(self, ctx: Ctx, mails: list[Mail]) -> list[Mail]:
        """For ``multiple``: everything addressed to the sender becomes one reply;
        the other recipients of a mail still get it as usual."""
        sender = ctx.mail.sender.lower()
        parts: list[dict[str, str]] = []
        others: list[Mail] = []
        for mail in mails:
            rest = [a for a in mail.to if a.lower() != sender]
            if mail.for_sender or len(rest) < len(mail.to):
                parts.append({"command": mail.subject, "body": mail.body.rstrip("\n")})
            if rest and not mail.for_sender:
                others.append(Mail(rest, mail.subject, mail.body))
        if not parts:
            return others
        body = render("multiple.txt", parts=parts)
        return [Mail([ctx.mail.sender], f"{self.config.server.name}: results of multiple", body, for_sender=True), *others]
