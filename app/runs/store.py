"""Queries on runs. Functions add, flush, select and update; callers commit (through
`app.db.session_scope`), so one unit of work is one transaction."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    Connection,
    DateTime,
    Integer,
    Row,
    bindparam,
    delete,
    event,
    func,
    select,
    type_coerce,
    update,
)
from sqlalchemy.orm import ORMExecuteState, Session, UOWTransaction

from app.models import (
    LIST_COLUMNS,
    SORTABLE_COLUMNS,
    Run,
    RunChanges,
    Runner,
    UTCDateTime,
    config_summary,
    utcnow,
)
from engine import SimConfig
from engine import engine_version as current_engine_version

_LIST_COLS = [getattr(Run, c) for c in LIST_COLUMNS]
# A list page reads its times as stored (naive UTC on SQLite): `views.RunListView.to_json` writes
# them as UTC, and skipping the per-value conversion is a fifth of a 50-row page's cost.
_LIST_PAGE_COLS = [
    type_coerce(c, DateTime()).label(c.key) if isinstance(c.type, UTCDateTime) else c for c in _LIST_COLS
]
FINISHED = ("done", "failed")


# --- the change counter: every write to runs bumps it in its own transaction ---------------------

_BUMP = update(RunChanges).where(RunChanges.id == 1).values(count=RunChanges.count + 1)
_CHANGES = select(RunChanges.count).where(RunChanges.id == 1)


def changes(db: Session | Connection) -> int:
    """How many times runs have changed: list answers are cached under this count."""
    conn = db.connection() if isinstance(db, Session) else db
    return int(conn.execute(_CHANGES).scalar() or 0)


# One rule instead of a call in every write path (and none a new path could forget): any ORM
# insert, update or delete of runs bumps the counter in the same transaction.
@event.listens_for(Session, "do_orm_execute")
def _bump_on_write(state: ORMExecuteState) -> None:
    if (state.is_update or state.is_delete) and state.bind_mapper is not None:
        if state.bind_mapper.class_ is Run:
            state.session.connection().execute(_BUMP)


@event.listens_for(Session, "before_flush")
def _bump_on_add(session: Session, flush_context: UOWTransaction, instances: object) -> None:
    if any(isinstance(obj, Run) for obj in (*session.new, *session.dirty, *session.deleted)):
        session.connection().execute(_BUMP)


def new_run_id() -> str:
    """Short, random, unguessable (64 bits)."""
    return secrets.token_urlsafe(8)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(run: Run, token: str | None) -> bool:
    return token is not None and hmac.compare_digest(run.delete_token_hash, hash_token(token))


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
    status: str = "queued",
    sweep_id: str | None = None,
    sweep_index: int | None = None,
) -> NewRun:
    """Add a run (queued; `running` when this process computes or copies it at once), a sweep's
    point when `sweep_id` is given; returns it with its delete token (stored only as a hash)."""
    token = secrets.token_urlsafe(24)
    run = Run(
        id=new_run_id(),
        title=title,
        status=status,
        progress=0.0,
        unlisted=unlisted,
        delete_token_hash=hash_token(token),
        config=config.model_dump_json(),
        config_hash=config.config_hash(),
        engine_version=current_engine_version(),
        created_at=utcnow(),
        started_at=utcnow() if status == "running" else None,
        sweep_id=sweep_id,
        sweep_index=sweep_index,
        **config_summary(config),
    )
    session.add(run)
    session.flush()
    return NewRun(run, token)


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


# The hot reads, built once.
_ROW = select(*_LIST_COLS, Run.config, Run.result).where(Run.id == bindparam("run_id"))
_PAGE = select(Run.status, Run.page, Run.page_version).where(Run.id == bindparam("run_id"))


def get_row(db: Session | Connection, run_id: str) -> Row[Any] | None:
    """A run's list columns, config and result, no ORM objects."""
    conn = db.connection() if isinstance(db, Session) else db
    return conn.execute(_ROW, {"run_id": run_id}).first()


