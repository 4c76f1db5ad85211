"""Game commands that change state (COMMANDS.md §3, §4): challenge, move and its
votes, resign, queue, submit/confirm, chat, subscriptions, notify, challenge
preferences, vacation."""

from __future__ import annotations

from typing import Any

from ..clocks import clock_of, duration
from ..commands import Command
from ..commands.parse import redact
from ..gametypes import DEFAULT_GAME_TYPE, board_rules, game_title
from ..render import CommentView
from ..store import Game, Seat, Subscription, User
from . import confirmations
from .args import board_options, check_userid, joined_move, need, notice, shortened
from .boards import (
    FORFEIT,
    RESIGN,
    board_error,
    game_view,
    load_game,
    mail_game,
    position,
    replay,
    require_active,
    require_player,
    seat_by_army,
    take_comment,
)
from .context import CommandError, Ctx
from .deadlines import mover
from .deadlines import seconds_left as seat_left
from .plies import (
    after_ply,
    clear_votes,
    finish,
    first_round_removal,
    play_move,
    resign_seat,
    schedule,
)
from .robots import check_robot_games
from .spec import command
from .timers import forfeit

MAX_QUEUE = 10


# ------------------------------------------------------------------ challenge
@command("challenge", game=True)
async def challenge(ctx: Ctx, cmd: Command) -> None:
    """A new board.  From is not identity (issue 36): with the challenger's password
    (``challenge U P OPPONENT…``, the challenger sits first unless named again
    among the players) the board opens at once; the pbmserv form without one
    (``challenge U1 U2 …``) only mails a confirmation to the registered address
    the mail claims to come from, and the board opens when that is answered."""
    words = list(need(cmd, 2, 5))
    second = await ctx.uow.users.get(words[1]) if len(words) >= 3 else None
    if len(words) >= 3 and (second is None or second.is_deleted):
        # the second word names no player: it is the first one's password
        try:
            challenger = await ctx.auth(words[0], words[1])
        except CommandError as exc:
            if "not correct" in exc.reason:
                exc.reason += " (the second word names no player, so it was read as the password of the first)"
            raise
        rest = words[2:]
        players = rest if challenger.userid in {w.lower() for w in rest} else [challenger.userid, *rest]
        game_type, variant, options, users = await _challenge_checks(ctx, cmd, players)
        await _open_board(ctx, cmd, game_type, variant, options, users, challenger.userid)
        return
    game_type, variant, options, users = await _challenge_checks(ctx, cmd, words)
    sender = ctx.sender.lower()
    by = next((u for u in users if not u.is_robot and sender in {a.lower() for a in u.addresses}), None)
    if by is None:
        raise CommandError(
            "a challenge without a password is opened only when its challenger confirms it, and this mail does not come "
            f"from a registered address of any of its players; give your password: {cmd.game_type or DEFAULT_GAME_TYPE} "
            "challenge USERID PASSWORD OPPONENT..."
        )
    text = shortened(ctx, cmd.comment) if cmd.comment.strip() else ""
    payload = {"game_type": game_type, "words": words, "params": cmd.params, "options": cmd.options, "comment": text}
    values = {"command": redact(cmd.text)[:300], "players": ", ".join(u.userid for u in users), "game": game_type,
              "comment": CommentView(by.userid, text) if text else None}  # fmt: skip
    await confirmations.ask_challenge(ctx, by, ctx.sender, payload, values)


async def _confirmed_challenge(ctx: Ctx, payload: dict[str, Any], user: User) -> None:
    """A challenge made without a password, confirmed by ``user`` (its challenger):
    checked again as it stands now, then opened."""
    cmd = Command("challenge", str(payload["game_type"]), list(payload["words"]), list(payload["params"]),
                  dict(payload["options"]), str(payload["comment"]), text="challenge")  # fmt: skip
    game_type, variant, options, users = await _challenge_checks(ctx, cmd, list(cmd.words))
    if user.id not in {u.id for u in users}:
        raise CommandError(f"{user.userid} no longer plays in this challenge")
    await _open_board(ctx, cmd, game_type, variant, options, users, user.userid)


