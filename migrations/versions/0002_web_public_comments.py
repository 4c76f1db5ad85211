"""web archive: users.public_comments

A user may hide their comments from the read-only web archive (issue 19); existing
users keep showing them (server default true), so the column is added without a
table rewrite on PostgreSQL and with batch mode on SQLite.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("public_comments", sa.Boolean(), server_default=sa.true(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("public_comments")
