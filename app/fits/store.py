"""Queries on fits (and the imported dump a fit reads); callers commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, delete, func, select, update
from sqlalchemy.orm import Session

from app.core.models import CustomPlatform, Fit, Note, Run, utcnow


def get_fit(session: Session, fit_id: str) -> Fit | None:
    return session.get(Fit, fit_id)


def platform_dump(session: Session, name: str) -> Row[tuple[str, bytes | None, str | None]] | None:
    """A custom platform's `table` JSON, its imported `dump` (None: typed in, or imported before
    dumps were kept) and its `machine` view JSON; None when no custom platform has this name."""
    stmt = select(CustomPlatform.table, CustomPlatform.dump, CustomPlatform.machine).where(
        CustomPlatform.name == name
    )
    return session.execute(stmt).first()


def has_dump(session: Session, name: str) -> bool:
    stmt = select(CustomPlatform.name).where(CustomPlatform.name == name, CustomPlatform.dump.is_not(None))
    return session.scalar(stmt) is not None


def list_fits(session: Session, *, platform: str | None, limit: int, offset: int) -> tuple[list[Fit], int]:
    """Listed fits (of one platform when given), newest first (ties broken by id), and their count."""
    where: Any = Fit.unlisted.is_(False)
    if platform is not None:
        where = where & (Fit.platform == platform)
    stmt = select(Fit).where(where).order_by(Fit.created_at.desc(), Fit.id).limit(limit).offset(offset)
    total = session.scalar(select(func.count()).select_from(Fit).where(where)) or 0
    return list(session.scalars(stmt)), int(total)


def fits_of_platforms(session: Session, names: Sequence[str]) -> dict[str, Fit]:
    """The newest finished fit of each of these platforms."""
    out: dict[str, Fit] = {}
    stmt = (
        select(Fit)
        .where(Fit.platform.in_(list(names)), Fit.status == "done")
        .order_by(Fit.created_at.desc(), Fit.id)
    )
    for fit in session.scalars(stmt):
        out.setdefault(fit.platform, fit)
    return out


def _set(session: Session, where: Any, **values: Any) -> int:
    res = session.execute(
        update(Fit).where(where).values(**values).execution_options(synchronize_session=False)
    )
    return int(res.rowcount)  # type: ignore[attr-defined]


def next_queued(session: Session) -> str | None:
    """The oldest queued fit's id."""
    return session.scalar(
        select(Fit.id).where(Fit.status == "queued").order_by(Fit.created_at, Fit.id).limit(1)
    )


def claim(session: Session, fit_id: str, runner: str) -> bool:
    """Move a queued fit to running, held by `runner`; whether this caller won it."""
    where = (Fit.id == fit_id) & (Fit.status == "queued")
    values = {"status": "running", "started_at": utcnow(), "progress": 0.0, "history": "[]"}
    return _set(session, where, claimed_by=runner, **values) == 1


def set_progress(session: Session, fit_id: str, progress: float, history: str) -> bool:
    """Record a running fit's progress and history; False when it is gone (deleted: cancelled)."""
    where = (Fit.id == fit_id) & (Fit.status == "running")
    return _set(session, where, progress=min(max(progress, 0.0), 1.0), history=history) == 1


def finish(session: Session, fit_id: str, **values: Any) -> bool:
    """Mark a running fit done with its answer (`result`, `distance`, `evaluations`...)."""
    where = (Fit.id == fit_id) & (Fit.status == "running")
    return _set(session, where, status="done", progress=1.0, finished_at=utcnow(), **values) == 1


def fail(session: Session, fit_id: str, error: str) -> bool:
    where = (Fit.id == fit_id) & Fit.status.in_(("queued", "running"))
    return _set(session, where, status="failed", error=error, finished_at=utcnow()) == 1


def requeue(
    session: Session, *, fit_ids: Sequence[str] = (), keep_runners: Sequence[str] | None = None
) -> int:
    """Put running fits back in the queue (they start again from their seed): those of `fit_ids`,
    or with `keep_runners`, every running fit not held by one of them; how many."""
    where = Fit.status == "running"
    if fit_ids:
        where = where & Fit.id.in_(list(fit_ids))
    elif keep_runners is not None:
        where = where & ((Fit.claimed_by.is_(None)) | Fit.claimed_by.not_in(list(keep_runners)))
    else:
        return 0
    return _set(session, where, status="queued", progress=0.0, history="[]", claimed_by=None, started_at=None)


def add_whatif(session: Session, fit_id: str, whatifs: str) -> None:
    _set(session, Fit.id == fit_id, whatifs=whatifs)


def delete_fit(session: Session, fit_id: str) -> None:
    session.execute(delete(Fit).where(Fit.id == fit_id))
    session.execute(Note.about("fits", [fit_id]))


def runs_status_and_result(session: Session, run_ids: Sequence[str]) -> dict[str, tuple[str, bytes | None]]:
    """Each existing run's status and result bytes (what-if runs beside their twin)."""
    rows = session.execute(select(Run.id, Run.status, Run.result).where(Run.id.in_(list(run_ids))))
    return {r.id: (r.status, r.result) for r in rows}


def runs_status(session: Session, run_ids: Sequence[str]) -> dict[str, str]:
    rows = session.execute(select(Run.id, Run.status).where(Run.id.in_(list(run_ids))))
    return {r.id: r.status for r in rows}