async def _challenge_checks(ctx: Ctx, cmd: Command, words: list[str]) -> tuple[str, str, dict[str, Any], list[User]]:
    """The game type, setup, timer options and players of a challenge, every
    refusal raised (COMMANDS.md §3)."""
    game_type = cmd.game_type or DEFAULT_GAME_TYPE
    rules = board_rules(game_type)
    setups = rules.two_player_setups
    params = list(cmd.params)
    if len(words) == 3 and words[2].lower() in setups[:-1]:
        params.append(words.pop().lower())  # the old form: challenge U1 U2 short
    if len(words) > 4:
        raise CommandError("a board seats 2 to 4 players")
    unknown = [p for p in params if p not in setups]
    if unknown or len(params) > 1:
        raise CommandError(
            f"unknown or repeated setup '-{(unknown or params)[0]}'; the setups are {', '.join('-' + s for s in setups)}",
        )
    options = board_options(cmd.options)
    nag = options.get("nagtime", ctx.config.timers.nagtime)
    if options.get("forfeittime", max(ctx.config.timers.forfeittime, nag)) < nag:
        raise CommandError("--forfeittime must not be shorter than --nagtime")
    try:
        variant = rules.setup_for(len(words), params[0] if params else None)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    ids = [check_userid(w, robot_ok=True) for w in words]
    if len(set(ids)) != len(ids):
        raise CommandError("each player may sit at a board only once")
    found = await ctx.uow.users.get_many(ids)
    problems = []
    users: list[User] = []
    for uid in ids:
        user = found.get(uid)
        if user is None or user.is_deleted:
            problems.append(f"{uid}: no such user")
            continue
        users.append(user)
        if user.signed_off:
            problems.append(f"{uid}: signed off")
        elif user.seek > 0:
            pass  # seeking games: a challenge reaches them whatever their preferences (as on pbmserv)
        elif not user.accept_challenges:
            problems.append(f"{uid}: is not accepting challenges")
        elif user.challenge_limit is not None:
            active = await ctx.uow.games.count_active_for_user(user.id)
            if active >= user.challenge_limit:
                problems.append(f"{uid}: has reached the limit of {user.challenge_limit} active games")
    if problems:
        raise CommandError("the challenge cannot be made: " + "; ".join(problems))
    if all(u.is_robot for u in users):
        # nobody would read the board mails, and the robots would play forever
        raise CommandError(
            "the challenge cannot be made: a game needs at least one person; robots play people, not only each other"
        )
    await check_robot_games(ctx.uow.session, users)  # each costs the robots' pool a search a move (issue 36)
    return game_type, variant, options, users


async def _open_board(
    ctx: Ctx, cmd: Command, game_type: str, variant: str, options: dict[str, Any], users: list[User], author: str
) -> None:
    """The new board, its subscribers, its timers and its first mail; the comment
    is signed with the challenger's userid (never an address: addresses are not
    shown to other players)."""
    rules = board_rules(game_type)
    start = rules.dump(rules.start(variant))
    number = await ctx.uow.games.next_board_number(game_type)
    game = Game(
        game_type=game_type,
        board_number=number,
        variant=variant,
        options=options,
        position=start,
        start_position=start,
        ply=0,
        status="active",
        rated=variant != "master",
        draw_votes=[],
        undo_votes=[],
        created_at=ctx.now,
        last_move_at=ctx.now,
        seats=[Seat(seat=i + 1, user=u, user_id=u.id, active=True, resign_pending=False, queued_moves=[], clock_seconds=0.0)
               for i, u in enumerate(users)],
    )  # fmt: skip
    ctx.uow.games.add(game)
    for user in users:
        user.seek = max(0, user.seek - 1)  # one of the games they sought
    await ctx.uow.flush()
    ctx.board = str(number)
    for watcher in await ctx.uow.watchers.subscribers_of_all(game_type):
        ctx.uow.watchers.add(Subscription(game_type=game_type, game_id=game.id, user_id=watcher.id))
    schedule(ctx, game)
    comment = CommentView(author, shortened(ctx, cmd.comment)) if cmd.comment.strip() else None
    await ctx.uow.flush()
    await mail_game(ctx, game, template="new_game.txt", comment=comment, new=True)


