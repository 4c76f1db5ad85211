"""Tournaments (issue 41): ``terrace tournament new|join|leave|start|add|withdraw|show|list``,
and the server running them.

The organizer opens one (``new``), players join (robots are seated by the
organizer with ``add``), and it starts by the organizer's ``start`` or by itself
on its ``--start`` day once its minimum has joined.  Each round is paired by the
pure :mod:`pbmserv_terrace.tournament` and written in one transaction with its
boards (ordinary boards, rated as usual, whose mails name the tournament and
round); ``tournament_games`` is unique per (tournament, round, board), so a round
is never paired twice.

When a board of a tournament ends (:func:`.plies.finish` notes it in the
session), :func:`settle` — run in the same transaction, before the replies are
queued — records its result and, when it was the round's last, pairs and starts
the next round (or ends the tournament) and mails each player once: the
standings and their new boards (or the final table).  :func:`sweep`, run with the
timers, starts tournaments whose day has come and settles any round left
complete (so nothing waits on a lost hook).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from ..commands import Command
from ..gametypes import DEFAULT_GAME_TYPE, board_rules, game_title
from ..store import Game, Seat, Subscription, User
from ..store.tournaments import NOTES_KEY, Tournament, TournamentEntrant, TournamentGame, Tournaments
from ..tournament import (
    SYSTEMS,
    Pairing,
    Result,
    Standing,
    crosstable,
    knockout_pairings,
    knockout_winners,
    points_text,
    round_robin_pairings,
    rounds_needed,
    standings,
    swiss_pairings,
)
from .args import CLOCK_OPTIONS, TIMER_OPTIONS, board_options, notice
from .boards import FORFEIT, mail_game, position, seat_of
from .context import CommandError, Ctx
from .plies import ENDED_IN_TOURNAMENTS, after_ply, first_round_removal, resign_seat, schedule
from .spec import command

MOST_PLAYERS = 256
MOST_SWISS_ROUNDS = 20
MOST_OPEN_PER_ORGANIZER = 5
_NUMBER = re.compile(r"^[tT]?(\d{1,9})$")
_PLAYERS = re.compile(r"^(\d{1,3})(?:-(\d{1,3}))?$")
_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
RESULT_TEXT = {1.0: "1-0", 0.5: "1/2-1/2", 0.0: "0-1"}
CROSS_TEXT = {1.0: "1", 0.5: "=", 0.0: "0"}
"""a crosstable's cell: a win 1, a draw =, a loss 0 (two in a double round robin)"""
NOTES = NOTES_KEY
OPENED = "tournament_boards_opened"
"""``session.info`` key: the boards tournaments opened in this transaction (:func:`opened`)"""
SUBCOMMANDS = ("new", "join", "leave", "start", "add", "withdraw", "show", "list")
SYSTEM_NAMES = {
    "roundrobin": "round robin",
    "double": "double round robin",
    "swiss": "Swiss",
    "knockout": "knockout",
}


def _repo(ctx: Ctx) -> Tournaments:
    return Tournaments(ctx.uow.session)


def _game_word(t: Tournament) -> str:
    return t.game_type


def _subject(t: Tournament, what: str) -> str:
    return f"{game_title(t.game_type)} tournament {t.label}: {what}"


def _usage(ctx: Ctx, game_type: str, sub: str) -> str:
    forms = {
        "new": "tournament new USERID PASSWORD NAME -roundrobin|-double|-swiss ROUNDS|-knockout [--players=MIN-MAX] "
        "[--start=YYYY-MM-DD] [-SETUP] [--nagtime=DAYS] [--forfeittime=DAYS] [--totaltime=DAYS]",
        "add": "tournament add T USERID PASSWORD robotN",
        "show": "tournament show T",
        "list": "tournament list",
    }
    return f"{game_type} " + forms.get(sub, f"tournament {sub} T USERID PASSWORD")


