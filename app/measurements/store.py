"""Queries on measurements; callers commit (one unit of work, one transaction)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.core.models import Measurement, Note, utcnow
from app.core.tokens import new_id, new_token


@dataclass(frozen=True)
class NewMeasurement:
    measurement: Measurement
    delete_token: str


def create_measurement(
    session: Session, *, kind: str, view: bytes, files: bytes, title: str = "", unlisted: bool = False
) -> NewMeasurement:
    """Add a measurement with a short random id (as runs have) and its delete token (stored hashed)."""
    token, token_hash = new_token()
    row = Measurement(
        id=new_id(),
        title=title,
        kind=kind,
        unlisted=unlisted,
        delete_token_hash=token_hash,
        created_at=utcnow(),
        view=view,
        files=files,
    )
    session.add(row)
    session.flush()
    return NewMeasurement(row, token)


def get_measurement(session: Session, measurement_id: str) -> Measurement | None:
    return session.get(Measurement, measurement_id)


def existing_ids(session: Session, ids: list[str]) -> set[str]:
    return set(session.scalars(select(Measurement.id).where(Measurement.id.in_(ids))))


def delete_measurement(session: Session, measurement_id: str) -> None:
    session.execute(delete(Measurement).where(Measurement.id == measurement_id))
    session.execute(Note.about("measurements", [measurement_id]))
