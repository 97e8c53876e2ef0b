"""Platform pages: a C-state table with its provenance (optionally beside another, and an imported
machine's counters beside a simulation of it), and the import page's machine form."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from app import charts
from app.core import web
from app.core.deps import SessionDep, SettingsDep
from app.core.errors import InvalidInput
from app.platforms import service

router = APIRouter(include_in_schema=False)


@router.get("/platforms", name="platforms_page")
def platforms_page(request: Request, session: SessionDep) -> Response:
    """Every platform, built-in and custom, each linked to its page."""
    platforms = service.platforms_view(session).model_dump(mode="json")["platforms"]
    return web.page(request, "platforms.html", {"platforms": platforms})


@router.get("/platforms/{name}", name="platform_page")
def platform_page(
    request: Request,
    name: str,
    session: SessionDep,
    vs: str | None = Query(default=None, max_length=64),
    run: str | None = Query(default=None, max_length=24),
) -> Response:
    view = service.platform_view(session, name).model_dump(mode="json")
    other = service.platform_view(session, vs).model_dump(mode="json")["table"] if vs and vs != name else None
    shown: list[dict[str, Any]] = [view["table"], *([other] if other else [])]
    return web.page(
        request,
        "platform.html",
        {
            "view": view,
            "platform": view["table"],
            "other": other,
            "platforms": service.platforms_view(session).model_dump(mode="json")["platforms"],
            "figure": charts.platform_figure(shown),
            "cost_labels": service.COST_LABELS,
            **service.machine_context(session, view, run),
        },
    )


@router.post("/platforms/import", name="import_platform_form")
async def import_platform_form(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """The import page's machine form: the dump as a file (or pasted), an optional name; then its page."""
    upload = await web.read_upload(request, settings.import_max_body_bytes)
    text = upload.fields.get("text", "").encode()
    data = next((d for d in upload.files.values() if d.strip()), None) or text
    if not data.strip():
        raise InvalidInput.one(["body", "dump"], "choose the dump file, or paste its text", "missing")
    name = upload.fields.get("name", "").strip() or None

    def store() -> str:
        table, _ = service.import_dump(
            session, data, limit=settings.max_custom_platforms, name=name, title=upload.title
        )
        return table.name

    return web.see_other(web.url_for("platform_page", name=await run_in_threadpool(store)))
