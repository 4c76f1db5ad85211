"""The service: one inbound mail → one transaction (ARCHITECTURE.md).

:meth:`Service.handle_mail` checks whether the mail may be answered at all, opens a
Unit of Work, runs each command (an error undoes that command only), writes every
reply to the outbox, records the Message-ID and commits — all or nothing.
Handlers never touch the network; they append mails to the context
(:mod:`.context`), which :mod:`.replies` turns into outbox rows.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.exc import DBAPIError, IntegrityError

from ..commands import NO_COMMAND, Command, strip_subject
from ..commands.parse import redact
from ..commands.table import decl_of
from ..config import Config
from ..gametypes import DEFAULT_GAME_TYPE, TITLES_PATTERN, game_titled
from ..gametypes.analysis import PositionAnalysis
from ..inbound import InboundMail, is_valid_address, never_answer
from ..store import Confirmations, Database, Digests, MailUndo, UnitOfWork, utcnow
from ..store.models import DELETED_HASH_PREFIX
from ..store.repos import Users
from ..store.reviews import FAILED as REVIEW_FAILED
from ..store.reviews import PENDING as REVIEW_PENDING
from ..store.reviews import SENT as REVIEW_SENT
from ..store.reviews import SKIPPED as REVIEW_SKIPPED
from ..store.reviews import Reviews
from . import analysis, authentic, confirmations, digests, keyed, robots, solitaire, timers, tournaments, vacations, webplay
from .analysis import AnalysisTurn
from .args import MissingArguments, missing_reason, notice
from .boards import ROUTINE_ROUNDS
from .bounces import BOUNCE_VERDICT, is_bounce
from .bounces import record as record_bounce
from .context import CommandError, Ctx, Mail
from .guards import dummy_hash, guess_guard_for, throttle_for
from .passwords import PasswordCache
from .ratings import pin_robots
from .registry import Registry, build_registry
from .replies import error_mail, merge_for_sender, queue_replies
from .replykeys import SECRET_NAME
from .reviews import send as send_review
from .robots import HintTurn, ReviewTurn, RobotTurn
from .webplay import WebPlay

log = logging.getLogger("pbmserv.service")
PREWARM_PER_MAIL = 4
BATCH_REDOS = 3
"""a batch is tried again at most this often, each time with one more mail in a
savepoint of its own; the last try gives every mail one"""


class _Redo(Exception):
    """A batch must be tried again with mail ``index`` in a savepoint of its own."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


@dataclass
class HandleResult:
    status: str
    """ok | error | ignored | bounce | duplicate | throttled | failed | deferred (not begun: shutting down)"""
    detail: str = ""
    replies: int = 0
    board: str = ""
    user: str = ""
    command: str = ""
    ms: float = 0.0
    outbox_ids: list[str] = field(default_factory=list)
    """Message-IDs of the replies queued for this mail"""
    robot_turns: list[RobotTurn] = field(default_factory=list)
    """boards this mail touched where a robot is now to move (``serve`` and
    ``handle`` then let the robot play)"""

    def log_line(self) -> str:
        return (
            f"board={self.board or '-'} user={self.user or '-'} command={self.command or '-'} "
            f"result={self.status}{(': ' + self.detail) if self.detail else ''} replies={self.replies} ms={self.ms:.1f}"
        )


_MESSAGE_FROM = re.compile(r"^(?:message|broadcast) from (\S+) via ", re.IGNORECASE)
_CHAT_FROM = re.compile(rf"^({TITLES_PATTERN}) board (\d+) chat from (\S+)$", re.IGNORECASE)
_BOARD = re.compile(rf"^(?:new )?({TITLES_PATTERN}) board (\d+)\b", re.IGNORECASE)


def no_command_reason(subject: str, error: str, server_name: str) -> str:
    """The answer to a mail with no command in it, with what to do instead when it
    answers one of our mails (a message, a chat, a board mail, a notice)."""
    if error != NO_COMMAND and not subject.lower().startswith(server_name.lower() + ":"):
        return error
    said = "this mail holds no command"
    if m := _MESSAGE_FROM.match(subject):
        return f"{said}: to answer {m.group(1)}, mail 'message YOURID PASSWORD {m.group(1)}' with your answer in the body"
    if m := _CHAT_FROM.match(subject):
        title, board, who = m.groups()
        return (
            f"{said}: to chat back to {who}, reply 'chat' and your text to your newest mail of board {board}, "
            f"or mail '{game_titled(title).name} chat {board} YOURID PASSWORD' with the text in the body"
        )
    if m := _BOARD.match(subject):
        kind, board = game_titled(m.group(1)).name, m.group(2)
        return (
            f"{said}: to play on board {board}, reply to your newest board mail with your move on the first line, or mail "
            f"'{kind} move {board} YOURID PASSWORD MOVE'; '{kind} show {board}' shows the board"
        )
    return NO_COMMAND


