"""Queries on custom platforms (and the run a platform page shows beside them); callers commit."""

from __future__ import annotations

from collections.abc import Sequence

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

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
    states: Sequence[CState] | None = None,
    machine: str | None = None,
    dump: bytes | None = None,
) -> CustomPlatform:
    """Store `table` under its name; `states` as the user gave them (default: the table's); an
    imported machine's view and its dump (gzip)."""
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
