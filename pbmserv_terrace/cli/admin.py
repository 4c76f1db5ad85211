"""``pbmserv-terrace admin …``: the operator's tools.

games / game / users / user      look around
reset-password USER              for a player who forgot theirs (the password is asked for)
rotate-reply-keys                cancel every reply address sent so far (a new secret)
remove TYPE BOARD                take a board out of play (players are told)
replay [FILE ...]                run failed mails again (IMAP 'failed' folder or the failed/ directory)
resend [--failed]                put failed or waiting replies back in the outbox queue, due now
export TYPE BOARD|--all DIR      a game's moves and final position as text
backup FILE / restore FILE       the whole database as JSON lines (SQLite or PostgreSQL, either way):
                                 one snapshot, beside a running serve; restore checks what it loaded
migrate                          upgrade the schema, saying each revision applied
timers [--at ISO-TIME]           run every timer due then (reminders, forfeits, digests), the
                                 code serve's scheduler runs; prints what it queued; --at
                                 refuses a time earlier than the last run

No command but migrate (and restore into an empty database) changes the schema: on a
database whose schema is behind this program's each says so and how to upgrade.
``--config FILE`` may come before or after the command's name (cli/common.CommandParser).

Every command checks its arguments and says what is wrong; long work prints progress
to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import secrets
import sys
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select, update

from ..app.pipe import handle_raw
from ..config import Config
from ..gametypes import GAME_TYPES, board_rules
from ..mail.imap import connect
from ..service import CommandError, Service
from ..service.args import check_password
from ..service.boards import mail_game
from ..service.passwords import hash_password
from ..service.replykeys import SECRET_NAME as REPLY_SECRET
from ..store import Database, Game, OutboxMessage, UnitOfWork, User, utcnow
from ..store.backup import BackupError, restore_backup, write_backup
from ..store.db import Revision, head_revision, known_revisions
from .common import CliError, config_from_args


class AdminError(Exception):
    pass


def progress(done: int, total: int, what: str) -> None:
    if total >= 10 and (done % max(1, total // 20) == 0 or done == total):
        print(f"  {what}: {done}/{total}", file=sys.stderr, flush=True)


async def _game(uow: UnitOfWork, game_type: str, number: str, lock: bool = False) -> Game:
    if game_type not in GAME_TYPES:
        raise AdminError(f"game type must be {' or '.join(GAME_TYPES)}, not {game_type!r}")
    if not number.isdigit():
        raise AdminError(f"{number!r} is not a board number")
    game = await uow.games.get(game_type, int(number), lock=lock)
    if game is None:
        raise AdminError(f"there is no {game_type} board {number}")
    return game


# ------------------------------------------------------------------- timers
def parse_at(text: str) -> datetime:
    """An ISO time as naive UTC (a time without an offset is UTC)."""
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        raise AdminError(f"--at {text[:40]!r} is not an ISO time such as 2026-12-01T08:00 or 2026-12-01T08:00+01:00") from None
    return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo is not None else at


async def timers(db: Database, config: Config, args: argparse.Namespace) -> None:
    """Every timer due at --at (default now), as serve's scheduler runs them."""
    service = Service(db, config)
    at = parse_at(args.at) if args.at else utcnow()
    last = await service.last_timer_run()
    if args.at and last is not None and at < last:
        raise AdminError(f"--at {at:%Y-%m-%d %H:%M:%S} is earlier than the timers' last run ({last:%Y-%m-%d %H:%M:%S} UTC): "
                         "timers never run backwards")  # fmt: skip
    queued: list[str] = []
    handled = await service.run_timers(at, queued=queued)
    async with UnitOfWork(db) as uow:
        rows = (await uow.session.execute(select(OutboxMessage).where(OutboxMessage.message_id.in_(queued)))).scalars().all()
        for row in sorted(rows, key=lambda r: r.id):
            print(f"queued  {row.recipient}  {row.subject}")
    print(f"timers at {at:%Y-%m-%d %H:%M:%S} UTC: {handled} boards and digests handled, {len(queued)} mails queued")


# ------------------------------------------------------------------ looking
async def games(db: Database, args: argparse.Namespace) -> None:
    async with UnitOfWork(db) as uow:
        stmt = select(Game).order_by(Game.game_type, Game.board_number)
        if args.status != "all":
            stmt = stmt.where(Game.status == args.status)
        rows = (await uow.session.execute(stmt.limit(args.limit))).scalars().all()
        for g in rows:
            players = " ".join(s.user.userid for s in g.seats)
            print(
                f"{g.game_type:<11} {g.board_number:>6}  {g.status:<8} ply {g.ply:>4}  {g.variant:<7} {players}  {g.result or ''}"
            )
        if not rows:
            print("(no boards)")


