"""Queries on custom platforms (and the run a platform page shows beside them); callers commit."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import orjson
from sqlalchemy import func, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.core.errors import Conflict
from app.core.models import NO_TABLE, TABLE_KEY, CustomPlatform, PlatformTable, Run, utcnow
from engine import CState, Platform, SimConfig


def get_platform(session: Session, name: str) -> CustomPlatform | None:
    return session.get(CustomPlatform, name)


def list_platforms(session: Session) -> list[CustomPlatform]:
    return list(session.scalars(select(CustomPlatform).order_by(CustomPlatform.name)))


def create_platform(
    session: Session,
    table: Platform,
    *,
    based_on: str,
    limit: int,
    states: Sequence[CState] | None = None,
    machine: str | None = None,
    dump: bytes | None = None,
) -> CustomPlatform:
    """Store `table` under its name; `states` as the user gave them (default: the table's); an
    imported machine's view and its dump (gzip). `Conflict` (409) when `limit` custom platforms are
    stored already."""
    stored = session.scalar(select(func.count()).select_from(CustomPlatform)) or 0
    if stored >= limit:
        raise Conflict(
            f"{stored} custom platforms are stored, the limit (IDLELAB_MAX_CUSTOM_PLATFORMS={limit}); "
            "delete one or raise the limit"
        )
    row = CustomPlatform(
        name=table.name,
        title=table.title,
        based_on=based_on,
        states=orjson.dumps([s.model_dump(mode="json") for s in (states or table.states)]).decode(),
        table=table.model_dump_json(),
        machine=machine,
        dump=dump,
        created_at=utcnow(),
    )
    session.add(row)
    session.flush()
    return row


def run_status_and_result(session: Session, run_id: str) -> tuple[str, bytes | None] | None:
    """A run's status and result bytes (the platform page's simulation beside the counters)."""
    row = session.execute(select(Run.status, Run.result).where(Run.id == run_id)).first()
    return None if row is None else (row.status, row.result)


def stored_config(session: Session, config: SimConfig) -> tuple[str, str | None]:
    """A config's JSON as a run stores it, and its custom table's hash (None: built in, or kept
    inline). The table goes to `platform_tables` once, by the sha256 of its JSON, and the config
    keeps null in its place; `Run.config` puts it back, the same bytes as the whole config's."""
    whole = config.model_dump_json()
    if config.platform_table is None:
        return whole, None
    table_json = config.platform_table.model_dump_json()
    stored = config.model_copy(update={"platform_table": None}).model_dump_json()
    if stored.count(NO_TABLE) != 1 or stored.replace(NO_TABLE, TABLE_KEY + table_json) != whole:
        return whole, None  # a serializer that does not split cleanly: the table stays inline
    digest = hashlib.sha256(table_json.encode()).hexdigest()
    _insert_table(session, digest, table_json)
    return stored, digest


def _insert_table(session: Session, digest: str, table_json: str) -> None:
    """Insert a table unless its hash is stored already (two submissions may race to it)."""
    values = {"hash": digest, "json": table_json}
    name = session.get_bind().dialect.name
    if name in ("sqlite", "postgresql"):
        dialect_insert = sqlite.insert if name == "sqlite" else postgresql.insert
        session.execute(
            dialect_insert(PlatformTable).values(values).on_conflict_do_nothing(index_elements=["hash"])
        )
    elif session.get(PlatformTable, digest) is None:
        session.execute(insert(PlatformTable).values(values))
