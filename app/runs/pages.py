"""Run pages: home, the new-run form, the runs list, a run's page (its stored bytes) and
downloads, and the compare page. Each reads the same loader as its JSON twin."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, get_args

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse

from app import charts, web
from app.deps import ArtifactsDep, DbDep, SessionDep
from app.errors import NotFound
from app.measurements.compare import page_context as measured_context
from app.models import RUN_STATUSES, SORTABLE_COLUMNS, Run
from app.platforms.views import platforms_view
from app.runs import form, views
from app.runs.artifacts import serve
from app.scenarios.views import list_scenarios
from app.schemas import RunStatus
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


def _platforms(session: Any) -> list[dict[str, Any]]:
    return platforms_view(session).model_dump(mode="json")["platforms"]  # type: ignore[no-any-return]


@router.get("/", name="home")
def home(request: Request, session: SessionDep) -> Response:
    recent = views.list_runs_view(session, limit=10).runs
    context = {"platforms": _platforms(session), "scenarios": list_scenarios(), "recent": recent}
    return web.page(request, "home.html", context)


@router.get("/runs/new", name="new_run_page")
def new_run_page(
    request: Request,
    session: SessionDep,
    from_: str | None = Query(default=None, alias="from", max_length=24),
    platform: str | None = Query(default=None, max_length=64),
) -> Response:
    platforms = _platforms(session)
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
    page: int = Query(default=1, ge=1, le=10**9),
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
            "platforms": [p["name"] for p in _platforms(session)],
            "governors": list(get_args(GovernorName)),
            "mechanisms": list(get_args(Mechanism)),
            "statuses": list(RUN_STATUSES),
        },
    )


@router.get("/runs/{run_id}.json", name="run_json")
def run_json(run_id: str, session: SessionDep) -> Response:
    view = views.load_run_view(session, run_id)
    headers = {"Content-Disposition": f'attachment; filename="idlelab-{run_id}.json"'}
    return Response(view.to_json(), media_type="application/json", headers=headers)


@router.get("/runs/{run_id}.csv", name="run_csv")
def run_csv(run_id: str, session: SessionDep) -> StreamingResponse:
    view = views.load_run_view(session, run_id)
    if view.result is None:
        raise NotFound(f"run {run_id!r} has no result yet (status {view.status})")
    headers = {"Content-Disposition": f'attachment; filename="idlelab-{run_id}.csv"'}
    return StreamingResponse(result_csv(view.result), media_type="text/csv; charset=utf-8", headers=headers)


@router.get("/runs/{run_id}/per-cpu.csv", name="run_per_cpu_csv")
def run_per_cpu_csv(run_id: str, session: SessionDep) -> Response:
    """The per-CPU residency table: one row per logical CPU (socket, core, thread), a column per
    state and C0, shares in %, as the run page's heatmap shows them."""
    view = views.load_run_view(session, run_id)
    if view.result is None:
        raise NotFound(f"run {run_id!r} has no result yet (status {view.status})")
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    names = charts.per_cpu_names(view.result)
    w.writerow(["cpu", "socket", "core", "thread", *(f"{n}%" for n in names)])
    rows = view.result["per_cpu_residency"]
    for socket, core, thread, cpu in charts.cpu_places(view.result):
        w.writerow([cpu, socket, core, thread, *(f"{v * 100:.4f}" for v in rows[cpu])])
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


@router.get("/compare", name="compare_page")
def compare_page(request: Request, session: SessionDep, ids: list[str] = Query(default=[])) -> Response:  # noqa: B008
    """Runs overlaid, and `compare_view`'s aligned metrics (the `/api/compare` twin) with the better
    direction of each marked. `?ids=a,b` or `?ids=a&ids=b` (the run page's form sends the latter)."""
    view = views.compare_view(session, ids)
    runs = view.comparison.model_dump(mode="json")["runs"]
    labels = [_run_label(r, i) for i, r in enumerate(runs)]
    # Charts name runs by letter only ("C6 · B"): full titles would crowd the legends.
    letters = [label.split(":")[0] for label in labels]
    pairs = [(letter, r) for letter, r in zip(letters, view.results, strict=True) if r is not None]
    return web.page(
        request,
        "compare.html",
        {
            "runs": runs,
            "labels": labels,
            "done": [r is not None for r in view.results],
            "rows": annotate_metrics(view.comparison.model_dump(mode="json")["metrics"]),
            "charts": charts.compare_charts(pairs) if len(pairs) >= 2 else {},
            "ids": [r["id"] for r in runs],
            **measured_context(session, view.comparison, list(zip(letters, view.results, strict=True))),
        },
    )


def _run_label(run: Mapping[str, Any], i: int) -> str:
    title = (run.get("title") or "").strip()
    if len(title) > 40:
        title = title[:37] + "..."
    return f"{chr(ord('A') + i % 26)}: {title or run['id']}"


def annotate_metrics(metrics: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Compared metrics for display: ns shown in us, shares in %, each delta judged better/worse/same
    by the metric's direction (|delta| < 0.05 % or pp counts as the same)."""
    rows = []
    for m in metrics:
        scale, unit = {"ns": (1e-3, "us"), "share": (100.0, "%")}.get(m["unit"], (1.0, m["unit"]))
        values = [None if v is None else v * scale for v in m["values"]]
        if all(v is None for v in values):
            continue
        deltas = []
        for i, delta in enumerate(m["deltas"]):
            verdict = None
            if i > 0 and delta is not None and m["better"]:
                improved = (delta < 0) == (m["better"] == "lower")
                verdict = "same" if abs(delta) < 0.05 else ("better" if improved else "worse")
            deltas.append({"value": delta, "unit": m["delta_unit"], "verdict": verdict})
        estimate = m["group"] == "energy" or "estimate" in m["label"]
        rows.append({**m, "unit": unit, "values": values, "deltas": deltas, "estimate": estimate})
    return rows
