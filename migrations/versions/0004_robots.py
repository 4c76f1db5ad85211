"""robot players (issue 17)

- ``users.robot_level``: the engine level of a robot player; None for people.
- the rows of ``robot1``, ``robot2`` and ``robot3`` (levels 1-3): a password hash
  with the deleted marker that no password matches (nobody logs in as a robot), no
  addresses (a robot is never mailed), accepting challenges.  They exist from this
  migration on, so nobody can sign up under their names.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 10:00:00.000000
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ROBOTS = {"robot1": 1, "robot2": 2, "robot3": 3}
"""as pbmserv_terrace.store.models.ROBOTS (a migration does not import the app)"""
ROBOT_HASH = "!robot"


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("robot_level", sa.Integer(), nullable=True))
    users = sa.table(
        "users",
        sa.column("userid", sa.String),
        sa.column("password_hash", sa.String),
        sa.column("addresses", sa.JSON),
        sa.column("signed_off", sa.Boolean),
        sa.column("accept_challenges", sa.Boolean),
        sa.column("challenge_limit", sa.Integer),
        sa.column("seek", sa.Integer),
        sa.column("vacation", sa.Boolean),
        sa.column("notify_all", sa.Boolean),
        sa.column("created_at", sa.DateTime),
        sa.column("public_comments", sa.Boolean),
        sa.column("key_generation", sa.Integer),
        sa.column("pictures", sa.Boolean),
        sa.column("robot_level", sa.Integer),
    )
    conn = op.get_bind()
    taken = set(conn.execute(sa.select(users.c.userid).where(users.c.userid.in_(list(ROBOTS)))).scalars())
    if taken:
        # a database where people signed up as robotN before robots existed: make
        # those accounts robots rather than fail the upgrade (their games stay)
        for userid in taken:
            conn.execute(
                users.update()
                .where(users.c.userid == userid)
                .values(robot_level=ROBOTS[userid], password_hash=ROBOT_HASH, addresses=[], signed_off=False)
            )
    now = datetime.now(UTC).replace(tzinfo=None)
    rows: list[dict[str, object]] = [
        {"userid": userid, "password_hash": ROBOT_HASH, "addresses": [], "signed_off": False, "accept_challenges": True,
         "challenge_limit": None, "seek": 0, "vacation": False, "notify_all": False, "created_at": now,
         "public_comments": True, "key_generation": 0, "pictures": False, "robot_level": level}
        for userid, level in ROBOTS.items()
        if userid not in taken
    ]  # fmt: skip
    if rows:
        op.bulk_insert(users, rows)


def downgrade() -> None:
    op.execute(sa.text("UPDATE users SET robot_level = NULL"))
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("robot_level")
