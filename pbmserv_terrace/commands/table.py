"""Every mail command, declared once (issue 37): its verb, the family of games it
belongs to, where its password stands, whether it stays on one board, its usage
line and its lines in the help.

Who reads it:

- the parser (:mod:`.parse`): the verbs of each game, the aliases and the
  abbreviations;
- the password masking (:func:`.parse.redact`, :func:`.parse.may_hold_password`)
  and the service's early password checks (``Registry.credentials``):
  :meth:`CommandDecl.password_words`, :meth:`CommandDecl.credentials`;
- the ordering of mails (``Service.conflict_keys``): :attr:`CommandDecl.per_board`;
- the service's handlers (``@command("move", game=True)`` binds to the
  declaration; ``build_registry`` refuses a handler without a declaration and a
  declaration without a handler) and their error replies (the usage line);
- the help: ``help commands`` (``templates/help_commands.txt``, written by
  :func:`help_commands_template` and checked by a test) and a solitaire's help
  (:func:`help_entries`).

The account commands and the commands of each family of games are here; a game
gets its family's commands by being of that family.  A solitaire's own extra
verbs that are only moves (patience's ``base`` and ``flip``) come from its rules'
``move_verbs`` and are declared here from that (:func:`commands_of`).
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from ..gametypes import GAME_TYPES, Family

PasswordAt = int | Callable[[Sequence[str]], int | None] | None
"""where PASSWORD stands in a command's words (the words after the verb), with
USERID just before it: an index, a function of the words (a command of several
forms), or None"""
HelpEntry = tuple[str, str]
"""(a form of the command as the help writes it, what it does)"""

MOVE_VERB = "(move verb)"
"""the verb of the solitaire handler that plays a game's extra move words
(patience's ``flip``, ``base 7h``); never written by a player"""


@dataclass(frozen=True)
class CommandDecl:
    """One command of one family of games (or an account command)."""

    verb: str
    family: Family | None
    """``board``, ``solitaire``, or None for an account command"""
    usage: str
    """its forms for error replies, ``|`` between them (a game command's are
    shown after the game's name: ``terrace move BOARD …``)"""
    help: tuple[HelpEntry, ...] = ()
    """its lines in the help (``help commands``, a solitaire's help)"""
    password_at: PasswordAt = None
    """where the player's PASSWORD stands; USERID is the word before it"""
    masked: tuple[int, ...] = ()
    """further words masked in quotes and logs (never checked as a password):
    ``change password``'s new one, a word that may be a password"""
    authenticates: bool = True
    """the command checks PASSWORD against USERID (``signup`` sets it instead), so
    ``serve`` may start the check before the transaction"""
    per_board: bool = False
    """``VERB BOARD USERID PASSWORD …`` whose effects stay on that board, its
    players' ratings and the sender: such mails run side by side with mails of
    other boards (``Service.conflict_keys``); any other command runs alone, in
    order against every other mail"""
    aliases: tuple[str, ...] = ()
    abbreviation: str = ""
    """the shortest prefix of the verb that means it (``chall`` …)"""
    handled: bool = True
    """a service handler answers it (``multiple`` is expanded by the parser)"""
    runs: str = ""
    """the verb of the handler that answers it, when not its own (a solitaire's
    move words run :data:`MOVE_VERB`'s)"""

    def password_index(self, words: Sequence[str]) -> int | None:
        at = self.password_at
        return at(words) if callable(at) else at

    def password_words(self, words: Sequence[str]) -> set[str]:
        """The words of ``words`` that are (or may be) a password."""
        found = {words[i] for i in self.masked if i < len(words)}
        at = self.password_index(words)
        if at is not None and at < len(words):
            found.add(words[at])
        return found

    def credentials(self, words: Sequence[str]) -> tuple[str, str] | None:
        """(USERID, PASSWORD) the command will authenticate with, if it does."""
        at = self.password_index(words) if self.authenticates else None
        if at is None or at < 1 or at >= len(words):
            return None
        return words[at - 1].lower(), words[at]


def _challenge_password(words: Sequence[str]) -> int | None:
    """``challenge USERID PASSWORD OPPONENT…`` has three words or more (whether the
    second is a password or a player is known only from the database)."""
    return 1 if len(words) >= 3 else None


def _board_first(words: Sequence[str]) -> int:
    """``subscribe BOARD USERID PASSWORD`` or ``subscribe USERID PASSWORD all``."""
    return 2 if not words or words[0].split("#")[0].isdigit() else 1


def _tournament_password(words: Sequence[str]) -> int | None:
    """``tournament new USERID PASSWORD …``, ``tournament join T USERID PASSWORD``
    (and leave, start, add, withdraw); ``show`` and ``list`` have none."""
    sub = words[0].lower() if words else ""
    if sub == "new":
        return 2
    return 3 if sub in ("join", "leave", "start", "add", "withdraw") else None


def help_topic_names() -> list[str]:
    """The topics ``help TOPIC`` knows, as its usage and its refusal list them: the
    commands, each board game's rules (its first help topic), the tutorial, replying,
    the board, each solitaire."""
    games = [g.help_topics[0] for g in GAME_TYPES.values() if g.family == "board" and g.help_topics]
    solitaires = [g.help_topics[0] for g in GAME_TYPES.values() if g.family == "solitaire" and g.help_topics]
    return list(dict.fromkeys(["commands", *games, "tutorial", "reply", "board", "tournament", *solitaires]))


ACCOUNT_COMMANDS: tuple[CommandDecl, ...] = (
    CommandDecl(
        "signup", None, "signup USERID PASSWORD [address ...]",
        (("signup U P [address...]", "create your account (alias: add); each address gets mail once it answers its "
          "confirmation mail"),
         ("confirm KEY", "(a Reply to a confirmation mail does this)")),
        password_at=1, authenticates=False, aliases=("add",),
    ),
    CommandDecl(
        "change", None,
        "change password USERID PASSWORD NEWPASSWORD | change address USERID PASSWORD [address ...] | change keys USERID "
        "PASSWORD | change pictures USERID PASSWORD on|off | change public USERID PASSWORD on|off | change digest USERID "
        "PASSWORD daily HH:MM [TIMEZONE] | change digest USERID PASSWORD twice HH:MM HH:MM [TIMEZONE] | change digest "
        "USERID PASSWORD off | change remind USERID PASSWORD HOURS|off | change review USERID PASSWORD on|off",
        (("change password U P NEW", "new password"),
         ("change address U P [address...]", "where your mail goes"),
         ("change keys U P", "cancel the reply addresses of your mails so far"),
         ("change pictures U P on|off", "board mails with a picture, or text only"),
         ("change public U P on|off", "your comments in the web archive, or hidden"),
         ("change digest U P daily HH:MM [ZONE]", "opponents' moves in one mail a day (Reply: a line per board;"
          " game ends, new boards, chat, reminders and errors still at once)"),
         ("change digest U P twice HH:MM HH:MM [ZONE]", "the same, twice a day"),
         ("change digest U P off", "a mail for every move again (the default)"),
         ("change remind U P HOURS|off", "one reminder per board and turn when fewer HOURS are left before a forfeit"),
         ("change review U P on|off", "a review by mail after each finished game: where it turned, the biggest "
          "mistakes and better moves (on by default)")),
        password_at=2, masked=(3,),
    ),
    CommandDecl("signoff", None, "signoff USERID PASSWORD", (("signoff U P", "stop mail"),), password_at=1),
    CommandDecl("delete", None, "delete USERID PASSWORD", (("delete U P", "delete the account (games are forfeited)"),),
                password_at=1),
    CommandDecl("help", None, f"help [{'|'.join(help_topic_names())}]",
                (("help [topic]", "help on a topic ('help' lists the topics)"),)),
    CommandDecl("list", None, "list [GAME]", (("list [game]", "the games this server runs and their boards"),)),
    CommandDecl("message", None, "message USERID PASSWORD TO_USERID ...  (the body is the message)",
                (("message U P TO...", "mail the body to users TO..."),), password_at=1),
    CommandDecl("broadcast", None, "broadcast USERID PASSWORD  (the body is the message)",
                (("broadcast U P", "mail the body to every user"),), password_at=1),
    CommandDecl("all", None, "all show USERID [next|active]", (("all show U [next|active]", "show your boards of every game"),)),
    CommandDecl("status", None, "status USERID PASSWORD",
                (("status U P", "your boards (yours to move first), settings and ratings; it shows your addresses, "
                  "so it needs your password"),), password_at=1),
    CommandDecl("multiple", None, "multiple  (then one command per line of the body, up to the first blank line)",
                (("multiple", "one command per body line, up to a blank line"),), handled=False),
)  # fmt: skip
"""the commands that name no game"""

BOARD_COMMANDS: tuple[CommandDecl, ...] = (
    CommandDecl(
        "challenge", "board",
        "challenge USERID PASSWORD OPPONENT [OPPONENT [OPPONENT]] [-long|-medium|-short|-master] [--nagtime=DAYS] "
        "[--forfeittime=DAYS] [--totaltime=DAYS] [--clock=BANK+INCREMENT[/CAP][,auto]] [--weekends] | challenge USERID1 USERID2 [USERID3 [USERID4]] [...]  (without a "
        "password: confirmed by Reply from USERID's registered address)",
        (("challenge U P OPPONENT... [-long|-medium|-short|-master] [--nagtime=D] [--forfeittime=D] [--totaltime=D]",
          "a new board at once (you sit first)"),
         ("  --clock=BANK+INC[/CAP][,auto]", "a time bank in days (h: hours), e.g. --clock=10+2/20 or --clock=36h+12h: "
          "it runs on your turn and gains INC after each move, up to CAP; when it runs out the opponent may claim "
          "the win (,auto: you lose at once)"),
         ("  --weekends", "clocks stop on Saturdays and Sundays (in your digest's time zone, else UTC)"),
         ("challenge U1 U2 [U3 [U4]] ...", "without a password: confirmed by Reply from your registered address before "
          "it opens")),
        # the second word is masked whichever form it is (issue 36): it is a password
        # unless it names a player
        password_at=_challenge_password, masked=(1,), abbreviation="chall",
    ),
    CommandDecl(
        "move", "board",
        "move BOARD USERID PASSWORD MOVE[#k] | move BOARD USERID PASSWORD propose|accept|reject|undo|resign|claim",
        (("move N U P MOVE[#k]", "play a move (#k: the ply number it must be)"),
         ("move N U P propose|accept|reject", "draw offer and vote"),
         ("move N U P undo", "ask to take back the last ply (voted like a draw)"),
         ("move N U P resign", "resign (also: resign N U P)"),
         ("move N U P claim", "claim the win when the opponent's clock has run out")),
        password_at=2, per_board=True, aliases=("board", "mvoe"),
    ),
    CommandDecl("resign", "board", "resign BOARD USERID PASSWORD", password_at=2, per_board=True),
    CommandDecl("queue", "board", "queue BOARD USERID PASSWORD MOVE",
                (("queue N U P MOVE", "play MOVE automatically when your turn comes"),), password_at=2, per_board=True),
    CommandDecl("submit", "board", "submit BOARD USERID PASSWORD MOVE[#k]",
                (("submit N U P MOVE[#k]", "two-step move: mails you a preview of it first"),), password_at=2, per_board=True),
    CommandDecl("confirm", "board", "confirm BOARD USERID PASSWORD | confirm KEY  (the reply to a confirmation mail)",
                (("confirm N U P", "play the move you submitted"),), password_at=2, per_board=True),
    CommandDecl("rematch", "board", "rematch BOARD USERID PASSWORD",
                (("rematch N U P", "after board N ended: a new board, same players, setup and options, the seats "
                  "turned by one (two players: colours swapped); by Reply: rematch"),),
                password_at=2),
    CommandDecl("preview", "board",
                "preview BOARD[#k] MOVE ... | preview new PLAYERS [-long|-medium|-short|-master] MOVE ...",
                (("preview N[#k] MOVE...", "try moves on a board; nothing is saved"),
                 ("preview new K [-variant] MOVE...", "try moves on a new K-player board")), abbreviation="prev"),
    CommandDecl("chat", "board", "chat BOARD USERID PASSWORD  (the body is the message)",
                (("chat N U P", "mail the body to the players and subscribers of N"),), password_at=2, per_board=True),
    CommandDecl("show", "board", "show BOARD[#k] ... | show USERID ... [active|inactive|next|all]",
                (("show N[#k]...", "the boards (as they were at ply k)"),
                 ("show U... [active|inactive|next|all]", "the boards of players U...")),),
    CommandDecl("showas", "board",
                "showas USERID PASSWORD BOARD ... | showas USERID PASSWORD [active|inactive|next|all]",
                (("showas U P N...", "show, with your queued and submitted moves"),), password_at=1),
    CommandDecl("games", "board", "games [USERID ...] [active|inactive|next|all]",
                (("games [U...] [active|inactive|next|all]", "the boards in one table"),)),
    CommandDecl("standings", "board", "standings", (("standings", "the ratings (alias: ratings)"),), aliases=("ratings",)),
    CommandDecl("history", "board", "history", (("history", "the finished games"),)),
    CommandDecl("analyze", "board", "analyze BOARD[#k]",
                (("analyze N[#k]", "after board N ended: the robot's three best moves after ply k (default: the "
                  "last move to choose), each with its score and line, by mail"),),
                aliases=("analyse",)),
    CommandDecl("help", "board", "help", (("help", "the rules and the notation"),)),
    CommandDecl("subscribe", "board", "subscribe BOARD USERID PASSWORD | subscribe USERID PASSWORD all",
                (("subscribe N U P", "watch board N (U P all: every new board)"),),
                password_at=_board_first, abbreviation="sub"),
    CommandDecl("unsubscribe", "board", "unsubscribe BOARD USERID PASSWORD | unsubscribe USERID PASSWORD all",
                (("unsubscribe N U P", "stop watching N (U P all: new boards)"),),
                password_at=_board_first, abbreviation="unsub"),
    CommandDecl("notify", "board", "notify USERID PASSWORD [BOARD ...]",
                (("notify U P [N...]", "toggle mail when games end"),), password_at=1),
    CommandDecl("accept", "board", "accept USERID PASSWORD  (accept challenges)",
                (("accept U P", "accept challenges"),), password_at=1),
    CommandDecl("reject", "board", "reject USERID PASSWORD  (refuse challenges)",
                (("reject U P", "refuse challenges"),), password_at=1),
    CommandDecl("limit", "board", "limit USERID PASSWORD [n|inf|0]",
                (("limit U P [n|inf|0]", "the most active games you take on"),), password_at=1),
    CommandDecl("seek", "board", "seek USERID PASSWORD n", (("seek U P n", "the games you look for"),), password_at=1),
    CommandDecl("vacation", "board", "vacation USERID PASSWORD on [DAYS] | vacation USERID PASSWORD off",
                (("vacation U P on [DAYS]", "every clock of yours stops (for DAYS; the year's vacation days are "
                  "limited: status shows those left); your opponents are told"),
                 ("vacation U P off", "back: your clocks run again")), password_at=1),
    CommandDecl(
        "tournament", "board",
        "tournament new USERID PASSWORD NAME -roundrobin|-double|-swiss ROUNDS|-knockout [--players=MIN-MAX] "
        "[--start=YYYY-MM-DD] [-long|-medium|-short|-master] [--nagtime=DAYS] [--forfeittime=DAYS] [--totaltime=DAYS] | "
        "tournament join|leave|start|withdraw T USERID PASSWORD | tournament add T USERID PASSWORD robotN | "
        "tournament show T | tournament list",
        (("tournament new U P NAME -roundrobin|-double|-swiss R|-knockout [--players=MIN-MAX] [--start=YYYY-MM-DD] "
          "[-setup] [--nagtime=D] [--forfeittime=D] [--totaltime=D]", "open a tournament that you organize "
          "(help tournament)"),
         ("tournament join|leave T U P", "enter tournament T, or leave it before it starts"),
         ("tournament start T U P", "the organizer starts it (else it starts on its --start day)"),
         ("tournament add T U P robotN", "the organizer seats a robot"),
         ("tournament withdraw T U P", "stop playing in it: your games in play are forfeited"),
         ("tournament show T", "its table, crosstable and every round's boards"),
         ("tournament list", "the tournaments")),
        password_at=_tournament_password, abbreviation="tourn",
    ),
    CommandDecl("list", "board", "list"),
)  # fmt: skip
"""the commands of every board game (``terrace …``, ``terrace6x6 …``)"""

OWN = "BOARD USERID PASSWORD"
SOLITAIRE_COMMANDS: tuple[CommandDecl, ...] = (
    CommandDecl("new", "solitaire", "new USERID PASSWORD [-VARIANT] [--deal=N|today]",
                (("new USERID PASSWORD [-VARIANT] [--deal=N|today]", "start a deal (a random one without --deal)"),),
                password_at=1),
    CommandDecl("move", "solitaire", f"move {OWN} MOVE [MOVE …]",
                ((f"move {OWN} MOVE [MOVE ...]", "several moves, played in order"),), password_at=2, per_board=True,
                aliases=("board", "mvoe")),
    CommandDecl(MOVE_VERB, "solitaire", "", password_at=2, per_board=True),
    CommandDecl("undo", "solitaire", f"undo {OWN} [COUNT]", ((f"undo {OWN} [COUNT]", "take moves back (counted)"),),
                password_at=2),
    CommandDecl("hint", "solitaire", f"hint {OWN}", ((f"hint {OWN}", "one good move from the solver (counted)"),),
                password_at=2),
    CommandDecl("resign", "solitaire", f"resign {OWN}", ((f"resign {OWN}", "end the game with its score"),), password_at=2,
                per_board=True),
    CommandDecl("show", "solitaire", "show BOARD", (("show BOARD", "the table as it is"),)),
    CommandDecl("games", "solitaire", "games [USERID]", (("games [USERID]", "your boards"),)),
    CommandDecl("deal-of-the-day", "solitaire", "deal-of-the-day [-VARIANT]",
                (("deal-of-the-day [-VARIANT]", "the day's deals, the same for everyone"),)),
    CommandDecl("standings", "solitaire", "standings",
                (("standings", "the ranking on deals played by several players"),), aliases=("ratings",)),
    CommandDecl("help", "solitaire", "help"),
)  # fmt: skip
"""the commands of every solitaire (``patience …``); :data:`MOVE_VERB` stands
where the game's own move words go"""

FAMILY_COMMANDS: Mapping[Family | None, tuple[CommandDecl, ...]] = {
    None: ACCOUNT_COMMANDS,
    "board": BOARD_COMMANDS,
    "solitaire": SOLITAIRE_COMMANDS,
}


def _move_word(verb: str, args: Sequence[str], template: CommandDecl) -> CommandDecl:
    """A solitaire's own move word (``base CARD``) as a command of its own."""
    form = " ".join([verb, OWN, *args])
    same = " ".join(["move", OWN, verb, *args])
    return replace(template, verb=verb, usage=form, help=((form, f"the same as: {same}"),), runs=MOVE_VERB)


@functools.cache
def commands_of(game_type: str | None) -> Mapping[str, CommandDecl]:
    """The commands of game ``game_type`` (None: the account commands) by verb, in
    the help's order: its family's, and a solitaire's own move words."""
    if game_type is None:
        return MappingProxyType({d.verb: d for d in ACCOUNT_COMMANDS})
    kind = GAME_TYPES[game_type]
    found: dict[str, CommandDecl] = {}
    for decl in FAMILY_COMMANDS[kind.family]:
        if decl.verb == MOVE_VERB:
            for verb, args in kind.solitaire.move_verbs.items():
                found[verb] = _move_word(verb, args, decl)
        else:
            found[decl.verb] = decl
    return MappingProxyType(found)


def decl_of(game_type: str | None, verb: str) -> CommandDecl | None:
    """The declaration of ``verb`` for game ``game_type`` (None: an account command)."""
    if game_type is not None and game_type not in GAME_TYPES:
        return None
    return commands_of(game_type).get(verb)


def _every() -> tuple[CommandDecl, ...]:
    return tuple(d for name in (None, *GAME_TYPES) for d in commands_of(name).values())


ACCOUNT_VERBS: tuple[str, ...] = tuple(commands_of(None))
GAME_VERBS: tuple[str, ...] = tuple(dict.fromkeys(v for name in GAME_TYPES for v in commands_of(name)))
"""every game command word of every game"""


def _words_of(pairs: Sequence[tuple[str, str]], what: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for word, verb in pairs:
        if found.setdefault(word, verb) != verb:
            raise ValueError(f"the {what} {word!r} means both {found[word]!r} and {verb!r}")
    return found


ALIASES: Mapping[str, str] = _words_of([(a, d.verb) for d in _every() for a in d.aliases], "alias")
"""``add`` → ``signup``, ``board`` → ``move`` …"""
PREFIXES: Mapping[str, str] = _words_of([(d.abbreviation, d.verb) for d in _every() if d.abbreviation], "abbreviation")
"""``chall`` → ``challenge``: any prefix of the verb from this one on means it"""


# ------------------------------------------------------------------ help
HELP_COLUMN = 33
"""where the help's descriptions start"""
HELP_WIDTH = 82
HELP_FORM_WIDTH = 60
"""a longer form goes on in a second line"""


def help_entries(game_type: str | None) -> list[HelpEntry]:
    """The help lines of a game's (or the account) commands, in the table's order."""
    return [entry for decl in commands_of(game_type).values() for entry in decl.help]


def _help_block(entries: Sequence[HelpEntry]) -> list[str]:
    """Each form at column 2, its description at :data:`HELP_COLUMN` (after the
    form when it fits, else on the lines below), wrapped at :data:`HELP_WIDTH`."""
    lines: list[str] = []
    pad = " " * HELP_COLUMN
    for form, what in entries:
        head = textwrap.wrap(form, HELP_FORM_WIDTH, initial_indent="  ", subsequent_indent=" " * 12, break_on_hyphens=False)
        text = textwrap.wrap(what, HELP_WIDTH - HELP_COLUMN, break_on_hyphens=False)
        last = head[-1]
        if text and len(last) < HELP_COLUMN:
            head[-1] = last.ljust(HELP_COLUMN) + text.pop(0)
        elif text and len(last) + 2 + len(text[0]) <= HELP_WIDTH and len(text) == 1:
            head[-1] = f"{last}  {text.pop(0)}"
        lines += head + [pad + t for t in text]
    return lines


def help_commands_template() -> str:
    """``templates/help_commands.txt`` as the declarations write it (a test checks
    that the file is this; write it again with
    ``python -c "from pbmserv_terrace.commands.table import help_commands_template as t; print(t(), end='')"
    > templates/help_commands.txt``)."""
    boards = [g.name for g in GAME_TYPES.values() if g.family == "board"]
    solitaires = [g.name for g in GAME_TYPES.values() if g.family == "solitaire"]
    own = "; ".join(f"help {name}" for name in solitaires)
    first = boards[0] if boards else ""
    lines = [
        "Commands (U = userid, P = password, N = board number; words are case-insensitive,",
        f"passwords are not).  Game commands start with the game: {' or '.join(boards)}",
        f"(the solitaire {' and '.join(solitaires)} has its own: {own})." if solitaires else "",
        "",
        "Accounts",
        *_help_block(help_entries(None)),
        "",
        f"Games ({' ... or '.join(boards)} ...)",
        *_help_block(help_entries(first)),
    ]
    return "\n".join(line for line in lines) + "\n"
