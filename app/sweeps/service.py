"""Sweeps: a base config and axes in, validated points out (`expand`), submitted as runs through
the run lifecycle (`submit`, `cancel`); `sweep_view` is the one loader of `/sweeps/{id}` and its
JSON twin."""

from __future__ import annotations

import copy
import csv
import io
import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from app.core import dotted
from app.core.errors import InvalidInput, NotFound
from app.core.inputs import SimConfigSchema, no_nul_strings
from app.core.models import RESULT_SUMMARY_COLUMNS, RUN_STATUSES, Run, Sweep, utcnow
from app.core.tokens import new_id, new_token
from app.runs import lifecycle
from app.runs.lifecycle import RunSpec, Submitter
from app.runs.service import resolve_config, run_path
from app.sweeps import store
from engine import SimConfig
from engine.repeats import MAX_REPEATS, MIN_REPEATS

MAX_POINTS = 1000
# Simulations per sweep: points x repeats.
MAX_SIMULATIONS = 1000
PLATFORM_PATH = "platform"
# Metrics a sweep's charts and table offer: the runs' summary columns (no result is parsed); with
# repeats, the means (the columns) and the standard deviations over repeats (`summary_stats`).
METRICS: dict[str, str] = {name: str(Run.__table__.c[name].info["label"]) for name in RESULT_SUMMARY_COLUMNS}
METRIC_KEYS: dict[str, str] = {
    name: Run.__table__.c[name].info["result"].key for name in RESULT_SUMMARY_COLUMNS
}
LATENCY_METRIC = "wake_latency_p99_ns"
ENERGY_METRIC = "energy_joules"


def _axis_paths() -> tuple[list[str], str]:
    """What an axis path may be, as the schema says it: every field the default config has, through
    nested sections (an enum), or (a pattern) a field the default config leaves out or a path into
    a list or a map (`wakeups.timers.0.period_us`, `power.state_watts.C6`): whether that one leads
    somewhere depends on the base, which the server checks."""
    default = SimConfig().model_dump(mode="json")
    fixed: list[str] = []
    absent: list[str] = []
    containers: list[str] = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, info in model.model_fields.items():
            path = prefix + name
            if path == "platform_table":
                continue
            kind = info.annotation
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                fixed.append(path)
                walk(kind, path + ".")
                continue
            (fixed if dotted.has(default, path) else absent).append(path)
            if any(c in repr(kind) for c in ("list", "dict")):
                containers.append(path)

    walk(SimConfig, "")
    escape = lambda paths: "|".join(p.replace(".", "\\.") for p in paths)  # noqa: E731
    return fixed, f"^(?:(?:{escape(absent)})|(?:{escape(containers)})\\.[^.\\x00]+(?:\\.[^.\\x00]+)*)$"


AXIS_FIELDS, AXIS_PATTERN = _axis_paths()


class Axis(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)

    path: Annotated[
        str,
        Field(
            min_length=1,
            max_length=200,
            description="A config path: `governor.name`, `wakeups.timers.0.period_us`.",
            json_schema_extra={"anyOf": [{"enum": AXIS_FIELDS}, {"pattern": AXIS_PATTERN}]},
        ),
    ]
    values: Annotated[list[Any], Field(min_length=1, max_length=MAX_POINTS)]


class SweepCreate(BaseModel):
    """Body of `POST /api/sweeps`: points are the cartesian product of the axes' values (at most
    1,000), each an ordinary run of `base` with those values set."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)

    title: Annotated[str, Field(max_length=200)] = ""
    base: Annotated[dict[str, Any], SimConfigSchema] = Field(
        default_factory=dict, description="A SimConfig (`{}`: the default run)."
    )
    axes: Annotated[list[Axis], Field(min_length=1, max_length=8)]
    unlisted: bool = Field(default=False, description="Only the sweep's link finds it and its points.")
    repeats: Annotated[int, Field(ge=MIN_REPEATS, le=MAX_REPEATS)] = Field(
        default=1, description="Seeds per point (as a run's `repeats`); points x repeats <= 1,000."
    )


@dataclass(frozen=True)
class Point:
    index: int
    values: dict[str, Any]
    config: SimConfig


def sweep_path(sweep_id: str) -> str:
    return f"/sweeps/{sweep_id}"


def _loc(*parts: str | int) -> list[str | int]:
    return ["body", *parts]


def _set(data: dict[str, Any], full: Mapping[str, Any], path: str, value: Any) -> None:
    """Set `path` in the config as given; a level it leaves out is copied from the full config."""
    if path == PLATFORM_PATH:
        # Another platform: the base's resolved table (a custom platform's) must not come along.
        data.pop("platform_table", None)
    dotted.put(data, path, value, fill=dotted.from_full(full))


def _message(exc: InvalidInput) -> str:
    """A config's errors in one line, each naming its field (`governor.name: ...`)."""
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.detail)