@command("tournament", game=True)
async def tournament(ctx: Ctx, cmd: Command) -> None:
    game_type = cmd.game_type or DEFAULT_GAME_TYPE
    sub = cmd.words[0].lower() if cmd.words else ""
    if sub not in SUBCOMMANDS:
        raise CommandError(f"say what to do with tournaments: {', '.join(SUBCOMMANDS)} (e.g. '{game_type} tournament list')")
    words = cmd.words[1:]
    if sub == "new":
        await _new(ctx, cmd, game_type, words)
    elif sub == "list":
        await _list(ctx, game_type)
    elif sub == "show":
        if len(words) != 1:
            raise CommandError("name the tournament: tournament show T", _usage(ctx, game_type, sub))
        t = await _get(ctx, words[0], lock=False)
        notice(ctx, _subject(t, "show"), *await describe(ctx, t))
    else:
        most = 4 if sub == "add" else 3
        if len(words) < most or len(words) > most:
            raise CommandError(f"tournament {sub} needs {' '.join(_usage(ctx, game_type, sub).split()[3:])}",
                               _usage(ctx, game_type, sub))  # fmt: skip
        t = await _get(ctx, words[0], lock=True)
        user = await ctx.auth(words[1], words[2])
        await ACTIONS[sub](ctx, t, user, words[3:])


async def _get(ctx: Ctx, word: str, *, lock: bool) -> Tournament:
    m = _NUMBER.match(word)
    if not m:
        raise CommandError(f"'{word[:20]}' is not a tournament number (write it as 7 or T7)")
    t = await _repo(ctx).get(int(m.group(1)), lock=lock)
    if t is None:
        raise CommandError(f"there is no tournament T{int(m.group(1))}; 'tournament list' lists them")
    return t


# ------------------------------------------------------------------------ new
async def _new(ctx: Ctx, cmd: Command, game_type: str, words: list[str]) -> None:
    if len(words) < 3:
        raise CommandError("a tournament needs your userid, password and a name", _usage(ctx, game_type, "new"))
    organizer = await ctx.auth(words[0], words[1])
    systems = [p for p in cmd.params if p in SYSTEMS]
    if len(systems) != 1:
        raise CommandError(
            "give the system once: -roundrobin, -double, -swiss ROUNDS or -knockout", _usage(ctx, game_type, "new")
        )
    system = systems[0]
    rules = board_rules(game_type)
    setups = [p for p in cmd.params if p not in SYSTEMS]
    if len(setups) > 1 or any(s not in rules.two_player_setups for s in setups):
        raise CommandError(f"unknown or repeated setup; the setups are {', '.join('-' + s for s in rules.two_player_setups)}")
    name_words = words[2:]
    swiss_rounds = 0
    if system == "swiss":
        if not name_words or not name_words[-1].isdigit():
            raise CommandError("-swiss needs the number of rounds after the name, e.g. -swiss 7", _usage(ctx, game_type, "new"))
        swiss_rounds = int(name_words.pop())
        if not 1 <= swiss_rounds <= MOST_SWISS_ROUNDS:
            raise CommandError(f"a Swiss plays 1 to {MOST_SWISS_ROUNDS} rounds")
    name = " ".join(name_words).strip()
    if not name or len(name) > 60 or not name.isprintable():
        raise CommandError("the tournament's name must be 1 to 60 printable characters")
    board_keys = {k: v for k, v in cmd.options.items() if k in (*TIMER_OPTIONS, *CLOCK_OPTIONS)}
    options = board_options(board_keys)  # the boards' timers and clock, as a challenge takes them
    low, high = 2, MOST_PLAYERS
    start_at: datetime | None = None
    for key, value in cmd.options.items():
        if key in board_keys:
            continue
        elif key == "players":
            m = _PLAYERS.match(value)
            if not m:
                raise CommandError("--players needs MIN-MAX, e.g. --players=4-8")
            low, high = int(m.group(1)), int(m.group(2) or m.group(1))
            if not 2 <= low <= high <= MOST_PLAYERS:
                raise CommandError(f"--players must be 2 to {MOST_PLAYERS}, the minimum first")
        elif key == "start":
            m = _DAY.match(value)
            try:
                start_at = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None
            except ValueError:
                start_at = None
            if start_at is None:
                raise CommandError("--start needs a day written YYYY-MM-DD, e.g. --start=2026-12-21")
            if start_at <= ctx.now:
                raise CommandError("--start must be a day still to come")
        else:
            raise CommandError(f"unknown option --{key[:30]}; the options are --players, --start, --nagtime, "
                               "--forfeittime, --totaltime, --clock, --weekends")  # fmt: skip
    nag = options.get("nagtime", ctx.config.timers.nagtime)
    if options.get("forfeittime", max(ctx.config.timers.forfeittime, nag)) < nag:
        raise CommandError("--forfeittime must not be shorter than --nagtime")
    repo = _repo(ctx)
    mine = [t for t in await repo.listing(1000) if t.organizer_id == organizer.id and t.status == "open"]
    if len(mine) >= MOST_OPEN_PER_ORGANIZER:
        raise CommandError(f"you already have {len(mine)} tournaments open for entries; start or fill one first")
    option_text = " ".join([*(f"-{s}" for s in setups), *(f"--{k}={v}" if v else f"--{k}" for k, v in sorted(board_keys.items()))])
    t = Tournament(
        number=await repo.next_number(), game_type=game_type, name=name, system=system, swiss_rounds=swiss_rounds,
        rounds=0, min_players=low, max_players=high, start_at=start_at, setup=setups[0] if setups else "",
        options=options, option_text=option_text, organizer_id=organizer.id, status="open", round=0,
        created_at=ctx.now,
    )  # fmt: skip
    repo.add(t)
    await ctx.uow.flush()
    when = f"It starts on {start_at:%Y-%m-%d} once {low} have joined, or" if start_at else "It starts"
    notice(
        ctx, _subject(t, f"{name} is open"),
        f"Tournament {t.label} \"{name}\" ({_system_text(t)}, {game_title(game_type)}) is open for entries: "
        f"{low} to {high} players.",
        f"{when} when you, its organizer, send: {game_type} tournament start {t.number} {organizer.userid} PASSWORD",
        f"Players join with: {game_type} tournament join {t.number} USERID PASSWORD",
        f"You may seat a robot: {game_type} tournament add {t.number} {organizer.userid} PASSWORD robot1 (robot1-3).",
        f"'{game_type} tournament show {t.number}' shows it; 'help tournament' explains the systems.",
    )  # fmt: skip


