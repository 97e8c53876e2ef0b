"""Run pages: the new-run form, the runs list, a run's page (its stored bytes) and downloads, and
the platform page's "simulate" button. Each reads the same loader as its JSON twin."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Mapping
from typing import Any, get_args

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse

from app import charts
from app.core import web
from app.core.deps import DbDep, SessionDep
from app.core.errors import NotFound
from app.core.models import RUN_STATUSES, SORTABLE_COLUMNS, Run
from app.platforms.service import machine_config, platforms_view
from app.runs import form
from app.runs import service as views
from app.runs.lifecycle import SubmitterDep
from app.runs.schemas import RunStatus
from app.runs.service import ArtifactsDep, serve
from engine.config import GovernorName, Mechanism, SimConfig

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 25
# Columns the runs table always shows; sorting by another adds it as a column.
SHOWN_COLUMNS = {
    "created_at", "title", "status", "platform", "governor", "mechanism", "cpus", "duration_ms",
    "wake_latency_mean_ns", "wake_latency_p99_ns", "intr_latency_p99_ns", "ipis_sent", "ipis_avoided",
    "energy_joules",
}  # fmt: skip
SORTS = [(c, Run.__table__.c[c].info["label"]) for c in SORTABLE_COLUMNS]


def platform_list(session: Any) -> list[dict[str, Any]]:
    return platforms_view(session).model_dump(mode="json")["platforms"]  # type: ignore[no-any-return]


@router.get("/runs/new", name="new_run_page")
def new_run_page(
    request: Request,
    session: SessionDep,
    from_: str | None = Query(default=None, alias="from", max_length=24),
    platform: str | None = Query(default=None, max_length=64),
) -> Response:
    platforms = platform_list(session)
    data = SimConfig().model_dump(mode="json")
    source = None
    if from_:
        source = views.load_run_view(session, from_)
        data = form.merge(data, source.config)
    elif platform:
        data["platform"] = platform
    data["title"] = source.summary["title"] if source else ""
    data.pop("platform_table", None)
    platform_data = form.platform_form_data(platforms)
    names = list(platform_data) + ([data["platform"]] if data["platform"] not in platform_data else [])
    state_names = {s["name"] for p in platform_data.values() for s in p["states"]}
    return web.page(
        request,
        "run_new.html",
        {
            "sections": form.form_sections(names),
            "timer_fields": form.TIMER_FIELDS,
            "values": data,
            "form_value": form.form_value,
            "prefill": data,
            "platform_data": platform_data,
            "state_colors": charts.palette(sorted(state_names)),
            "source": source.summary if source else None,
            "describe": form.describe,
            "limits": form.limits,
        },
    )


@router.get("/runs", name="runs_page")
def runs_page(
    request: Request,
    session: SessionDep,
    platform: str | None = Query(default=None, max_length=64),
    governor: str | None = Query(default=None, max_length=32),
    mechanism: str | None = Query(default=None, max_length=32),
    status: RunStatus | None = None,
    q: str | None = Query(default=None, max_length=200),
    sweep: str | None = Query(default=None, max_length=24),
    sort: str = Query(default="created_at", max_length=64),
    order: str = Query(default="desc", max_length=4),
    page: int = Query(default=1, ge=1, le=10**6),
) -> Response:
    filters = {
        k: v
        for k, v in {
            "platform": platform,
            "governor": governor,
            "mechanism": mechanism,
            "status": status,
            "q": q,
            "sweep": sweep,
        }.items()
        if v
    }
    listing = views.list_runs_view(
        session, **filters, sort=sort, order=order, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE
    )
    return web.page(
        request,
        "runs.html",
        {
            "runs": listing.runs,
            "total": listing.total,
            "page": page,
            "pages": max(1, math.ceil(listing.total / PAGE_SIZE)),
            "has_next": page * PAGE_SIZE < listing.total,
            "filters": filters,
            # As the list read them: `sort=-col` (the API's syntax) is `col`, descending.
            "sort": listing.sort,
            "order": listing.order,
            "sorts": SORTS,
            "extra": None if listing.sort in SHOWN_COLUMNS else (listing.sort, dict(SORTS)[listing.sort]),
            "platforms": [p["name"] for p in platform_list(session)],
            "governors": list(get_args(GovernorName)),
            "mechanisms": list(get_args(Mechanism)),
            "statuses": list(RUN_STATUSES),
        },
    )


@router.get("/runs/{run_id}.json", name="run_json")
def run_json(run_id: str, session: SessionDep) -> Response:
    """`GET /api/runs/{id}`'s answer (its note beside the stored bytes), as a file to keep."""
    view = views.load_run_view(session, run_id)
    _, note = views.id_and_note(session.connection(), run_id)
    headers = {"Content-Disposition": f'attachment; filename="idlelab-{run_id}.json"'}
    return Response(views.beside_note(view.to_json(), note), media_type="application/json", headers=headers)