async def game(db: Database, args: argparse.Namespace) -> None:
    async with UnitOfWork(db) as uow:
        g = await _game(uow, args.game_type, args.board)
        print(f"{g.game_type} board {g.board_number}: {g.status} {g.result or ''}")
        print(
            f"variant {g.variant}, options {g.options}, rated {g.rated}, ply {g.ply}, last move {g.last_move_at:%Y-%m-%d %H:%M}"
        )
        for s in g.seats:
            print(
                f"  seat {s.seat}: {s.user.userid} active={s.active} queued={s.queued_moves} clock={s.clock_seconds / 3600:.1f}h"
            )
        print(f"position {g.position}")
        rules = board_rules(g.game_type)
        print(rules.board_text(rules.load(g.position)))


async def users(db: Database, args: argparse.Namespace) -> None:
    async with UnitOfWork(db) as uow:
        rows = (await uow.session.execute(select(User).order_by(User.userid).limit(args.limit))).scalars().all()
        for u in rows:
            state = "deleted" if u.is_deleted else "signed off" if u.signed_off else "active"
            marked = set(u.bouncing)
            addresses = ", ".join(f"{a} (bouncing)" if a.lower() in marked else a for a in u.addresses)
            print(f"{u.userid:<20} {state:<10} {addresses}")
        if not rows:
            print("(no users)")


async def user(db: Database, args: argparse.Namespace) -> None:
    async with UnitOfWork(db) as uow:
        u = await uow.users.get(args.userid)
        if u is None:
            raise AdminError(f"there is no user {args.userid!r}")
        print(f"{u.userid}: addresses {u.addresses}, bouncing {u.bouncing}, signed off {u.signed_off}, vacation {u.vacation}, "
              f"accepts challenges {u.accept_challenges}, limit {u.challenge_limit}, since {u.created_at:%Y-%m-%d}")  # fmt: skip
        for g in await uow.games.for_users([u.id]):
            print(f"  {g.game_type} {g.board_number}: {g.status} {g.result or ''}")


# ------------------------------------------------------------------ changing
def read_new_password(args: argparse.Namespace) -> str:
    """The new password: prompted for twice on a terminal, else one line of
    standard input; never a command-line argument (shell history, ps)."""
    if sys.stdin.isatty():
        first = getpass.getpass(f"new password for {args.userid}: ")
        if getpass.getpass("again: ") != first:
            raise AdminError("the two passwords differ; nothing changed")
        return first
    line = sys.stdin.readline()
    if not line.strip():
        raise AdminError("give the new password on standard input (one line), or run this on a terminal to be asked")
    return line.rstrip("\r\n")


async def reset_password(db: Database, args: argparse.Namespace) -> None:
    args.password = read_new_password(args)
    try:
        check_password(args.password)
    except CommandError as exc:
        raise AdminError(exc.reason) from None
    async with UnitOfWork(db) as uow:
        u = await uow.users.get(args.userid)
        if u is None or u.is_deleted:
            raise AdminError(f"there is no (undeleted) user {args.userid!r}")
        u.password_hash = hash_password(args.password)
        u.key_generation += 1
        await uow.commit()
    print(f"password of {args.userid.lower()} reset")


async def rotate_reply_keys(db: Database, args: argparse.Namespace) -> None:
    async with UnitOfWork(db) as uow:
        await uow.secrets.put(REPLY_SECRET, secrets.token_hex(32))
        await uow.commit()
    print(
        "reply-key secret replaced: replies to board mails sent before now are refused as no longer valid; new mails carry new keys"
    )


async def remove(db: Database, config: Config, args: argparse.Namespace) -> None:
    service = Service(db, config)
    async with UnitOfWork(db) as uow:
        g = await _game(uow, args.game_type, args.board, lock=True)
        if g.status != "active":
            raise AdminError(f"board {g.board_number} is not active ({g.status})")
        g.status, g.result, g.finished_at, g.deadline_at = "removed", f"removed by the operator: {args.reason}", utcnow(), None
        now = utcnow()
        ctx = service.context(uow, now)
        await mail_game(ctx, g, headline=f"the board was removed by the operator ({args.reason})")
        service.queue_replies(ctx, now)
        await uow.commit()
    print(f"{args.game_type} board {args.board} removed; the players are told")


