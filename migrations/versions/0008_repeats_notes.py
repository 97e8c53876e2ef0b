"""Repeats (a run's repeat count, every repeat's seed and summary, the statistics over them) and
notes (a user's plain text beside a run, sweep, measurement or fit).

Runs made before keep `repeats` and `summary_stats` null: a comparison reads their one repeat
from the stored result.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 01:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("repeat_count", sa.Integer(), server_default="1", nullable=False))
        batch_op.add_column(sa.Column("repeats", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("summary_stats", sa.Text(), nullable=True))
    op.create_table(
        "notes",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("target_id", sa.String(length=24), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("kind", "target_id", name=op.f("pk_notes")),
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table("notes")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("summary_stats")
        batch_op.drop_column("repeats")
        batch_op.drop_column("repeat_count")