# ----------------------------------------------------------------------- move
async def _player(ctx: Ctx, cmd: Command, words: list[str]) -> tuple[Game, User, Seat]:
    """Board words[0] (locked), the authenticated user words[1]/[2], their seat; the
    board must still be in play."""
    game, _ = await load_game(ctx, cmd, words[0])
    user = await ctx.auth(words[1], words[2], known=[s.user for s in game.seats])
    seat = require_player(game, user, cmd)
    require_active(game)
    return game, user, seat


def _numbered(game: Game, text: str) -> str:
    """MOVE[#k] → MOVE, refusing it when k is not the next ply (COMMANDS.md §3)."""
    move_text, _, want = text.partition("#")
    if want and (not want.isdigit() or int(want) != game.ply + 1):
        raise board_error(
            game, f"Move {move_text} received as move #{want[:8]}, but board {game.board_number} is at move #{game.ply + 1}"
        )
    return move_text


@command("move", game=True)
async def move(ctx: Ctx, cmd: Command) -> None:
    cmd.words = joined_move(cmd.words, 3)  # 'd7 - d6' written with spaces
    words = need(cmd, 4, 4)
    game, user, seat = await _player(ctx, cmd, words)
    action = words[3].lower()
    if action in VOTES:
        await VOTES[action](ctx, cmd, game, user, seat)
        return
    await _play(ctx, cmd, game, user, seat, words[3])


async def _play(ctx: Ctx, cmd: Command, game: Game, user: User, seat: Seat, text: str) -> None:
    pos = position(game)
    if not seat.active:
        raise board_error(game, f"{user.userid} is out of the game on board {game.board_number}")
    if pos.to_move != seat.seat:
        mover = seat_by_army(game, pos.to_move)
        raise board_error(game, f"it is not your turn on board {game.board_number}: it is {mover.user.userid}'s turn "
                   f"(with 'queue' you can play ahead)")  # fmt: skip
    move_text = _numbered(game, text)
    notes = clear_votes(game)
    pos, canonical = await play_move(ctx, game, seat, pos, move_text)
    seat.submitted_move = None
    comment = take_comment(ctx, game, cmd, user.userid)
    notes += await after_ply(ctx, game, pos)
    await mail_game(ctx, game, headline=f"{user.userid} played {canonical}", comment=comment, notes=notes)


async def _propose(ctx: Ctx, cmd: Command, game: Game, user: User, seat: Seat) -> None:
    if game.undo_votes:
        raise board_error(game, "an undo request is pending; accept or reject it first")
    if game.draw_votes:
        raise board_error(game, "a draw has already been proposed; send accept or reject")
    game.draw_votes = [seat.seat]
    comment = take_comment(ctx, game, cmd, user.userid)
    await mail_game(ctx, game, headline=f"{user.userid} proposes a draw", comment=comment)
    await _robots_answer(ctx, game)


async def _accept(ctx: Ctx, cmd: Command, game: Game, user: User, seat: Seat) -> None:
    if not game.draw_votes and not game.undo_votes:
        raise board_error(game, "there is no draw offer or undo request to accept")
    await _vote(ctx, cmd, game, user, seat, "draw" if game.draw_votes else "undo")


async def _vote(ctx: Ctx, cmd: Command, game: Game, user: User, seat: Seat, kind: str) -> None:
    votes = list(game.draw_votes if kind == "draw" else game.undo_votes)
    asking = not votes  # the first vote is the request itself
    if seat.seat in votes:
        raise board_error(game, f"you have already agreed to the {kind}")
    votes.append(seat.seat)
    comment = take_comment(ctx, game, cmd, user.userid)
    active = {s.seat for s in game.seats if s.active}
    if kind == "draw":
        game.draw_votes = votes
        if active <= set(votes):
            await finish(ctx, game, None, "draw agreed")
            await mail_game(ctx, game, headline="the players agree to a draw", comment=comment)
            return
        await mail_game(ctx, game, headline=f"{user.userid} accepts the draw", comment=comment)
        return
    game.undo_votes = votes
    if active <= set(votes):
        undone = await _undo_last(ctx, game)
        await mail_game(ctx, game, headline=f"the last ply ({undone}) has been taken back", comment=comment)
        return
    verb = "asks" if asking else "agrees"
    await mail_game(ctx, game, headline=f"{user.userid} {verb} to undo the last ply", comment=comment)


