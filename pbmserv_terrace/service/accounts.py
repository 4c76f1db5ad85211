"""Account commands (COMMANDS.md §2): signup, change, signoff, delete, help,
message, broadcast."""

from __future__ import annotations

from ..commands import Command
from ..commands.table import help_topic_names
from ..gametypes import DEFAULT_GAME_TYPE, GAME_TYPES, board_games
from ..render import render
from ..store import User
from ..store.models import ROBOTS
from .args import check_addresses, check_password, check_userid, need, notice
from .confirmations import set_addresses
from .context import CommandError, Ctx
from .digests import describe, next_at, parse_digest, send_due
from .plies import forfeit_all, schedule
from .solitaire import help_lines
from .spec import command


@command("signup")
async def signup(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2)
    uid, password = check_userid(words[0]), check_password(words[1])
    addresses = check_addresses(words[2:]) or [ctx.sender]
    ctx.user = uid
    existing = await ctx.uow.users.get(uid)
    if existing is not None:
        if (
            existing.signed_off
            and not existing.is_deleted
            and await ctx.service.passwords.check_async(uid, existing.password_hash, password)
        ):
            existing.signed_off = False
            ctx.password_users.add(existing.id)
            welcome = [f"Welcome back, {uid}: mail to you is on again."]
            lines = await set_addresses(ctx, existing, addresses, welcome=welcome)
            if welcome:
                notice(ctx, f"{ctx.server_name}: welcome back {uid}", *welcome, *lines)
            return
        raise CommandError(f"the userid {uid} is already taken; choose another")
    # Every address waits for its confirmation mail to be answered (issue 36: a
    # From proves nothing, so neither a given address nor the sender's own is
    # mailed before); the answers to the user's own mails still go to their From.
    user = User(userid=uid, password_hash=await ctx.service.passwords.hash_async(password), addresses=[],
                pending_addresses=[], signed_off=False, accept_challenges=True, challenge_limit=None, seek=0,
                vacation=False, notify_all=False, created_at=ctx.now)  # fmt: skip
    ctx.uow.users.add(user)
    await ctx.uow.flush()
    ctx.password_users.add(user.id)
    welcome = welcome_lines(ctx, uid)
    lines = await set_addresses(ctx, user, addresses, welcome=welcome)
    if welcome:  # the sender is none of the addresses: the welcome goes to the sender alone
        notice(ctx, f"{ctx.server_name}: signup {uid}", *welcome, "", *lines)


def welcome_lines(ctx: Ctx, userid: str) -> list[str]:
    """The welcome after a signup: challenging someone or a robot, playing by
    Reply, the solitaires, the games (from the game table) and the help."""
    robots = sorted(ROBOTS, key=lambda name: (ROBOTS[name], name))
    text = render("welcome.txt", server_name=ctx.server_name, userid=userid, game=DEFAULT_GAME_TYPE,
                  robots=", ".join(robots), robot=robots[0], solitaires=solitaire_names(), games=games_line())  # fmt: skip
    return text.rstrip("\n").split("\n")


def solitaire_names() -> list[str]:
    return [g.name for g in GAME_TYPES.values() if g.family == "solitaire"]


def games_line() -> str:
    """The games this server runs, from the game table: ``a, b, c, and the
    solitaire d``."""
    boards, solitaires = board_games(), solitaire_names()
    line = ", ".join(boards)
    if solitaires:
        line += f", and the solitaire{'s' if len(solitaires) > 1 else ''} {', '.join(solitaires)}"
    return line


