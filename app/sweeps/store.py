"""Queries on sweeps and their points (runs with a `sweep_id`); callers commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, delete, func, select, update
from sqlalchemy.orm import Session

from app.core.models import RESULT_SUMMARY_COLUMNS, Note, Run, Sweep

_POINT_COLS = (
    [Run.id, Run.sweep_index, Run.status, Run.progress, Run.error, Run.wall_s]
    + [getattr(Run, c) for c in RESULT_SUMMARY_COLUMNS]
    + [Run.repeat_count, Run.summary_stats]
)


def get_sweep(session: Session, sweep_id: str) -> Sweep | None:
    return session.get(Sweep, sweep_id)


def points(session: Session, sweep_id: str) -> list[Row[Any]]:
    """A sweep's points in index order: status, progress and the summary metrics."""
    stmt = select(*_POINT_COLS).where(Run.sweep_id == sweep_id).order_by(Run.sweep_index)
    return list(session.execute(stmt))


def counts(session: Session, sweep_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Points per status of each sweep."""
    stmt = (
        select(Run.sweep_id, Run.status, func.count())
        .where(Run.sweep_id.in_(list(sweep_ids)))
        .group_by(Run.sweep_id, Run.status)
    )
    out: dict[str, dict[str, int]] = {}
    for sweep_id, status, n in session.execute(stmt):
        out.setdefault(sweep_id, {})[status] = int(n)
    return out


def list_sweeps(session: Session, *, limit: int, offset: int) -> tuple[list[Sweep], int]:
    """Listed sweeps, newest first (ties broken by id), and their total count."""
    stmt = (
        select(Sweep)
        .where(Sweep.unlisted.is_(False))
        .order_by(Sweep.created_at.desc(), Sweep.id)
        .limit(limit)
        .offset(offset)
    )
    total = session.scalar(select(func.count()).select_from(Sweep).where(Sweep.unlisted.is_(False))) or 0
    return list(session.scalars(stmt)), int(total)


def delete_sweep(session: Session, sweep_id: str) -> list[str]:
    """Delete a sweep and its points; returns the points' ids."""
    ids = list(session.scalars(select(Run.id).where(Run.sweep_id == sweep_id)))
    session.execute(delete(Run).where(Run.sweep_id == sweep_id))
    session.execute(delete(Sweep).where(Sweep.id == sweep_id))
    session.execute(Note.about("runs", ids))
    session.execute(Note.about("sweeps", [sweep_id]))
    return ids


def mark_cancelled(session: Session, sweep_id: str) -> None:
    session.execute(update(Sweep).where(Sweep.id == sweep_id).values(cancelled=True))
