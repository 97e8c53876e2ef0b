"""Queries for scenario runs; callers commit."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.models import ACTIVE, Run


def latest_of_config(session: Session, config_hash: str, versions: Sequence[str]) -> Run | None:
    """The newest listed finished run of this config by one of the engine `versions`; if there is
    none, the newest listed one still queued or running (they carry the short version until done).
    Unlisted runs are found only by their link."""
    for statuses in (("done",), ACTIVE):
        stmt = (
            select(Run)
            .where(
                Run.config_hash == config_hash,
                Run.status.in_(statuses),
                Run.engine_version.in_(list(versions)),
                Run.unlisted.is_(False),
            )
            .order_by(Run.created_at.desc(), Run.id)
            .limit(1)
        )
        found = session.scalars(stmt).first()
        if found is not None:
            return found
    return None


def runs_by_ids(session: Session, ids: Sequence[str]) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.id.in_(list(ids)))))
