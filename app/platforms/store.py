"""Queries on custom platforms; callers commit."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import CustomPlatform, utcnow


def get_platform(session: Session, name: str) -> CustomPlatform | None:
    return session.get(CustomPlatform, name)


def list_platforms(session: Session) -> list[CustomPlatform]:
    return list(session.scalars(select(CustomPlatform).order_by(CustomPlatform.name)))


def create_platform(
    session: Session,
    *,
    name: str,
    title: str,
    based_on: str,
    states: str,
    table: str,
    machine: str | None = None,
) -> CustomPlatform:
    row = CustomPlatform(
        name=name,
        title=title,
        based_on=based_on,
        states=states,
        table=table,
        machine=machine,
        created_at=utcnow(),
    )
    session.add(row)
    session.flush()
    return row