def _system_text(t: Tournament) -> str:
    text = SYSTEM_NAMES[t.system]
    if t.system == "swiss":
        text += f" of {t.swiss_rounds} rounds"
    if t.option_text:
        text += f"; {t.option_text}"
    return text


# ------------------------------------------------------- join, leave, add, start
async def _join(ctx: Ctx, t: Tournament, user: User, rest: list[str]) -> None:
    await _enter(ctx, t, user, by=user)


async def _add(ctx: Ctx, t: Tournament, user: User, rest: list[str]) -> None:
    if user.id != t.organizer_id:
        raise CommandError(f"only the organizer of {t.label} seats robots")
    robot = await ctx.uow.users.get(rest[0].lower())
    if robot is None or not robot.is_robot:
        raise CommandError(f"'{rest[0][:20]}' is not one of the server's robots (robot1, robot2, robot3)")
    await _enter(ctx, t, robot, by=user)


async def _enter(ctx: Ctx, t: Tournament, player: User, *, by: User) -> None:
    if t.status != "open":
        raise CommandError(f"{t.label} has started; entries are closed")
    entrants = await _repo(ctx).entrants(t.id)
    if any(u.id == player.id for _, u in entrants):
        raise CommandError(f"{player.userid} is already in {t.label}")
    if len(entrants) >= t.max_players:
        raise CommandError(f"{t.label} is full ({t.max_players} players)")
    _repo(ctx).add(TournamentEntrant(tournament_id=t.id, user_id=player.id, joined_at=ctx.now, rating=1600.0))
    await ctx.uow.flush()
    count = len(entrants) + 1
    who = "You are" if player is by else f"{player.userid} is"
    notice(
        ctx, _subject(t, f"{player.userid} joined"),
        f"{who} in tournament {t.label} \"{t.name}\": {count} of {t.min_players}-{t.max_players} players so far.",
        f"'{t.game_type} tournament show {t.number}' lists them; you get a mail when it starts.",
    )  # fmt: skip


