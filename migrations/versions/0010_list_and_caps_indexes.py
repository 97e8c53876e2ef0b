"""An index per sortable summary column for the runs list: `(unlisted, sweep_id, <column>, id)`,
the list query's filter, sort key and tie-breaker, so a page is an index walk and its total a
covering count instead of a scan and sort of every run; and `(status, client, expected_events)`
over the active runs (partial), which covers the queue caps' sums that every submission reads.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 14:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# `app.core.models.SORTABLE_COLUMNS` at this revision (a migration does not follow the models).
SORTABLE = (
    "title", "status", "created_at", "finished_at", "wall_s", "platform", "governor", "mechanism",
    "cpus", "duration_ms", "seed", "busy_share", "wakeups", "events", "wake_latency_mean_ns",
    "wake_latency_p99_ns", "intr_latency_mean_ns", "intr_latency_p99_ns", "ipis_sent",
    "ipis_avoided", "energy_joules",
)  # fmt: skip


CAPS_INDEX = "ix_runs_active_client_expected_events"
ACTIVE_WHERE = "status IN ('queued', 'running')"


def upgrade() -> None:
    op.create_index(
        CAPS_INDEX, "runs", ["status", "client", "expected_events"],
        sqlite_where=sa.text(ACTIVE_WHERE), postgresql_where=sa.text(ACTIVE_WHERE),
    )  # fmt: skip
    for name in SORTABLE:
        op.create_index(f"ix_runs_listed_{name}", "runs", ["unlisted", "sweep_id", name, "id"])


def downgrade() -> None:
    for name in SORTABLE:
        op.drop_index(f"ix_runs_listed_{name}", table_name="runs")
    op.drop_index(CAPS_INDEX, table_name="runs")
