"""Commands that only read (COMMANDS.md §2, §3): show, showas, games, standings,
history, preview, help, list, all show.  Every answer goes to the sender only."""

from __future__ import annotations

from ..commands import Command
from ..gametypes import DEFAULT_GAME_TYPE, GAME_TYPES, board_rules, family_of, game_title
from ..render import GameView, PlayerView, move_table
from ..store import Game, User
from .accounts import help_values
from .args import need
from .boards import (
    BoardPicture,
    army_letters,
    game_view,
    load_game,
    position,
    replay,
    reply_hint,
    seat_of,
    to_move_name,
    web_line,
)
from .context import CommandError, Ctx
from .solitaire import list_boards as solitaire_list
from .spec import command

SELECTORS = ("active", "inactive", "next", "all")
MAX_BOARDS = 50


def _select(games: list[Game], selector: str, users: list[User]) -> list[Game]:
    ids = {u.id for u in users}
    out = []
    for game in games:
        # a board of the users named is active for them while one of them still
        # plays in it (a player who resigned a game of three that goes on is done)
        playing = game.status == "active" and (not ids or any(s.active and s.user_id in ids for s in game.seats))
        if selector == "active" and not playing:
            continue
        if selector == "inactive" and playing:
            continue
        if selector == "next":
            if game.status != "active":
                continue
            army = position(game).to_move
            if not any(s.seat == army and s.user_id in ids for s in game.seats):
                continue
        out.append(game)
    return out


async def _views(ctx: Ctx, games: list[tuple[Game, int | None]], viewer: User | None = None) -> list[GameView]:
    views = []
    for game, at in games:
        if at is not None and not 0 <= at <= game.ply:
            raise CommandError(f"board {game.board_number} has {game.ply} plies; there is no ply {at}", game_type=game.game_type)
        seat = seat_of(game, viewer) if viewer else None
        views.append(await game_view(ctx, game, last_rounds=None, upto=at, viewer=seat))
    return views


async def _reply_summaries(ctx: Ctx, game_type: str | None, games: list[tuple[Game, int | None]], views: list[GameView]) -> None:
    if len(games) != 1:
        ctx.reply(f"{game_title(game_type)} summaries ({len(games)} boards)", "summary.txt", games=views)
        return
    game = games[0][0]
    ctx.reply(f"{game_title(game.game_type)} Board {game.board_number} {to_move_name(game)}", "summary.txt", games=views)
    mail = ctx.out[-1]
    mail.body += web_line(ctx, game)
    sender = ctx.sender.lower()
    seat = next((s for s in game.seats if sender in {a.lower() for a in s.user.addresses}), None)
    hint = ""
    if seat is not None:
        # the sender plays on this board: the summary is a board mail they can answer by Reply
        mail.reply_to, mail.reply_key = await ctx.board_reply_address(game, seat.user)
        hint = reply_hint(game, seat)
        mail.body = mail.body.rstrip("\n") + "\n\n" + hint + "\n"
    if seat is None or seat.user.pictures:
        picture = BoardPicture(views[0], f"Summary of {game_title(game.game_type)} Board {game.board_number}")
        mail.html, mail.picture = picture.html(hint), picture.spec()


async def _boards_of(ctx: Ctx, game_type: str | None, userids: list[str], selector: str) -> tuple[dict[str, User], list[Game]]:
    """The users named (every one must exist) and their boards matching ``selector``."""
    found = await ctx.uow.users.get_many(userids)
    missing = [u for u in userids if u.lower() not in found]
    if missing:
        raise CommandError(f"no such user: {', '.join(m[:32] for m in missing)}", game_type=game_type)
    users = list(found.values())
    games = [g for g in await ctx.uow.games.for_users([u.id for u in users], game_type) if family_of(g.game_type) == "board"]
    return found, _select(games, selector, users)