async def _leave(ctx: Ctx, t: Tournament, user: User, rest: list[str]) -> None:
    if t.status != "open":
        raise CommandError(f"{t.label} has started; to stop playing in it, use withdraw (your games left are forfeited)")
    entrant = next((e for e, u in await _repo(ctx).entrants(t.id) if u.id == user.id), None)
    if entrant is None:
        raise CommandError(f"{user.userid} is not in {t.label}")
    await _repo(ctx).remove_entrant(entrant)
    notice(ctx, _subject(t, f"{user.userid} left"), f'You have left tournament {t.label} "{t.name}".')


async def _start(ctx: Ctx, t: Tournament, user: User, rest: list[str]) -> None:
    if user.id != t.organizer_id:
        raise CommandError(f"only the organizer of {t.label} starts it")
    if t.status != "open":
        raise CommandError(f"{t.label} has started already")
    entrants = await _repo(ctx).entrants(t.id)
    if len(entrants) < max(2, t.min_players):
        raise CommandError(f"{t.label} needs {max(2, t.min_players)} players to start; {len(entrants)} have joined")
    if all(u.is_robot for _, u in entrants):
        raise CommandError("a tournament needs at least one person")
    await start(ctx, t)


async def start(ctx: Ctx, t: Tournament) -> None:
    """Seed the entrants by rating (then by when they joined) and pair round 1."""
    entrants = await _repo(ctx).entrants(t.id)
    ratings = {}
    for e, u in entrants:
        row = await ctx.uow.ratings.get(u.id, t.game_type)
        ratings[e.id] = row.rating if row is not None else 1600.0
    ordered = sorted(entrants, key=lambda eu: (-ratings[eu[0].id], eu[0].joined_at, eu[0].id))
    for seed, (e, _) in enumerate(ordered, start=1):
        e.seed, e.rating = seed, ratings[e.id]
    t.rounds = rounds_needed(t.system, len(entrants), t.swiss_rounds)
    t.status, t.started_at = "running", ctx.now
    await ctx.uow.flush()
    await _advance(ctx, t)


# ------------------------------------------------------------------ withdraw
async def _withdraw(ctx: Ctx, t: Tournament, user: User, rest: list[str]) -> None:
    if t.status == "open":
        raise CommandError(f"{t.label} has not started: use leave")
    if t.status != "running":
        raise CommandError(f"{t.label} is over")
    entrant = next((e for e, u in await _repo(ctx).entrants(t.id) if u.id == user.id), None)
    if entrant is None:
        raise CommandError(f"{user.userid} is not in {t.label}")
    if entrant.withdrawn_round is not None:
        raise CommandError(f"{user.userid} has withdrawn from {t.label} already")
    entrant.withdrawn_round = t.round
    notice(ctx, _subject(t, f"{user.userid} withdrew"),
           f"You have withdrawn from tournament {t.label} \"{t.name}\" in round {t.round}: your games in play are "
           "forfeited and you are paired no more; your results so far stand.")  # fmt: skip
    for row in await _repo(ctx).games(t.id):
        if row.game_id is None or row.score is not None or user.id not in (row.white_id, row.black_id):
            continue
        game = (await _repo(ctx).boards([row.game_id])).get(row.game_id)
        if game is None or game.status != "active":
            continue
        game = await ctx.uow.games.get(game.game_type, game.board_number, lock=True) or game
        seat = seat_of(game, user)
        if seat is None or not seat.active:
            continue
        if game.ply < len(game.seats):
            await first_round_removal(ctx, game, seat, "withdrew from the tournament", None)
            continue
        pos, notes = await resign_seat(ctx, game, seat, position(game), FORFEIT)
        notes += await after_ply(ctx, game, pos)
        await mail_game(ctx, game, headline=f"{user.userid} forfeits (withdrew from {t.label})", notes=notes)
    await settle(ctx)
    await _advance(ctx, t)


ACTIONS = {"join": _join, "leave": _leave, "start": _start, "add": _add, "withdraw": _withdraw}


