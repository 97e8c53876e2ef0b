"""The platform page: a C-state table with its provenance, optionally beside another."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response

from app import charts, web
from app.deps import RunnerDep, SessionDep
from app.platforms import views
from app.platforms.api import machine_config
from app.platforms.machine_page import machine_context
from app.runs import views as run_views

router = APIRouter(include_in_schema=False)


@router.get("/platforms/{name}", name="platform_page")
def platform_page(
    request: Request,
    name: str,
    session: SessionDep,
    vs: str | None = Query(default=None, max_length=64),
    run: str | None = Query(default=None, max_length=24),
) -> Response:
    view = views.platform_view(session, name).model_dump(mode="json")
    other = views.platform_view(session, vs).model_dump(mode="json")["table"] if vs and vs != name else None
    shown: list[dict[str, Any]] = [view["table"], *([other] if other else [])]
    return web.page(
        request,
        "platform.html",
        {
            "view": view,
            "platform": view["table"],
            "other": other,
            "platforms": views.platforms_view(session).model_dump(mode="json")["platforms"],
            "figure": charts.platform_figure(shown),
            "cost_labels": views.COST_LABELS,
            **machine_context(session, view, run),
        },
    )


@router.post("/platforms/{name}/simulate", name="simulate_platform_form")
def simulate_platform_form(name: str, session: SessionDep, runner: RunnerDep) -> Response:
    """Simulate the platform's table (an imported machine's topology and disabled states), then
    show it beside the measured counters."""
    submitted = run_views.submit(session, runner, machine_config(session, name), title=f"{name}: simulated")
    return RedirectResponse(f"{web.url_for('platform_page', name=name)}?run={submitted.id}", status_code=303)
