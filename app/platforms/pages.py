"""The platform page: a C-state table with its provenance, optionally beside another."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from app import charts, web
from app.deps import SessionDep
from app.platforms import views

router = APIRouter(include_in_schema=False)


@router.get("/platforms/{name}", name="platform_page")
def platform_page(
    request: Request, name: str, session: SessionDep, vs: str | None = Query(default=None, max_length=64)
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
        },
    )
