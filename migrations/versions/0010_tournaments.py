"""Tournaments (issue 41): tournaments, their entrants, their rounds' pairings

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28 14:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # being written (issue 41)


def downgrade() -> None:
    pass
