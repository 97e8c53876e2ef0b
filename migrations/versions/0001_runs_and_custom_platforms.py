"""Runs (with summary columns) and custom platforms.

Revision ID: 0001
Revises:
Create Date: 2026-11-30 20:39:09.795809
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "custom_platforms",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("based_on", sa.String(length=64), nullable=False),
        sa.Column("states", sa.Text(), nullable=False),
        sa.Column("table", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_custom_platforms")),
    )
    with op.batch_alter_table("custom_platforms", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_custom_platforms_created_at"), ["created_at"], unique=False)

    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("unlisted", sa.Boolean(), nullable=False),
        sa.Column("delete_token_hash", sa.String(length=64), nullable=False),
        sa.Column("config_hash", sa.String(length=64), nullable=False),
        sa.Column("engine_version", sa.String(length=200), nullable=False),
        sa.Column("reused_from", sa.String(length=24), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("wall_s", sa.Float(), nullable=True),
        sa.Column("compile_s", sa.Float(), nullable=True),
        sa.Column("platform", sa.String(length=64), nullable=False),
        sa.Column("governor", sa.String(length=32), nullable=False),
        sa.Column("mechanism", sa.String(length=32), nullable=False),
        sa.Column("cpus", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("busy_share", sa.Float(), nullable=True),
        sa.Column("wakeups", sa.Integer(), nullable=True),
        sa.Column("events", sa.BigInteger(), nullable=True),
        sa.Column("wake_latency_mean_ns", sa.Float(), nullable=True),
        sa.Column("wake_latency_p99_ns", sa.Float(), nullable=True),
        sa.Column("intr_latency_mean_ns", sa.Float(), nullable=True),
        sa.Column("intr_latency_p99_ns", sa.Float(), nullable=True),
        sa.Column("ipis_sent", sa.Integer(), nullable=True),
        sa.Column("ipis_avoided", sa.Integer(), nullable=True),
        sa.Column("energy_joules", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("result", sa.LargeBinary(), nullable=True),
        sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name=op.f("ck_runs_status")),
        sa.CheckConstraint("progress >= 0 AND progress <= 1", name=op.f("ck_runs_progress")),
        sa.ForeignKeyConstraint(
            ["reused_from"], ["runs.id"], name=op.f("fk_runs_reused_from_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_runs_config_hash_engine_version", ["config_hash", "engine_version"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_runs_governor"), ["governor"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_mechanism"), ["mechanism"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_platform"), ["platform"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_reused_from"), ["reused_from"], unique=False)
        batch_op.create_index("ix_runs_status_created_at", ["status", "created_at"], unique=False)
        batch_op.create_index("ix_runs_unlisted_created_at", ["unlisted", "created_at"], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_unlisted_created_at")
        batch_op.drop_index("ix_runs_status_created_at")
        batch_op.drop_index(batch_op.f("ix_runs_reused_from"))
        batch_op.drop_index(batch_op.f("ix_runs_platform"))
        batch_op.drop_index(batch_op.f("ix_runs_mechanism"))
        batch_op.drop_index(batch_op.f("ix_runs_governor"))
        batch_op.drop_index("ix_runs_config_hash_engine_version")

    op.drop_table("runs")
    with op.batch_alter_table("custom_platforms", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_custom_platforms_created_at"))

    op.drop_table("custom_platforms")