@router.get("/runs/{run_id}.csv", name="run_csv")
def run_csv(run_id: str, session: SessionDep) -> StreamingResponse:
    view = views.load_run_view(session, run_id)
    if view.result is None:
        raise NotFound(f"run {run_id!r} has no result yet (status {view.status})")
    headers = {"Content-Disposition": f'attachment; filename="idlelab-{run_id}.csv"'}
    return StreamingResponse(result_csv(view.result), media_type="text/csv; charset=utf-8", headers=headers)


@router.get("/runs/{run_id}/per-cpu.csv", name="run_per_cpu_csv")
def run_per_cpu_csv(run_id: str, session: SessionDep) -> Response:
    """The per-CPU table: one row per logical CPU (socket, core, thread), a column per state and
    C0 with its share in % (as the run page's heatmap shows them), then per state the counters
    sysfs keeps per CPU (`usage`, `above`, `below`; empty for a result of an engine before 0.8)."""
    view = views.load_run_view(session, run_id)
    if view.result is None:
        raise NotFound(f"run {run_id!r} has no result yet (status {view.status})")
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    result = view.result
    names = charts.per_cpu_names(result)
    states = [s["name"] for s in result["states"]]
    counters = [(c, result.get(f"per_cpu_{c}") or []) for c in ("usage", "above", "below")]
    w.writerow([
        "cpu", "socket", "core", "thread", *(f"{n}%" for n in names),
        *(f"{s} {c}" for c, _ in counters for s in states),
    ])
    rows = result["per_cpu_residency"]
    for socket, core, thread, cpu in charts.cpu_places(result):
        counts = [v for _, per_cpu in counters for v in (per_cpu[cpu] if per_cpu else [""] * len(states))]
        w.writerow([cpu, socket, core, thread, *(f"{v * 100:.4f}" for v in rows[cpu]), *counts])
    headers = {"Content-Disposition": f'attachment; filename="idlelab-{run_id}-per-cpu.csv"'}
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)


@router.get("/runs/{run_id}", name="run_page")
async def run_page(request: Request, run_id: str, db: DbDep, artifacts: ArtifactsDep) -> Response:
    """A finished run's page is its stored bytes (rendered when it finished). Declared after the
    downloads, whose paths it would match."""
    return await serve(request, db, artifacts, run_id, "page")


def result_csv(result: Mapping[str, Any]) -> Iterator[str]:
    """A result as one long CSV table `section,name,metric,value,unit` (spreadsheet friendly),
    streamed a section at a time (per-CPU rows can be many)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")

    def flush() -> str:
        text = out.getvalue()
        out.seek(0)
        out.truncate()
        return text

    w.writerow(["section", "name", "metric", "value", "unit"])
    for key in (
        "platform", "governor", "governor_kernel", "mechanism", "cpus", "sockets", "duration_ns",
        "events", "wakeups", "busy_share", "engine_version", "config_hash",
    ):  # fmt: skip
        w.writerow(["run", "", key, result.get(key), "ns" if key.endswith("_ns") else ""])
    for s in result["states"]:
        for key, unit in (
            ("usage", ""), ("time_ns", "ns"), ("residency", "share"), ("above", ""), ("below", ""),
            ("rejected", ""), ("exit_latency_us", "us"), ("target_residency_us", "us"), ("irq_enable", ""),
            ("disabled", ""), ("wake_latency_mean_ns", "ns"), ("intr_latency_mean_ns", "ns"),
            ("exit_latency_mean_ns", "ns"),
        ):  # fmt: skip
            w.writerow(["state", s["name"], key, s.get(key), unit])
    for src, stats in result["latency"].items():
        for key in ("count", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"):
            w.writerow(["latency", src, key, stats[key], "" if key == "count" else "ns"])
    for key, value in result["ipi"].items():
        if isinstance(value, Mapping):
            for sub, v in value.items():
                w.writerow(["ipi", key, sub, v, "cycles" if "cycles" in sub else ""])
        elif key != "mechanism":
            w.writerow(["ipi", "", key, value, "ns" if key.endswith("_ns") else ""])
    yield flush()
    names = list(result["per_cpu_state_names"])
    for cpu, row in enumerate(result["per_cpu_residency"]):
        for name, share in zip(names, row, strict=False):
            w.writerow(["per_cpu_residency", f"cpu{cpu}", name, share, "share"])
        yield flush()
    energy = result["energy"]
    for key, unit in (("joules", "J"), ("mean_watts_per_cpu", "W"), ("busy_joules", "J")):
        w.writerow(["energy (estimate)", "", key, energy[key], unit])
    for name, j in energy["per_state_joules"].items():
        w.writerow(["energy (estimate)", name, "joules", j, "J"])
    yield flush()


@router.post("/platforms/{name}/simulate", name="simulate_platform_form")
def simulate_platform_form(name: str, session: SessionDep, submit: SubmitterDep) -> Response:
    """Simulate the platform's table (an imported machine's topology and disabled states), then
    show it beside the measured counters."""
    submitted = submit.config(session, machine_config(session, name), title=f"{name}: simulated")
    return web.see_other(f"{web.url_for('platform_page', name=name)}?run={submitted.id}")
