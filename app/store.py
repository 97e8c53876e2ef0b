"""Queries on runs, their rendered pages and custom platforms. Functions add, flush, select and
update; callers commit (through `app.db.session_scope`), so one unit of work is one transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, bindparam, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.models import (
    RESULT_SUMMARY_COLUMNS,
    SORTABLE_COLUMNS,
    CustomPlatform,
    RenderedPage,
    Run,
    utcnow,
)
from engine import SimConfig
from engine import engine_version as current_engine_version

# The columns a list row carries (everything but config and result, which can be large).
SUMMARY_COLUMNS = (
    "id",
    "title",
    "status",
    "progress",
    "created_at",
    "started_at",
    "finished_at",
    "platform",
    "governor",
    "mechanism",
    "cpus",
    "duration_ms",
    "seed",
    *RESULT_SUMMARY_COLUMNS,
    "engine_version",
    "wall_s",
    "compile_s",
    "reused_from",
    "error",
)
_SUMMARY_COLS = [getattr(Run, c) for c in SUMMARY_COLUMNS]


def new_run_id() -> str:
    """Short, random, unguessable (64 bits)."""
    return secrets.token_urlsafe(8)


def new_delete_token() -> tuple[str, str]:
    """(token to show once, its sha256 to store)."""
    token = secrets.token_urlsafe(24)
    return token, hash_token(token)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(run: Run, token: str | None) -> bool:
    return token is not None and hmac.compare_digest(run.delete_token_hash, hash_token(token))


def config_summary(config: SimConfig) -> dict[str, Any]:
    """Summary columns known before the run starts."""
    return {
        "platform": config.platform,
        "governor": config.governor.name,
        "mechanism": config.ipi_wakeup.mechanism,
        "cpus": config.n_cpus(),
        "duration_ms": config.duration_ms,
        "seed": config.seed,
    }


def result_summary(result: Any) -> dict[str, Any]:
    """Summary columns of a finished run, from a `SimResult` (or its dict form)."""
    r = result if isinstance(result, Mapping) else result.model_dump(mode="json")
    lat = r.get("latency") or {}

    def stat(source: str, key: str) -> float | None:
        s = lat.get(source)
        return None if not s or not s.get("count") else s.get(key)

    ipi = r.get("ipi") or {}
    energy = r.get("energy") or {}
    return {
        "busy_share": r.get("busy_share"),
        "wakeups": r.get("wakeups"),
        "events": r.get("events"),
        "wake_latency_mean_ns": stat("wake", "mean_ns"),
        "wake_latency_p99_ns": stat("wake", "p99_ns"),
        "intr_latency_mean_ns": stat("intr", "mean_ns"),
        "intr_latency_p99_ns": stat("intr", "p99_ns"),
        "ipis_sent": ipi.get("ipis_sent"),
        "ipis_avoided": ipi.get("ipis_avoided"),
        "energy_joules": energy.get("joules"),
    }


@dataclass(frozen=True)
class NewRun:
    run: Run
    delete_token: str


def create_run(
    session: Session,
    config: SimConfig,
    *,
    title: str = "",
    unlisted: bool = False,
    config_json: str | None = None,
    config_hash: str | None = None,
) -> NewRun:
    """Add a queued run; returns it with its delete token (stored only as a hash)."""
    token, token_hash = new_delete_token()
    run = Run(
        id=new_run_id(),
        title=title,
        status="queued",
        progress=0.0,
        unlisted=unlisted,
        delete_token_hash=token_hash,
        config=config_json if config_json is not None else config.model_dump_json(),
        config_hash=config_hash or config.config_hash(),
        engine_version=current_engine_version(),
        created_at=utcnow(),
        **config_summary(config),
    )
    session.add(run)
    session.flush()
    return NewRun(run, token)


def copy_result(run: Run, source: Run) -> None:
    """Answer `run` from the finished `source` (same config hash and engine version)."""
    now = utcnow()
    run.status = "done"
    run.progress = 1.0
    run.result = source.result
    run.engine_version = source.engine_version
    run.reused_from = source.id
    run.started_at = now
    run.finished_at = now
    run.wall_s = 0.0
    run.compile_s = 0.0
    for col in RESULT_SUMMARY_COLUMNS:
        setattr(run, col, getattr(source, col))


def find_reusable(session: Session, config_hash: str, engine_version: str) -> Run | None:
    """The oldest finished run with this config hash and engine version (an original, not a copy)."""
    stmt = (
        select(Run)
        .where(Run.config_hash == config_hash, Run.engine_version == engine_version, Run.status == "done")
        .order_by(Run.reused_from.is_not(None), Run.created_at)
        .limit(1)
    )
    return session.scalars(stmt).first()


def get_run(session: Session, run_id: str) -> Run | None:
    return session.get(Run, run_id)


# The hot read: summary columns plus the stored config and result text. Built once; the API
# reads it through `ReadCache.first`.
RUN_ROW = select(*_SUMMARY_COLS, Run.config, Run.result, Run.unlisted).where(Run.id == bindparam("run_id"))


def get_run_row(db: Session | Connection, run_id: str) -> Row[Any] | None:
    """`RUN_ROW` on a session or a plain connection, no ORM objects."""
    conn = db.connection() if isinstance(db, Session) else db
    return conn.execute(RUN_ROW, {"run_id": run_id}).first()


# What can still change about a finished run (deleting it aside). Read through `ReadCache.first`.
RUN_STAMP = select(Run.status, Run.reused_from).where(Run.id == bindparam("run_id"))


def get_run_rows(session: Session, run_ids: Sequence[str]) -> dict[str, Row[Any]]:
    stmt = select(*_SUMMARY_COLS, Run.config, Run.result, Run.unlisted).where(Run.id.in_(list(run_ids)))
    return {row.id: row for row in session.connection().execute(stmt)}


@dataclass(frozen=True)
class RunFilter:
    platform: str | None = None
    governor: str | None = None
    mechanism: str | None = None
    status: str | None = None
    q: str | None = None


def _filtered(stmt: Any, f: RunFilter) -> Any:
    stmt = stmt.where(Run.unlisted.is_(False))
    for col in ("platform", "governor", "mechanism", "status"):
        value = getattr(f, col)
        if value:
            stmt = stmt.where(getattr(Run, col) == value)
    if f.q:
        escaped = f.q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        stmt = stmt.where(Run.title.ilike(f"%{escaped}%", escape="\\"))
    return stmt


def list_runs(
    session: Session,
    f: RunFilter,
    *,
    sort: str = "created_at",
    descending: bool = True,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[Row[Any]], int]:
    """Listed runs matching `f`, sorted (ties broken by id), and the total count."""
    if sort not in SORTABLE_COLUMNS:
        raise ValueError(f"cannot sort by {sort!r}")
    col = getattr(Run, sort)
    order = [col.desc().nulls_last() if descending else col.asc().nulls_last(), Run.id]
    conn = session.connection()  # Core rows: no ORM loading machinery on the list path
    rows = conn.execute(_filtered(select(*_SUMMARY_COLS), f).order_by(*order).limit(limit).offset(offset))
    total = conn.execute(_filtered(select(func.count()).select_from(Run), f)).scalar() or 0
    return list(rows), int(total)


def delete_run(session: Session, run_id: str) -> None:
    """The run and (by the foreign key's cascade) its rendered page."""
    session.execute(delete(Run).where(Run.id == run_id))


# --- rendered pages ---------------------------------------------------------------------------------

# A run's stored page `(head, tail, status, reused_from)`, served only while `renderer` is the
# running app's and the run is as it was when the page was rendered. Read through `ReadCache.first`.
RENDERED_PAGE = (
    select(RenderedPage.head, RenderedPage.tail, Run.status, Run.reused_from)
    .join(Run, Run.id == RenderedPage.run_id)
    .where(
        RenderedPage.run_id == bindparam("run_id"),
        RenderedPage.renderer == bindparam("renderer"),
        RenderedPage.status == Run.status,
        RenderedPage.reused_from.is_not_distinct_from(Run.reused_from),
    )
)


def save_rendered_page(session: Session, page: RenderedPage) -> bool:
    """Store (or replace) a run's page; False if the run is gone (deleted since it was rendered)."""
    session.execute(delete(RenderedPage).where(RenderedPage.run_id == page.run_id))
    session.add(page)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        return False
    return True


# --- job runner's writes (the parent process is the only writer) ---------------------------------


def next_queued_ids(session: Session, limit: int) -> list[str]:
    stmt = select(Run.id).where(Run.status == "queued").order_by(Run.created_at, Run.id).limit(limit)
    return list(session.scalars(stmt))


def claim_run(session: Session, run_id: str, now: datetime) -> str | None:
    """Move a queued run to running; returns its config JSON if this caller won it."""
    res = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == "queued")
        .values(status="running", started_at=now, progress=0.0)
        .execution_options(synchronize_session=False)
    )
    if res.rowcount != 1:  # type: ignore[attr-defined]
        return None
    return session.scalar(select(Run.config).where(Run.id == run_id))


