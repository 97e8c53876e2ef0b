"""Sweep pages: the list, the form, a sweep's progress and charts; and the example sweep's POST."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from app.core import web
from app.core.deps import SessionDep
from app.runs.lifecycle import SubmitterDep
from app.sweeps import charts, kernels
from app.sweeps import service as views

router = APIRouter(include_in_schema=False)


@router.get("/sweeps", name="sweeps_page")
def sweeps_page(
    request: Request, session: SessionDep, page: int = Query(default=1, ge=1, le=10**6)
) -> Response:
    listing = views.list_view(session, limit=50, offset=(page - 1) * 50)
    return web.page(request, "sweeps.html", {"listing": listing, "page": page})


@router.get("/sweeps/new", name="new_sweep_page")
def new_sweep_page(request: Request) -> Response:
    example = views.example_sweep().model_dump()
    return web.page(
        request,
        "sweep_new.html",
        {
            "title": example["title"],
            "base": orjson.dumps(example["base"], option=orjson.OPT_INDENT_2).decode(),
            "example": example,
            "max_points": views.MAX_POINTS,
        },
    )


@router.post("/sweeps/example", name="example_sweep")
def start_example_sweep(session: SessionDep, submit: SubmitterDep) -> Response:
    """Start the built-in example sweep and show it."""
    made = views.submit(session, submit, views.example_sweep())
    return web.see_other(views.sweep_path(made["id"]))


def sweep_figures(view: dict[str, Any], metric: str, x_path: str) -> dict[str, Any]:
    """The page's charts, from the same view as the JSON twin."""
    points, axes = view["points"], view["axes"]
    return {
        "metric": charts.metric_figure(points, axes, metric, views.METRICS[metric], x_path),
        "pareto": charts.pareto_figure(
            points,
            views.LATENCY_METRIC,
            views.METRICS[views.LATENCY_METRIC],
            views.ENERGY_METRIC,
            views.METRICS[views.ENERGY_METRIC],
            axes,
            x_path,
        ),
    }


def show_metric(value: float | None, metric: str) -> str:
    """A point's metric in the table, in the unit the charts and run pages use (busy in %)."""
    if value is None:
        return "–"
    scale, unit = charts.shown_unit(metric)
    return web.fmt_num(value * scale) + (f"{'' if unit == '%' else ' '}{unit}" if unit else "")


@router.get("/sweeps/{sweep_id}", name="sweep_page")
def sweep_page(
    request: Request,
    sweep_id: str,
    session: SessionDep,
    metric: str = Query(default=views.LATENCY_METRIC, max_length=64),
    x: str | None = Query(default=None, max_length=200),
) -> Response:
    """Progress while the sweep runs; its charts, points table and downloads (for the metric and
    x axis picked) once points are done."""
    view = views.sweep_view(session, sweep_id)
    paths = [a["path"] for a in view["axes"]]
    metric = metric if metric in views.METRICS else views.LATENCY_METRIC
    # The x axis: the one asked for, else the last axis with numbers (a rate, a duration...).
    numeric = [a["path"] for a in view["axes"] if all(isinstance(v, int | float) for v in a["values"])]
    x_path = x if x in paths else (numeric or paths)[-1]
    done = any(p["status"] == "done" for p in view["points"])
    return web.page(
        request,
        "sweep.html",
        {
            "sweep": view,
            "paths": paths,
            "metric": metric,
            "x_path": x_path,
            "metrics": views.METRICS,
            "show_metric": show_metric,
            "charts": sweep_figures(view, metric, x_path) if done else {},
        },
    )


@router.get("/sweeps/{sweep_id}/kernels", name="sweep_kernels_page")
def sweep_kernels_page(request: Request, sweep_id: str, session: SessionDep) -> Response:
    """What changed between the kernels of the sweep, step by step, the largest step marked."""
    return web.page(request, "sweep_kernels.html", {"view": kernels.kernel_steps(session, sweep_id)})
