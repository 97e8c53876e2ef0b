"""Measurements imported from real machines (wult, turbostat), and an imported machine's view on
its custom platform.

Revision ID: 0004_measurements
Revises: 0003
Create Date: 2026-12-01 12:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0004_measurements"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "measurements",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("unlisted", sa.Boolean(), nullable=False),
        sa.Column("delete_token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("view", sa.LargeBinary(), nullable=False),
        sa.Column("files", sa.LargeBinary(), nullable=False),
        sa.CheckConstraint("kind IN ('wult', 'turbostat')", name=op.f("ck_measurements_kind")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_measurements")),
    )
    op.create_index(
        "ix_measurements_unlisted_created_at", "measurements", ["unlisted", "created_at"], unique=False
    )
    with op.batch_alter_table("custom_platforms", schema=None) as batch_op:
        batch_op.add_column(sa.Column("machine", sa.Text(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table("custom_platforms", schema=None) as batch_op:
        batch_op.drop_column("machine")
    op.drop_index("ix_measurements_unlisted_created_at", table_name="measurements")
    op.drop_table("measurements")
