"""Loaders shared by every run page and its JSON twin (`/runs/{id}` and `/api/runs/{id}` both read
`run_view`). They read through `app.runs.store`, raise `NotFound`/`InvalidInput`, and return plain
data: no ORM object leaves this module. Stored results are spliced into answers as bytes, and
parsed (with orjson) only when a page needs the numbers."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson
from pydantic import ValidationError
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from app import charts
from app.errors import InvalidInput, NotFound
from app.measurements.compare import measurement_ids, with_measurements
from app.models import LIST_COLUMNS, SORTABLE_COLUMNS
from app.platforms import store as platform_store
from app.platforms.views import MIN_TSC_MHZ, table_errors
from app.runs import store
from app.schemas import ComparedMetric, ComparedRun, Comparison
from engine import BUILTIN_PLATFORMS, SimConfig
from engine.config import config_errors

CONFIG_LOC: tuple[str, ...] = ("body", "config")
# Said (page and stderr) while a run waits for the engine's first compilation.
COMPILING_NOTE = "compiling the engine, first run after install (~20 s); later runs start at once"
MAX_COMPARE = 8


def run_path(run_id: str) -> str:
    """A run's share link, as a path (answers carry no host)."""
    return f"/runs/{run_id}"


def resolve_config(session: Session, data: Any, loc: Sequence[str | int] = CONFIG_LOC) -> SimConfig:
    """Validate a submitted config; a custom platform id is resolved to its stored table first.

    Raises `InvalidInput` whose every error's `loc` starts with `loc` and names the field.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidInput.one(list(loc), "config must be a JSON object", "dict_type")
    name = data.get("platform")
    if isinstance(name, str) and name not in BUILTIN_PLATFORMS and data.get("platform_table") is None:
        row = platform_store.get_platform(session, name)
        if row is None:
            custom = [p.name for p in platform_store.list_platforms(session)]
            raise InvalidInput.one(
                [*loc, "platform"],
                f"unknown platform {name!r}; built-in tables are {', '.join(sorted(BUILTIN_PLATFORMS))}; "
                + (f"custom tables are {', '.join(custom)}" if custom else "there are no custom tables"),
                "value_error",
            )
        data = {**data, "platform_table": orjson.loads(row.table)}
    try:
        config = SimConfig.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput([{**e, "loc": [*loc, *e["loc"]]} for e in config_errors(exc)]) from None
    errors = limit_errors(config)
    if errors:
        raise InvalidInput([{**e, "loc": [*loc, *e["loc"]]} for e in errors])
    return config


# Shortest run: one microsecond (shorter rounds to no simulated time at all).
MIN_DURATION_MS = 0.001
# Longest PM QoS limit: 10 s (beyond it the limit is no limit, and its nanoseconds overflow).
MAX_LATENCY_LIMIT_US = 10_000_000.0


def limit_errors(config: SimConfig) -> list[dict[str, Any]]:
    """What the model accepts but a run cannot do, refused at submission (422) rather than
    failing in the worker: the same limits for a table given inline as for a custom platform."""
    errors: list[dict[str, Any]] = []

    def refuse(loc: list[str | int], msg: str) -> None:
        errors.append({"loc": loc, "msg": msg, "type": "value_error"})

    if len(config.platform) > 64:
        refuse(["platform"], "at most 64 characters")
    if config.duration_ms < MIN_DURATION_MS:
        refuse(["duration_ms"], f"must be at least {MIN_DURATION_MS} (1 us), got {config.duration_ms!r}")
    for i, timer in enumerate(config.wakeups.timers):
        if timer.period_us * 1000 < 1:
            refuse(
                ["wakeups", "timers", i, "period_us"], "must be at least 0.001 (the clock counts nanoseconds)"
            )
    limit = config.states.latency_limit_us
    if limit is not None and limit > MAX_LATENCY_LIMIT_US:
        refuse(["states", "latency_limit_us"], f"must be at most {MAX_LATENCY_LIMIT_US:g}, got {limit!r}")
    if config.governor.fixed_state is not None and config.governor.name != "fixed":
        refuse(["governor", "fixed_state"], f"only the fixed governor takes it, not {config.governor.name!r}")
    tsc = config.costs.tsc_mhz
    if tsc is not None and tsc < MIN_TSC_MHZ:
        refuse(["costs", "tsc_mhz"], f"must be at least {MIN_TSC_MHZ:g}, got {tsc!r}")
    if config.platform_table is not None:
        errors += table_errors(config.platform_table, ["platform_table"])
    return errors


# --- one run -----------------------------------------------------------------------------------


def _summary(row: Mapping[str, Any]) -> dict[str, Any]:
    data = {c: row[c] for c in LIST_COLUMNS}
    data["url"] = run_path(data["id"])
    return data


@dataclass
class RunView:
    """One run as pages and the API show it: `summary` (the list columns and `url`), the stored
    config and result texts, and lazily their parsed forms."""

    summary: dict[str, Any]
    config_json: str
    result_json: bytes | None

    @property
    def status(self) -> str:
        return str(self.summary["status"])

    @cached_property
    def config(self) -> dict[str, Any]:
        return orjson.loads(self.config_json)  # type: ignore[no-any-return]

    @cached_property
    def result(self) -> dict[str, Any] | None:
        return None if self.result_json is None else orjson.loads(self.result_json)

    def to_json(self) -> bytes:
        """The `GET /api/runs/{id}` body: summary fields with the stored config and result inside."""
        result = orjson.Fragment(self.result_json) if self.result_json is not None else None
        return orjson.dumps({**self.summary, "config": orjson.Fragment(self.config_json), "result": result})


def run_view(row: Mapping[str, Any]) -> RunView:
    """A run from its `store.get_row` columns."""
    return RunView(_summary(row), row["config"], row["result"])


def load_run_view(session: Session, run_id: str) -> RunView:
    """A run by id (unlisted ones too: the link is the key). `NotFound` if there is none."""
    row = store.get_row(session, run_id)
    if row is None:
        raise NotFound(f"run {run_id!r} not found")
    return run_view(row._mapping)


# --- lists -------------------------------------------------------------------------------------


@dataclass
class RunListView:
    """A page of listed runs; `to_json()` is the `GET /api/runs` body (a `RunList`)."""

    runs: list[dict[str, Any]]
    total: int
    limit: int
    offset: int
    sort: str = "created_at"
    order: str = "desc"
    filters: dict[str, str | None] = field(default_factory=dict)

    def to_json(self) -> bytes:
        body = {"runs": self.runs, "total": self.total, "limit": self.limit, "offset": self.offset}
        return orjson.dumps(body, option=orjson.OPT_NAIVE_UTC)


def parse_sort(sort: str, order: str | None = None) -> tuple[str, bool]:
    """`sort=busy_share&order=asc`, or `sort=-busy_share` (leading minus: descending)."""
    descending = True
    if sort.startswith("-"):
        sort, descending = sort[1:], True
    elif order is None and sort != "created_at":
        descending = False
    if order is not None:
        if order not in ("asc", "desc"):
            raise InvalidInput.one(["query", "order"], "order must be 'asc' or 'desc'", "literal_error")
        descending = order == "desc"
    if sort not in SORTABLE_COLUMNS:
        raise InvalidInput.one(
            ["query", "sort"],
            f"cannot sort by {sort!r}; sortable: {', '.join(SORTABLE_COLUMNS)}",
            "literal_error",
        )
    return sort, descending


def list_runs_view(
    db: Session | Connection,
    *,
    sort: str = "created_at",
    order: str | None = None,
    limit: int = 50,
    offset: int = 0,
    **filters: str | None,
) -> RunListView:
    """Listed (not unlisted) runs, filtered (`platform`, `governor`, `mechanism`, `status`, `q`;
    a sweep's points only with `sweep`) and sorted, newest first by default."""
    column, descending = parse_sort(sort, order)
    f = store.RunFilter(**filters)
    rows, total = store.list_runs(db, f, sort=column, descending=descending, limit=limit, offset=offset)
    return RunListView(
        runs=[dict(zip(LIST_COLUMNS, r, strict=True), url=run_path(r.id)) for r in rows],
        total=total,
        limit=limit,
        offset=offset,
        sort=column,
        order="desc" if descending else "asc",
        filters=filters,
    )


class ListCache:
    """`GET /api/runs` answers as bytes, keyed by their normalised query and valid while the
    database's change count (`store.changes`, bumped by every write to runs, from any process) is
    the one they were made under: no per-request part inside, nothing spliced."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[Any, ...], tuple[int, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], changes: int) -> bytes | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != changes:
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: tuple[Any, ...], changes: int, body: bytes) -> None:
        with self._lock:
            self._entries[key] = (changes, body)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)


def list_runs_json(
    conn: Connection,
    cache: ListCache,
    *,
    sort: str,
    order: str | None,
    limit: int,
    offset: int,
    **filters: str | None,
) -> bytes:
    """The `GET /api/runs` body: from the cache while no run changed, else read and kept. The count
    is read before the rows, so rows kept under a count are never older than it (a write between
    the two reads leaves newer rows under an older count: the next request misses and reads again)."""
    column, descending = parse_sort(sort, order)
    key = (column, descending, limit, offset, *sorted((k, v) for k, v in filters.items() if v))
    changes = store.changes(conn)
    body = cache.get(key, changes)
    if body is None:
        view = list_runs_view(
            conn, sort=column, order="desc" if descending else "asc", limit=limit, offset=offset, **filters
        )
        body = view.to_json()
        cache.put(key, changes, body)
    return body


# --- compare -----------------------------------------------------------------------------------


def parse_ids(ids: str | Sequence[str]) -> list[str]:
    """Run ids from `a,b` or `["a", "b"]` (or both mixed), repeats dropped, order kept: 2 to 8."""
    parts = [ids] if isinstance(ids, str) else list(ids)
    out: list[str] = []
    for part in parts:
        for rid in part.replace(" ", ",").split(","):
            if rid and rid not in out:
                out.append(rid)
    if not 2 <= len(out) <= MAX_COMPARE:
        raise InvalidInput.one(
            ["query", "ids"], f"give 2 to {MAX_COMPARE} different run ids, got {len(out)}", "value_error"
        )
    return out


def _delta(v0: float | None, v: float | None, unit: str) -> float | None:
    """`v` against `v0`: percentage points for a share, else percent (None from a zero)."""
    if v0 is None or v is None:
        return None
    if unit == "share":
        return (v - v0) * 100.0
    if v0 == 0:
        return None
    return (v - v0) / abs(v0) * 100.0


@dataclass
class CompareView:
    comparison: Comparison
    results: list[dict[str, Any] | None]


def compare_view(session: Session, ids: str | Sequence[str]) -> CompareView:
    """Aligned metrics of 2..8 runs, with deltas against the first (pp for shares, else %). `NotFound` names a
    missing id; runs not yet done are included with null values and `complete` false."""
    run_ids = parse_ids(ids)
    rows = store.get_rows(session, run_ids)
    measured = measurement_ids(session, [rid for rid in run_ids if rid not in rows])
    run_ids = [rid for rid in run_ids if rid not in measured]
    if measured and not run_ids:
        raise InvalidInput.one(["query", "ids"], "give at least one run id beside the measurements")
    for rid in run_ids:
        if rid not in rows:
            raise NotFound(f"run {rid!r} not found")
    views = [run_view(rows[rid]._mapping) for rid in run_ids]
    results = [v.result if v.status == "done" else None for v in views]
    names: list[str] = []
    for r in results:
        names += [s["name"] for s in (r or {}).get("states", []) if s["name"] not in names]
    metrics = []
    for m in charts.compare_metrics(names):
        values = [m.value(r) for r in results]
        deltas = [None if values[0] is None else 0.0] + [_delta(values[0], v, m.unit) for v in values[1:]]
        relative = [None if values[0] is None else 0.0] + [_delta(values[0], v, "") for v in values[1:]]
        metrics.append(
            ComparedMetric(
                key=m.key,
                group=m.group,
                label=m.label,
                unit=m.unit,
                better=m.better,
                values=values,
                delta_unit="pp" if m.unit == "share" else "%",
                deltas=deltas,
                deltas_pct=relative,
            )
        )
    runs = [
        ComparedRun(**{k: v for k, v in view.summary.items() if k in ComparedRun.model_fields})
        for view in views
    ]
    comparison = Comparison(runs=runs, complete=all(r is not None for r in results), metrics=metrics)
    if measured:
        comparison = with_measurements(session, comparison, measured, results)
    return CompareView(comparison, results)


def submit(
    session: Session, runner: Any, data: dict[str, Any], *, title: str = "", unlisted: bool = False
) -> Any:
    """Validate a config (`InvalidInput` names the field) and submit it to the job runner: the
    read ends first, so that the runner's own transaction sees what this session saw."""
    config = resolve_config(session, data)
    session.commit()
    return runner.submit(config, title=title, unlisted=unlisted)