async def show_users(ctx: Ctx, game_type: str | None, userids: list[str], selector: str, viewer: User | None = None) -> None:
    found, games = await _boards_of(ctx, game_type, userids, selector)
    if not games:
        raise CommandError(f"{', '.join(sorted(found))} has no {selector} boards", game_type=game_type)
    chosen = [(g, None) for g in games[:MAX_BOARDS]]
    await _reply_summaries(ctx, game_type, chosen, await _views(ctx, chosen, viewer))  # type: ignore[arg-type]


async def _show(ctx: Ctx, cmd: Command, words: list[str], viewer: User | None = None) -> None:
    selector = "active"
    if words and words[-1].lower() in SELECTORS and not words[-1].isdigit():
        selector = words[-1].lower()
        words = words[:-1]
    if not words:
        raise CommandError("name a board or a user")
    boards = [w for w in words if w.split("#")[0].isdigit()]
    if boards and len(boards) < len(words):
        names = [w for w in words if not w.split("#")[0].isdigit()]
        known = await ctx.uow.users.get_many(names)
        unknown = [n[:32] for n in names if n.lower() not in known]

        def said(items: list[str], one: str, many: str) -> str:
            return f"{', '.join(items)} {one if len(items) == 1 else many}"

        users_said = said(unknown, "is no user", "are no users") if unknown else said(names, "is a user", "are users")
        raise CommandError(
            f"{said(boards, 'is a board', 'are boards')} and {users_said}: "
            "show boards (show 101 102) or users (show ann ben), not both in one command"
        )
    if all(w.split("#")[0].isdigit() for w in words):
        games: list[tuple[Game, int | None]] = []
        for word in words[:MAX_BOARDS]:
            games.append(await load_game(ctx, cmd, word, lock=False))
        await _reply_summaries(ctx, cmd.game_type, games, await _views(ctx, games, viewer))
        return
    await show_users(ctx, cmd.game_type, words, selector, viewer)


@command("show", game=True)
async def show(ctx: Ctx, cmd: Command) -> None:
    await _show(ctx, cmd, need(cmd, 1, MAX_BOARDS + 1))


@command("showas", game=True)
async def showas(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, MAX_BOARDS + 2)
    user = await ctx.auth(words[0], words[1])
    rest = words[2:] or ["active"]
    if rest[0].lower() in SELECTORS:
        await show_users(ctx, cmd.game_type, [user.userid], rest[0].lower(), viewer=user)
        return
    await _show(ctx, cmd, rest, viewer=user)


async def games_table(ctx: Ctx, game_type: str | None, userids: list[str], selector: str) -> None:
    """The boards of ``userids`` (of every board game when ``game_type`` is None),
    or every board of ``game_type``, matching ``selector``."""
    title = game_title(game_type) if game_type else ctx.server_name
    if userids:
        found, games = await _boards_of(ctx, game_type, userids, selector)
        heading = f"{game_title(game_type) + ' boards' if game_type else 'Boards'} of {', '.join(sorted(found))} ({selector})"
    else:
        if selector == "next":
            # whose 'next'? the sender's: the user (or users) mail goes to at their address
            owners = await ctx.uow.users.with_address(ctx.sender)
            if not owners:
                raise CommandError(
                    f"'next' lists your boards, but {ctx.sender[:80]} is no user's address: games USERID next",
                    game_type=game_type,
                )
            await games_table(ctx, game_type, [u.userid for u in owners], selector)
            return
        game_type = game_type or DEFAULT_GAME_TYPE
        games = await ctx.uow.games.active_of_type(game_type) if selector == "active" else []
        if selector != "active":
            games = [g for g in await ctx.uow.games.for_users([u.id for u in await ctx.uow.users.all_active()], game_type)]
            games = _select(games, selector, [])
        heading = f"{title} boards ({selector})"
    rows: list[dict[str, object]] = []
    for game in games:
        players = " ".join(s.user.userid + ("*" if game.status == "active" and position(game).to_move == s.seat else "")
                           for s in game.seats)  # fmt: skip
        status = {"active": "to move: " + to_move_name(game), "removed": "removed"}.get(game.status, game.result or game.status)
        rows.append(
            {"board": game.board_number, "game_type": game.game_type, "plies": game.ply, "players": players, "status": status}
        )
    width = max([7, *(len(str(r["players"])) for r in rows)])
    ctx.reply(f"{title} games", "games.txt", title=heading, rows=rows, players_width=width)


