"""The compare API: aligned metrics of several runs (and measurements) with deltas against the first."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from app.compare import service
from app.compare.service import MAX_COMPARE, Comparison
from app.core.deps import SessionDep
from app.core.errors import ERROR_RESPONSES
from app.core.web import json_response

router = APIRouter(prefix="/api", tags=["runs"])


@router.get("/compare", response_model=Comparison, responses=ERROR_RESPONSES)
def compare(
    session: SessionDep,
    ids: Annotated[
        str,
        Query(
            max_length=MAX_COMPARE * 25,
            description="2 to 8 run ids, comma-separated; deltas are against the first.",
        ),
    ],
) -> Response:
    """Aligned metrics of several runs with percent deltas against the first (repeated ids count once)."""
    return json_response(service.compare_view(session, ids).comparison)
