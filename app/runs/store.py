"""Queries on runs: reads, deletes and the runners' heartbeats; callers commit (through
`app.core.database.session_scope`), so one unit of work is one transaction. A run's status is
written only by `app.runs.lifecycle`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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

from app.core.models import LIST_COLUMNS, SORTABLE_COLUMNS, Note, Run, RunChanges, Runner, UTCDateTime, utcnow

_LIST_COLS = [getattr(Run, c) for c in LIST_COLUMNS]
# A list page reads its times as stored (naive UTC on SQLite): `views.RunListView.to_json` writes
# them as UTC, and skipping the per-value conversion is a fifth of a 50-row page's cost.
_LIST_PAGE_COLS = [
    type_coerce(c, DateTime()).label(c.key) if isinstance(c.type, UTCDateTime) else c for c in _LIST_COLS
]


# --- the change counter: every write to runs bumps it in its own transaction ---------------------

_BUMP = update(RunChanges).where(RunChanges.id == 1).values(count=RunChanges.count + 1)
_CHANGES = select(RunChanges.count).where(RunChanges.id == 1)


def changes(db: Session | Connection) -> int:
    """How many times runs have changed: list answers are cached under this count."""
    conn = db.connection() if isinstance(db, Session) else db
    return int(conn.execute(_CHANGES).scalar() or 0)


# One rule instead of a call in every write path (and none a new path could forget): any ORM
# insert, update or delete of runs that changed a row (or of a run's note, which the cached
# answers carry) bumps the counter in the same transaction.
# An UPDATE matching nothing (the heartbeat's requeue of runs nobody lost) leaves caches be.
@event.listens_for(Session, "do_orm_execute")
def _bump_on_write(state: ORMExecuteState) -> Any:
    if not (state.is_update or state.is_delete) or state.bind_mapper is None:
        return None
    if state.bind_mapper.class_ is not Run:
        return None
    result = state.invoke_statement()
    # A statement with RETURNING reports its count only once read: counted as a change.
    if result.returns_rows or result.rowcount != 0:  # type: ignore[attr-defined]
        state.session.connection().execute(_BUMP)
    return result


@event.listens_for(Session, "before_flush")
def _bump_on_add(session: Session, flush_context: UOWTransaction, instances: object) -> None:
    changed = (*session.new, *session.deleted, *(o for o in session.dirty if session.is_modified(o)))
    if any(isinstance(obj, Run) or (isinstance(obj, Note) and obj.kind == "runs") for obj in changed):
        session.connection().execute(_BUMP)


def find_reusable(session: Session, config_hash: str, engine_version: str, repeats: int = 1) -> Run | None:
    """The oldest finished run with this config hash, repeat count and engine version (an
    original, not a copy)."""
    stmt = (
        select(Run)
        .where(
            Run.config_hash == config_hash,
            Run.repeat_count == repeats,
            Run.engine_version == engine_version,
            Run.status == "done",
        )
        .order_by(Run.reused_from.is_not(None), Run.created_at)
        .limit(1)
    )
    return session.scalars(stmt).first()


def get_run(session: Session, run_id: str) -> Run | None:
    return session.get(Run, run_id)


# The hot reads, built once.
_STORED = (Run.config, Run.result, Run.repeats, Run.summary_stats)
_ROW = select(*_LIST_COLS, *_STORED).where(Run.id == bindparam("run_id"))
_PAGE = select(Run.status, Run.page, Run.page_version).where(Run.id == bindparam("run_id"))
# The same with the run's note beside it (the answer of GET /api/runs/{id} in one read).
_ROW_AND_NOTE = (
    select(*_LIST_COLS, *_STORED, Note.text.label("note_text"), Note.version.label("note_version"),
           Note.updated_at.label("note_updated_at"))
    .outerjoin(Note, (Note.kind == "runs") & (Note.target_id == Run.id))
    .where(Run.id == bindparam("run_id"))
)  # fmt: skip


def get_row(db: Session | Connection, run_id: str) -> Row[Any] | None:
    """A run's list columns, config and result, no ORM objects."""
    conn = db.connection() if isinstance(db, Session) else db
    return conn.execute(_ROW, {"run_id": run_id}).first()


