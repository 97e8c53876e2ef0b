"""A counter of changes to runs (list answers are cached under it), and one IPI definition in the
summary columns: `ipis_sent`/`ipis_avoided` count calls and scheduler wake-ups together.

Revision ID: 0005
Revises: 0004_measurements
Create Date: 2026-12-01 12:40:00.000000
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004_measurements"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_runs = sa.table(
    "runs",
    sa.column("id", sa.String),
    sa.column("result", sa.LargeBinary),
    sa.column("ipis_sent", sa.Integer),
    sa.column("ipis_avoided", sa.Integer),
)


def _recount(total: bool) -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.select(_runs.c.id, _runs.c.result).where(_runs.c.result.is_not(None)))
    for run_id, result in rows.all():
        ipi = json.loads(bytes(result))["ipi"]  # bytes: PostgreSQL answers a memoryview
        extra = {k: ipi[f"sched_ipis_{k}"] if total else 0 for k in ("sent", "avoided")}
        conn.execute(
            _runs.update()
            .where(_runs.c.id == run_id)
            .values(
                ipis_sent=ipi["ipis_sent"] + extra["sent"],
                ipis_avoided=ipi["ipis_avoided"] + extra["avoided"],
            )
        )


def upgrade() -> None:
    """Upgrade schema."""
    table = op.create_table(
        "run_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_changes")),
    )
    op.bulk_insert(table, [{"id": 1, "count": 0}])
    _recount(total=True)


def downgrade() -> None:
    """Downgrade schema."""
    _recount(total=False)
    op.drop_table("run_changes")