def get_page(db: Connection, run_id: str) -> Row[Any] | None:
    """A run's status and stored page (with its render version)."""
    return db.execute(_PAGE, {"run_id": run_id}).first()


_EXISTS = select(Run.id).where(Run.id == bindparam("run_id"))


def exists(db: Session | Connection, run_id: str) -> bool:
    conn = db.connection() if isinstance(db, Session) else db
    return conn.execute(_EXISTS, {"run_id": run_id}).first() is not None


def get_rows(session: Session, run_ids: Sequence[str]) -> dict[str, Row[Any]]:
    stmt = select(*_LIST_COLS, Run.config, Run.result).where(Run.id.in_(list(run_ids)))
    return {row.id: row for row in session.connection().execute(stmt)}


@dataclass(frozen=True)
class RunFilter:
    platform: str | None = None
    governor: str | None = None
    mechanism: str | None = None
    status: str | None = None
    q: str | None = None
    sweep: str | None = None


def _filtered(stmt: Any, filters: tuple[str, ...]) -> Any:
    """Listed runs; a sweep's points only when that sweep is asked for."""
    stmt = stmt.where(Run.unlisted.is_(False))
    if "sweep" in filters:
        stmt = stmt.where(Run.sweep_id == bindparam("sweep"))
    else:
        stmt = stmt.where(Run.sweep_id.is_(None))
    for col in filters:
        if col == "sweep":
            continue
        if col == "q":
            stmt = stmt.where(Run.title.ilike(bindparam("q"), escape="\\"))
        else:
            stmt = stmt.where(getattr(Run, col) == bindparam(col))
    return stmt


@cache
def _list_statements(sort: str, descending: bool, filters: tuple[str, ...]) -> tuple[Any, Any]:
    """The page and count statements for one shape of query, built once: the values are bound
    parameters, so SQLAlchemy compiles each shape once and reads its rows without adapting."""
    col = getattr(Run, sort)
    order = [col.desc().nulls_last() if descending else col.asc().nulls_last(), Run.id]
    page = _filtered(select(*_LIST_PAGE_COLS), filters).order_by(*order)
    page = page.limit(bindparam("limit", type_=Integer)).offset(bindparam("offset", type_=Integer))
    count = _filtered(select(func.count()).select_from(Run), filters)
    return page, count


def list_runs(
    db: Session | Connection, f: RunFilter, *, sort: str, descending: bool, limit: int, offset: int
) -> tuple[list[Row[Any]], int]:
    """Listed runs matching `f`, sorted (ties broken by id), and the total count."""
    if sort not in SORTABLE_COLUMNS:
        raise ValueError(f"cannot sort by {sort!r}")
    values: dict[str, Any] = {k: v for k, v in vars(f).items() if v}
    if "q" in values:
        escaped = values["q"].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        values["q"] = f"%{escaped}%"
    page, count = _list_statements(sort, descending, tuple(sorted(values)))
    conn = db.connection() if isinstance(db, Session) else db  # Core rows: no ORM on the list path
    rows = conn.execute(page, {**values, "limit": limit, "offset": offset}).all()
    total = conn.execute(count, values).scalar() or 0
    return list(rows), int(total)


def delete_run(session: Session, run_id: str) -> None:
    session.execute(delete(Run).where(Run.id == run_id))


# --- the job runner's writes (the web process is the only writer) -------------------------------


def next_queued(session: Session, limit: int) -> list[tuple[str, bool]]:
    """(id, is a sweep point) of the next queued runs: single runs first, then sweeps in order."""
    stmt = (
        select(Run.id, Run.sweep_id.is_not(None))
        .where(Run.status == "queued")
        .order_by(Run.sweep_id.is_not(None), Run.created_at, Run.sweep_index, Run.id)
        .limit(limit)
    )
    return [(run_id, bool(point)) for run_id, point in session.execute(stmt)]


def claim_run(session: Session, run_id: str, now: datetime, *, claim: str, runner: str) -> str | None:
    """Move a queued run to running under `claim`, held by `runner`; returns its config JSON if
    this caller won it."""
    res = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == "queued")
        .values(status="running", started_at=now, progress=0.0, claim=claim, claimed_by=runner)
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


