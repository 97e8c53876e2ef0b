"""Resolved custom platform tables stored once, by hash: `platform_tables(hash, json)`, and each
run's `platform_table_hash`; existing runs' inline tables moved there (and back on downgrade).
Beside them, what the queue caps count: each run's `expected_events` and `client` (null for the
runs before: they count for nobody).

A run's stored config keeps `"platform_table":null` where its table was; the table's JSON is the
exact text that stood there, so putting it back gives the same bytes.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 01:20:00.000000
"""

import hashlib
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NO_TABLE = '"platform_table":null'
TABLE_KEY = '"platform_table":'
BATCH = 200  # runs moved per statement batch: a few MB of configs at a time

runs = sa.table(
    "runs",
    sa.column("id", sa.String),
    sa.column("config", sa.Text),
    sa.column("platform_table_hash", sa.String),
)
platform_tables = sa.table("platform_tables", sa.column("hash", sa.String), sa.column("json", sa.Text))


def split(config: str) -> tuple[str, str] | None:
    """(the config with null for its table, the table's JSON text), or None if it has none inline."""
    at = config.find(TABLE_KEY + "{")
    if at < 0:
        return None
    start = at + len(TABLE_KEY)
    _, end = json.JSONDecoder().raw_decode(config, start)
    return config[:at] + NO_TABLE + config[end:], config[start:end]


def upgrade() -> None:
    """Upgrade schema, then move every inline table."""
    op.create_table(
        "platform_tables",
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("hash", name=op.f("pk_platform_tables")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("expected_events", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("client", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("platform_table_hash", sa.String(length=64), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_runs_platform_table_hash_platform_tables"), "platform_tables",
            ["platform_table_hash"], ["hash"],
        )  # fmt: skip
    conn = op.get_bind()
    stored: set[str] = set()
    after = ""
    while True:
        ids = conn.execute(
            sa.select(runs.c.id)
            .where(runs.c.id > after, runs.c.config.like(f"%{TABLE_KEY}{{%"))
            .order_by(runs.c.id)
            .limit(BATCH)
        ).scalars().all()  # fmt: skip
        if not ids:
            break
        after = ids[-1]
        for run_id in ids:
            config = conn.execute(sa.select(runs.c.config).where(runs.c.id == run_id)).scalar_one()
            parts = split(config)
            if parts is None:
                continue
            rest, table = parts
            digest = hashlib.sha256(table.encode()).hexdigest()
            if digest not in stored and conn.execute(
                sa.select(platform_tables.c.hash).where(platform_tables.c.hash == digest)
            ).first() is None:  # fmt: skip
                conn.execute(platform_tables.insert().values(hash=digest, json=table))
            stored.add(digest)
            conn.execute(
                runs.update().where(runs.c.id == run_id).values(config=rest, platform_table_hash=digest)
            )


def downgrade() -> None:
    """Put every table back inside its runs' configs, then downgrade schema."""
    table = (
        sa.select(platform_tables.c.json)
        .where(platform_tables.c.hash == runs.c.platform_table_hash)
        .scalar_subquery()
    )
    op.get_bind().execute(
        runs.update()
        .where(runs.c.platform_table_hash.is_not(None))
        .values(config=sa.func.replace(runs.c.config, NO_TABLE, sa.literal(TABLE_KEY, sa.Text) + table))
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        fk = batch_op.f("fk_runs_platform_table_hash_platform_tables")
        batch_op.drop_constraint(fk, type_="foreignkey")
        batch_op.drop_column("platform_table_hash")
        batch_op.drop_column("client")
        batch_op.drop_column("expected_events")
    op.drop_table("platform_tables")
