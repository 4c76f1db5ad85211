"""Digests, reminders and the timers' clock (issue 40 items 1, 2, 5, 6)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28 14:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # being written (issue 40)


def downgrade() -> None:
    pass