async def _reject(ctx: Ctx, cmd: Command, game: Game, user: User, seat: Seat) -> None:
    if not game.draw_votes and not game.undo_votes:
        raise board_error(game, "there is no draw offer or undo request to reject")
    kind = "draw offer" if game.draw_votes else "undo request"
    game.draw_votes, game.undo_votes = [], []
    comment = take_comment(ctx, game, cmd, user.userid)
    await mail_game(ctx, game, headline=f"{user.userid} rejects the {kind}", comment=comment)


async def _undo(ctx: Ctx, cmd: Command, game: Game, user: User, seat: Seat) -> None:
    if game.draw_votes:
        raise board_error(game, "a draw offer is pending; accept or reject it first")
    if game.ply == 0:
        raise board_error(game, "there is no move to undo")
    if game.undo_votes:
        await _vote(ctx, cmd, game, user, seat, "undo")
        return
    game.undo_votes = []
    await _vote(ctx, cmd, game, user, seat, "undo")
    await _robots_answer(ctx, game)


async def _robots_answer(ctx: Ctx, game: Game) -> None:
    """The robots at the board answer a draw offer or undo request at once, in the
    request's transaction (a robot has no inbox to wait in): a draw is accepted
    only when the robot's own search says it stands worse (:func:`accepts_draw`),
    an undo is always rejected (a robot takes nothing back, nor lets others)."""
    for seat in [s for s in game.seats if s.active and s.user.is_robot]:
        votes = game.draw_votes or game.undo_votes
        if not votes or seat.seat in votes or game.status != "active":
            return
        quiet = Command(verb="move", game_type=game.game_type, words=[str(game.board_number), seat.user.userid])
        level = seat.user.robot_level or 1
        rules = board_rules(game.game_type)
        if game.draw_votes and rules.robot_accepts_draw(position(game), seat.seat, level, game.ply):
            await _vote(ctx, quiet, game, seat.user, seat, "draw")
        else:
            await _reject(ctx, quiet, game, seat.user, seat)


async def _undo_last(ctx: Ctx, game: Game) -> str:
    moves = await ctx.uow.moves.of_game(game.id)
    last = moves[-1]
    await ctx.uow.moves.delete_from(game.id, last.ply)
    remaining = moves[:-1]
    pos = replay(game, remaining)
    game.position = board_rules(game.game_type).dump(pos)
    game.taken_back = (game.taken_back or 0) + game.ply - (last.ply - 1)
    game.ply = last.ply - 1
    game.undo_votes = []
    if last.move in (RESIGN, FORFEIT):
        seat_by_army(game, last.seat).active = True
    for s in game.seats:  # a T captured by the undone ply comes back
        if s.seat in pos.armies():
            s.active = True
    schedule(ctx, game)
    return last.move


async def _resign(ctx: Ctx, cmd: Command, game: Game, user: User, seat: Seat) -> None:
    comment = take_comment(ctx, game, cmd, user.userid)
    if game.ply < len(game.seats):
        await first_round_removal(ctx, game, seat, "resigned", comment)
        return
    pos = position(game)
    if pos.to_move != seat.seat:
        seat.resign_pending = not seat.resign_pending
        if seat.resign_pending:
            headline = f"{user.userid} will resign on their turn (send resign again to cancel)"
        else:
            headline = f"{user.userid} withdraws the pending resignation"
        await mail_game(ctx, game, headline=headline, comment=comment)
        return
    pos, notes = await resign_seat(ctx, game, seat, pos)
    notes += await after_ply(ctx, game, pos)
    await mail_game(ctx, game, headline=f"{user.userid} resigns", comment=comment, notes=notes)


async def _claim(ctx: Ctx, cmd: Command, game: Game, user: User, seat: Seat) -> None:
    """``move N U P claim`` (issue 40 item 3): on a ``--clock`` board whose player
    to move has run out of time, another player claims the win; that player
    forfeits on time."""
    if clock_of(game.options) is None:
        raise board_error(game, f"board {game.board_number} has no --clock, so there is nothing to claim")
    out = mover(game)
    if out is seat:
        raise board_error(game, "it is your own turn: only your opponent can be out of time now")
    if not seat.active:
        raise board_error(game, f"{user.userid} is out of the game on board {game.board_number}")
    if out.flagged_at is None and seat_left(ctx, game, out) > 0:
        raise board_error(game, f"{out.user.userid} still has {duration(seat_left(ctx, game, out))} on the clock; "
                                "you can claim only once it has run out")  # fmt: skip
    await forfeit(ctx, game, out, position(game), "ran out of time", claimed_by=user.userid)