# ---------------------------------------------------------------------- list
async def _list(ctx: Ctx, game_type: str) -> None:
    rows = [t for t in await _repo(ctx).listing() if t.game_type == game_type]
    lines = [f"Tournaments of {game_title(game_type)} (newest first):", ""]
    for t in rows:
        count = len(await _repo(ctx).entrants(t.id))
        state = {"open": "open for entries", "running": f"round {t.round} of {t.rounds}", "finished": "over"}[t.status]
        lines.append(f"  {t.label:<6}{t.name[:40]:<42}{SYSTEM_NAMES[t.system]:<20}{count:>3} players  {state}")
    if not rows:
        lines.append("  (none yet)")
    lines += ["", f"'{game_type} tournament show T' shows one; 'help tournament' says how to run one."]
    notice(ctx, f"{game_title(game_type)} tournaments", *lines)


# -------------------------------------------------------- the server runs it
def results_of(rows: Sequence[TournamentGame]) -> list[Result]:
    return [Result(r.round, r.white_id, r.black_id, r.score) for r in rows]


def board_score(game: Game) -> float | None:
    """The first seat's points on an ended board (None: still in play)."""
    if game.status == "active":
        return None
    if game.status == "won" and game.winner_seat is not None:
        return 1.0 if game.winner_seat == 1 else 0.0
    return 0.5


async def settle(ctx: Ctx) -> None:
    """Record the results of the tournament boards this transaction ended and run
    on each tournament whose round is now complete.  Idempotent: it reads the
    boards as they are, so a note left from undone work changes nothing."""
    ended: set[int] = ctx.uow.session.info.pop(ENDED_IN_TOURNAMENTS, set())
    if not ended:
        return
    await ctx.uow.flush()
    touched: set[int] = set()
    for game_id in sorted(ended):
        row = await _repo(ctx).game_of_board(game_id)
        if row is not None:
            touched.add(row.tournament_id)
    for tid in sorted(touched):
        t = await _repo(ctx).by_id(tid, lock=True)
        if t is not None and t.status == "running":
            await _advance(ctx, t)


async def sweep(ctx: Ctx) -> int:
    """Start the tournaments whose day has come (with enough players), and run on
    any running one whose round is complete; how many were looked at."""
    repo = _repo(ctx)
    count = 0
    for t in await repo.due_to_start(ctx.now):
        t = await repo.by_id(t.id, lock=True) or t
        if t.status != "open":
            continue
        entrants = await repo.entrants(t.id)
        count += 1
        if len(entrants) >= max(2, t.min_players) and not all(u.is_robot for _, u in entrants):
            await start(ctx, t)
        else:
            t.start_at = None  # not enough players: it waits for the organizer's start
            organizer = await ctx.uow.users.by_pk(t.organizer_id)
            if organizer is not None:
                ctx.send([organizer], _subject(t, "not started"), (
                    f"Tournament {t.label} \"{t.name}\" did not start on its day: {len(entrants)} of the {t.min_players} "
                    f"players it needs have joined.  Start it when they have: {t.game_type} tournament start "
                    f"{t.number} {organizer.userid} PASSWORD\n"))  # fmt: skip
    for t in await repo.running():
        t = await repo.by_id(t.id, lock=True) or t
        if t.status == "running":
            count += 1
            await _advance(ctx, t)
    return count


async def _advance(ctx: Ctx, t: Tournament) -> None:
    """With ``t`` locked: record the ended boards' results; while the round in
    play is complete, pair the next (or end the tournament)."""
    repo = _repo(ctx)
    while t.status == "running":
        rows = await repo.games(t.id)
        pending = [r for r in rows if r.score is None and r.game_id is not None]
        boards = await repo.boards([r.game_id for r in pending if r.game_id is not None])
        for r in pending:
            game = boards.get(r.game_id or 0)
            r.score = board_score(game) if game is not None else 0.5
        if any(r.score is None for r in rows if r.round == t.round):
            return
        entrants = await repo.entrants(t.id)
        if _over(t, rows, entrants):
            await _finish(ctx, t, rows, entrants)
            return
        await _pair(ctx, t, t.round + 1, rows, entrants)


def _seeded(entrants: Sequence[tuple[TournamentEntrant, User]]) -> list[int]:
    return [u.id for e, u in sorted(entrants, key=lambda eu: eu[0].seed or 0)]