def expand(session: Session, body: SweepCreate) -> tuple[dict[str, Any], list[Point]]:
    """The base (custom platform resolved) and every point, validated; `InvalidInput` naming
    `axes.N.path`, `axes.N.values.M` or `axes` otherwise."""
    base_config = resolve_config(session, body.base, loc=("body", "base"))
    base = dict(body.base)
    if base_config.platform_table is not None:
        base["platform_table"] = base_config.platform_table.model_dump(mode="json")
    full = base_config.model_dump(mode="json")
    seen: set[str] = set()
    errors: list[dict[str, Any]] = []
    for n, axis in enumerate(body.axes):
        if axis.path in seen:
            errors.append(
                {
                    "loc": _loc("axes", n, "path"),
                    "msg": f"{axis.path!r} is already an axis",
                    "type": "value_error",
                }
            )
        elif axis.path == "platform_table" or not dotted.has(full, axis.path):
            errors.append(
                {
                    "loc": _loc("axes", n, "path"),
                    "msg": f"{axis.path!r} names no config field",
                    "type": "value_error",
                }
            )
        seen.add(axis.path)
    if errors:
        raise InvalidInput(errors)
    count = math.prod(len(a.values) for a in body.axes)
    if count > MAX_POINTS:
        raise InvalidInput.one(_loc("axes"), f"{count} points over the limit of {MAX_POINTS}", "value_error")
    if count * body.repeats > MAX_SIMULATIONS:
        raise InvalidInput.one(
            _loc("repeats"),
            f"{count} points x {body.repeats} repeats = {count * body.repeats} simulations, over the limit "
            f"of {MAX_SIMULATIONS}",
            "value_error",
        )
    for n, axis in enumerate(body.axes):
        for m, value in enumerate(axis.values):
            data = copy.deepcopy(base)
            _set(data, full, axis.path, value)
            try:
                resolve_config(session, data, loc=())
            except InvalidInput as exc:
                errors.append(
                    {"loc": _loc("axes", n, "values", m), "msg": _message(exc), "type": "value_error"}
                )
    if errors:
        raise InvalidInput(errors)
    points = []
    for index, combo in enumerate(itertools.product(*(a.values for a in body.axes))):
        data = copy.deepcopy(base)
        values = {a.path: v for a, v in zip(body.axes, combo, strict=True)}
        for path, value in values.items():
            _set(data, full, path, value)
        try:
            config = resolve_config(session, data, loc=())
        except InvalidInput as exc:  # values fine alone, refused together
            raise InvalidInput.one(_loc("axes"), f"point {values}: {_message(exc)}", "value_error") from None
        points.append(Point(index, values, config))
    return base, points


def _point_title(title: str, values: Mapping[str, Any]) -> str:
    text = ", ".join(f"{p}={v}" for p, v in values.items())
    return (f"{title}: {text}" if title else text)[:200]


def submit(session: Session, submitter: Submitter, body: SweepCreate) -> dict[str, Any]:
    """Validate and store a sweep with its points (one transaction); its id, delete token, points."""
    base, points = expand(session, body)
    session.commit()  # ends the read: the submission writes in its own transaction
    token, token_hash = new_token()
    sweep_id = new_id()

    def add_sweep(s: Session) -> None:
        s.add(
            Sweep(
                id=sweep_id,
                title=body.title,
                unlisted=body.unlisted,
                delete_token_hash=token_hash,
                base=orjson.dumps(base).decode(),
                axes=orjson.dumps([a.model_dump() for a in body.axes]).decode(),
                n_points=len(points),
                cancelled=False,
                created_at=utcnow(),
            )
        )
        s.flush()

    specs = [
        RunSpec(p.config, _point_title(body.title, p.values), body.unlisted, sweep_id, p.index, body.repeats)
        for p in points
    ]
    submitter(specs, before=add_sweep)
    return {"id": sweep_id, "delete_token": token, "points": len(points)}


def cancel(session: Session, sweep_id: str) -> int:
    """Cancel a sweep: its queued points fail (running ones finish); how many."""
    store.mark_cancelled(session, sweep_id)
    return lifecycle.cancel_sweep(session, sweep_id)


