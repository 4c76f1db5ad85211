"""Account commands (COMMANDS.md §2): signup, change, signoff, delete, help, list,
message, broadcast, all show."""

from __future__ import annotations

import asyncio
import re

from ..commands import Command
from ..mail.message import is_valid_address
from ..render import render
from ..rules import render_board, start_position
from ..store import User
from .core import CommandError, Ctx, handler, usage_of
from .passwords import hash_password

_USERID = re.compile(r"^[a-z0-9][a-z0-9_.+-]{0,31}$")
RESERVED = {"active", "inactive", "next", "all", "new", "on", "off", "inf"}


def need(cmd: Command, count: int, most: int | None = None) -> list[str]:
    """The command's words, if there are between ``count`` and ``most`` of them."""
    words = cmd.words
    if len(words) < count or (most is not None and len(words) > most):
        missing = "too many words" if most is not None and len(words) > most else "missing arguments"
        raise CommandError(f"'{cmd.verb}': {missing}", usage_of(cmd), game_type=cmd.game_type)
    return words


def check_userid(userid: str) -> str:
    uid = userid.lower()
    if not _USERID.match(uid) or uid in RESERVED or uid.isdigit():
        raise CommandError(
            f"'{userid[:40]}' cannot be a userid: use 1-32 letters, digits, '_', '.', '+' or '-', "
            "starting with a letter or digit, not only digits, and not a selector word (active, next, all ...)"
        )
    return uid


def check_password(password: str) -> str:
    if (
        not 1 <= len(password) <= 128
        or any(c in password for c in "\"':")
        or not password.isprintable()
        or any(c.isspace() for c in password)
    ):
        raise CommandError("a password is 1-128 printable characters without spaces, quotes or colons")
    return password


def check_addresses(words: list[str]) -> list[str]:
    out = []
    for word in words:
        addr = word.strip("<>,;")
        if not is_valid_address(addr):
            raise CommandError(f"'{word[:60]}' is not a mail address")
        if addr not in out:
            out.append(addr)
    if len(out) > 5:
        raise CommandError("at most 5 reply addresses")
    return out


def notice(ctx: Ctx, subject: str, *lines: str) -> None:
    ctx.reply(subject, "notice.txt", lines=list(lines), comment=None)


@handler("signup", game=False, usage="signup USERID PASSWORD [address ...]")
async def signup(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2)
    uid, password = check_userid(words[0]), check_password(words[1])
    addresses = check_addresses(words[2:]) or [ctx.mail.sender]
    ctx.user = uid
    existing = await ctx.uow.users.get(uid)
    if existing is not None:
        if (
            existing.signed_off
            and not existing.password_hash.startswith("!")
            and await ctx.service.passwords.check_async(uid, existing.password_hash, password)
        ):
            existing.signed_off = False
            existing.addresses = addresses
            notice(ctx, f"{ctx.server_name}: welcome back {uid}", f"Welcome back, {uid}: mail to you is on again.",
                   f"Replies go to: {', '.join(addresses)}")  # fmt: skip
            return
        raise CommandError(f"the userid {uid} is already taken; choose another", usage_of(cmd))
    ctx.uow.users.add(
        User(userid=uid, password_hash=await asyncio.to_thread(hash_password, password), addresses=addresses, signed_off=False,
             accept_challenges=True, challenge_limit=None, seek=0, vacation=False, notify_all=False, created_at=ctx.now)
    )  # fmt: skip
    notice(
        ctx,
        f"{ctx.server_name}: signup {uid}",
        f"Welcome to {ctx.server_name}, {uid}!",
        f"Mail for you goes to: {', '.join(addresses)}",
        "",
        f"Challenge someone:  terrace challenge {uid} OTHERUSER",
        "Everything else:    help commands",
    )


@handler(
    "change",
    game=False,
    usage="change password USERID PASSWORD NEWPASSWORD | change address USERID PASSWORD [address ...]",
    auth=1,
)
async def change(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 3)
    what = words[0].lower()
    if what not in ("password", "address", "addresses"):
        raise CommandError(f"'change {words[0][:30]}': you can change your password or your address", usage_of(cmd))
    user = await ctx.auth(words[1], words[2])
    if what == "password":
        if len(words) != 4:
            raise CommandError("'change password' needs the new password", usage_of(cmd))
        user.password_hash = await asyncio.to_thread(hash_password, check_password(words[3]))
        notice(ctx, f"{ctx.server_name}: password changed", f"The password of {user.userid} has been changed.")
    else:
        user.addresses = check_addresses(words[3:]) or [ctx.mail.sender]
        notice(ctx, f"{ctx.server_name}: address changed", f"Mail for {user.userid} now goes to: {', '.join(user.addresses)}")