@command("change")
async def change(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 3)
    what = words[0].lower()
    if what not in ("password", "address", "addresses", "keys", "pictures", "public", "digest", "remind", "review"):
        raise CommandError(
            f"'change {words[0][:30]}': you can change your password, address, keys, pictures (on/off), public (on/off), "
            "digest, remind or review (on/off)"
        )
    user = await ctx.auth(words[1], words[2])
    if what == "digest":
        await change_digest(ctx, user, words[3:])
        return
    if what == "remind":
        await change_remind(ctx, user, words[3:])
        return
    if what in ("pictures", "public", "review"):
        if len(words) != 4 or words[3].lower() not in ("on", "off"):
            raise CommandError(f"'change {what}' is followed by on or off")
        on = words[3].lower() == "on"
        if what == "pictures":
            user.pictures = on
            said = "Board mails now show the board as a picture too." if on else "Board mails are now plain text only."
        elif what == "review":
            user.review = on
            said = (
                "After each game you finish you get a review by mail: where it turned, the biggest mistakes and better moves."
                if on
                else "You get no more game reviews; 'change review USERID PASSWORD on' brings them back."
            )
        else:
            user.public_comments = on
            said = "Your comments show in the web archive." if on else "Your comments show as (hidden) in the web archive."
        notice(ctx, f"{ctx.server_name}: {what} {words[3].lower()}", f"{user.userid}: {said}")
        return
    if what == "password":
        if len(words) != 4:
            raise CommandError("'change password' needs the new password")
        user.password_hash = await ctx.service.passwords.hash_async(check_password(words[3]))
        user.key_generation += 1  # the reply addresses of older mails stop working too
        notice(ctx, f"{ctx.server_name}: password changed", f"The password of {user.userid} has been changed.",
               "The reply addresses of the board mails you had are no longer valid; new board mails carry new ones.")  # fmt: skip
    elif what == "keys":
        user.key_generation += 1
        notice(ctx, f"{ctx.server_name}: reply keys changed",
               f"Every reply address of the board mails sent to {user.userid} so far is cancelled.",
               "Replies to them are refused; the next board mails carry new ones. Mail 'show BOARD' for a fresh one now.")  # fmt: skip
    else:
        wanted = check_addresses(words[3:]) or [ctx.sender]
        lines = await set_addresses(ctx, user, wanted)
        if not user.addresses:
            lines.insert(0, f"No confirmed address is left for {user.userid}: no mail goes out until one is confirmed.")
        notice(ctx, f"{ctx.server_name}: address changed", *lines)


async def change_digest(ctx: Ctx, user: User, words: list[str]) -> None:
    """``change digest U P daily HH:MM [ZONE] | twice HH:MM HH:MM [ZONE] | off`` (issue 40);
    off sends what was held at once, as a last digest."""
    spec = parse_digest(words)
    last = spec is None and user.digest is not None and await send_due(ctx, user)
    user.digest = spec
    user.digest_next_at = next_at(spec, ctx.now) if spec else None
    if spec is None:
        said = [f"{user.userid}: no more digests; every board mail comes at once again."]
        if last:
            said.append("What was held for your next digest comes now, as a last digest.")
    else:
        assert user.digest_next_at is not None
        said = [
            f"{user.userid}: your digest comes {describe(spec)}; the next one at {user.digest_next_at:%Y-%m-%d %H:%M} UTC.",
            "Board mails about your opponents' moves wait for it; it lists every board where it is your turn, "
            "and a Reply to it with one line per board (101 d2-e3) plays them all.",
            "Game ends, new boards, chat, reminders and errors still come at once.",
        ]
    notice(ctx, f"{ctx.server_name}: digest {'off' if spec is None else words[0].lower()}", *said)


async def change_remind(ctx: Ctx, user: User, words: list[str]) -> None:
    """``change remind U P HOURS|off`` (issue 40): a reminder once fewer than HOURS
    are left before a forfeit, once per board and turn; off: none."""
    if len(words) != 1:
        raise CommandError("'change remind' is followed by a number of hours (1 to 720), or off")
    word = words[0].lower()
    if word == "off":
        user.remind_hours = 0.0
        said = f"{user.userid}: no more reminders before a forfeit (the forfeit itself still comes)."
    elif word == "default":
        user.remind_hours = None
        said = f"{user.userid}: reminders come after each board's nag time, as by default."
    else:
        try:
            hours = float(word)
        except ValueError:
            hours = -1.0
        if not 1 <= hours <= 720:
            raise CommandError(f"'{word[:20]}' is not a number of hours from 1 to 720 (or off)")
        user.remind_hours = hours
        said = (f"{user.userid}: on each board where it is your turn you get one reminder once fewer than {hours:g} hours "
                "are left before the forfeit; reply to it with your move.")  # fmt: skip
    for game in await ctx.uow.games.active_for_users([user.id]):
        if GAME_TYPES[game.game_type].family == "board":
            schedule(ctx, game)  # the boards' next reminder, by the new setting
    notice(ctx, f"{ctx.server_name}: remind {word}", said)


