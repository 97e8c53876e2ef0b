"""ORM tables: runs (with summary columns for fast lists), their rendered pages, custom platforms.

Rows never leave the service layer: `app.views` converts them to schemas at the edge.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

RUN_STATUSES = ("queued", "running", "done", "failed")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes, also on SQLite (which stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; use datetime.now(UTC)")
        return value.astimezone(UTC).replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Run(Base):
    """One simulation run: its config, status, result bytes and the summary lists sort by."""

    __tablename__ = "runs"
    __table_args__ = (
        CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name="status"),
        CheckConstraint("progress >= 0 AND progress <= 1", name="progress"),
        Index("ix_runs_status_created_at", "status", "created_at"),
        Index("ix_runs_unlisted_created_at", "unlisted", "created_at"),
        Index("ix_runs_config_hash_engine_version", "config_hash", "engine_version"),
    )

    id: Mapped[str] = mapped_column(String(24), primary_key=True)
    title: Mapped[str] = mapped_column(String(200), default="")
    status: Mapped[str] = mapped_column(String(16), default="queued")
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    unlisted: Mapped[bool] = mapped_column(Boolean, default=False)
    delete_token_hash: Mapped[str] = mapped_column(String(64))
    config_hash: Mapped[str] = mapped_column(String(64))

    # `engine.engine_version()` (numpy and numba included) of the server that queued it; once done,
    # the version in its result.
    engine_version: Mapped[str] = mapped_column(String(200))
    reused_from: Mapped[str | None] = mapped_column(
        String(24), ForeignKey("runs.id", ondelete="SET NULL"), default=None, index=True
    )

    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    # Wall-clock seconds of the simulation itself, and of warming the engine (numba compile or
    # cache load) in the process that ran it, paid once before its first run and not in wall_s.
    wall_s: Mapped[float | None] = mapped_column(Float, default=None)
    compile_s: Mapped[float | None] = mapped_column(Float, default=None)

    # Summary columns (from the config when queued, from the result when done).
    platform: Mapped[str] = mapped_column(String(64), index=True)
    governor: Mapped[str] = mapped_column(String(32), index=True)
    mechanism: Mapped[str] = mapped_column(String(32), index=True)
    cpus: Mapped[int] = mapped_column(Integer)
    duration_ms: Mapped[float] = mapped_column(Float)
    seed: Mapped[int] = mapped_column(BigInteger)
    busy_share: Mapped[float | None] = mapped_column(Float, default=None)
    wakeups: Mapped[int | None] = mapped_column(Integer, default=None)
    events: Mapped[int | None] = mapped_column(BigInteger, default=None)
    wake_latency_mean_ns: Mapped[float | None] = mapped_column(Float, default=None)
    wake_latency_p99_ns: Mapped[float | None] = mapped_column(Float, default=None)
    intr_latency_mean_ns: Mapped[float | None] = mapped_column(Float, default=None)
    intr_latency_p99_ns: Mapped[float | None] = mapped_column(Float, default=None)
    ipis_sent: Mapped[int | None] = mapped_column(Integer, default=None)
    ipis_avoided: Mapped[int | None] = mapped_column(Integer, default=None)
    energy_joules: Mapped[float | None] = mapped_column(Float, default=None)

    error: Mapped[str | None] = mapped_column(Text, default=None)

    # Large values last: SQLite keeps a row's tail in overflow pages, so list queries that read only
    # the summary columns above never walk through a 20 kB result to reach them.
    # The validated config as canonical JSON (a custom platform's table resolved inside it).
    config: Mapped[str] = mapped_column(Text)
    # The engine's result JSON, byte for byte as the worker produced it; served without re-parsing.
    result: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)


class RenderedPage(Base):
    """A finished run's page as the web app rendered it, kept so that a restarted server serves a
    shared link without rendering again. Valid while `renderer` is the running app's (a digest of
    the code and files a page is made from) and the run's `(status, reused_from)` is the one below;
    otherwise it is rendered and replaced. Gone with its run."""

    __tablename__ = "rendered_pages"

    run_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    renderer: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    reused_from: Mapped[str | None] = mapped_column(String(24), default=None)
    # The HTML (~50 kB, twice the result), cut where the "compare with" candidates go (filled in
    # when served). Not compressed: inflating took more than half of serving a stored page.
    head: Mapped[bytes] = mapped_column(LargeBinary)
    tail: Mapped[bytes] = mapped_column(LargeBinary)


class CustomPlatform(Base):
    """A user's C-state table on a built-in platform's topology, costs and power."""

    __tablename__ = "custom_platforms"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    title: Mapped[str] = mapped_column(String(200), default="")
    based_on: Mapped[str] = mapped_column(String(64))
    # The states as the user gave them, and the resolved `engine.Platform` JSON runs embed.
    states: Mapped[str] = mapped_column(Text)
    table: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)


# The columns a finished run's result fills in (for lists and sorting; the result itself is JSON).
RESULT_SUMMARY_COLUMNS = (
    "busy_share",
    "wakeups",
    "events",
    "wake_latency_mean_ns",
    "wake_latency_p99_ns",
    "intr_latency_mean_ns",
    "intr_latency_p99_ns",
    "ipis_sent",
    "ipis_avoided",
    "energy_joules",
)

# Columns `GET /api/runs` may sort by.
SORTABLE_COLUMNS = (
    "created_at",
    "finished_at",
    "title",
    "status",
    "platform",
    "governor",
    "mechanism",
    "cpus",
    "duration_ms",
    *RESULT_SUMMARY_COLUMNS,
    "wall_s",
)