@handler("signoff", game=False, usage="signoff USERID PASSWORD", auth=0)
async def signoff(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    user.signed_off = True
    notice(ctx, f"{ctx.server_name}: signoff {user.userid}",
           f"{user.userid} is signed off: the server sends you no more mail.",
           f"To come back: signup {user.userid} PASSWORD")  # fmt: skip


@handler("delete", game=False, usage="delete USERID PASSWORD", auth=0)
async def delete(ctx: Ctx, cmd: Command) -> None:
    from .play import forfeit_all

    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    ended = await forfeit_all(ctx, user)
    # The row stays (seats and history refer to it); the login and mail are gone.
    user.password_hash = "!deleted"
    user.signed_off = True
    user.addresses = []
    lines = [f"The account {user.userid} has been deleted."]
    if ended:
        lines.append(f"Forfeited boards: {', '.join(ended)}")
    notice(ctx, f"{ctx.server_name}: delete {user.userid}", *lines)


HELP_TOPICS = {"": "help_general.txt", "commands": "help_commands.txt", "terrace": "help_terrace.txt", "tutorial": "help_tutorial.txt",
               "terrace6x6": "help_terrace.txt", "rules": "help_terrace.txt"}  # fmt: skip


def help_values(ctx: Ctx, game_type: str) -> dict[str, object]:
    n = 6 if game_type == "terrace6x6" else 8
    return {
        "server_name": ctx.server_name,
        "address": ctx.config.server.address,
        "title": "Terrace6x6" if n == 6 else "Terrace",
        "n": n,
        "board": render_board(start_position("long", n)),
    }


@handler("help", game=False, usage="help [commands|terrace|tutorial]")
async def help_(ctx: Ctx, cmd: Command) -> None:
    topic = cmd.words[0].lower() if cmd.words else ""
    if topic not in HELP_TOPICS:
        raise CommandError(f"there is no help on '{topic[:30]}'; topics are commands, terrace, tutorial", usage_of(cmd))
    ctx.reply(
        f"{ctx.server_name} help{(' ' + topic) if topic else ''}",
        HELP_TOPICS[topic],
        **help_values(ctx, topic if topic.startswith("terrace") else "terrace"),
    )


@handler("list", game=False, usage="list [terrace|terrace6x6]")
async def list_(ctx: Ctx, cmd: Command) -> None:
    from .queries import games_table

    if cmd.words:
        game_type = cmd.words[0].lower()
        if game_type not in ("terrace", "terrace6x6"):
            raise CommandError(f"this server runs terrace and terrace6x6, not '{game_type[:30]}'", usage_of(cmd))
        await games_table(ctx, game_type, [], "active")
        return
    rows = [{"game_type": t, "active": await ctx.uow.games.count_active(t)} for t in ("terrace", "terrace6x6")]
    ctx.reply(f"{ctx.server_name} games", "list.txt", rows=rows, server_name=ctx.server_name)


@handler("message", game=False, usage="message USERID PASSWORD TO_USERID ...  (the body is the message)", auth=0)
async def message(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 3, 50)
    user = await ctx.auth(words[0], words[1])
    if not cmd.comment.strip():
        raise CommandError("the message is empty: write it in the body of the mail", usage_of(cmd))
    found = await ctx.uow.users.get_many(words[2:])
    missing = [w for w in words[2:] if w.lower() not in found]
    if missing:
        raise CommandError(f"no such user: {', '.join(m[:32] for m in missing)}", usage_of(cmd))
    body = render("message.txt", kind="Message", author=user.userid, server_name=ctx.server_name, text=cmd.comment.strip())
    ctx.send(list(found.values()), f"Message from {user.userid} via {ctx.server_name}", body)
    notice(ctx, f"{ctx.server_name}: message sent", f"Your message went to: {', '.join(sorted(found))}")


@handler("broadcast", game=False, usage="broadcast USERID PASSWORD  (the body is the message)", auth=0)
async def broadcast(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    if not cmd.comment.strip():
        raise CommandError("the broadcast is empty: write it in the body of the mail", usage_of(cmd))
    users = await ctx.uow.users.all_active()
    body = render("message.txt", kind="Broadcast", author=user.userid, server_name=ctx.server_name, text=cmd.comment.strip())
    ctx.send(users, f"Broadcast from {user.userid} via {ctx.server_name}", body)


@handler("all", game=False, usage="all show USERID [next|active]")
async def all_show(ctx: Ctx, cmd: Command) -> None:
    from .queries import show_users

    words = need(cmd, 2, 3)
    if words[0].lower() != "show":
        raise CommandError("'all' is followed by 'show'", usage_of(cmd))
    selector = words[2].lower() if len(words) == 3 else "active"
    if selector not in ("next", "active", "inactive", "all"):
        raise CommandError(f"'{selector[:20]}' is not a selector; use next or active", usage_of(cmd))
    await show_users(ctx, None, [words[1]], selector)
