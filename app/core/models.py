"""ORM tables: runs (summary columns for fast lists, and their immutable artifacts), sweeps, the
processes that run them (runners), custom platforms, measurements imported from real machines,
fits (machines' twins)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    case,
    delete,
    func,
    literal,
    select,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column
from sqlalchemy.sql.dml import Delete

from engine import metrics

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# A run's statuses, declared once: `queued` -> `running` -> `done` or `failed`.
RUN_STATUSES = ("queued", "running", "done", "failed")
ACTIVE = RUN_STATUSES[:2]
FINISHED = RUN_STATUSES[2:]
# The active runs as SQL with the statuses inline: a partial index's condition, which a query
# matches only when it names the same values (not bound parameters).
ACTIVE_WHERE = f"status IN ({', '.join(repr(v) for v in ACTIVE)})"
MEASUREMENT_KINDS = ("wult", "turbostat")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


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


def summary(label: str, *, config: Any = None, metric: str | None = None) -> dict[str, Any]:
    """A summary column's `info`: its label in lists, and how it is read from the config (when the
    run is queued) or, by the registry's `metric`, from the result (when it is done). The columns
    below are the one declaration; lists, sorting, the API's row schema and the finish path derive
    from them."""
    return {"label": label, "config": config, "result": metrics.get(metric) if metric else None}


# How a run's stored config names its custom table: the table's key holds null, and the run the
# table's hash (the key occurs once in the canonical JSON; inside a string its quotes are escaped).
NO_TABLE = '"platform_table":null'
TABLE_KEY = '"platform_table":'


class PlatformTable(Base):
    """A resolved custom platform table, stored once however many runs use it (by its JSON's sha256)."""

    __tablename__ = "platform_tables"

    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    json: Mapped[str] = mapped_column(Text)


class Run(Base):
    """One simulation run: its config, status, summary columns, and once done its immutable
    artifacts (the result bytes and the rendered page)."""

    __tablename__ = "runs"
    __table_args__ = (
        CheckConstraint(_one_of("status", RUN_STATUSES), name="status"),
        CheckConstraint("progress >= 0 AND progress <= 1", name="progress"),
        Index("ix_runs_status_created_at", "status", "created_at"),
        Index("ix_runs_unlisted_created_at", "unlisted", "created_at"),
        Index("ix_runs_config_hash_engine_version", "config_hash", "engine_version"),
        # The queue caps' sums (per client and in all) over the active runs, read by every
        # submission: covered by the index, however long the queue (migration 0010). Partial, so
        # that no other query on `status` (the reuse lookup's `status = 'done'`) is planned on it.
        Index(
            "ix_runs_active_client_expected_events",
            "status",
            "client",
            "expected_events",
            sqlite_where=text(ACTIVE_WHERE),
            postgresql_where=text(ACTIVE_WHERE),
        ),  # fmt: skip
    )

    id: Mapped[str] = mapped_column(String(24), primary_key=True)
    title: Mapped[str] = mapped_column(String(200), default="", info=summary("Title"))
    status: Mapped[str] = mapped_column(String(16), default="queued", info=summary("Status"))
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    unlisted: Mapped[bool] = mapped_column(Boolean, default=False)
    delete_token_hash: Mapped[str] = mapped_column(String(64))
    config_hash: Mapped[str] = mapped_column(String(64))

    # `engine.engine_version()` (numpy and numba included) of the server that queued it; once done,
    # the version in its result.
    engine_version: Mapped[str] = mapped_column(String(200))
    # A sweep's point: its sweep and its index in the sweep's cartesian product (values derived from it).
    sweep_id: Mapped[str | None] = mapped_column(
        String(24), ForeignKey("sweeps.id", ondelete="CASCADE"), default=None, index=True
    )
    sweep_index: Mapped[int | None] = mapped_column(Integer, default=None)
    # Who computes it: the claim (one per attempt; a result is recorded only under the claim it was
    # computed for) and the runner process holding it (`runners`, its heartbeat says it is alive).
    claim: Mapped[str | None] = mapped_column(String(32), default=None)
    claimed_by: Mapped[str | None] = mapped_column(String(32), default=None)
    # The id of the run whose result this one copied: plain text, so it survives the original's
    # deletion (a finished run's bytes never change).
    reused_from: Mapped[str | None] = mapped_column(String(24), default=None)

    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, info=summary("Created"))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(
        UTCDateTime(), default=None, info=summary("Finished")
    )
    # Wall-clock seconds of the simulation itself, and of warming the engine (numba compile or
    # cache load) in the process that ran it, paid once before its first run and not in wall_s.
    wall_s: Mapped[float | None] = mapped_column(Float, default=None, info=summary("Wall time"))
    compile_s: Mapped[float | None] = mapped_column(Float, default=None)

    platform: Mapped[str] = mapped_column(
        String(64), index=True, info=summary("Platform", config=lambda c: c.platform)
    )
    governor: Mapped[str] = mapped_column(
        String(32), index=True, info=summary("Governor", config=lambda c: c.governor.name)
    )
    mechanism: Mapped[str] = mapped_column(
        String(32), index=True, info=summary("Mechanism", config=lambda c: c.ipi_wakeup.mechanism)
    )
    cpus: Mapped[int] = mapped_column(Integer, info=summary("CPUs", config=lambda c: c.n_cpus()))
    duration_ms: Mapped[float] = mapped_column(
        Float, info=summary("Simulated time", config=lambda c: c.duration_ms)
    )
    seed: Mapped[int] = mapped_column(BigInteger, info=summary("Seed", config=lambda c: c.seed))
    # How many seeds the run simulates (`engine.repeats.repeat_seeds`); part of the reuse key.
    repeat_count: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    busy_share: Mapped[float | None] = mapped_column(
        Float, default=None, info=summary("Busy share", metric="busy_share")
    )
    wakeups: Mapped[int | None] = mapped_column(
        Integer, default=None, info=summary("Wake-ups", metric="wakeups")
    )
    events: Mapped[int | None] = mapped_column(
        BigInteger, default=None, info=summary("Events", metric="events")
    )
    wake_latency_mean_ns: Mapped[float | None] = mapped_column(
        Float, default=None, info=summary("WakeLatency mean", metric="latency.wake.mean_ns")
    )
    wake_latency_p99_ns: Mapped[float | None] = mapped_column(
        Float, default=None, info=summary("WakeLatency p99", metric="latency.wake.p99_ns")
    )
    intr_latency_mean_ns: Mapped[float | None] = mapped_column(
        Float, default=None, info=summary("IntrLatency mean", metric="latency.intr.mean_ns")
    )
    intr_latency_p99_ns: Mapped[float | None] = mapped_column(
        Float, default=None, info=summary("IntrLatency p99", metric="latency.intr.p99_ns")
    )
    ipis_sent: Mapped[int | None] = mapped_column(
        Integer, default=None, info=summary(metrics.IPIS_SENT, metric="ipi.ipis_sent")
    )
    ipis_avoided: Mapped[int | None] = mapped_column(
        Integer,
        default=None,
        info=summary(metrics.IPIS_AVOIDED, metric="ipi.ipis_avoided"),
    )
    energy_joules: Mapped[float | None] = mapped_column(
        Float,
        default=None,
        info=summary("Energy (estimate)", metric="energy.joules"),
    )

    error: Mapped[str | None] = mapped_column(Text, default=None)
    # The queue caps' accounting: the engine's estimate of the run's events, and who asked for it.
    expected_events: Mapped[float | None] = mapped_column(Float, default=None)
    client: Mapped[str | None] = mapped_column(String(64), default=None)
    # Once done: every repeat's seed and summary figures, `[{"seed", "summary": {metric: value}}]`,
    # and per metric `{"n", "mean", "stddev"}` over them, as JSON (the summary columns hold the means).
    repeats: Mapped[str | None] = mapped_column(Text, default=None)
    summary_stats: Mapped[str | None] = mapped_column(Text, default=None)

    # Large values last: SQLite keeps a row's tail in overflow pages, so list queries that read only
    # the summary columns above never walk through a 20 kB result to reach them.
    # The validated config as canonical JSON; a custom platform's resolved table is stored once in
    # `platform_tables`, and `config` (read-only) is the JSON with it inlined again, byte for byte.
    stored_config: Mapped[str] = mapped_column("config", Text)
    platform_table_hash: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("platform_tables.hash"), default=None
    )
    config: Mapped[str] = column_property(
        case(
            (platform_table_hash.is_(None), stored_config),
            else_=func.replace(
                stored_config,
                NO_TABLE,
                literal(TABLE_KEY, Text)
                + select(PlatformTable.json)
                .where(PlatformTable.hash == platform_table_hash)
                .scalar_subquery(),
            ),
        ).label("config")  # its name in Core selects too (the hot read path's)
    )
    # The engine's result JSON, byte for byte as the worker produced it; served without re-parsing.
    result: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    # The run page as rendered when the run finished, and the render version it was made with (a
    # page of another version may link assets that are gone: it is rendered again when served).
    page: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    page_version: Mapped[str | None] = mapped_column(String(64), default=None)


