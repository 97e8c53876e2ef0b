"""Loaders shared by every page and its JSON twin (`/runs/{id}` and `/api/runs/{id}` both call
`load_run_view`). They read through `app.store`, raise `NotFound`/`InvalidInput`, and return plain
data: no ORM object leaves this module.

The stored result is never rebuilt into pydantic models on the read path: `RunView.to_json()`
splices the stored bytes into the answer, and `RunView.result` parses them with orjson only when a
page needs the numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson
from pydantic import ValidationError
from sqlalchemy import Connection, Row
from sqlalchemy.orm import Session

from app import store
from app.errors import Conflict, InvalidInput, NotFound
from app.models import SORTABLE_COLUMNS
from app.schemas import (
    ComparedMetric,
    ComparedRun,
    Comparison,
    PlatformCreate,
    PlatformList,
    PlatformRead,
)
from engine import BUILTIN_PLATFORMS, Platform, SimConfig, custom_platform, load_platform
from engine.config import config_errors
from engine.result import LATENCY_LABELS, LATENCY_SOURCES

CONFIG_LOC: tuple[str, ...] = ("body", "config")
MAX_COMPARE = 8


def run_url(run_id: str, base_url: str = "") -> str:
    """The share link of a run (absolute when `base_url` is given)."""
    return f"{base_url.rstrip('/')}/runs/{run_id}"


# --- configs -----------------------------------------------------------------------------------


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
        row = store.get_platform(session, name)
        if row is not None:
            data = {**data, "platform_table": orjson.loads(row.table)}
    try:
        return SimConfig.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput([{**e, "loc": [*loc, *e["loc"]]} for e in config_errors(exc)]) from None


# --- runs --------------------------------------------------------------------------------------


def _summary(row: Row[Any] | Mapping[str, Any], base_url: str) -> dict[str, Any]:
    mapping = row if isinstance(row, Mapping) else row._mapping
    data = {c: mapping[c] for c in store.SUMMARY_COLUMNS}
    data["url"] = run_url(data["id"], base_url)
    return data


@dataclass
class RunView:
    """One run as pages and the API show it.

    `summary` holds the run record's fields (id, url, title, status, progress, created_at, the
    summary columns, engine_version, error...); they are also readable as attributes (`view.status`).
    `config_json` and `result_json` are the stored texts; `config` and `result` parse them lazily.
    """

    summary: dict[str, Any]
    config_json: str
    result_json: bytes | None
    unlisted: bool = False

    def __getattr__(self, name: str) -> Any:
        summary = self.__dict__.get("summary", {})
        if name in summary:
            return summary[name]
        raise AttributeError(name)

    @cached_property
    def config(self) -> dict[str, Any]:
        return orjson.loads(self.config_json)  # type: ignore[no-any-return]

    @cached_property
    def result(self) -> dict[str, Any] | None:
        return None if self.result_json is None else orjson.loads(self.result_json)

    def to_json(self) -> bytes:
        """The `GET /api/runs/{id}` body: summary fields, then the stored config and result spliced in."""
        head = orjson.dumps({**self.summary, "unlisted": self.unlisted})
        return b"".join(
            (
                head[:-1],
                b',"config":',
                self.config_json.encode(),
                b',"result":',
                self.result_json if self.result_json is not None else b"null",
                b"}",
            )
        )


def load_run_view(db: Session | Connection, run_id: str, base_url: str = "") -> RunView:
    """A run by id (unlisted ones too: the link is the key). `NotFound` if there is none."""
    row = store.get_run_row(db, run_id)
    if row is None:
        raise NotFound(f"run {run_id!r} not found")
    return run_view(row._mapping, base_url)


def run_view(row: Mapping[str, Any], base_url: str = "") -> RunView:
    """A run from its `store.RUN_ROW` columns."""
    return RunView(_summary(row, base_url), row["config"], row["result"], bool(row["unlisted"]))


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
        return orjson.dumps(
            {"runs": self.runs, "total": self.total, "limit": self.limit, "offset": self.offset}
        )


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
    session: Session,
    *,
    platform: str | None = None,
    governor: str | None = None,
    mechanism: str | None = None,
    status: str | None = None,
    q: str | None = None,
    sort: str = "created_at",
    order: str | None = None,
    limit: int = 50,
    offset: int = 0,
    base_url: str = "",
) -> RunListView:
    """Listed (not unlisted) runs, filtered and sorted, newest first by default."""
    column, descending = parse_sort(sort, order)
    f = store.RunFilter(platform=platform, governor=governor, mechanism=mechanism, status=status, q=q)
    rows, total = store.list_runs(session, f, sort=column, descending=descending, limit=limit, offset=offset)
    return RunListView(
        runs=[_summary(r, base_url) for r in rows],
        total=total,
        limit=limit,
        offset=offset,
        sort=column,
        order="desc" if descending else "asc",
        filters={
            "platform": platform,
            "governor": governor,
            "mechanism": mechanism,
            "status": status,
            "q": q,
        },
    )


# --- compare -----------------------------------------------------------------------------------


def parse_ids(ids: str | Sequence[str]) -> list[str]:
    parts = ids.split(",") if isinstance(ids, str) else list(ids)
    out = [p.strip() for p in parts if p.strip()]
    if not 2 <= len(out) <= MAX_COMPARE:
        raise InvalidInput.one(
            ["query", "ids"],
            f"give 2 to {MAX_COMPARE} comma-separated run ids, got {len(out)}",
            "value_error",
        )
    return out


def _delta_pct(v0: float | None, v: float | None) -> float | None:
    if v0 is None or v is None or v0 == 0:
        return None
    return (v - v0) / abs(v0) * 100.0


def _metrics(results: list[dict[str, Any] | None]) -> list[ComparedMetric]:
    rows: list[tuple[str, str, str, str, list[float | None]]] = []

    def add(key: str, group: str, label: str, unit: str, get: Any) -> None:
        values: list[float | None] = []
        for r in results:
            try:
                v = None if r is None else get(r)
            except (KeyError, TypeError, IndexError):
                v = None
            values.append(None if v is None else float(v))
        rows.append((key, group, label, unit, values))

    names: list[str] = []
    for r in results:
        for s in (r or {}).get("states", []):
            if s["name"] not in names:
                names.append(s["name"])

    def state(r: dict[str, Any], name: str) -> dict[str, Any] | None:
        return next((s for s in r["states"] if s["name"] == name), None)

    for name in names:
        add(
            f"residency.{name}",
            "residency",
            f"{name} residency",
            "share",
            lambda r, n=name: (state(r, n) or {}).get("residency"),
        )
    add("busy_share", "residency", "Busy (C0) share", "share", lambda r: r["busy_share"])
    add("wakeups", "residency", "Wake-ups from idle", "count", lambda r: r["wakeups"])
    for name in names:
        add(
            f"usage.{name}",
            "usage",
            f"{name} entries",
            "count",
            lambda r, n=name: (state(r, n) or {}).get("usage"),
        )
    for src in LATENCY_SOURCES:
        label = LATENCY_LABELS[src].split(" (")[0].split(":")[0]

        def lat(r: dict[str, Any], key: str, s: str = src) -> float | None:
            stats = r["latency"].get(s)
            return None if not stats or not stats["count"] else stats[key]

        add(f"latency.{src}.mean_ns", "latency", f"{label} mean", "ns", lambda r, f=lat: f(r, "mean_ns"))
        add(f"latency.{src}.p99_ns", "latency", f"{label} p99", "ns", lambda r, f=lat: f(r, "p99_ns"))
    for loc, loc_label in (("same_socket", "same socket"), ("other_socket", "other socket")):
        add(
            f"ipi.{loc}.mean_cycles",
            "ipi",
            f"Sender cycles, {loc_label}",
            "cycles",
            lambda r, x=loc: r["ipi"][x]["mean_cycles"] if r["ipi"][x]["calls"] else None,
        )
        add(
            f"ipi.{loc}.idle_target_mean_cycles",
            "ipi",
            f"Sender cycles to an idle target, {loc_label}",
            "cycles",
            lambda r, x=loc: r["ipi"][x]["idle_target_mean_cycles"],
        )
        add(
            f"ipi.{loc}.busy_target_mean_cycles",
            "ipi",
            f"Sender cycles to a busy target, {loc_label}",
            "cycles",
            lambda r, x=loc: r["ipi"][x]["busy_target_mean_cycles"],
        )
    for key, label in (
        ("requested", "Calls made"),
        ("ipis_sent", "IPIs sent"),
        ("ipis_avoided", "IPIs avoided"),
        ("sched_ipis_sent", "Scheduler wake-up IPIs sent"),
        ("sched_ipis_avoided", "Scheduler wake-up IPIs avoided"),
        ("line_transfers_same_socket", "Cache-line transfers, same socket"),
        ("line_transfers_other_socket", "Cache-line transfers, other socket"),
    ):
        add(f"ipi.{key}", "ipi", label, "count", lambda r, k=key: r["ipi"][k])
    add("energy.joules", "energy", "Energy (estimate)", "J", lambda r: r["energy"]["joules"])
    add(
        "energy.mean_watts_per_cpu",
        "energy",
        "Mean power per CPU (estimate)",
        "W",
        lambda r: r["energy"]["mean_watts_per_cpu"],
    )

    out = []
    for key, group, label, unit, values in rows:
        v0 = values[0]
        deltas = [None if v0 is None or values[0] is None else 0.0] + [_delta_pct(v0, v) for v in values[1:]]
        out.append(
            ComparedMetric(key=key, group=group, label=label, unit=unit, values=values, deltas_pct=deltas)
        )
    return out


def compare_view(session: Session, ids: str | Sequence[str], base_url: str = "") -> Comparison:
    """Aligned metrics of 2..8 runs, with percent deltas against the first. `NotFound` names a
    missing id; runs not yet done are included with null values and `complete` false."""
    run_ids = parse_ids(ids)
    rows = store.get_run_rows(session, run_ids)
    for rid in run_ids:
        if rid not in rows:
            raise NotFound(f"run {rid!r} not found")
    runs = [
        ComparedRun(
            **{k: v for k, v in _summary(rows[rid], base_url).items() if k in ComparedRun.model_fields}
        )
        for rid in run_ids
    ]
    results = [
        orjson.loads(rows[rid].result) if rows[rid].status == "done" and rows[rid].result else None
        for rid in run_ids
    ]
    return Comparison(runs=runs, complete=all(r is not None for r in results), metrics=_metrics(results))


# --- platforms ---------------------------------------------------------------------------------


def _builtin_read(p: Platform) -> PlatformRead:
    return PlatformRead(name=p.name, title=p.title, custom=False, based_on=None, created_at=None, table=p)


def _custom_read(row: Any) -> PlatformRead:
    table = Platform.model_validate_json(row.table)
    return PlatformRead(
        name=row.name,
        title=row.title or table.title,
        custom=True,
        based_on=row.based_on,
        created_at=row.created_at,
        table=table,
    )


def platforms_view(session: Session) -> PlatformList:
    """Built-in tables (by name), then custom ones."""
    builtin = [_builtin_read(BUILTIN_PLATFORMS[n]) for n in sorted(BUILTIN_PLATFORMS)]
    return PlatformList(platforms=builtin + [_custom_read(r) for r in store.list_platforms(session)])


def platform_view(session: Session, name: str) -> PlatformRead:
    if name in BUILTIN_PLATFORMS:
        return _builtin_read(BUILTIN_PLATFORMS[name])
    row = store.get_platform(session, name)
    if row is None:
        raise NotFound(f"platform {name!r} not found")
    return _custom_read(row)


def create_platform(session: Session, body: PlatformCreate) -> PlatformRead:
    """Store a custom table. 422 names the field (indices count the states as the user gave them);
    409 if the name is taken."""
    if body.based_on not in BUILTIN_PLATFORMS:
        raise InvalidInput.one(
            ["body", "based_on"],
            f"unknown platform {body.based_on!r}; built-in tables are {', '.join(sorted(BUILTIN_PLATFORMS))}",
        )
    if body.name in BUILTIN_PLATFORMS or store.get_platform(session, body.name) is not None:
        raise Conflict(f"platform {body.name!r} already exists; choose another name")
    poll_added = body.states[0].name != "POLL"
    try:
        table = custom_platform(
            body.name, body.states, based_on=load_platform(body.based_on), title=body.title
        )
    except ValidationError as exc:
        errors = []
        for e in config_errors(exc):
            loc = list(e["loc"])  # type: ignore[call-overload]
            if poll_added and len(loc) >= 2 and loc[0] == "states" and isinstance(loc[1], int) and loc[1] > 0:
                loc[1] -= 1  # the user's list has no POLL row: point at their index
            errors.append({**e, "loc": ["body", *loc]})
        raise InvalidInput(errors) from None
    row = store.create_platform(
        session,
        name=body.name,
        title=body.title,
        based_on=body.based_on,
        states=orjson.dumps([s.model_dump(mode="json") for s in body.states]).decode(),
        table=table.model_dump_json(),
    )
    return _custom_read(row)