@command("signoff")
async def signoff(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    user.signed_off = True
    notice(ctx, f"{ctx.server_name}: signoff {user.userid}",
           f"{user.userid} is signed off: the server sends you no more mail.",
           f"To come back: signup {user.userid} PASSWORD")  # fmt: skip


@command("delete")
async def delete(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    ended = await forfeit_all(ctx, user)
    # The row stays (seats and history refer to it); the login and mail are gone.
    user.mark_deleted()
    lines = [f"The account {user.userid} has been deleted."]
    if ended:
        lines.append(f"Forfeited boards: {', '.join(ended)}")
    notice(ctx, f"{ctx.server_name}: delete {user.userid}", *lines)


HELP_TOPICS = {"": "help_general.txt", "commands": "help_commands.txt", "reply": "help_reply.txt", "board": "help_board.txt",
               "heights": "help_board.txt", "tutorial": "help_tutorial.txt", "tournament": "help_tournament.txt",
               **{t: g.help_template for g in GAME_TYPES.values() if g.family == "board" for t in g.help_topics}}  # fmt: skip
"""``help TOPIC`` → its template; a board game's topics give its rules"""
HELP_TOPIC_NAMES = help_topic_names()
"""the topics a refusal lists"""
BOARD_TOPIC_GAMES = {t: g.name for g in GAME_TYPES.values() if g.family == "board" for t in g.help_topics}


def help_values(ctx: Ctx, game_type: str) -> dict[str, object]:
    kind = GAME_TYPES[game_type]
    return {"server_name": ctx.server_name, "address": ctx.config.server.address, "title": kind.title,
            **kind.board.help_values()}  # fmt: skip


def _solitaire_topic(topic: str) -> str | None:
    """The solitaire whose help ``topic`` asks for (``help patience``), if any."""
    return next((g.name for g in GAME_TYPES.values() if g.family == "solitaire" and topic in g.help_topics), None)


SHORT_HELP_INTRO = "Your mail did not start with a command, so here is how to play:"
"""the first line of the general help sent for a mail of plain words"""


@command("help")
async def help_(ctx: Ctx, cmd: Command) -> None:
    if cmd.stands_in:
        # a mail of plain words ("Hi there"): the general help, under a subject with
        # a ':' (one sent back to us is never taken for plain words again)
        ctx.reply(f"{ctx.server_name}: how to play", HELP_TOPICS[""], intro=SHORT_HELP_INTRO, games=games_line(),
                  **help_values(ctx, DEFAULT_GAME_TYPE))  # fmt: skip
        return
    topic = cmd.words[0].lower() if cmd.words else ""
    solitaire = _solitaire_topic(topic)
    if solitaire is not None:
        kind = GAME_TYPES[solitaire]
        ctx.reply(f"{ctx.server_name} help {topic}", "notice.txt", lines=help_lines(kind), comment=None)
        return
    if topic not in HELP_TOPICS:
        raise CommandError(f"there is no help on '{topic[:30]}'; topics are {', '.join(HELP_TOPIC_NAMES)}")
    ctx.reply(
        f"{ctx.server_name} help{(' ' + topic) if topic else ''}",
        HELP_TOPICS[topic],
        games=games_line(),
        **help_values(ctx, BOARD_TOPIC_GAMES.get(topic, DEFAULT_GAME_TYPE)),
    )


@command("message")
async def message(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 3, 50)
    user = await ctx.auth(words[0], words[1])
    if not cmd.comment.strip():
        raise CommandError("the message is empty: write it in the body of the mail")
    found = await ctx.uow.users.get_many(words[2:])
    missing = [w for w in words[2:] if w.lower() not in found]
    if missing:
        raise CommandError(f"no such user: {', '.join(m[:32] for m in missing)}")
    robots = sorted(u.userid for u in found.values() if u.is_robot)
    if robots:
        raise CommandError(f"{', '.join(robots)}: a robot player reads no mail (it answers on the board: chat there)")
    body = render("message.txt", kind="Message", author=user.userid, server_name=ctx.server_name, text=cmd.comment.strip())
    ctx.send(list(found.values()), f"Message from {user.userid} via {ctx.server_name}", body)
    notice(ctx, f"{ctx.server_name}: message sent", f"Your message went to: {', '.join(sorted(found))}")


@command("broadcast")
async def broadcast(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    if not cmd.comment.strip():
        raise CommandError("the broadcast is empty: write it in the body of the mail")
    users = await ctx.uow.users.all_active()
    body = render("message.txt", kind="Broadcast", author=user.userid, server_name=ctx.server_name, text=cmd.comment.strip())
    ctx.send(users, f"Broadcast from {user.userid} via {ctx.server_name}", body)
