"""The compare page: runs overlaid, their aligned metrics with verdicts, measurements beside them,
and the exports; the HTML snapshots of a run and of a compare (downloaded as attachments)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from app import charts
from app.compare import exports, notes_api, service
from app.compare.api import compare_link
from app.core import web
from app.core.deps import SessionDep
from app.runs.service import load_run_view

router = APIRouter(include_in_schema=False)
# How many repeats "run both again" offers first: enough for a verdict on a few-percent change.
AGAIN_REPEATS = 10


def attachment(html: str, filename: str) -> Response:
    """A snapshot to save, never shown in place: its inline scripts are what the app's CSP blocks."""
    headers = {"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"}
    return Response(html, media_type="text/html; charset=utf-8", headers=headers)


@router.get("/compare", name="compare_page")
def compare_page(request: Request, session: SessionDep, ids: list[str] = Query(default=[])) -> Response:  # noqa: B008
    """Runs overlaid, and `compare_view`'s aligned metrics (the `/api/compare` twin) with each
    run's verdict against the first. `?ids=a,b` or `?ids=a&ids=b` (the run page's form sends the latter)."""
    view = service.compare_view(session, ids)
    runs = view.comparison.model_dump(mode="json")["runs"]
    labels = [service.run_label(r, i) for i, r in enumerate(runs)]
    # Charts name runs by letter only ("C6 · B"): full titles would crowd the legends.
    letters = [label.split(":")[0] for label in labels]
    pairs = [(letter, r) for letter, r in zip(letters, view.results, strict=True) if r is not None]
    measured = service.page_context(session, view.comparison, list(zip(letters, view.results, strict=True)))
    all_ids = [r["id"] for r in runs] + [m.id for m in view.comparison.measurements]
    query = ",".join(all_ids)
    return web.page(
        request,
        "compare.html",
        {
            "runs": runs,
            "labels": labels,
            "done": [r is not None for r in view.results],
            "rows": service.annotate_metrics(view.comparison.model_dump(mode="json")["metrics"]),
            "warnings": [w.model_dump() for w in view.comparison.warnings],
            "charts": charts.compare_charts(pairs) if len(pairs) >= 2 else {},
            "ids": [r["id"] for r in runs],
            "query": query,
            "repeats": [r["repeat_count"] for r in runs],
            "again_repeats": max(AGAIN_REPEATS, *(r["repeat_count"] for r in runs)),
            "kernels": view.comparison.model_dump(mode="json")["kernels"],
            **measured,
        },
    )


@router.get("/compare/snapshot.html", name="compare_snapshot")
def compare_snapshot(request: Request, session: SessionDep, ids: list[str] = Query(default=[])) -> Response:  # noqa: B008
    """The compare as one self-contained HTML file, downloaded."""
    view = service.compare_view(session, ids)
    run_ids = [r.id for r in view.comparison.runs]
    measured = [m.id for m in view.comparison.measurements]
    notes = {
        side_id: note.text
        for kind, side_ids in (("runs", run_ids), ("measurements", measured))
        for side_id in side_ids
        if (note := notes_api.get_note(session, kind, side_id)) is not None
    }
    html = exports.compare_snapshot(view, link=compare_link(request, run_ids + measured), notes=notes)
    return attachment(html, f"idlelab-compare-{'-'.join(run_ids)}.html")


@router.get("/runs/{run_id}/snapshot.html", name="run_snapshot")
def run_snapshot(request: Request, run_id: str, session: SessionDep) -> Response:
    """A run as one self-contained HTML file (its note included), downloaded."""
    view = load_run_view(session, run_id)
    note = notes_api.get_note(session, "runs", run_id)
    html = exports.run_snapshot(
        view, link=web.absolute(request, f"/runs/{run_id}"), note=None if note is None else note.text
    )
    return attachment(html, f"idlelab-run-{run_id}.html")
