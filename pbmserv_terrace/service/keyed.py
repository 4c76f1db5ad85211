"""Replies with a reply key (issue 14): the checks, all before anything changes,
and the command the reply's first own line stands for.

Order of the checks: the key verifies (constant time) for its user's current key
generation; the mail comes from one of that user's addresses; the board exists
and the user plays in it; a reply that changes the board (a move, resign, draw,
accept/reject, undo, queue) was written to the board's current version (a move
or an undo outdates every earlier mail for good).  ``show`` and ``chat`` take
any valid key of the board.  The Subject of a keyed reply is not read, except
that a reply with no own text at all falls back to it (a player who answered
the old way, editing the Subject).

A key does exactly one thing (issue 36): it lets its own user run the short
reply forms on its own board.  A first line that is a whole command (it may name
another board or user, an account verb, a password) runs as an ordinary mail,
with its password checked, and is never chatted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..commands import Command, ReplyCommand, own_text, parse_line, reply_command
from ..commands.parse import redact_text
from ..commands.table import commands_of
from ..gametypes import GAME_TYPES, board_games, game_title, move_example
from ..inbound import InboundMail
from ..render import render
from ..store import Digests, Game, Seat, User
from . import digests
from .boards import game_view, reply_hint, seat_of, subject_for, web_line
from .context import CommandError, Ctx, Mail
from .replies import is_error_reply
from .replykeys import (
    ReplyKey,
    board_version,
    current_mark,
    decode_digest_key,
    decode_key,
    key_in_address,
    verify_digest_key,
    verify_key,
)
from .solitaire import reply_to_table

BOARD_GAMES = frozenset(board_games())
PLY_BOUND = frozenset({"move", "resign", "propose", "accept", "reject", "undo", "claim", "queue"})
def reply_usage(game_type: str | None) -> str:
    """The usage of a reply to a board mail of ``game_type`` (with a move of its
    own when it is known; a solitaire's replies are its own)."""
    if game_type in GAME_TYPES and GAME_TYPES[game_type].family == "solitaire":
        return (
            "reply to a board mail with one of these on the first line: your moves "
            f"({GAME_TYPES[game_type].solitaire.notation}), undo [COUNT], hint, show, resign, "
            "or new for a new deal (mail 'help reply')"
        )
    example = f" (e.g. {move_example(game_type)})" if game_type in BOARD_GAMES else ""
    return (
        f"reply to a board mail with one of these on the first line: a move{example}, resign, draw, accept, reject, "
        "undo, show, chat MESSAGE, queue MOVE (mail 'help reply')"
    )


@dataclass
class KeyedReply:
    """What a keyed reply asks for: the commands to run as ``user`` (no password),
    or nothing when the checks already answered it."""

    user: User | None = None
    commands: list[Command] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fall_back_to_subject: bool = False
    refused: str | None = None
    """why nothing was run (the reply was answered already: an outdated ply)"""
    digest_lines: list[digests.Line] | None = None
    """a Reply to a digest: its lines, each with its command (``commands``, in order)"""
    digest_boards: list[tuple[str, int]] = field(default_factory=list)
    digest_user: int = 0
    line_commands: list[tuple[digests.Line, Command]] = field(default_factory=list)


def key_text_of(mail: InboundMail, server_address: str) -> str | None:
    """The first ``+KEY`` among the mail's recipients (envelope ones first)."""
    for address in mail.recipients:
        key = key_in_address(server_address, address)
        if key is not None and (decode_key(key) is not None or decode_digest_key(key) is not None):
            return key
    return None


def is_digest_key(key_text: str) -> bool:
    """The key of a digest (issue 40: several boards), not of one board."""
    return decode_digest_key(key_text) is not None


def board_of_key(key_text: str) -> tuple[str, int] | None:
    key = decode_key(key_text)
    return (key.game_type, key.board) if key else None


def _error(key: ReplyKey, reason: str) -> CommandError:
    return CommandError(reason, reply_usage(key.game_type), board=key.board, game_type=key.game_type)


async def key_user(ctx: Ctx, key_text: str) -> tuple[ReplyKey, User]:
    """The key's fields and its user, when its MAC verifies for the user's current
    key generation; a CommandError (one sentence) when it does not."""
    key = decode_key(key_text)
    if key is None:
        raise CommandError("this reply address is not one the server made", reply_usage(None))
    user = await ctx.uow.users.by_pk(key.user_id)
    if user is None or user.is_deleted or not verify_key(await ctx.reply_secret(), key, user.key_generation):
        raise _error(
            key,
            "this reply address is no longer valid (a password change, 'change keys' or the server's key rotation "
            f"cancels older ones): reply to a newer board mail, or mail '{key.game_type} show {key.board}' for a fresh one",
        )
    ctx.user = user.userid
    return key, user


async def key_board(ctx: Ctx, key: ReplyKey, user: User, *, lock: bool = True) -> tuple[Game, Seat]:
    """The key's board (locked with ``lock``) and its user's seat there; a
    CommandError when the board is gone or the user no longer plays in it."""
    game = await ctx.uow.games.get(key.game_type, key.board, lock=lock)
    if game is None:
        raise _error(key, f"there is no {game_title(key.game_type)} board {key.board} any more")
    ctx.board = str(game.board_number)
    seat = seat_of(game, user)
    if seat is None:
        raise _error(key, f"{user.userid} no longer plays on board {game.board_number}")
    return game, seat


async def resolve(ctx: Ctx, mail: InboundMail, key_text: str, *, subject_has_command: bool) -> KeyedReply:
    if is_digest_key(key_text):
        return await _resolve_digest(ctx, mail, key_text)
    key, user = await key_user(ctx, key_text)
    # a key mailed to an address still waiting for its confirmation (the answer to
    # the player's own mail with the right password goes to its From) works from
    # there too, and its answers go back there, as a password's would
    if mail.sender.lower() not in {a.lower() for a in (*user.addresses, *user.pending_addresses)}:
        raise _error(key, f"this reply address belongs to {user.userid}; it cannot be used from {mail.sender[:80]}")
    ctx.password_users.add(user.id)
    game, _seat = await key_board(ctx, key, user)
    kind = GAME_TYPES[game.game_type]
    if kind.family == "solitaire":
        return await _solitaire(ctx, mail, key, game, user, subject_has_command=subject_has_command)
    said = mail.reply
    if said.empty:
        if subject_has_command:
            return KeyedReply(fall_back_to_subject=True)
        raise _error(
            key,
            f"your reply holds no command: write your move (e.g. {move_example(game.game_type)}) or resign, draw, "
            "show, chat on its first line",
        )
    if said.verb == "command":
        # a whole command line (it may name another board or user, an account
        # verb, a password): run as an ordinary mail, with its password checked;
        # the key grants nothing to it
        return KeyedReply(commands=[_full_command(game, said)])
    if said.implicit_chat and is_error_reply(mail.subject):
        # prose answering an error mail (an auto-responder, or a remark): never
        # chatted to the board nor answered (a mail loop could start)
        return KeyedReply(user=user, refused="a reply to an error mail that holds no command")
    if said.verb in PLY_BOUND and key.ply != current_mark(key, game):
        await _moved_on(ctx, game, user, said)
        return KeyedReply(user=user, refused=f"outdated reply (key {key.ply}, board at ply {game.ply})")
    return KeyedReply(user=user, commands=[_command(game, user, said)], notes=_notes(said, game))


SOLITAIRE_QUERIES = frozenset({"show", "hint", "help", "games", "standings", "deal-of-the-day"})
SOLITAIRE_ACTIONS = frozenset({"undo", "resign"})


async def _solitaire(
    ctx: Ctx, mail: InboundMail, key: ReplyKey, game: Game, user: User, *, subject_has_command: bool
) -> KeyedReply:
    """A reply to a solitaire's board mail: its first own line is moves (``w-t2 flip``),
    or one of undo [COUNT], resign, hint, show; or a whole command."""
    kind = GAME_TYPES[game.game_type]
    text = own_text(mail.body)
    first, _, rest = text.partition("\n")
    rest = redact_text(rest)
    words = first.replace("\u2013", "-").replace("\u2014", "-").strip().rstrip(".!").split()
    if not words:
        if subject_has_command:
            return KeyedReply(fall_back_to_subject=True)
        raise _error(key, "your reply holds no command: write your moves (e.g. w-t2 flip) on its first line, or undo, hint, show")
    head = words[0].lower()
    board, uid = str(game.board_number), user.userid
    if head == "new":
        # a new deal for the key's user (issue 38: the footer offers it): the
        # variant and --deal=N may follow; the key stands for the password
        parsed = parse_line(" ".join([kind.name, "new", uid, "-", *words[1:]]), rest)
        if isinstance(parsed, str):
            raise _error(key, parsed)
        parsed.words[1:2] = [""]
        parsed.text = first
        return KeyedReply(user=user, commands=[parsed])
    if head in GAME_TYPES or (head in commands_of(game.game_type) and head not in SOLITAIRE_QUERIES | SOLITAIRE_ACTIONS and
                              head not in kind.solitaire.move_verbs and head != "move"):  # fmt: skip
        parsed = parse_line(first, rest)
        if isinstance(parsed, str):
            raise _error(key, parsed)
        return KeyedReply(commands=[parsed])  # a whole command: its password is checked (the key grants nothing)
    if head == "move":
        words = words[1:]
    if head in SOLITAIRE_QUERIES:
        cmd = Command(head, kind.name, [board, uid, ""] if head == "hint" else [board], text=head)
        if head not in ("show", "hint"):
            cmd = Command(head, kind.name, [], text=head)
        return KeyedReply(user=user, commands=[cmd])
    if key.ply != current_mark(key, game):
        await reply_to_table(ctx, game, f"your reply was not applied: board {game.board_number} has moved on since that "
                                        f"mail (it is at move {game.ply} now)")  # fmt: skip
        return KeyedReply(user=user, refused=f"outdated reply (key {key.ply}, board at ply {game.ply})")
    if head in SOLITAIRE_ACTIONS:
        return KeyedReply(user=user, commands=[Command(head, kind.name, [board, uid, "", *words[1:2]], text=first)])
    return KeyedReply(user=user, commands=[Command("move", kind.name, [board, uid, "", *words], comment=rest, text=first)])


def _full_command(game: Game, said: ReplyCommand) -> Command:
    parsed = parse_line(said.argument, said.comment)
    if isinstance(parsed, str):
        raise CommandError(parsed, board=game.board_number, game_type=game.game_type)
    return parsed


def _command(game: Game, user: User, said: ReplyCommand) -> Command:
    """The command a reply's short form stands for: always on the key's own
    board, as the key's own user (the only commands a key may run)."""
    board, uid, kind = str(game.board_number), user.userid, game.game_type
    if said.verb == "move":
        return Command("move", kind, [board, uid, "", said.argument], comment=said.comment, text=said.argument)
    if said.verb == "queue":
        return Command("queue", kind, [board, uid, "", said.argument], comment=said.comment, text=f"queue {said.argument}")
    if said.verb in ("resign", "propose", "accept", "reject", "undo", "claim"):
        return Command("move", kind, [board, uid, "", said.verb], comment=said.comment, text=said.verb)
    if said.verb == "show":
        return Command("show", kind, [board], text="show")
    if said.verb == "rematch":
        return Command("rematch", kind, [board, uid, ""], comment=said.comment, text="rematch")
    return Command("chat", kind, [board, uid, ""], comment=said.comment, text="chat")


def _notes(said: ReplyCommand, game: Game) -> list[str]:
    if not said.implicit_chat:
        return []
    first = said.comment.strip().split("\n", 1)[0][:60]
    went = f"The first line of your reply ({first!r}) is not a command, so your reply went to the board as a chat message."
    if game.status != "active":
        rematch = "rematch for a new game, " if game.status != "removed" else ""
        return [went, f"The game is over: reply with {rematch}show, or chat and your message, on the first line."]
    return [went, "To play, reply to this mail (or to your board mail) with the move alone on the first line."]



def what_was_said(said: ReplyCommand) -> str:
    """A reply's command in the player's words: ``your move f7-f6``, ``your draw offer``."""
    if said.verb == "move":
        return f"your move {said.argument[:40]}"
    if said.verb == "queue":
        return f"your queued move {said.argument[:40]}"
    return {"propose": "your draw offer", "undo": "your undo request", "resign": "your resignation",
            "accept": "your accept", "reject": "your reject", "claim": "your claim"}.get(said.verb, "your reply")  # fmt: skip


async def _moved_on(ctx: Ctx, game: Game, user: User, said: ReplyCommand) -> None:
    """The reply answers an older board mail: nothing is applied; the sender gets
    the board as it is now, with a fresh key, told what was not played and which
    ply is to play now (a ply number names one ply of the list: the status says
    the same 'ply N')."""
    seat = seat_of(game, user)
    assert seat is not None
    view = await game_view(ctx, game)
    now = f"ply {game.ply + 1} is to play now" if game.status == "active" else "the game is over"
    headline = (
        f"{what_was_said(said)} was not played: board {game.board_number} has moved on since the mail you "
        f"answered ({now}); here is the board as it stands"
    )
    body = render("update.txt", game=view, headline=headline, comment=None) + web_line(ctx, game)
    body = body.rstrip("\n") + "\n\n" + reply_hint(game, seat) + "\n"
    reply_to, fresh = await ctx.board_reply_address(game, user)
    ctx.out.append(Mail([ctx.sender], subject_for(game), body, for_sender=True, reply_to=reply_to, reply_key=fresh))


async def key_error_replies(ctx: Ctx) -> None:
    """Error replies about a board go out with that board's reply key when their
    sender proved to be one of its players (a verified key, or the right password
    in this mail), so that the corrected move, written on the first line of a
    Reply to the error mail, simply plays (issue 38).  The key is the board's
    current one, as a board mail's."""
    for mail in ctx.out:
        if mail.about_board is None or mail.reply_to is not None or ctx.mail is None:
            continue
        game_type, number = mail.about_board
        if game_type not in GAME_TYPES:
            continue
        game = await ctx.uow.games.get(game_type, number, lock=False)
        if game is None or game.status != "active":
            continue
        seat = next((s for s in game.seats if s.active and (
            s.user_id in ctx.password_users or (ctx.keyed_user is not None and s.user_id == ctx.keyed_user.id))), None)  # fmt: skip
        if seat is None:
            continue
        mail.reply_to, mail.reply_key = await ctx.board_reply_address(game, seat.user)
        if GAME_TYPES[game_type].family == "board":
            hint = reply_hint(game, seat)
        else:
            hint = "Reply to this mail with your moves on the first line; or undo, hint, show, resign."
        mail.body = mail.body.rstrip("\n") + "\n\n" + hint + "\n"


# -------------------------------------------------------------- digest replies
DIGEST_VERBS = frozenset({"move", "queue", "resign", "propose", "accept", "reject", "undo", "claim"})
"""what a line of a Reply to a digest may say (after its board number)"""
DIGEST_USAGE = "reply to a digest with one line per board: its number, then your move, e.g. 101 d2-e3 (mail 'help reply')"


async def _resolve_digest(ctx: Ctx, mail: InboundMail, key_text: str) -> KeyedReply:
    """A Reply to a digest (issue 40): the key names the digest's row (its boards
    and their versions) and its user; each line is checked against its board as
    a keyed reply's first line is (a board that moved on since the digest is
    refused for that line only) and becomes one command, run as the key's user
    in a savepoint of its own.  Nothing runs before every line is checked."""
    key = decode_digest_key(key_text)
    assert key is not None
    user = await ctx.uow.users.by_pk(key.user_id)
    row = await Digests(ctx.uow.session).get(key.digest_id)
    if (user is None or user.is_deleted or row is None or row.user_id != user.id
            or not verify_digest_key(await ctx.reply_secret(), key, user.key_generation)):  # fmt: skip
        raise CommandError(
            "this reply address is no longer valid (a password change, 'change keys' or the server's key rotation "
            "cancels older ones): reply to your newest digest, or play each board with its own command",
            DIGEST_USAGE,
        )
    ctx.user = user.userid
    if mail.sender.lower() not in {a.lower() for a in (*user.addresses, *user.pending_addresses)}:
        raise CommandError(
            f"this reply address belongs to {user.userid}; it cannot be used from {mail.sender[:80]}", DIGEST_USAGE
        )
    ctx.password_users.add(user.id)
    lines = digests.reply_lines(own_text(mail.body))
    if not any(line.board is not None for line in lines):
        raise CommandError("your reply to the digest holds no line to play: write one line per board, "
                           "its number and your move, as in '101 d2-e3'", DIGEST_USAGE)  # fmt: skip
    listed = {int(board): (str(game_type), int(version)) for game_type, board, version in row.boards}
    reply = KeyedReply(user=user, digest_lines=lines, digest_user=user.id)
    seen: set[int] = set()
    for line in lines:
        if line.board is None:
            continue
        if line.board not in listed:
            line.result = f"not played: board {line.board} is not one of this digest's boards where it was your turn"
            continue
        if line.board in seen:
            line.result = f"not played: board {line.board} has a line above already (one line per board)"
            continue
        seen.add(line.board)
        game_type, version = listed[line.board]
        game = await ctx.uow.games.get(game_type, line.board, lock=True)
        if game is None or seat_of(game, user) is None:
            line.result = f"not played: there is no board {line.board} of yours any more"
            continue
        reply.digest_boards.append((game.game_type, game.board_number))
        if board_version(game) != version:
            now = f"ply {game.ply + 1} is to play now" if game.status == "active" else f"the game is over: {game.result}"
            line.result = f"not played: board {line.board} has moved on since the digest ({now})"
            continue
        said = reply_command(line.said)
        if said.verb not in DIGEST_VERBS:
            line.result = ("not played: after the board number write a move (e.g. "
                           f"{move_example(game.game_type)}), or resign, draw, accept, reject, undo")  # fmt: skip
            continue
        cmd = _command(game, user, said)
        reply.line_commands.append((line, cmd))
        reply.commands.append(cmd)
    ctx.quiet_users.add(user.id)
    return reply


async def digest_answer(ctx: Ctx, reply: KeyedReply, results: list[tuple[Command | None, str | None]]) -> None:
    """After a Reply to a digest ran: each line's result into one summary mail."""
    if reply.digest_lines is None:
        return
    outcome = {id(cmd): err for cmd, err in results if cmd is not None}
    for line, cmd in reply.line_commands:
        line.ran = True
        err = outcome.get(id(cmd))
        if err:
            line.result = f"not played: {err}"
    await digests.summary(ctx, reply.digest_user, reply.digest_lines, reply.digest_boards)