def set_progress(session: Session, progress: Mapping[str, float]) -> None:
    for run_id, value in progress.items():
        session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == "running")
            .values(progress=min(1.0, max(0.0, value)))
            .execution_options(synchronize_session=False)
        )


def finish_run(
    session: Session,
    run_id: str,
    *,
    result_json: bytes,
    summary: Mapping[str, Any],
    engine_version: str,
    wall_s: float,
    compile_s: float,
) -> bool:
    res = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == "running")
        .values(
            status="done",
            progress=1.0,
            result=result_json,
            error=None,
            engine_version=engine_version,
            finished_at=utcnow(),
            wall_s=wall_s,
            compile_s=compile_s,
            **{k: summary.get(k) for k in RESULT_SUMMARY_COLUMNS},
        )
        .execution_options(synchronize_session=False)
    )
    return res.rowcount == 1  # type: ignore[attr-defined]


def fail_run(session: Session, run_id: str, error: str, *, wall_s: float | None = None) -> bool:
    res = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status.in_(("queued", "running")))
        .values(status="failed", error=error, finished_at=utcnow(), wall_s=wall_s)
        .execution_options(synchronize_session=False)
    )
    return res.rowcount == 1  # type: ignore[attr-defined]


def requeue_interrupted(session: Session, run_ids: Sequence[str] | None = None) -> int:
    """Put runs left `running` (the server stopped mid-run) back in the queue."""
    stmt = update(Run).where(Run.status == "running")
    if run_ids is not None:
        stmt = stmt.where(Run.id.in_(list(run_ids)))
    res = session.execute(
        stmt.values(status="queued", progress=0.0, started_at=None).execution_options(
            synchronize_session=False
        )
    )
    return int(res.rowcount)  # type: ignore[attr-defined]


