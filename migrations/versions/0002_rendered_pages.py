"""Rendered pages of finished runs (served after a restart without rendering again).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 02:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "rendered_pages",
        sa.Column("run_id", sa.String(length=24), nullable=False),
        sa.Column("renderer", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reused_from", sa.String(length=24), nullable=True),
        sa.Column("head", sa.LargeBinary(), nullable=False),
        sa.Column("tail", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_rendered_pages_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_rendered_pages")),
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table("rendered_pages")
