"""`GET /api/runs/{id}/charts/{name}`: one run chart as Plotly figure JSON (the page embeds the same)."""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import Response

from app import charts
from app.errors import NotFound
from app.routes.pages import load_run

router = APIRouter(tags=["charts"])


@router.get("/api/runs/{run_id}/charts", name="run_chart_names")
def chart_names(request: Request, run_id: str) -> dict[str, list[str]]:
    """The chart names a run offers (the same for every finished run)."""
    load_run(request, run_id)
    return {"charts": list(charts.CHARTS)}


@router.get("/api/runs/{run_id}/charts/{name}", name="run_chart")
def run_chart(request: Request, run_id: str, name: str) -> Response:
    """A Plotly figure `{"data": [...], "layout": {...}}`; 404 for an unknown run or chart name,
    or a run that has no result yet (its status says when to ask again)."""
    if name not in charts.CHARTS:
        raise NotFound(f"unknown chart {name!r}; charts are {', '.join(charts.CHARTS)}")
    run = load_run(request, run_id)
    result = run.get("result")
    if not result:
        raise NotFound(f"run {run_id!r} has no result yet (status {run.get('status')!r})")
    figure = charts.run_chart(name, result)
    return Response(orjson.dumps(figure, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")