@command("games", game=True)
async def games(ctx: Ctx, cmd: Command) -> None:
    words = list(cmd.words)
    selector = "active"
    if words and words[-1].lower() in SELECTORS:
        selector = words.pop().lower()
    # 'games ann' (no game word) lists her boards of every board game, as
    # 'all show ann' does; 'terrace6x6 games ann' those of one game
    named = cmd.text.split(maxsplit=1)[0].lower() in GAME_TYPES if cmd.text else True
    await games_table(ctx, (cmd.game_type or DEFAULT_GAME_TYPE) if named or not words else None, words, selector)


@command("list", game=True)
async def list_game(ctx: Ctx, cmd: Command) -> None:
    await games_table(ctx, cmd.game_type or DEFAULT_GAME_TYPE, [], "active")


@command("standings", game=True)
async def standings(ctx: Ctx, cmd: Command) -> None:
    game_type = cmd.game_type or DEFAULT_GAME_TYPE
    table = await ctx.uow.ratings.table(game_type)
    established: list[dict[str, object]] = []
    provisional: list[dict[str, object]] = []
    for rating, user in table:
        if user.is_deleted:
            continue
        row = {
            "userid": user.userid,
            "rating": round(rating.rating),
            "won": rating.won,
            "lost": rating.lost,
            "tied": rating.tied,
            "active": await ctx.uow.games.count_active_for_user(user.id, game_type),
            "limit": "inf" if user.challenge_limit is None else user.challenge_limit,
        }
        (provisional if rating.provisional else established).append(row)
    for rows in (established, provisional):
        for i, row in enumerate(rows):
            row["rank"] = i + 1
    sections = [{"name": "Established", "rows": established}, {"name": "Provisional (fewer than 20 games)", "rows": provisional}]
    seeking = [
        {"userid": u.userid, "games": u.seek, "active": await ctx.uow.games.count_active_for_user(u.id, game_type)}
        for u in await ctx.uow.users.seeking()
        if not u.is_deleted
    ]
    ctx.reply(
        f"{game_title(game_type)} standings",
        "standings.txt",
        title=game_title(game_type),
        game_type=game_type,
        sections=sections,
        seeking=seeking,
    )


@command("history", game=True)
async def history(ctx: Ctx, cmd: Command) -> None:
    game_type = cmd.game_type or DEFAULT_GAME_TYPE
    rows = [
        {"finished": h.finished_at.strftime("%Y-%m-%d"), "board": h.board_number, "players": " vs ".join(h.players),
         "result": h.result, "plies": h.plies}
        for h in await ctx.uow.history.recent(game_type)
    ]  # fmt: skip
    ctx.reply(f"{game_title(game_type)} history", "history.txt", title=game_title(game_type), rows=rows)


@command("help", game=True)
async def game_help(ctx: Ctx, cmd: Command) -> None:
    game_type = cmd.game_type or DEFAULT_GAME_TYPE
    ctx.reply(f"{game_title(game_type)} help", GAME_TYPES[game_type].help_template, **help_values(ctx, game_type))