def run_status(session: Session, run_id: str) -> str | None:
    return session.scalar(select(Run.status).where(Run.id == run_id))


# --- custom platforms ----------------------------------------------------------------------------


def get_platform(session: Session, name: str) -> CustomPlatform | None:
    return session.get(CustomPlatform, name)


def list_platforms(session: Session) -> list[CustomPlatform]:
    return list(session.scalars(select(CustomPlatform).order_by(CustomPlatform.name)))


def create_platform(
    session: Session, *, name: str, title: str, based_on: str, states: str, table: str
) -> CustomPlatform:
    row = CustomPlatform(
        name=name, title=title, based_on=based_on, states=states, table=table, created_at=utcnow()
    )
    session.add(row)
    session.flush()
    return row


def mark_done(
    run: Run,
    *,
    result_json: bytes,
    summary: Mapping[str, Any],
    engine_version: str,
    wall_s: float,
    compile_s: float,
    started_at: datetime,
) -> None:
    """Record a run computed outside the job runner (`idlelab run --save`) as finished."""
    run.status = "done"
    run.progress = 1.0
    run.result = result_json
    run.engine_version = engine_version
    run.started_at = started_at
    run.finished_at = utcnow()
    run.wall_s = wall_s
    run.compile_s = compile_s
    for col in RESULT_SUMMARY_COLUMNS:
        setattr(run, col, summary.get(col))
