"""Measurement pages: the import forms (a machine's dump, a measurement), a measurement's page,
and its two POST actions ("simulate this", calibrate). GET never writes; every form posts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from app import web
from app.deps import RunnerDep, SessionDep, SettingsDep
from app.errors import InvalidInput
from app.measurements import actions, views
from app.measurements.api import SimulateBody, read_upload, simulate
from app.measurements.charts import measurement_figures
from app.platforms import importing
from app.platforms.sysfs import DUMP_COMMAND
from app.platforms.views import platforms_view

router = APIRouter(include_in_schema=False)


def _see(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303)


@router.get("/import", name="import_page")
def import_page(request: Request) -> Response:
    return web.page(request, "measurement_import.html", {"dump_command": DUMP_COMMAND})


@router.post("/platforms/import", name="import_platform_form")
async def import_platform_form(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """The import page's machine form: the dump as a file (or pasted), an optional name; then its page."""
    upload = await read_upload(request, settings.import_max_body_bytes)
    text = upload.fields.get("text", "").encode()
    data = next((d for d in upload.files.values() if d.strip()), None) or text
    if not data.strip():
        raise InvalidInput.one(["body", "dump"], "choose the dump file, or paste its text", "missing")
    name = upload.fields.get("name", "").strip() or None

    def store() -> str:
        table, _ = importing.import_dump(session, data, name=name, title=upload.title)
        return table.name

    return _see(web.url_for("platform_page", name=await run_in_threadpool(store)))


@router.post("/measurements", name="import_measurement_form")
async def import_measurement_form(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    upload = await read_upload(request, settings.import_max_body_bytes)

    def create() -> tuple[views.MeasurementView, str]:
        return views.create_measurement(session, upload.files, title=upload.title, unlisted=upload.unlisted)

    view, token = await run_in_threadpool(create)
    # The delete token rides in the fragment: the browser keeps it, no server log sees it.
    return _see(f"{view.url}#delete-token={token}")


@router.get("/measurements/{measurement_id}", name="measurement_page")
def measurement_page(request: Request, measurement_id: str, session: SessionDep) -> Response:
    view = views.load_measurement_view(session, measurement_id)
    platforms = [p.name for p in platforms_view(session).platforms]
    return web.page(
        request,
        "measurement.html",
        {
            "m": view.to_dict(),
            "charts": measurement_figures(view.view),
            "platforms": platforms,
        },
    )


@router.post("/measurements/{measurement_id}/simulate", name="simulate_measurement_form")
def simulate_measurement_form(
    measurement_id: str,
    session: SessionDep,
    runner: RunnerDep,
    platform: Annotated[str, Form(max_length=64)] = "",
) -> Response:
    """"Simulate this": submit the run, then the comparison of both."""
    answer = simulate(session, runner, measurement_id, SimulateBody(platform=platform or None))
    return _see(answer["comparison_url"])


@router.post("/measurements/{measurement_id}/calibrate", name="calibrate_measurement_form")
def calibrate_measurement_form(
    measurement_id: str, session: SessionDep, platform: Annotated[str, Form(max_length=64)] = ""
) -> Response:
    table, _ = actions.calibrate(session, measurement_id, platform=platform or None)
    return _see(web.url_for("platform_page", name=table.name))