def _status(counts: Mapping[str, int], n_points: int, cancelled: bool) -> str:
    """`queued` until a point starts, `running` while any waits, then `done` (or `cancelled`)."""
    if counts.get("queued", 0) == n_points:
        return "queued"
    if counts.get("queued", 0) + counts.get("running", 0):
        return "running"
    return "cancelled" if cancelled else "done"


def summary(sweep: Sweep, counts: Mapping[str, int]) -> dict[str, Any]:
    """A sweep's list row."""
    finished = counts.get("done", 0) + counts.get("failed", 0)
    return {
        "id": sweep.id,
        "url": sweep_path(sweep.id),
        "title": sweep.title,
        "status": _status(counts, sweep.n_points, sweep.cancelled),
        "progress": finished / sweep.n_points if sweep.n_points else 1.0,
        "n_points": sweep.n_points,
        "counts": {s: counts.get(s, 0) for s in RUN_STATUSES},
        "created_at": sweep.created_at.isoformat(),
    }


def sweep_view(session: Session, sweep_id: str) -> dict[str, Any]:
    """`GET /api/sweeps/{id}` and the page's data: the sweep, its axes, and every point with its
    values, run, status and metrics."""
    sweep = store.get_sweep(session, sweep_id)
    if sweep is None:
        raise NotFound(f"sweep {sweep_id!r} not found")
    axes = orjson.loads(sweep.axes)
    combos = list(itertools.product(*(a["values"] for a in axes)))
    rows = store.points(session, sweep_id)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    view = summary(sweep, counts)
    running = sum(r.progress for r in rows if r.status == "running")
    view["progress"] = (
        (view["progress"] * sweep.n_points + running) / sweep.n_points if sweep.n_points else 1.0
    )
    view.update(
        base=orjson.loads(sweep.base),
        axes=axes,
        unlisted=sweep.unlisted,
        metrics=METRICS,
        points=[
            {
                "index": row.sweep_index,
                "values": {a["path"]: v for a, v in zip(axes, combos[row.sweep_index], strict=True)},
                "run_id": row.id,
                "url": run_path(row.id),
                "status": row.status,
                "progress": row.progress,
                "error": row.error,
                "wall_s": row.wall_s,
                "repeats": row.repeat_count,
                **{name: getattr(row, name) for name in METRICS},
                "stddev": _stddevs(row.summary_stats),
            }
            for row in rows
        ],
    )
    return view


def _stddevs(summary_stats: str | None) -> dict[str, float | None]:
    """Each metric's standard deviation over the point's repeats (None with one repeat)."""
    stats = orjson.loads(summary_stats) if summary_stats else {}
    return {name: stats.get(key, {}).get("stddev") for name, key in METRIC_KEYS.items()}


def list_view(session: Session, *, limit: int, offset: int) -> dict[str, Any]:
    sweeps, total = store.list_sweeps(session, limit=limit, offset=offset)
    counts = store.counts(session, [s.id for s in sweeps])
    return {
        "sweeps": [summary(s, counts.get(s.id, {})) for s in sweeps],
        "total": total,
        "limit": limit,
        "offset": offset,
    }


def points_csv(view: Mapping[str, Any]) -> Iterator[str]:
    """The points as CSV: index, the axes' values, run, status, then the metrics."""
    paths = [a["path"] for a in view["axes"]]
    header = [
        "index",
        *paths,
        "run_id",
        "status",
        "wall_s",
        "repeats",
        *METRICS,
        *(f"{m}_stddev" for m in METRICS),
    ]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    for p in view["points"]:
        writer.writerow(
            [
                p["index"],
                *(p["values"][k] for k in paths),
                p["run_id"],
                p["status"],
                p["wall_s"],
                p["repeats"],
            ]
            + [p[m] for m in METRICS]
            + [p["stddev"][m] for m in METRICS]
        )
    yield buf.getvalue()


def example_sweep() -> SweepCreate:
    """The home page's sweep: p99 WakeLatency and energy vs interrupt rate for menu, teo and ladder
    on skx (one socket, so each point takes a fraction of a second)."""
    return SweepCreate(
        title="Interrupt rate vs governor on skx",
        base={"platform": "skx", "duration_ms": 200, "topology": {"sockets": 1, "cores_per_socket": 8}},
        axes=[
            Axis(path="governor.name", values=["menu", "teo", "ladder"]),
            Axis(path="wakeups.interrupts.rate_hz", values=[100, 300, 1000, 3000, 10000, 20000]),
        ],
    )