def _running(run_id: str, claim: str | None) -> Any:
    """A run still running, and (when given) still under `claim`: an older attempt's answer, or a
    second completion, then changes nothing."""
    cond = (Run.id == run_id) & (Run.status == "running")
    return cond if claim is None else cond & (Run.claim == claim)


def record_result(
    session: Session, run_id: str, fields: Mapping[str, Any], *, claim: str | None = None
) -> bool:
    """Mark a running run done with `fields` (result, summary, page... from `views.finished_fields`).
    A second completion, or one for a run no longer running (under `claim`), changes nothing (False)."""
    res = session.execute(
        update(Run)
        .where(_running(run_id, claim))
        .values(**fields)
        .execution_options(synchronize_session=False)
    )
    return res.rowcount == 1  # type: ignore[attr-defined]


def fail_run(
    session: Session, run_id: str, error: str, *, wall_s: float | None = None, claim: str | None = None
) -> bool:
    where = (Run.id == run_id) & Run.status.in_(("queued", "running"))
    res = session.execute(
        update(Run)
        .where(where if claim is None else _running(run_id, claim))
        .values(status="failed", error=error, finished_at=utcnow(), wall_s=wall_s)
        .execution_options(synchronize_session=False)
    )
    return res.rowcount == 1  # type: ignore[attr-defined]


def running_ids(session: Session, runner: str | None = None) -> list[tuple[str, datetime]]:
    """(id, started_at) of the running runs `runner` holds or nobody claimed (all when None)."""
    stmt = select(Run.id, Run.started_at).where(Run.status == "running")
    if runner is not None:
        stmt = stmt.where((Run.claimed_by == runner) | Run.claimed_by.is_(None))
    return [(run_id, started or utcnow()) for run_id, started in session.execute(stmt)]


_REQUEUED = {"status": "queued", "progress": 0.0, "started_at": None, "claim": None, "claimed_by": None}


def requeue_interrupted(
    session: Session,
    run_ids: Sequence[str] | None = None,
    *,
    keep_runners: Sequence[str] = (),
    unclaimed: bool = True,
) -> int:
    """Put runs left `running` (the server stopped mid-run) back in the queue, except those held
    by `keep_runners` (live processes), and those no runner claimed unless `unclaimed`."""
    stmt = update(Run).where(Run.status == "running")
    if run_ids is not None:
        stmt = stmt.where(Run.id.in_(list(run_ids)))
    if keep_runners:
        stmt = stmt.where(Run.claimed_by.is_(None) | Run.claimed_by.not_in(list(keep_runners)))
    if not unclaimed:
        stmt = stmt.where(Run.claimed_by.is_not(None))
    res = session.execute(stmt.values(**_REQUEUED).execution_options(synchronize_session=False))
    return int(res.rowcount)  # type: ignore[attr-defined]


def requeue_claim(session: Session, run_id: str, claim: str) -> bool:
    """Requeue one run if it is still running under `claim` (its computation was lost)."""
    res = session.execute(
        update(Run).where(_running(run_id, claim)).values(**_REQUEUED).execution_options(
            synchronize_session=False
        )
    )
    return res.rowcount == 1  # type: ignore[attr-defined]


def heartbeat(session: Session, runner: str, now: datetime) -> None:
    """Say `runner` is alive (its claims are not to be requeued by another process)."""
    if session.get(Runner, runner) is None:
        session.add(Runner(id=runner, heartbeat_at=now))
    else:
        session.execute(update(Runner).where(Runner.id == runner).values(heartbeat_at=now))


def live_runners(session: Session, since: datetime) -> list[str]:
    """Runners whose heartbeat is newer than `since`; the older ones are forgotten."""
    session.execute(delete(Runner).where(Runner.heartbeat_at < since))
    return list(session.scalars(select(Runner.id)))


def forget_runner(session: Session, runner: str) -> None:
    session.execute(delete(Runner).where(Runner.id == runner))


def run_status(session: Session, run_id: str) -> str | None:
    return session.scalar(select(Run.status).where(Run.id == run_id))