def _over(t: Tournament, rows: Sequence[TournamentGame], entrants: Sequence[tuple[TournamentEntrant, User]]) -> bool:
    if t.round == 0:
        return False
    if t.system == "knockout":
        winners = knockout_winners(_seeded(entrants), [r for r in results_of(rows) if r.round == t.round])
        gone = {u.id for e, u in entrants if e.withdrawn_round is not None}
        return len([w for w in winners if w not in gone]) <= 1
    if t.round >= t.rounds:
        return True
    playing = [e for e, _ in entrants if e.withdrawn_round is None]
    return len(playing) < 2 and t.system == "swiss"


async def _pair(
    ctx: Ctx, t: Tournament, round_no: int, rows: Sequence[TournamentGame], entrants: Sequence[tuple[TournamentEntrant, User]]
) -> None:
    """Pair round ``round_no`` and open its boards, in this transaction."""
    seeded = _seeded(entrants)
    gone = {u.id for e, u in entrants if e.withdrawn_round is not None}
    results = results_of(rows)
    pairings: list[Pairing]
    if t.system in ("roundrobin", "double"):
        pairings = round_robin_pairings(seeded, round_no, double=t.system == "double")
    elif t.system == "swiss":
        pairings = swiss_pairings([p for p in seeded if p not in gone], results)
    else:
        pairings = knockout_pairings(seeded, results, round_no, gone)
    users = {u.id: u for _, u in entrants}
    t.round = round_no
    new_boards: list[tuple[Game, TournamentGame]] = []
    playing = [p for p in pairings if p.black is not None and p.white not in gone and p.black not in gone]
    # the numbers first: each is an UPDATE, which would flush every board added before it
    numbers = [await ctx.uow.games.next_board_number(t.game_type) for _ in playing]
    for board, p in enumerate(pairings, start=1):
        row = TournamentGame(tournament_id=t.id, round=round_no, board=board, white_id=p.white, black_id=p.black)
        if p.black is None:
            row.score = 1.0 if t.system == "swiss" else 0.0
        elif p.white in gone or p.black in gone:
            row.score = 0.0 if p.white in gone else 1.0  # a withdrawn player's game is forfeited
        else:
            new_boards.append((_new_board(ctx, t, numbers.pop(0), [users[p.white], users[p.black]]), row))
        _repo(ctx).add(row)
    await ctx.uow.flush()  # one flush for the round's boards and rows
    watchers = await ctx.uow.watchers.subscribers_of_all(t.game_type)
    for game, row in new_boards:
        row.game_id = game.id
        ctx.uow.session.info.setdefault(OPENED, []).append(game.id)
        ctx.uow.session.info.setdefault(NOTES, {})[game.id] = (t.number, t.name, round_no, t.rounds)
        for watcher in watchers:
            ctx.uow.watchers.add(Subscription(game_type=t.game_type, game_id=game.id, user_id=watcher.id))
        schedule(ctx, game)
    await ctx.uow.flush()  # the unique (tournament, round, board) refuses a second pairing of this round
    for game, _ in new_boards:
        await mail_game(ctx, game, template="new_game.txt", new=True)
    await round_mail(ctx, t, round_no, entrants, await _repo(ctx).games(t.id))


def _new_board(ctx: Ctx, t: Tournament, number: int, players: list[User]) -> Game:
    """A new board of ``t``, as a challenge opens one (setup, options, rated as usual);
    its subscribers and timers are set once the round's boards are written."""
    rules = board_rules(t.game_type)
    variant = rules.setup_for(2, t.setup or None)
    start = rules.dump(rules.start(variant))
    game = Game(
        game_type=t.game_type, board_number=number, variant=variant,
        options=dict(t.options), position=start, start_position=start, ply=0, status="active",
        rated=variant != "master", draw_votes=[], undo_votes=[], created_at=ctx.now, last_move_at=ctx.now,
        tournament_id=t.id,
        seats=[Seat(seat=i + 1, user=u, user_id=u.id, active=True, resign_pending=False, queued_moves=[], clock_seconds=0.0)
               for i, u in enumerate(players)],
    )  # fmt: skip
    ctx.uow.games.add(game)
    return game


