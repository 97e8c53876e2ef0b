"""Queries on custom platforms (and the run a platform page shows beside them); callers commit."""

from __future__ import annotations

from collections.abc import Sequence

import orjson
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.core.errors import Conflict
from app.core.models import CustomPlatform, Run, utcnow
from engine import CState, Platform


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
) -> CustomPlatform:
    """Store `table` under its name; `states` as the user gave them (default: the table's).
    `Conflict` (409) when `limit` custom platforms are stored already."""
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
        created_at=utcnow(),
    )
    session.add(row)
    session.flush()
    return row


def run_status_and_result(session: Session, run_id: str) -> tuple[str, bytes | None] | None:
    """A run's status and result bytes (the platform page's simulation beside the counters)."""
    row = session.execute(select(Run.status, Run.result).where(Run.id == run_id)).first()
    return None if row is None else (row.status, row.result)