class RunChanges(Base):
    """One row counting the changes to listed runs (every insert, update or delete of `runs` bumps
    it in the same transaction, see `app.runs.store`): a list answer cached under an older count is
    stale, whichever process wrote."""

    __tablename__ = "run_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, default=0)


class Sweep(Base):
    """A base config and axes (a config path and its values); its points are runs."""

    __tablename__ = "sweeps"
    __table_args__ = (Index("ix_sweeps_unlisted_created_at", "unlisted", "created_at"),)

    id: Mapped[str] = mapped_column(String(24), primary_key=True)
    title: Mapped[str] = mapped_column(String(200), default="")
    unlisted: Mapped[bool] = mapped_column(Boolean, default=False)
    delete_token_hash: Mapped[str] = mapped_column(String(64))
    # The base config (as given, a custom platform's table resolved) and the axes, as JSON.
    base: Mapped[str] = mapped_column(Text)
    axes: Mapped[str] = mapped_column(Text)
    n_points: Mapped[int] = mapped_column(Integer)
    cancelled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Note(Base):
    """A short plain text a user attaches to a run, sweep, measurement or fit (`kind`: the API's
    collection name), kept apart from the immutable artifacts; `version` counts its edits."""

    __tablename__ = "notes"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    target_id: Mapped[str] = mapped_column(String(24), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    @classmethod
    def about(cls, kind: str, target_ids: Sequence[str]) -> Delete:
        """The delete of these targets' notes, which every delete of a target runs with it (a
        note outlives nothing it is about)."""
        return delete(cls).where(cls.kind == kind, cls.target_id.in_(list(target_ids)))


class Runner(Base):
    """A process that claims runs; a fresh heartbeat means its claims are alive (restart recovery
    leaves them alone)."""

    __tablename__ = "runners"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


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
    # An imported machine's view (what was recognised, topology, the counter snapshot) as JSON;
    # None for a table typed in by hand.
    machine: Mapped[str | None] = mapped_column(Text, default=None)
    # The imported dump itself (gzip), read again when a twin is fitted to its per-CPU counters;
    # deferred, so that platform lists never load it.
    dump: Mapped[bytes | None] = mapped_column(LargeBinary, default=None, deferred=True)


class Measurement(Base):
    """A result measured on a real machine (wult or turbostat): its files as uploaded, kept so
    that everything shown can be rebuilt, and the view built from them once, when imported."""

    __tablename__ = "measurements"
    __table_args__ = (
        CheckConstraint(_one_of("kind", MEASUREMENT_KINDS), name="kind"),
        Index("ix_measurements_unlisted_created_at", "unlisted", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(24), primary_key=True)
    title: Mapped[str] = mapped_column(String(200), default="")
    kind: Mapped[str] = mapped_column(String(16))
    unlisted: Mapped[bool] = mapped_column(Boolean, default=False)
    delete_token_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # The view pages and the API show (distributions, residency, conditions), as JSON bytes.
    view: Mapped[bytes] = mapped_column(LargeBinary)
    # The uploaded files by name, as a zip (deflated): parsed again to calibrate or to rebuild the view.
    files: Mapped[bytes] = mapped_column(LargeBinary)


def _columns(key: str) -> tuple[str, ...]:
    return tuple(c.name for c in Run.__table__.columns if c.info.get(key))


# Derived from the declaration above: what the config fills in, what the result fills in, what lists sort by.
CONFIG_SUMMARY_COLUMNS = _columns("config")
RESULT_SUMMARY_COLUMNS = _columns("result")
SORTABLE_COLUMNS = _columns("label")
# One index per sort key, in the list query's shape (listed, not a sweep's point, then the key and
# the tie-breaking id): a page of any sort walks offset + limit index entries and the total is a
# covering count, where each list read scanned and sorted every run (migration 0010 has the names).
for _name in SORTABLE_COLUMNS:
    Index(f"ix_runs_listed_{_name}", Run.unlisted, Run.sweep_id, Run.__table__.c[_name], Run.id)
# A list row: every column but the large ones and the secrets.
LIST_COLUMNS = tuple(
    c.name
    for c in Run.__table__.columns
    if c.name
    not in ("delete_token_hash", "config_hash", "config", "platform_table_hash", "result", "page")
    + ("page_version", "claim", "claimed_by", "expected_events", "client", "repeats", "summary_stats")
)


def config_summary(config: Any) -> dict[str, Any]:
    """The summary columns a config fills in (a run is listed with them while it waits)."""
    return {name: Run.__table__.c[name].info["config"](config) for name in CONFIG_SUMMARY_COLUMNS}


def result_summary(result: Mapping[str, Any]) -> dict[str, Any]:
    """The summary columns a finished run's result (as a dict) fills in, as each column stores them."""
    out = {}
    for name in RESULT_SUMMARY_COLUMNS:
        column = Run.__table__.c[name]
        value = column.info["result"].value(result)
        out[name] = None if value is None else column.type.python_type(value)
    return out


class Fit(Base):
    """A machine's twin: the search for the load whose simulated counters match an imported
    platform's measured ones. Its life is a run's (`queued` -> `running` -> `done`/`failed`),
    computed by the web process with its evaluations on the cluster; once done, `result` holds
    the fit's answer (measured and fitted figures, distance, misses, cross-validation, config)."""

    __tablename__ = "fits"
    __table_args__ = (
        CheckConstraint(_one_of("status", RUN_STATUSES), name="status"),
        CheckConstraint("progress >= 0 AND progress <= 1", name="progress"),
        Index("ix_fits_unlisted_created_at", "unlisted", "created_at"),
        Index("ix_fits_status_created_at", "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(24), primary_key=True)
    platform: Mapped[str] = mapped_column(String(64), index=True)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    unlisted: Mapped[bool] = mapped_column(Boolean, default=False)
    delete_token_hash: Mapped[str] = mapped_column(String(64))
    seed: Mapped[int] = mapped_column(BigInteger)
    budget: Mapped[int] = mapped_column(Integer)
    cpus: Mapped[int] = mapped_column(Integer)  # the CPU sample's size
    engine_version: Mapped[str] = mapped_column(String(200))
    # The runner process computing it (`runners`): a restart requeues fits whose runner is gone.
    claimed_by: Mapped[str | None] = mapped_column(String(32), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    evaluations: Mapped[int | None] = mapped_column(Integer, default=None)
    distance: Mapped[float | None] = mapped_column(Float, default=None)
    goal_met: Mapped[bool | None] = mapped_column(Boolean, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    # The search's history so far (JSON list, one point per generation), the what-if runs made
    # from the twin (JSON list of run ids), and once done the whole answer (JSON).
    history: Mapped[str] = mapped_column(Text, default="[]")
    whatifs: Mapped[str] = mapped_column(Text, default="[]")
    result: Mapped[str | None] = mapped_column(Text, default=None)
