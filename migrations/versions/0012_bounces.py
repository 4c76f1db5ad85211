"""Bounces (issue 43 part 3): bounce events per address, and addresses marked bouncing

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28 14:10:00.000000
"""

from collections.abc import Sequence

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # being written (issue 43 part 3)


def downgrade() -> None:
    pass
