"""Sweeps (a base config and axes; their points are runs), and the claims that let several
processes share one database: each run's claim and claiming runner, and runners' heartbeats.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 12:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "sweeps",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("unlisted", sa.Boolean(), nullable=False),
        sa.Column("delete_token_hash", sa.String(length=64), nullable=False),
        sa.Column("base", sa.Text(), nullable=False),
        sa.Column("axes", sa.Text(), nullable=False),
        sa.Column("n_points", sa.Integer(), nullable=False),
        sa.Column("cancelled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sweeps")),
    )
    op.create_index("ix_sweeps_unlisted_created_at", "sweeps", ["unlisted", "created_at"], unique=False)
    op.create_table(
        "runners",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runners")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sweep_id", sa.String(length=24), nullable=True))
        batch_op.add_column(sa.Column("sweep_index", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("claim", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("claimed_by", sa.String(length=32), nullable=True))
        batch_op.create_index(batch_op.f("ix_runs_sweep_id"), ["sweep_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_runs_sweep_id_sweeps"), "sweeps", ["sweep_id"], ["id"], ondelete="CASCADE"
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_runs_sweep_id_sweeps"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_runs_sweep_id"))
        batch_op.drop_column("claimed_by")
        batch_op.drop_column("claim")
        batch_op.drop_column("sweep_index")
        batch_op.drop_column("sweep_id")
    op.drop_table("runners")
    op.drop_index("ix_sweeps_unlisted_created_at", table_name="sweeps")
    op.drop_table("sweeps")