async def _finish(
    ctx: Ctx, t: Tournament, rows: Sequence[TournamentGame], entrants: Sequence[tuple[TournamentEntrant, User]]
) -> None:
    seeded = _seeded(entrants)
    table = standings(seeded, results_of(rows), t.system)
    winner = table[0].player if table else None
    if t.system == "knockout" and t.round:
        gone = {u.id for e, u in entrants if e.withdrawn_round is not None}
        alive = [w for w in knockout_winners(seeded, [r for r in results_of(rows) if r.round == t.round]) if w not in gone]
        winner = alive[0] if alive else winner
    t.status, t.finished_at, t.winner_id = "finished", ctx.now, winner
    users = {u.id: u for _, u in entrants}
    name = users[winner].userid if winner in users else "nobody"
    lines = [
        f'Tournament {t.label} "{t.name}" ({_system_text(t)}) is over after {t.round} rounds: {name} wins.',
        "",
        "Final table:",
        *table_lines(t, table, users),
        "",
        f"'{t.game_type} tournament show {t.number}' shows every round and board.",
    ]
    ctx.send([u for _, u in entrants if not u.is_robot] + await _organizer(ctx, t, entrants), _subject(t, f"{name} wins"),
             "\n".join(lines) + "\n")  # fmt: skip


async def _organizer(ctx: Ctx, t: Tournament, entrants: Sequence[tuple[TournamentEntrant, User]]) -> list[User]:
    if any(u.id == t.organizer_id for _, u in entrants):
        return []
    organizer = await ctx.uow.users.by_pk(t.organizer_id)
    return [organizer] if organizer is not None else []


async def round_mail(
    ctx: Ctx, t: Tournament, round_no: int, entrants: Sequence[tuple[TournamentEntrant, User]], rows: Sequence[TournamentGame]
) -> None:
    """One mail to each player (and the organizer): the standings so far and
    their games of the new round."""
    users = {u.id: u for _, u in entrants}
    done = [r for r in rows if r.round < round_no]
    table = standings(_seeded(entrants), results_of(done), t.system)
    boards = await _repo(ctx).boards([r.game_id for r in rows if r.round == round_no and r.game_id is not None])
    head = [f'Tournament {t.label} "{t.name}" ({_system_text(t)}): round {round_no} of {t.rounds} has begun.', ""]
    if round_no > 1:
        head += [f"Standings after round {round_no - 1}:", *table_lines(t, table, users), ""]
    else:
        head += ["Players, by seed:", *[f"  {i}. {users[p].userid}" for i, p in enumerate(_seeded(entrants), 1)], ""]
    everyone = [u for _, u in entrants if not u.is_robot] + await _organizer(ctx, t, entrants)
    for user in everyone:
        mine = [r for r in rows if r.round == round_no and user.id in (r.white_id, r.black_id)]
        lines = list(head)
        if mine:
            lines.append(f"Your game{'s' if len(mine) > 1 else ''} in round {round_no}:")
            for r in mine:
                lines.append("  " + game_line(t, r, users, boards))
            lines.append("Each board has its own mail; reply to it with your move.")
        else:
            lines.append(f"Round {round_no}'s games:")
            lines += ["  " + game_line(t, r, users, boards) for r in rows if r.round == round_no]
        lines += ["", f"'{t.game_type} tournament show {t.number}' shows the whole tournament."]
        ctx.send([user], _subject(t, f"round {round_no}"), "\n".join(lines) + "\n")


def game_line(t: Tournament, r: TournamentGame, users: dict[int, User], boards: dict[int, Game] | None = None) -> str:
    white = users[r.white_id].userid if r.white_id in users else "?"
    if r.black_id is None:
        kind = "a bye (1 point)" if t.system == "swiss" else "goes through" if t.system == "knockout" else "rests"
        return f"{white}: {kind}"
    black = users[r.black_id].userid if r.black_id in users else "?"
    board = boards.get(r.game_id) if boards is not None and r.game_id is not None else None
    where = f"board {board.board_number}" if board is not None else "no board (forfeited)" if r.game_id is None else "board"
    result = RESULT_TEXT.get(r.score, "in play") if r.score is not None else "in play"
    return f"{white} - {black}: {where}, {result}"


