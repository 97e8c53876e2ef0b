"""Measurement pages: the import page (a machine's dump, a measurement), a measurement's page, and
its two POST actions ("simulate this", calibrate). GET never writes; every form posts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from app.core import web
from app.core.deps import SessionDep, SettingsDep
from app.measurements import service
from app.measurements.api import SimulateBody, simulate
from app.measurements.charts import measurement_figures
from app.platforms.service import platforms_view
from app.platforms.sysfs import DUMP_COMMAND
from app.runs.lifecycle import SubmitterDep

router = APIRouter(include_in_schema=False)


@router.get("/import", name="import_page")
def import_page(request: Request) -> Response:
    return web.page(request, "measurement_import.html", {"dump_command": DUMP_COMMAND})


@router.post("/measurements", name="import_measurement_form")
async def import_measurement_form(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    upload = await web.read_upload(request, settings.import_max_body_bytes)

    def create() -> tuple[service.MeasurementView, str]:
        return service.create_measurement(session, upload.files, title=upload.title, unlisted=upload.unlisted)

    view, token = await run_in_threadpool(create)
    # The delete token rides in the fragment: the browser keeps it, no server log sees it.
    return web.see_other(f"{view.url}#delete-token={token}")


@router.get("/measurements/{measurement_id}", name="measurement_page")
def measurement_page(request: Request, measurement_id: str, session: SessionDep) -> Response:
    view = service.load_measurement_view(session, measurement_id)
    platforms = [p.name for p in platforms_view(session).platforms]
    context = {
        "m": view.to_dict(),
        "charts": measurement_figures(view.view),
        "platforms": platforms,
        "cpu": service.stored_cpu(session, measurement_id),  # None: "Simulate this" asks for the platform
    }
    return web.page(request, "measurement.html", context)


@router.post("/measurements/{measurement_id}/simulate", name="simulate_measurement_form")
def simulate_measurement_form(
    measurement_id: str,
    session: SessionDep,
    submit: SubmitterDep,
    platform: Annotated[str, Form(max_length=64)] = "",
) -> Response:
    """ "Simulate this": submit the run, then the comparison of both."""
    answer = simulate(session, submit, measurement_id, SimulateBody(platform=platform or None))
    return web.see_other(answer["comparison_url"])


@router.post("/measurements/{measurement_id}/calibrate", name="calibrate_measurement_form")
def calibrate_measurement_form(
    measurement_id: str,
    session: SessionDep,
    settings: SettingsDep,
    platform: Annotated[str, Form(max_length=64)] = "",
) -> Response:
    limit = settings.max_custom_platforms
    table, _ = service.calibrate(session, measurement_id, limit=limit, platform=platform or None)
    return web.see_other(web.url_for("platform_page", name=table.name))
