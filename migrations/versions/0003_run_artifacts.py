"""A finished run's page is stored in its row, with the render version that made it; `reused_from`
becomes plain text (it survives the original's deletion); the separate rendered pages go.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 11:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.drop_table("rendered_pages")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_runs_reused_from_runs"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_runs_reused_from"))
        batch_op.add_column(sa.Column("page", sa.LargeBinary(), nullable=True))
        batch_op.add_column(sa.Column("page_version", sa.String(length=64), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("page_version")
        batch_op.drop_column("page")
        batch_op.create_index(batch_op.f("ix_runs_reused_from"), ["reused_from"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_runs_reused_from_runs"), "runs", ["reused_from"], ["id"], ondelete="SET NULL"
        )
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
