"""Persistence: models, repositories, the Unit of Work, engines and migrations."""

from .analyses import Analyses, Analysis
from .bounces import BounceEvent, Bounces
from .confirmations import Confirmation, Confirmations
from .counters import PasswordFailure, ThrottleMark, ThrottleNotice
from .db import DEFAULT_DATABASE_URL, Database, normalise_url, utcnow
from .digests import Digest, DigestEntry, Digests, TimerRun
from .models import (
    Base,
    BoardCounter,
    FinishedGame,
    Game,
    MoveRecord,
    Notifier,
    OutboxMessage,
    ProcessedMessage,
    Rating,
    Seat,
    ServerSecret,
    Subscription,
    User,
)
from .queue import InboundQueue, QueuedMail, QueueListener
from .reviews import ReviewRecord, Reviews
from .tournaments import Tournament, TournamentEntrant, TournamentGame, Tournaments
from .uow import MailUndo, UnitOfWork

__all__ = [
    "DEFAULT_DATABASE_URL",
    "Analyses",
    "Analysis",
    "Base",
    "BoardCounter",
    "BounceEvent",
    "Bounces",
    "Confirmation",
    "Confirmations",
    "Database",
    "Digest",
    "DigestEntry",
    "Digests",
    "FinishedGame",
    "Game",
    "InboundQueue",
    "MailUndo",
    "MoveRecord",
    "Notifier",
    "OutboxMessage",
    "PasswordFailure",
    "ProcessedMessage",
    "QueueListener",
    "QueuedMail",
    "Rating",
    "ReviewRecord",
    "Reviews",
    "Seat",
    "ServerSecret",
    "Subscription",
    "ThrottleMark",
    "ThrottleNotice",
    "TimerRun",
    "Tournament",
    "TournamentEntrant",
    "TournamentGame",
    "Tournaments",
    "UnitOfWork",
    "User",
    "normalise_url",
    "utcnow",
]
