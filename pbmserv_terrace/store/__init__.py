"""Persistence: models, repositories, the Unit of Work, engines and migrations."""

from .db import DEFAULT_DATABASE_URL, Database, normalise_url, utcnow
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
from .uow import UnitOfWork

__all__ = [
    "DEFAULT_DATABASE_URL",
    "Base",
    "BoardCounter",
    "Database",
    "FinishedGame",
    "Game",
    "MoveRecord",
    "Notifier",
    "OutboxMessage",
    "ProcessedMessage",
    "Rating",
    "Seat",
    "ServerSecret",
    "Subscription",
    "UnitOfWork",
    "User",
    "normalise_url",
    "utcnow",
]