def table_lines(t: Tournament, table: Sequence[Standing], users: dict[int, User]) -> list[str]:
    if t.system == "swiss":
        header = f"  {'#':>3}  {'player':<20}{'points':>7}{'Buchholz':>10}{'S-B':>7}   games"
    elif t.system == "knockout":
        header = f"  {'#':>3}  {'player':<20}{'points':>7}{'round':>7}   games"
    else:
        header = f"  {'#':>3}  {'player':<20}{'points':>7}{'S-B':>7}   games"
    lines = [header]
    for s in table:
        name = users[s.player].userid if s.player in users else "?"
        record = f"+{s.wins} ={s.draws} -{s.losses}"
        if t.system == "swiss":
            tie = f"{points_text(s.buchholz):>10}{points_text(s.sonneborn_berger):>7}"
        elif t.system == "knockout":
            tie = f"{s.reached:>7}"
        else:
            tie = f"{points_text(s.sonneborn_berger):>7}"
        lines.append(f"  {s.rank:>3}. {name:<20}{points_text(s.points):>7}{tie}   {record}")
    return lines


async def describe(ctx: Ctx, t: Tournament) -> list[str]:
    """What ``tournament show`` says: the tournament, its table, every round."""
    repo = _repo(ctx)
    entrants = await repo.entrants(t.id)
    users = {u.id: u for _, u in entrants}
    organizer = await ctx.uow.users.by_pk(t.organizer_id)
    rows = await repo.games(t.id)
    boards = await repo.boards([r.game_id for r in rows if r.game_id is not None])
    state = {"open": "open for entries", "running": f"round {t.round} of {t.rounds}", "finished": "over"}[t.status]
    lines = [
        f'Tournament {t.label} "{t.name}": {game_title(t.game_type)}, {_system_text(t)}; {state}.',
        f"Organizer: {organizer.userid if organizer else '?'}; players {t.min_players}-{t.max_players}"
        + (f"; starts {t.start_at:%Y-%m-%d}" if t.start_at and t.status == "open" else "")
        + ".",
    ]
    if t.winner_id is not None and t.winner_id in users:
        lines.append(f"Winner: {users[t.winner_id].userid}.")
    lines.append("")
    if t.status == "open":
        lines.append(f"Joined ({len(entrants)}):")
        lines += [f"  {u.userid}" for _, u in entrants]
        return lines
    done = [r for r in rows if r.score is not None or r.round < t.round]
    table = standings(_seeded(entrants), results_of(done), t.system)
    withdrawn = [f"{u.userid} (round {e.withdrawn_round})" for e, u in entrants if e.withdrawn_round is not None]
    lines += ["Standings:", *table_lines(t, table, users)]
    if withdrawn:
        lines.append(f"Withdrawn: {', '.join(withdrawn)}")
    if t.system in ("roundrobin", "double"):
        lines += ["", "Crosstable:", *crosstable_lines(_seeded(entrants), rows, users)]
    for round_no in range(1, t.round + 1):
        lines += ["", f"Round {round_no}:"]
        lines += ["  " + game_line(t, r, users, boards) for r in rows if r.round == round_no]
    return lines


def crosstable_lines(seeded: list[int], rows: Sequence[TournamentGame], users: dict[int, User]) -> list[str]:
    cross = crosstable(seeded, results_of(rows))
    width = max((len(users[p].userid) for p in seeded if p in users), default=6)
    head = " " * (width + 6) + " ".join(f"{i:>3}" for i in range(1, len(seeded) + 1)) + "  total"
    lines = [head]
    for i, p in enumerate(seeded, start=1):
        cells = []
        for q in seeded:
            if q == p:
                cells.append("  x")
                continue
            got = cross.get(p, {}).get(q, [])
            cells.append(f"{''.join(CROSS_TEXT[v] for v in got) or '.':>3}")
        total = sum(sum(v) for v in cross.get(p, {}).values())
        lines.append(
            f"  {i:>2}. {users[p].userid if p in users else '?':<{width}} " + " ".join(cells) + f"  {points_text(total)}"
        )
    return lines


def opened(session: AsyncSession) -> list[int]:
    """The boards tournaments opened in ``session``'s transaction (a robot may be
    the first to move on one)."""
    return list(session.info.get(OPENED, ()))


__all__ = ["board_score", "describe", "opened", "settle", "start", "sweep", "tournament"]
