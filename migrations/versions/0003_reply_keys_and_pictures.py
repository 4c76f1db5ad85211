"""reply keys (issue 14) and board pictures (issue 16)

- ``server_secrets``: named secrets every worker shares; ``reply_keys`` (the HMAC
  key of reply addresses) is made here, on the first start that migrates, and
  replaced by ``pbmserv-terrace admin rotate-reply-keys``.
- ``users.key_generation``: bumped by a password change or ``change keys``; a reply
  key made for an older generation no longer verifies.
- ``users.pictures``: board mails with the picture (default) or plain text only.
- ``outbox.reply_to``, ``outbox.reply_key``: the Reply-To of a board mail to a
  player, and its key, so a reply that lost its ``+KEY`` is matched by its
  In-Reply-To (the outbox row's Message-ID, already unique).
- ``outbox.html``, ``outbox.picture``: the HTML part of a board mail and what its
  picture shows (drawn when the mail is sent, outside any transaction).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 10:00:00.000000
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    table = op.create_table(
        "server_secrets",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("value", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.bulk_insert(table, [{"name": "reply_keys", "value": secrets.token_hex(32)}])
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("key_generation", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("pictures", sa.Boolean(), server_default=sa.true(), nullable=False))
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reply_to", sa.String(length=320), nullable=True))
        batch_op.add_column(sa.Column("reply_key", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("html", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("picture", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("picture")
        batch_op.drop_column("html")
        batch_op.drop_column("reply_key")
        batch_op.drop_column("reply_to")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("pictures")
        batch_op.drop_column("key_generation")
    op.drop_table("server_secrets")
