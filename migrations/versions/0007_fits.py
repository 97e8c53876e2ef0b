"""Fits (machines' twins), and the imported dump kept with its custom platform (a twin is fitted
to its per-CPU counters).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 01:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "fits",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("platform", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("unlisted", sa.Boolean(), nullable=False),
        sa.Column("delete_token_hash", sa.String(length=64), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=False),
        sa.Column("cpus", sa.Integer(), nullable=False),
        sa.Column("engine_version", sa.String(length=200), nullable=False),
        sa.Column("claimed_by", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("evaluations", sa.Integer(), nullable=True),
        sa.Column("distance", sa.Float(), nullable=True),
        sa.Column("goal_met", sa.Boolean(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("history", sa.Text(), nullable=False),
        sa.Column("whatifs", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name=op.f("ck_fits_status")),
        sa.CheckConstraint("progress >= 0 AND progress <= 1", name=op.f("ck_fits_progress")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fits")),
    )
    op.create_index(op.f("ix_fits_platform"), "fits", ["platform"], unique=False)
    op.create_index("ix_fits_unlisted_created_at", "fits", ["unlisted", "created_at"], unique=False)
    op.create_index("ix_fits_status_created_at", "fits", ["status", "created_at"], unique=False)
    with op.batch_alter_table("custom_platforms", schema=None) as batch_op:
        batch_op.add_column(sa.Column("dump", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table("custom_platforms", schema=None) as batch_op:
        batch_op.drop_column("dump")
    op.drop_index("ix_fits_status_created_at", table_name="fits")
    op.drop_index("ix_fits_unlisted_created_at", table_name="fits")
    op.drop_index(op.f("ix_fits_platform"), table_name="fits")
    op.drop_table("fits")