VOTES = {"propose": _propose, "accept": _accept, "reject": _reject, "undo": _undo, "resign": _resign, "claim": _claim}


@command("resign", game=True)
async def resign(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 3, 3)
    game, user, seat = await _player(ctx, cmd, words)
    if not seat.active:
        raise board_error(game, f"{user.userid} is already out of the game")
    await _resign(ctx, cmd, game, user, seat)


# -------------------------------------------------------------- queue, submit
@command("queue", game=True)
async def queue(ctx: Ctx, cmd: Command) -> None:
    cmd.words = joined_move(cmd.words, 3)  # 'd7 - d6' written with spaces
    words = need(cmd, 4, 4)
    game, user, seat = await _player(ctx, cmd, words)
    pos = position(game)
    if pos.to_move == seat.seat and seat.active:
        await _play(ctx, cmd, game, user, seat, words[3])
        return
    if not seat.active:
        raise board_error(game, f"{user.userid} is out of the game on board {game.board_number}")
    rules = board_rules(game.game_type)
    if not rules.looks_like_move(words[3]):
        raise board_error(game, f"'{words[3][:40]}' is not a move; write it as {rules.move_forms}")
    if len(seat.queued_moves) >= MAX_QUEUE:
        raise board_error(game, f"at most {MAX_QUEUE} moves can be queued")
    seat.queued_moves = [*seat.queued_moves, words[3]]
    notice(ctx, f"{game_title(game.game_type)} Board {game.board_number} queue",
           f"Queued on board {game.board_number}: {words[3]}",
           f"Your queue: {', '.join(seat.queued_moves)}",
           "A queued move is played when your turn comes; an illegal one is dropped (with the rest of the queue).")  # fmt: skip


@command("submit", game=True)
async def submit(ctx: Ctx, cmd: Command) -> None:
    cmd.words = joined_move(cmd.words, 3)  # 'd7 - d6' written with spaces
    words = need(cmd, 4, 4)
    game, user, seat = await _player(ctx, cmd, words)
    pos = position(game)
    if pos.to_move != seat.seat:
        raise board_error(game, f"it is not your turn on board {game.board_number}")
    move_text = _numbered(game, words[3])
    rules = board_rules(game.game_type)
    try:
        mv = rules.parse_move(pos, move_text)
    except ValueError as exc:
        raise board_error(game, str(exc)) from None
    canonical = rules.format_move(pos, mv)
    seat.submitted_move = f"{canonical}#{game.ply + 1}"
    view = await game_view(
        ctx,
        game,
        pos=rules.play(pos, mv),
        notes=[f"(as it would be after {canonical})"],
        tried=[(seat.seat, f"{canonical} (submitted)")],
    )
    ctx.reply(
        f"{game_title(game.game_type)} Board {game.board_number} submitted",
        "submitted.txt",
        game=view,
        move=canonical,
        user=user.userid,
    )


@command("confirm", game=True)
async def confirm(ctx: Ctx, cmd: Command) -> None:
    if len(cmd.words) == 1 and confirmations.is_key(cmd.words[0]):
        # the Reply to a confirmation mail (an address, or a challenge made without a password)
        row, user = await confirmations.take(ctx, cmd.words[0])
        if row.kind == "address":
            confirmations.confirm_address(ctx, row, user)
        else:
            await _confirmed_challenge(ctx, row.payload, user)
        return
    words = need(cmd, 3, 3)
    game, user, seat = await _player(ctx, cmd, words)
    if not seat.submitted_move:
        raise board_error(game, "you have no submitted move to confirm; use submit first")
    text, _, ply = seat.submitted_move.partition("#")
    if int(ply) != game.ply + 1:
        seat.submitted_move = None
        raise board_error(game, "the board has changed since you submitted; submit your move again")
    await _play(ctx, cmd, game, user, seat, text)