class Service:
    """The use cases of the server, driven by ``handle``, ``serve`` and the tests alike."""

    def __init__(self, db: Database, config: Config, passwords: PasswordCache | None = None) -> None:
        self.db = db
        self.config = config
        secret = config.server.secret.encode() or None
        self.passwords = passwords or PasswordCache(secret)
        self.dummy_hash = dummy_hash()
        self.throttle = throttle_for(db, config.server.rate_limit_per_minute)
        self.guessing = guess_guard_for(db)
        self.registry: Registry = build_registry()

    # ------------------------------------------------------------ server work
    def context(self, uow: UnitOfWork, now: datetime, mail: InboundMail | None = None) -> Ctx:
        """A context for work on ``uow``: a mail's commands, or (``mail`` None) the
        server's own work, such as timers and operator commands."""
        return Ctx(self, uow, now, mail)

    def queue_replies(self, ctx: Ctx, now: datetime, *, multiple: bool = False) -> list[str]:
        """Write the mails ``ctx`` produced to its outbox (in its transaction)."""
        mails = ctx.out
        if multiple and ctx.mail is not None:
            mails = merge_for_sender(ctx.mail.sender, mails, self.config.server.name)
        in_reply_to = ctx.mail.message_id if ctx.mail is not None else None
        return queue_replies(ctx.uow, mails, server_address=self.config.server.address, now=now, in_reply_to=in_reply_to)

    async def run_timers(self, now: datetime | None = None, *, batch: int = 100, queued: list[str] | None = None) -> int:
        """Every timer due at ``now`` (``serve``'s scheduler, and ``admin timers
        --at``, run this same code): reminders and forfeits (see :mod:`.timers`),
        then the digests (:mod:`.digests`); how many boards and digests were
        handled.  Expired confirmations are forgotten first (their keys stopped
        working after ``confirmations.TTL``; the rows would otherwise stay for
        good).  The run is recorded (``timer_runs``: the latest time stays).
        ``queued``: the Message-IDs of the mails queued are appended to it."""
        now = now or utcnow()
        queued = queued if queued is not None else []
        async with UnitOfWork(self.db) as uow:
            if await Confirmations(uow.session).purge(now - confirmations.TTL):
                await uow.commit()
        async with UnitOfWork(self.db) as uow:
            ctx = self.context(uow, now)
            handled = await vacations.end_due(ctx)  # vacations whose time is up: the clocks run again
            await pin_robots(uow)  # the robots' ratings at their measured strength (issue 42)
            queued += self.queue_replies(ctx, min(now, utcnow()))
            await uow.commit()
        while True:
            async with UnitOfWork(self.db) as uow:
                games = await uow.games.due(now, limit=batch)
                ctx = self.context(uow, now)
                for game in games:
                    await timers.handle_due(ctx, game)
                    handled += 1
                await tournaments.settle(ctx)  # boards that ended on time: their rounds go on
                await tournaments.sweep(ctx)  # tournaments whose day has come, rounds left complete
                queued += self.queue_replies(ctx, min(now, utcnow()))  # due at once, also at an --at to come
                await uow.commit()
            if len(games) < batch:
                break
        while True:
            async with UnitOfWork(self.db) as uow:
                users = await Digests(uow.session).users_due(now, limit=batch, lock=not self.db.is_sqlite)
                ctx = self.context(uow, now)
                for user in users:
                    handled += await digests.send_due(ctx, user)
                queued += self.queue_replies(ctx, min(now, utcnow()))
                await uow.commit()
            if not users:  # (not "fewer than batch": another worker's locked rows are skipped, not done)
                break
        async with UnitOfWork(self.db) as uow:
            await Digests(uow.session).ran(now)
            await uow.commit()
        return handled

    async def last_timer_run(self) -> datetime | None:
        """When the timers last ran (``admin timers --at`` refuses an earlier time)."""
        async with UnitOfWork(self.db) as uow:
            return await Digests(uow.session).last_run()

    # ------------------------------------------------------- before handling
    async def prewarm(self, mails: list[InboundMail]) -> list[list[asyncio.Future[bool]]]:
        """Start, in the background, the password checks these mails will need,
        so their transactions find them done; per mail, the checks still running
        (``serve`` waits for them before it begins the mail's transaction).  Only
        known users; locked-out userids are left alone; nothing is decided here:
        the command's own check is the one that counts."""
        wanted: list[list[tuple[str, str]]] = []
        for mail in mails:
            pairs = [pair for cmd in mail.parsed.commands if (pair := self.registry.credentials(cmd))]
            wanted.append(pairs[:PREWARM_PER_MAIL])
        userids = sorted({userid for pairs in wanted for userid, _ in pairs})
        if not userids:
            return [[] for _ in mails]
        await self.guessing.refresh(userids)  # what other workers counted (PostgreSQL)
        # a password that passed lately is not read ahead (had it been changed
        # since, the command checks it in its transaction, as with no prewarm)
        unknown = sorted({userid for pairs in wanted for userid, password in pairs if not self.passwords.known(userid, password)})
        stored: dict[str, str] = {}
        if unknown:
            async with self.db.reading() as session:
                stored = await Users(session).password_hashes(unknown)
        clock = time.monotonic()
        running: list[list[asyncio.Future[bool]]] = []
        for pairs in wanted:
            futures = []
            for userid, password in pairs:
                hashed = stored.get(userid)
                if hashed and not hashed.startswith(DELETED_HASH_PREFIX) and not self.guessing.locked_for(userid, clock):
                    future = self.passwords.warm(userid, hashed, password)
                    if future is not None:
                        futures.append(future)
            running.append(futures)
        return running

    @staticmethod
    def conflict_keys(mail: InboundMail, server_address: str = "") -> frozenset[str] | None:
        """What a mail may touch, for running mails side by side (see
        :mod:`pbmserv_terrace.app.ordering`): its sender, and the board and user of
        each board command (a reply key names its board); None when it may touch
        anything else (it then runs alone, after every earlier mail and before
        every later one)."""
        if is_bounce(mail, server_address):
            return None  # a bounce may mark any player's address: it runs alone (bounces are rare)
        keys = {f"from:{mail.sender.lower()}"}
        key_text = keyed.key_text_of(mail, server_address) if server_address else None
        if key_text is not None:
            board = keyed.board_of_key(key_text)
            if board is None:
                return None
            return frozenset({*keys, f"board:{board[0]}:{board[1]}", "keyed-user"})
        if not mail.parsed.commands and mail.references:
            return None  # may be a reply whose key is found by its In-Reply-To
        for cmd in mail.parsed.commands:
            if cmd.stands_in:
                continue  # the short help for a mail of plain words: an answer to the sender only
            # a command declared per board (CommandDecl.per_board: BOARD USERID PASSWORD …)
            decl = decl_of(cmd.game_type, cmd.verb) if cmd.is_game else None
            at = decl.password_index(cmd.words) if decl is not None and decl.per_board else None
            if at is None or len(cmd.words) < at or not cmd.words[0].isdigit():
                return None
            keys.add(f"board:{cmd.game_type}:{int(cmd.words[0])}")
            keys.add(f"user:{cmd.words[at - 1].lower()}")
        return frozenset(keys)

    # -------------------------------------------------------------- handling
    async def handle_mail(self, mail: InboundMail, *, now: datetime | None = None, verdict: str | None = None) -> HandleResult:
        """Handle one mail in its own transaction.  ``verdict``: the throttle's
        verdict, when a batch has already asked (so a mail is counted once)."""
        started = time.perf_counter()
        check = verdict if verdict is not None else await self._precheck(mail)
        if isinstance(check, HandleResult):
            return check
        try:
            # Optimistic: a mail seen before is rare (a restart between commit and
            # filing), and the processed-id row's primary key refuses it at commit.
            result = await self._handle(mail, now or utcnow(), check, check_seen=False)
        except IntegrityError:
            # The Message-ID was processed before (or another worker committed it, or
            # this game's ply, first).  Run again: the second pass sees the mail as
            # processed, or the new state.
            log.info("%s: processed before or by a concurrent worker; running it again", mail.message_id)
            result = await self._handle(mail, now or utcnow(), check)
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            log.warning("%s: the database connection was lost; running it again on a fresh one", mail.message_id)
            result = await self._handle(mail, now or utcnow(), check)
        result.ms = (time.perf_counter() - started) * 1000
        return result

    async def handle_batch(self, mails: list[InboundMail], *, now: datetime | None = None) -> list[HandleResult | Exception]:
        """Handle mails together, in order, in one transaction: what they need is
        read in a few set-based queries first (boards with their players, recent
        moves, subscribers), each mail then runs the same code as alone, and the
        whole batch is written and committed at once.  A mail with a player's
        error (which must undo that mail) gets a savepoint of its own in a new
        try of the batch.  If anything else goes wrong (a crash in a handler, a
        Message-ID seen before, a lost connection), the batch is rolled back and
        its mails run again one by one, so one bad mail never costs the others.
        Per mail: its result, or the exception it raised alone.  A lone mail
        takes the same way (its undo is then a rollback, not a savepoint)."""
        started = time.perf_counter()
        when = now or utcnow()
        checks = await self._prechecks(mails)
        own: set[int] = set()
        """mails that get a savepoint of their own (one of their commands failed)"""
        try:
            for attempt in range(BATCH_REDOS + 1):
                try:
                    results, contexts, turns = await self._batch_once(mails, checks, when, own, every=attempt == BATCH_REDOS)
                    break
                except _Redo as redo:
                    own.add(redo.index)
        except Exception as exc:
            log.log(
                logging.WARNING if len(mails) > 1 else logging.INFO,
                "a batch of %d mails failed (%s: %s); running them one by one",
                len(mails), type(exc).__name__, exc,
            )  # fmt: skip
            return [
                check if isinstance(check, HandleResult) else await self._alone(mail, check)
                for mail, check in zip(mails, checks, strict=True)
            ]
        for ctx in contexts:
            ctx.guard.apply()
        elapsed = (time.perf_counter() - started) * 1000
        for result in results:
            result.ms = elapsed
        if turns:
            results[-1].robot_turns = turns
        return list(results)

    async def _batch_once(
        self, mails: list[InboundMail], checks: list[HandleResult | str], when: datetime, own: set[int], *, every: bool
    ) -> tuple[list[HandleResult], list[Ctx], list[RobotTurn]]:
        """One try at a batch: the mails in ``own`` (all, with ``every``) in
        savepoints of their own; a command error in any other raises _Redo."""
        results: list[HandleResult] = []
        contexts: list[Ctx] = []
        # a lone mail needs no savepoints: its undo is a rollback (UnitOfWork.undo_mail)
        async with UnitOfWork(self.db, batch=len(mails) > 1) as uow:
            robots.watch_games(uow.session)
            await self._preload(uow, [m for m, c in zip(mails, checks, strict=True) if isinstance(c, str)])
            for index, (mail, check) in enumerate(zip(mails, checks, strict=True)):
                if isinstance(check, HandleResult):
                    results.append(check)
                    continue
                await uow.begin_mail(savepoint=every or index in own)
                try:
                    result, ctx = await self._handle_in(uow, mail, when, check)
                except MailUndo:
                    raise _Redo(index) from None
                await uow.end_mail()
                results.append(result)
                contexts.append(ctx)
            turns = await self._robot_turns_in(uow)
            await uow.commit()
        return results, contexts, turns

    async def _alone(self, mail: InboundMail, verdict: str | None = None) -> HandleResult | Exception:
        try:
            return await self.handle_mail(mail, verdict=verdict)
        except Exception as exc:
            return exc

    async def _preload(self, uow: UnitOfWork, mails: list[InboundMail]) -> None:
        """Read what these mails' board commands need, set-based, into ``uow``."""
        boards: set[tuple[str, int]] = set()
        userids: set[str] = set()
        for mail in mails:
            key_text = keyed.key_text_of(mail, self.config.server.address)
            board = keyed.board_of_key(key_text) if key_text is not None else None
            if board is not None:
                boards.add(board)
            for cmd in mail.parsed.commands:
                if cmd.is_game and len(cmd.words) >= 2 and cmd.words[0].isdigit():
                    boards.add((cmd.game_type or DEFAULT_GAME_TYPE, int(cmd.words[0])))
                    userids.add(cmd.words[1])
        if not boards:
            return
        # read before any change, so that no handler's first read of it flushes
        await uow.secrets.get(SECRET_NAME)
        games = await uow.games.preload(boards, lock=not self.db.is_sqlite)
        uow.users.remember(seat.user for game in games for seat in game.seats)
        await uow.users.preload(userids)
        # a board mail shows the last ROUTINE_ROUNDS rounds and the one in play
        await uow.moves.preload(games, (ROUTINE_ROUNDS + 1) * max(len(g.seats) for g in games) if games else 0)
        await uow.watchers.preload(game.id for game in games)

    async def _precheck(self, mail: InboundMail) -> HandleResult | str:
        return (await self._prechecks([mail]))[0]

    async def _prechecks(self, mails: list[InboundMail]) -> list[HandleResult | str]:
        """What is decided before a transaction, per mail: a mail never answered
        (its result), else the throttle's verdict (asked once for them all)."""
        checks: list[HandleResult | str] = []
        asked: list[int] = []
        for mail in mails:
            if is_bounce(mail, self.config.server.address):
                checks.append(BOUNCE_VERDICT)  # never answered, not throttled: counted in _handle_in
                continue
            why = never_answer(mail, self.config.server.address)
            if why:
                log.info("not answered: %s (from %r, %s)", why, mail.sender, mail.message_id)
                checks.append(HandleResult("ignored", why))
            elif not is_valid_address(mail.sender):
                checks.append(HandleResult("ignored", f"unusable sender address {mail.sender[:80]!r}"))
            else:
                asked.append(len(checks))
                checks.append("")
        clock = time.monotonic()
        verdicts = await self.throttle.check_many([(mails[i].sender.lower(), mails[i].message_id) for i in asked], clock)
        for i, verdict in zip(asked, verdicts, strict=True):
            checks[i] = verdict
        await authentic.refresh_senders(self.guessing, self.registry, [mails[i] for i in asked])
        over = [i for i in asked if checks[i] != "ok"]
        if over:
            # From is not identity (issue 36): a mail over its sender's limit that
            # proves its writer (password, reply or confirmation key) is counted
            # per (user, sender) instead, so a forged flood cannot silence a player
            proven = await authentic.authenticated_as(
                self.db, self.passwords, self.guessing, self.registry, self.config.server.address, [mails[i] for i in over]
            )
            again = [(i, userid) for i, userid in zip(over, proven, strict=True) if userid]
            if again:
                second = await self.throttle.check_many(
                    [(mails[i].sender.lower(), mails[i].message_id) for i, _ in again], clock, [u for _, u in again]
                )
                for (i, _), verdict in zip(again, second, strict=True):
                    checks[i] = verdict
        return checks

    async def _handle(self, mail: InboundMail, now: datetime, verdict: str, *, check_seen: bool = True) -> HandleResult:
        async with UnitOfWork(self.db) as uow:
            robots.watch_games(uow.session)
            if check_seen and await uow.processed.seen(mail.message_id):
                return HandleResult("duplicate", mail.message_id)
            result, ctx = await self._handle_in(uow, mail, now, verdict)
            result.robot_turns = await self._robot_turns_in(uow)
            await uow.commit()
        ctx.guard.apply()
        return result

    async def _handle_in(self, uow: UnitOfWork, mail: InboundMail, now: datetime, verdict: str) -> tuple[HandleResult, Ctx]:
        """One mail's commands, replies and processed-id row in ``uow`` (not
        committed), and its context (whose password outcomes count once it is)."""
        ctx = self.context(uow, now, mail)
        if verdict == BOUNCE_VERDICT:
            counted = await record_bounce(uow, mail, self.config, now)
            log.info("bounce %s from %r: %s", mail.message_id, mail.sender, counted)
            uow.processed.record(mail.message_id, now, mail.sender, "bounce")
            return HandleResult("bounce", counted[:300]), ctx
        if verdict != "ok":
            # Over the limit: one notice, then silence; nothing else happens.
            if verdict == "notice":
                limit = self.throttle.per_minute
                self._error(ctx, None, CommandError(
                    f"you have sent more than {limit} commands in a minute; the server ignores your mail "
                    "until a minute has passed (this notice is sent once)"), strip_subject(mail.subject))  # fmt: skip
            queued = self.queue_replies(ctx, now)
            uow.processed.record(mail.message_id, now, mail.sender, "throttled")
            return HandleResult("throttled", mail.sender, len(queued), outbox_ids=queued), ctx
        if mail.problem is not None:
            # over a parsing limit (mail.message.bounded): nothing of it runs
            self._error(ctx, None, CommandError(mail.problem), strip_subject(mail.subject))
            queued = self.queue_replies(ctx, now)
            uow.processed.record(mail.message_id, now, mail.sender, "refused: over a limit")
            return HandleResult("error", mail.problem, len(queued), outbox_ids=queued), ctx
        parsed = mail.parsed
        results: list[tuple[Command | None, str | None]] = []
        commands = parsed.commands
        key_text = keyed.key_text_of(mail, self.config.server.address)
        if key_text is None and not parsed.commands and mail.references:
            # the +KEY was lost on the way (a reply to From, a server that strips
            # sub-addresses): the mail answers one of ours that carried a key
            key_text = await uow.outbox.reply_key_of(mail.references)
        reply: keyed.KeyedReply | None = None
        if key_text is not None:
            try:
                reply = await keyed.resolve(ctx, mail, key_text, subject_has_command=bool(parsed.commands))
            except CommandError as exc:
                self._error(ctx, None, exc, "(reply)")
                results.append((None, exc.reason))
                reply = keyed.KeyedReply()
            if reply.fall_back_to_subject:
                reply = None
        if reply is not None:
            ctx.keyed_user = reply.user
            commands = reply.commands
            if reply.refused:
                results.append((None, reply.refused))
        elif parsed.error:
            reason = no_command_reason(strip_subject(mail.subject), parsed.error, self.config.server.name)
            self._error(ctx, None, CommandError(reason), parsed.source_line)
            results.append((None, reason))
        for cmd in commands:
            if cmd.verb == "invalid":
                self._error(ctx, cmd, CommandError(cmd.comment), cmd.text)
                results.append((cmd, cmd.comment))
                continue
            results.append((cmd, await self._run(ctx, cmd, alone=len(commands) == 1)))
        if reply is not None and reply.notes and not any(err for _, err in results):
            notice(ctx, f"{ctx.server_name}: your reply went to the board as chat", *reply.notes)
            said = reply.commands[0] if reply.commands else None
            if said is not None and said.game_type and said.words and said.words[0].isdigit():
                ctx.out[-1].about_board = (said.game_type, int(said.words[0]))  # a Reply to the notice plays
        if reply is not None and reply.digest_lines is not None:
            await keyed.digest_answer(ctx, reply, results)  # a Reply to a digest: one summary (issue 40)
        await tournaments.settle(ctx)  # tournament boards this mail ended: record, pair the next round
        await keyed.key_error_replies(ctx)
        queued = self.queue_replies(ctx, now, multiple=parsed.multiple and reply is None)
        uow.processed.record(mail.message_id, now, mail.sender, redact(parsed.source_line or "")[:200])
        first = commands[0] if commands else None
        errors = [err for _, err in results if err]
        return HandleResult(
            "error" if errors and len(errors) == len(results) else "ok",
            "; ".join(errors)[:300],
            len(queued),
            board=ctx.board,
            user=ctx.user,
            command=(f"{first.game_type + ' ' if first.game_type else ''}{first.verb}" if first else "-"),
            outbox_ids=queued,
        ), ctx

    # ---------------------------------------------------------------- robots
    @staticmethod
    async def _robot_turns_in(uow: UnitOfWork) -> list[RobotTurn]:
        """Boards this transaction changed where a robot is now to move (looked up
        only when a changed game may seat a robot)."""
        turns = await robots.robot_turns(uow.session, robots.changed_games(uow.session))
        return turns + analysis.asked_turns(uow.session)

    async def robot_turns(self) -> list[RobotTurn]:
        """Every board where a robot is to move (at start, and after timers), and
        every analysis not yet answered (:mod:`.analysis`)."""
        async with self.db.reading() as session:
            return await robots.robot_turns(session) + await analysis.pending_turns(session)

    async def analysis_turn(self, analysis_id: int) -> AnalysisTurn | None:
        """The work of analysis ``analysis_id`` while it waits (None: answered)."""
        async with self.db.reading() as session:
            return await analysis.turn_of(session, analysis_id)

    async def analysis_answer(self, turn: AnalysisTurn, found: PositionAnalysis | None, *,
                              now: datetime | None = None) -> HandleResult:  # fmt: skip
        """Mail the analysis ``found`` (computed by :func:`.analysis.compute` in the
        worker pool for ``turn``; None: the engine had none) in a transaction of its
        own, only while its row is pending; otherwise nothing happens (status
        ``duplicate``), so an analysis computed twice is mailed once."""
        started = time.perf_counter()
        now = now or utcnow()
        async with UnitOfWork(self.db) as uow:
            ctx = self.context(uow, now)
            if not await analysis.answer(ctx, turn, found):
                return HandleResult("duplicate", f"analysis {turn.analysis_id} was answered already")
            queued = self.queue_replies(ctx, now)
            await uow.commit()
        return HandleResult(
            "ok" if found is not None else "error", f"analysis {turn.analysis_id} after ply {turn.ply}", len(queued),
            board=str(turn.board), command=f"{turn.game_type} analyze answer", ms=(time.perf_counter() - started) * 1000,
            outbox_ids=queued,
        )  # fmt: skip

    async def robot_turn(self, game_type: str, board: int) -> RobotTurn | None:
        """The robot's turn on this board, if a robot is to move there now."""
        async with self.db.reading() as session:
            return await robots.robot_turn_on(session, game_type, board)

    async def robot_move(
        self, turn: RobotTurn, move_text: str, comment: str = "", *, now: datetime | None = None
    ) -> HandleResult:
        """Play the robot's move ``move_text`` (computed by :func:`.robots.think` for
        ``turn``) through the ``move`` handler, as the robot, in its own transaction,
        with ``comment`` on the board mail.  Idempotent per (board, ply): when the
        board is no longer at ``turn.ply`` with that robot to move, nothing happens
        (status ``duplicate``), so a move computed twice is played once."""
        started = time.perf_counter()
        now = now or utcnow()
        try:
            async with UnitOfWork(self.db) as uow:
                game = await uow.games.get(turn.game_type, turn.board, lock=True)
                seat = robots.robot_to_move(game) if game is not None else None
                if game is None or seat is None or game.ply != turn.ply or seat.user.userid != turn.userid:
                    return HandleResult(
                        "duplicate", f"board {turn.board} is no longer at ply {turn.ply} with {turn.userid} to move"
                    )
                ctx = self.context(uow, now)
                if await robots.draw_if_robots_alone(ctx, game):
                    await tournaments.settle(ctx)
                    queued = self.queue_replies(ctx, now)
                    await uow.commit()
                    return HandleResult("ok", "robots alone: drawn", len(queued), board=str(turn.board), outbox_ids=queued)
                ctx.keyed_user = seat.user  # the robot is the service itself: no password
                words = [str(turn.board), turn.userid, "-", f"{move_text}#{turn.ply + 1}"]
                cmd = Command(verb="move", game_type=turn.game_type, words=words, comment=comment, text=f"move {move_text}")
                error = await self._run(ctx, cmd, alone=True)
                if error is not None:
                    # the engine chose a move the rules refuse: a bug; nothing is played
                    log.error("robot %s on %s %d: move %s refused: %s", turn.userid, turn.game_type, turn.board, move_text, error)
                    return HandleResult("error", error, board=str(turn.board), user=turn.userid, command="robot move")
                await tournaments.settle(ctx)  # a robot's move ended a tournament board
                queued = self.queue_replies(ctx, now)
                turns = await robots.robot_turns(uow.session, [game.id, *tournaments.opened(uow.session)])
                await uow.commit()
        except IntegrityError:
            # another worker played this ply first (the moves table refuses a second one)
            return HandleResult("duplicate", f"board {turn.board} ply {turn.ply + 1} was played by another worker")
        return HandleResult(
            "ok", move_text, len(queued), board=str(turn.board), user=turn.userid, command=f"{turn.game_type} robot move",
            ms=(time.perf_counter() - started) * 1000, outbox_ids=queued, robot_turns=turns,
        )  # fmt: skip

    async def hint_answer(self, turn: HintTurn, found: str | None, *, now: datetime | None = None) -> HandleResult:
        """Send the hint ``found`` (computed by :func:`.hints.solve` in the worker pool
        for ``turn``) in a transaction of its own: the board mail with the hint, only
        if the board still waits for a hint at that position; otherwise nothing
        happens (status ``duplicate``), so a hint computed twice is sent once."""
        started = time.perf_counter()
        now = now or utcnow()
        async with UnitOfWork(self.db) as uow:
            game = await uow.games.get(turn.game_type, turn.board, lock=True)
            ctx = self.context(uow, now)
            if game is None or not await solitaire.answer_hint(ctx, game, turn.position, found):
                return HandleResult("duplicate", f"board {turn.board} waits for no hint after move {turn.ply}")
            queued = self.queue_replies(ctx, now)
            await uow.commit()
        return HandleResult(
            "ok", f"hint {found or '(none found)'}", len(queued), board=str(turn.board), user=turn.userid,
            command=f"{turn.game_type} hint answer", ms=(time.perf_counter() - started) * 1000, outbox_ids=queued,
        )  # fmt: skip

    async def review_answer(self, turn: ReviewTurn, data: dict[str, Any] | None, *, now: datetime | None = None) -> HandleResult:
        """Send the review ``data`` (computed by :func:`.reviews.compute` in the worker
        pool for ``turn``; None: the game's rules could not review it) in a
        transaction of its own: the review stored and its mails queued, only while
        the board's ``reviews`` row is still pending; otherwise nothing happens
        (status ``duplicate``), so a review computed twice is mailed once."""
        started = time.perf_counter()
        now = now or utcnow()
        async with UnitOfWork(self.db) as uow:
            row = await Reviews(uow.session).get(turn.game_id, lock=True)
            game = await uow.games.get(turn.game_type, turn.board)
            if row is None or row.state != REVIEW_PENDING or game is None or game.id != turn.game_id:
                return HandleResult("duplicate", f"board {turn.board} owes no review")
            ctx = self.context(uow, now)
            sent = 0
            try:
                if data is not None:
                    sent = await send_review(ctx, game, await uow.moves.of_game(game.id), data)
            except ValueError:  # a review that does not fit its game (a bad move text, another format)
                log.exception("the review of %s %d cannot be mailed; it is marked failed", turn.game_type, turn.board)
                data, ctx.out = None, []
            if data is None:
                row.state = REVIEW_FAILED
            else:
                row.data, row.state = data, REVIEW_SENT if sent else REVIEW_SKIPPED
            row.done_at = now
            queued = self.queue_replies(ctx, now)
            await uow.commit()
        return HandleResult(
            "ok" if data is not None else "error", f"review {row.state}: {sent} player(s)", len(queued), board=str(turn.board),
            command=f"{turn.game_type} review", ms=(time.perf_counter() - started) * 1000, outbox_ids=queued,
        )  # fmt: skip

    async def web_play(self, key_text: str, move_text: str | None = None, *, now: datetime | None = None) -> WebPlay:
        """The play page's one door (issue 39 part 2): with ``move_text`` None, what
        the page of reply key ``key_text`` shows (nothing changes); with a move, that
        move played as a keyed Reply's move is: the key's checks (MAC for the user's
        current key generation, the board, the seat), the board version it names,
        then the ``move`` handler as the key's user (``MOVE#ply``), its replies to
        every player and watcher queued, all in one transaction.  A key whose move
        was played already (the same post twice) finds the board a version on and
        changes nothing (``used``); so does one the board has left (``stale``)."""
        now = now or utcnow()
        try:
            return await self._web_play(key_text, move_text, now)
        except IntegrityError:
            # the same ply was played meanwhile (another worker, a Reply): look again
            return await self._web_play(key_text, move_text, now)

    async def _web_play(self, key_text: str, move_text: str | None, now: datetime) -> WebPlay:
        async with UnitOfWork(self.db) as uow:
            ctx = self.context(uow, now)
            try:
                key, user = await keyed.key_user(ctx, key_text)
                game, seat = await keyed.key_board(ctx, key, user, lock=move_text is not None)
            except CommandError as exc:
                return webplay.refused(exc)
            page = await webplay.board_state(ctx, key, user, game, seat)
            if page.status != "ready" or move_text is None:
                return page
            robots.watch_games(uow.session)
            ctx.keyed_user = user
            words = [str(game.board_number), user.userid, "-", f"{move_text}#{game.ply + 1}"]
            cmd = Command(verb="move", game_type=game.game_type, words=words, text=f"move {move_text}")
            error = await self._run(ctx, cmd, alone=True)
            if error is not None:
                page.status, page.message = "illegal", f"{move_text[:40]} was not played: {error}."
                return page
            last = await uow.moves.last_plies(game.id, 1)
            page = webplay.played(ctx, page, game, last[0].move if last else move_text)
            page.outbox_ids = self.queue_replies(ctx, now)
            page.robot_turns = await self._robot_turns_in(uow)
            await uow.commit()
        log.info("board=%s user=%s command=%s play page: played %s replies=%d",
                 page.board, page.userid, page.game_type, page.move, len(page.outbox_ids))  # fmt: skip
        return page

    async def _run(self, ctx: Ctx, cmd: Command, *, alone: bool = False) -> str | None:
        fn = self.registry.handler(cmd)
        if fn is None:
            self._error(ctx, cmd, CommandError(f"'{cmd.verb}' is not a command here; mail 'help' for the list"), cmd.text)
            return "unknown command"
        mark = len(ctx.out)
        if alone:
            # The mail's only command: on an error undo the whole transaction and start
            # a fresh one for the error reply (cheaper than a savepoint per mail).
            try:
                await fn(ctx, cmd)
                if not ctx.uow.batch:
                    await ctx.uow.flush()  # a batch writes at its end (and on error runs again)
            except CommandError as exc:
                await ctx.uow.undo_mail()
                ctx.forget_subscribers()
                del ctx.out[mark:]
                self._error(ctx, cmd, exc, cmd.text)
                return exc.reason
            return None
        savepoint = await ctx.uow.savepoint()
        try:
            await fn(ctx, cmd)
            await ctx.uow.flush()
        except CommandError as exc:
            await savepoint.rollback()
            ctx.uow.forget()
            ctx.forget_subscribers()
            del ctx.out[mark:]
            self._error(ctx, cmd, exc, cmd.text)
            return exc.reason
        await savepoint.commit()
        return None

    def _error(self, ctx: Ctx, cmd: Command | None, exc: CommandError, line: str) -> None:
        if ctx.mail is None:
            return
        if ctx.keyed_user is not None:
            usage = keyed.reply_usage(exc.game_type or (cmd.game_type if cmd else None))
        else:
            usage = self.registry.usage_of(cmd) if cmd else ""
        if isinstance(exc, MissingArguments) and cmd is not None:
            exc.reason = missing_reason(cmd.verb, exc.words, self.registry.usage_of(cmd))
        reply = error_mail(ctx.mail, cmd, exc, line, usage, keyed=ctx.keyed_user is not None)
        if reply is not None:
            ctx.out.append(reply)


__all__ = ["CommandError", "HandleResult", "Mail", "Service", "WebPlay"]
