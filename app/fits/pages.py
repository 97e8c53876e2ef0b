"""Fit pages: the list, a fit (progress while it runs, then measured against twin, misses,
history, cross-validation and a what-if form), a what-if side by side, the development machines'
twins (`/validation/machines`), and the forms that start fits and what-ifs (posts, then a
redirect)."""

from __future__ import annotations

from typing import Annotated, Any, get_args

import orjson
from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import Response

from app.core import web
from app.core.deps import SessionDep, SettingsDep
from app.core.errors import InvalidInput
from app.fits import charts, machines, service
from app.fits.runner import FitRunnerDep
from app.fits.service import FitCreate, WhatIfCreate
from app.runs.lifecycle import SubmitterDep
from engine.config import GovernorName, Mechanism, PackageLimit
from engine.twin.fit import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET

router = APIRouter(include_in_schema=False)

HZ_CHOICES = (100, 250, 300, 1000)
UNCHANGED = ""


@router.get("/fits", name="fits_page")
def fits_page(
    request: Request,
    session: SessionDep,
    platform: Annotated[str | None, Query(max_length=64)] = None,
    page: Annotated[int, Query(ge=1, le=10**6)] = 1,
) -> Response:
    listing = service.list_view(session, platform=platform, limit=50, offset=(page - 1) * 50)
    return web.page(request, "fits.html", {"listing": listing, "platform": platform, "page": page})


def whatif_choices(view: dict[str, Any]) -> dict[str, Any]:
    """What the what-if form offers, and the twin's current value of each."""
    config = view.get("config") or {}
    return {
        "governors": [g for g in get_args(GovernorName) if g != "fixed"],
        "mechanisms": list(get_args(Mechanism)),
        "package_limits": list(get_args(PackageLimit)),
        "hz": HZ_CHOICES,
        "states": list((view.get("measured") or {}).get("states", {})),
        "current": {
            "governor": (config.get("governor") or {}).get("name"),
            "disabled": (config.get("states") or {}).get("disabled", []),
            "latency_limit_us": (config.get("states") or {}).get("latency_limit_us"),
            "package_limit": (config.get("package") or {}).get("limit"),
            "mechanism": (config.get("ipi_wakeup") or {}).get("mechanism"),
            "hz": ((config.get("wakeups") or {}).get("tick") or {}).get("hz"),
        },
    }


@router.get("/fits/{fit_id}", name="fit_page")
def fit_page(request: Request, fit_id: str, session: SessionDep) -> Response:
    view = service.fit_view(session, fit_id)
    figures = {}
    if view["history"]:
        figures["fit_history"] = charts.history_figure(view["history"])
    if view["measured"] and view["fitted"]:
        figures["fit_states"] = charts.states_figure(view["measured"], view["fitted"])
    context = {
        "fit": view,
        "charts": figures,
        "choices": whatif_choices(view) if view["status"] == "done" else None,
        "config_json": orjson.dumps(view["config"], option=orjson.OPT_INDENT_2).decode()
        if view["config"]
        else "",
    }
    return web.page(request, "fits_fit.html", context)


@router.get("/fits/{fit_id}/whatif/{run_id}", name="whatif_page")
def whatif_page(request: Request, fit_id: str, run_id: str, session: SessionDep) -> Response:
    view = service.whatif_view(session, fit_id, run_id)
    return web.page(request, "fits_whatif.html", {"w": view})


@router.post("/platforms/{name}/fit", name="fit_platform_form")
def fit_platform_form(
    name: str,
    session: SessionDep,
    runner: FitRunnerDep,
    seed: Annotated[int, Form(ge=0, le=service.MAX_SEED)] = 1,
    budget: Annotated[int, Form(ge=MIN_BUDGET, le=MAX_BUDGET)] = DEFAULT_BUDGET,
) -> Response:
    """The platform page's "Fit a twin" button."""
    made = service.submit(session, name, FitCreate(seed=seed, budget=budget))
    session.commit()
    runner.queued()
    return _to_new_fit(made)