async def resend(db: Database, args: argparse.Namespace) -> None:
    states = ["failed", "pending"] if args.failed else ["pending"]
    async with UnitOfWork(db) as uow:
        stmt = update(OutboxMessage).where(OutboxMessage.state.in_(states)).values(state="pending", next_attempt_at=utcnow())
        result = await uow.session.execute(stmt.execution_options(synchronize_session=False))
        await uow.commit()
    count = getattr(result, "rowcount", 0)
    print(f"{count} replies queued to go out now (a running serve sends them within seconds)")


async def replay(db: Database, config: Config, args: argparse.Namespace) -> None:
    """Failed mails again: files given, or every .eml in the failed directory, or
    (with IMAP configured) every message in the IMAP failed folder, moved back to the inbox."""
    if config.uses_imap and not args.files:
        client = await connect(config)
        try:
            resp = await client.select(config.imap.failed_folder)
            if resp.result != "OK":
                raise AdminError(f"no IMAP folder {config.imap.failed_folder!r}")
            search = await client.uid_search("ALL")
            uids = [x.decode() for line in search.lines[:-1] for x in bytes(line).split() if x.isdigit()]
            for i, uid in enumerate(uids, 1):
                await client.uid("store", uid, "-FLAGS.SILENT", r"(\Seen)")
                await client.uid("move", uid, config.imap.inbox)
                progress(i, len(uids), "moved back to the inbox")
            print(f"{len(uids)} failed mails moved back to {config.imap.inbox}; serve processes them next")
        finally:
            await client.logout()
        return
    folder = Path(config.imap.failed_folder)
    files = [Path(f) for f in args.files] or sorted(folder.glob("*.eml"))
    if not files:
        print(f"no failed mails in {folder}/")
        return
    service = Service(db, config)
    ok = 0
    for i, path in enumerate(files, 1):
        if not path.exists():
            raise AdminError(f"{path} does not exist")
        result = await handle_raw(config, path.read_bytes(), service=service)
        print(f"{path.name}: {result.status} {result.detail}")
        if result.status != "failed":
            ok += 1
            done = path.with_suffix(".replayed")
            path.rename(done)
        progress(i, len(files), "replayed")
    print(f"{ok} of {len(files)} mails replayed")