def get_row_and_note(db: Connection, run_id: str) -> Row[Any] | None:
    """`get_row`'s columns and the run's note (`note_text`, `note_version`, `note_updated_at`)."""
    return db.execute(_ROW_AND_NOTE, {"run_id": run_id}).first()


def get_page(db: Connection, run_id: str) -> Row[Any] | None:
    """A run's status and stored page (with its render version)."""
    return db.execute(_PAGE, {"run_id": run_id}).first()


_EXISTS = select(Run.id).where(Run.id == bindparam("run_id"))


def exists(db: Session | Connection, run_id: str) -> bool:
    conn = db.connection() if isinstance(db, Session) else db
    return conn.execute(_EXISTS, {"run_id": run_id}).first() is not None


# Ids per existence query: far below every database's bound-parameter limit.
_EXISTING_CHUNK = 500


def note_versions(db: Connection, run_ids: Iterable[str]) -> dict[str, int]:
    """The version of each of these runs' notes (runs without a note left out)."""
    ids = list(run_ids)
    out: dict[str, int] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        stmt = select(Note.target_id, Note.version).where(Note.kind == "runs", Note.target_id.in_(chunk))
        out.update({row.target_id: row.version for row in db.execute(stmt)})
    return out


def existing(db: Connection, run_ids: Iterable[str]) -> set[str]:
    """Which of `run_ids` are still stored."""
    ids = sorted(run_ids)
    found: set[str] = set()
    for i in range(0, len(ids), _EXISTING_CHUNK):
        chunk = ids[i : i + _EXISTING_CHUNK]
        found.update(db.execute(select(Run.id).where(Run.id.in_(chunk))).scalars())
    return found


# Built once (an expanding parameter): a compare's read builds and looks up no statement.
_ROWS = select(*_LIST_COLS, *_STORED).where(Run.id.in_(bindparam("run_ids", expanding=True)))


def get_rows(session: Session, run_ids: Sequence[str]) -> dict[str, Row[Any]]:
    return {row.id: row for row in session.connection().execute(_ROWS, {"run_ids": list(run_ids)})}


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
    session.execute(Note.about("runs", [run_id]))


# --- the job runner's reads -----------------------------------------------------------------------


def next_queued(session: Session, limit: int) -> list[tuple[str, bool]]:
    """(id, is a sweep point) of the next queued runs: single runs first, then sweeps in order."""
    stmt = (
        select(Run.id, Run.sweep_id.is_not(None))
        .where(Run.status == "queued")
        .order_by(Run.sweep_id.is_not(None), Run.created_at, Run.sweep_index, Run.id)
        .limit(limit)
    )
    return [(run_id, bool(point)) for run_id, point in session.execute(stmt)]


def config_json(session: Session, run_id: str) -> str | None:
    return session.scalar(select(Run.config).where(Run.id == run_id))


def running_ids(session: Session, runner: str | None = None) -> list[tuple[str, datetime]]:
    """(id, started_at) of the running runs `runner` holds or nobody claimed (all when None)."""
    stmt = select(Run.id, Run.started_at).where(Run.status == "running")
    if runner is not None:
        stmt = stmt.where((Run.claimed_by == runner) | Run.claimed_by.is_(None))
    return [(run_id, started or utcnow()) for run_id, started in session.execute(stmt)]


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


def stale_pages(session: Session, version: str, limit: int) -> list[str]:
    """Finished runs whose stored page is of another render version, newest first."""
    stmt = (
        select(Run.id)
        .where(Run.status == "done", Run.page_version.is_not(None), Run.page_version != version)
        .order_by(Run.created_at.desc(), Run.id)
        .limit(limit)
    )
    return list(session.scalars(stmt))