@command("preview", game=True)
async def preview(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 1, 200)
    game_type = cmd.game_type or DEFAULT_GAME_TYPE
    rules = board_rules(game_type)
    title = game_title(game_type)
    if words[0].lower() == "new":
        if len(words) < 2 or words[1] not in ("2", "3", "4"):
            raise CommandError("'preview new' needs the number of players (2, 3 or 4)", game_type=game_type)
        try:
            variant = rules.setup_for(int(words[1]), cmd.params[0] if cmd.params else None)
            pos = rules.start(variant)
        except ValueError as exc:
            raise CommandError(str(exc), game_type=game_type) from None
        moves_text = words[2:]
        names = [f"player{i}" for i in range(1, int(words[1]) + 1)]
        game = None
        history: list[tuple[int, str]] = []
        what = f"a new {title} board for {words[1]} players ({variant})"
    else:
        game, at = await load_game(ctx, cmd, words[0], lock=False)
        if at is not None and not 0 <= at <= game.ply:
            raise CommandError(f"board {game.board_number} has {game.ply} plies; there is no ply {at}", game_type=game_type)
        records = await ctx.uow.moves.of_game(game.id)
        pos = replay(game, records, at) if at is not None else position(game)
        history = [(m.seat, m.move) for m in records if at is None or m.ply <= at]
        moves_text = words[1:]
        names = [s.user.userid for s in game.seats]
        variant = game.variant
        what = f"{title} Board {game.board_number}" + (f" from ply {at}" if at is not None else "")
    notes = []
    played: list[tuple[int, str]] = []
    for text in moves_text:
        if pos.outcome() is not None:
            raise CommandError(f"{text[:40]}: the game is over before this move", game_type=game_type)
        army = pos.to_move
        try:
            mv = rules.parse_move(pos, text)
        except ValueError as exc:
            ply = len(history) + len(played)
            mover = names[army - 1] if army <= len(names) else f"army {army}"
            raise CommandError(
                f"{exc} (after ply {ply} it is {mover}'s turn: army {army}, {army_letters(game_type, army)})", game_type=game_type
            ) from None
        canonical = rules.format_move(pos, mv)
        played.append((army, canonical))
        pos = rules.play(pos, mv)
    if played:
        notes.append("Moves tried: " + ", ".join(f"{names[a - 1] if a <= len(names) else a} {m}" for a, m in played))
    outcome = pos.outcome()
    if outcome is not None:
        who = names[outcome.winner - 1] if outcome.winner else None
        notes.append(f"The game would be over: {who + ' wins' if who else 'draw'} ({outcome.reason}).")
    rows, _, width = move_table(names, history + [(a, f"{m} (tried)") for a, m in played])
    status = [f"{names[pos.to_move - 1]} would be to move."] if outcome is None else []
    view = GameView(
        title=title,
        board_number=game.board_number if game else 0,
        variant=variant,
        players=[PlayerView(nm, i + 1, army_letters(game_type, i + 1)) for i, nm in enumerate(names)],
        status_lines=status + [line for line in pos.announcements()],
        move_header=names,
        move_rows=rows,
        board=rules.board_text(pos),
        col_width=width,
    )
    ctx.reply(f"{title} preview", "preview.txt", game=view, what=what, notes=notes)


# ------------------------------------------------- account-level queries
@command("list")
async def list_(ctx: Ctx, cmd: Command) -> None:
    if cmd.words:
        game_type = cmd.words[0].lower()
        if game_type not in GAME_TYPES:
            raise CommandError(f"this server runs {', '.join(GAME_TYPES)}, not '{game_type[:30]}'")
        if family_of(game_type) == "solitaire":
            await solitaire_list(ctx, GAME_TYPES[game_type])
            return
        await games_table(ctx, game_type, [], "active")
        return
    rows = [{"game_type": t, "active": await ctx.uow.games.count_active(t)} for t in GAME_TYPES]
    ctx.reply(f"{ctx.server_name} games", "list.txt", rows=rows, server_name=ctx.server_name)


@command("all")
async def all_show(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 3)
    if words[0].lower() != "show":
        raise CommandError("'all' is followed by 'show'")
    selector = words[2].lower() if len(words) == 3 else "active"
    if selector not in ("next", "active", "inactive", "all"):
        raise CommandError(f"'{selector[:20]}' is not a selector; use next or active")
    await show_users(ctx, None, [words[1]], selector)