async def export(db: Database, args: argparse.Namespace) -> None:
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    async with UnitOfWork(db) as uow:
        if args.board == "--all" or args.board == "all":
            stmt = select(Game).where(Game.game_type == args.game_type).order_by(Game.board_number)
            targets = list((await uow.session.execute(stmt)).scalars())
        else:
            targets = [await _game(uow, args.game_type, args.board)]
        for i, g in enumerate(targets, 1):
            moves = await uow.moves.of_game(g.id)
            names = {s.seat: s.user.userid for s in g.seats}
            lines = [f"{g.game_type} board {g.board_number} ({g.variant}): {' vs '.join(names.values())}",
                     f"Result: {g.result or 'in progress'}", f"Start: {g.start_position}", ""]  # fmt: skip
            lines += [f"{m.ply:>4}. {names.get(m.seat, m.seat)}: {m.move}{' (Auto)' if m.auto else ''}" for m in moves]
            lines += [
                "",
                f"Final position: {g.position}",
                "",
                board_rules(g.game_type).board_text(board_rules(g.game_type).load(g.position)),
            ]
            (out / f"{g.game_type}-{g.board_number}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
            progress(i, len(targets), "exported")
    print(f"{len(targets)} {'game' if len(targets) == 1 else 'games'} written to {out}/")


# ------------------------------------------------------------ backup/restore
def _say_table(name: str, rows: int) -> None:
    print(f"  {name}: {rows} rows", file=sys.stderr, flush=True)


async def backup(db: Database, args: argparse.Namespace) -> None:
    path = Path(args.file)
    if not path.parent.is_dir():
        raise AdminError(f"there is no folder {path.parent}/ to write {path.name} in")
    try:
        summary = await write_backup(db, path, _say_table)
    except BackupError as exc:
        raise AdminError(str(exc)) from None
    print(f"backup of {summary.rows} rows (schema {summary.schema}, one snapshot) written to {path}")


async def restore(db: Database, args: argparse.Namespace) -> None:
    path = Path(args.file)
    if not path.exists():
        raise AdminError(f"{path} does not exist")
    try:
        summary = await restore_backup(db, path, _say_table)
    except BackupError as exc:
        raise AdminError(f"{exc}; nothing was restored") from None
    print(f"restored {summary.rows} rows from {path} (schema {summary.schema}, upgraded to {head_revision()})")
    print(f"checked: {', '.join(summary.checked)}")


async def migrate(db: Database, args: argparse.Namespace) -> None:
    print_migration(await db.migrate(), head_revision())


def print_migration(applied: list[Revision], head: str) -> None:
    """What ``migrate`` did, one line per revision applied."""
    for rev in applied:
        print(f"applied {rev.revision}: {rev.title}")
    print(f"the schema is at {head}" + (" (it was up to date)" if not applied else ""))


async def check_schema(db: Database, args: argparse.Namespace) -> None:
    """Refuse to work on a schema other than this program's: ``admin`` never
    migrates (a running serve of the older program may be using the database)."""
    current, head = await db.schema_revision(), head_revision()
    if current == head:
        return
    config = f" --config {args.config}" if getattr(args, "config", None) else ""
    how = f"run `pbmserv-terrace migrate{config}` (or `pbmserv-terrace admin migrate{config}`) first"
    if current is None:
        raise AdminError(f"the database has no schema yet, this program needs {head}: {how}")
    if current not in known_revisions():
        raise AdminError(f"the database schema is at {current}, newer than this program knows ({head}): use the newer program")
    if args.admin_command == "backup":
        return  # (a backup before upgrading: it writes the schema it finds)
    raise AdminError(f"the database schema is at {current}, this program needs {head}: {how}")


# -------------------------------------------------------------------- wiring
def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    admin = sub.add_parser("admin", help="operator tools (games, users, replay, resend, export, backup, restore, ...)")
    asub = admin.add_subparsers(dest="admin_command", required=True, metavar="ADMIN_COMMAND")
    p = asub.add_parser("games", help="list boards")
    p.add_argument("--status", default="active", choices=["active", "won", "draw", "removed", "all"])
    p.add_argument("--limit", type=int, default=1000)
    p = asub.add_parser("game", help="show one board")
    p.add_argument("game_type")
    p.add_argument("board")
    p = asub.add_parser("users", help="list users")
    p.add_argument("--limit", type=int, default=10000)
    p = asub.add_parser("user", help="show one user")
    p.add_argument("userid")
    p = asub.add_parser("reset-password", help="set a user's password (asked for, or read from standard input)")
    p.add_argument("userid")
    p = asub.add_parser("rotate-reply-keys", help="replace the reply-key secret: every reply address sent so far stops working")
    p = asub.add_parser("remove", help="remove a board from play")
    p.add_argument("game_type")
    p.add_argument("board")
    p.add_argument("--reason", default="administrative decision")
    p = asub.add_parser("replay", help="process failed mails again")
    p.add_argument("files", nargs="*", help=".eml files (default: the failed directory or IMAP folder)")
    p = asub.add_parser("resend", help="send waiting replies now (with --failed also the failed ones)")
    p.add_argument("--failed", action="store_true")
    p = asub.add_parser("export", help="write games (moves and final position) as text files")
    p.add_argument("game_type")
    p.add_argument("board", help="a board number, or all")
    p.add_argument("dir")
    p = asub.add_parser("backup", help="write the whole database to a file (JSON lines)")
    p.add_argument("file")
    p = asub.add_parser("restore", help="load a backup into an empty database (checked before it is committed)")
    p.add_argument("file")
    asub.add_parser("migrate", help="create or upgrade the database schema, saying each revision applied")
    p = asub.add_parser("timers", help="run the timers due at a time (reminders, forfeits, digests); print what they queued")
    p.add_argument("--at", help="ISO time (default now; UTC without an offset); refused if earlier than the last run")
    admin.set_defaults(handler=cmd_admin)


def cmd_admin(args: argparse.Namespace) -> int:
    config = config_from_args(args)

    async def run() -> None:
        db = Database(config.server.database_url)
        try:
            command = args.admin_command
            if command not in ("restore", "migrate"):
                await check_schema(db, args)
            if command in ("remove", "replay", "timers"):
                await {"remove": remove, "replay": replay, "timers": timers}[command](db, config, args)
            else:
                handler = {
                    "games": games, "game": game, "users": users, "user": user, "reset-password": reset_password,
                    "resend": resend, "export": export, "backup": backup, "restore": restore,
                    "rotate-reply-keys": rotate_reply_keys, "migrate": migrate,
                }[command]  # fmt: skip
                await handler(db, args)
        finally:
            await db.close()

    try:
        asyncio.run(run())
    except AdminError as exc:
        raise CliError(str(exc)) from None
    return 0