def form_changes(
    *,
    governor: str,
    kernel: str,
    disabled: list[str] | None,
    latency_limit_us: str,
    c1_irq_enable: str,
    package_limit: str,
    mechanism: str,
    hz: str,
    extra: str,
) -> dict[str, Any]:
    """The what-if form's fields as a partial SimConfig (an empty field changes nothing); `extra`
    is more changes as JSON, laid over the rest. `disabled` is None when the boxes ticked are the
    twin's own disabled states."""
    changes: dict[str, Any] = {}
    if governor:
        changes["governor"] = {"name": governor}
    if kernel.strip():
        changes.setdefault("governor", {})["kernel"] = kernel.strip()
    states: dict[str, Any] = {} if disabled is None else {"disabled": disabled}
    if latency_limit_us.strip():
        try:
            states["latency_limit_us"] = float(latency_limit_us)
        except ValueError:
            raise InvalidInput.one(["body", "latency_limit_us"], "a number of us", "float_parsing") from None
    if c1_irq_enable in ("on", "off"):
        states["irq_enable"] = {"C1": c1_irq_enable == "on"}
    if states:
        changes["states"] = states
    if package_limit:
        changes["package"] = {"limit": package_limit}
    if mechanism:
        changes["ipi_wakeup"] = {"mechanism": mechanism}
    if hz:
        changes["wakeups"] = {"tick": {"hz": int(hz)}}
    if extra.strip():
        try:
            more = orjson.loads(extra)
        except orjson.JSONDecodeError as exc:
            raise InvalidInput.one(["body", "extra"], f"not JSON: {exc}", "json_invalid") from None
        if not isinstance(more, dict):
            raise InvalidInput.one(["body", "extra"], "a JSON object (a partial SimConfig)", "dict_type")
        changes = service.merge(changes, more)
    return changes


@router.post("/fits/{fit_id}/whatif", name="whatif_form")
def whatif_form(
    fit_id: str,
    session: SessionDep,
    submit: SubmitterDep,
    governor: Annotated[str, Form(max_length=32)] = UNCHANGED,
    kernel: Annotated[str, Form(max_length=40)] = "",
    disabled: Annotated[list[str] | None, Form(max_length=32)] = None,
    latency_limit_us: Annotated[str, Form(max_length=20)] = "",
    c1_irq_enable: Annotated[str, Form(max_length=8)] = UNCHANGED,
    package_limit: Annotated[str, Form(max_length=16)] = UNCHANGED,
    mechanism: Annotated[str, Form(max_length=32)] = UNCHANGED,
    hz: Annotated[str, Form(max_length=8)] = UNCHANGED,
    extra: Annotated[str, Form(max_length=20_000)] = "",
) -> Response:
    """The fit page's what-if form: run it, then show it beside the measurement and the twin."""
    twin_disabled = (
        (service.fit_view(session, fit_id).get("config") or {}).get("states", {}).get("disabled", [])
    )
    ticked = sorted(disabled or [])
    changes = form_changes(
        governor=governor,
        kernel=kernel,
        disabled=None if ticked == sorted(twin_disabled) else ticked,
        latency_limit_us=latency_limit_us,
        c1_irq_enable=c1_irq_enable,
        package_limit=package_limit,
        mechanism=mechanism,
        hz=hz,
        extra=extra,
    )
    made = service.submit_whatif(session, submit, fit_id, WhatIfCreate(changes=changes))
    # The what-if run's delete token in the fragment, shown once by the page (static/js/token.js).
    return web.see_other(f"{made['whatif_url']}#delete-token={made['delete_token']}")


@router.get("/validation/machines", name="validation_machines_page")
def validation_machines_page(request: Request, session: SessionDep) -> Response:
    """Each development machine measured against its twin, state by state, with the verdict."""
    return web.page(request, "fits_machines.html", {"report": machines.report(session)})


@router.post("/validation/machines/{name}/fit", name="validation_machine_fit")
def validation_machine_fit(
    name: str, session: SessionDep, settings: SettingsDep, runner: FitRunnerDep
) -> Response:
    """Import a development machine (once) and fit its twin."""
    made = machines.import_and_fit(session, name, limit=settings.max_custom_platforms)
    session.commit()
    runner.queued()
    return _to_new_fit(made)


def _to_new_fit(made: dict[str, Any]) -> Response:
    """To the new fit's page, its delete token in the fragment (the browser keeps it, no server
    log sees it): the page shows it once (static/js/fit.js)."""
    return web.see_other(f"{service.fit_path(made['id'])}#delete-token={made['delete_token']}")
