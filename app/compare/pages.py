"""The compare page: runs overlaid, their aligned metrics, and measurements beside them."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from app import charts
from app.compare import service
from app.core import web
from app.core.deps import SessionDep

router = APIRouter(include_in_schema=False)


@router.get("/compare", name="compare_page")
def compare_page(request: Request, session: SessionDep, ids: list[str] = Query(default=[])) -> Response:  # noqa: B008
    """Runs overlaid, and `compare_view`'s aligned metrics (the `/api/compare` twin) with the better
    direction of each marked. `?ids=a,b` or `?ids=a&ids=b` (the run page's form sends the latter)."""
    view = service.compare_view(session, ids)
    runs = view.comparison.model_dump(mode="json")["runs"]
    labels = [service.run_label(r, i) for i, r in enumerate(runs)]
    # Charts name runs by letter only ("C6 · B"): full titles would crowd the legends.
    letters = [label.split(":")[0] for label in labels]
    pairs = [(letter, r) for letter, r in zip(letters, view.results, strict=True) if r is not None]
    measured = service.page_context(session, view.comparison, list(zip(letters, view.results, strict=True)))
    return web.page(
        request,
        "compare.html",
        {
            "runs": runs,
            "labels": labels,
            "done": [r is not None for r in view.results],
            "rows": service.annotate_metrics(view.comparison.model_dump(mode="json")["metrics"]),
            "charts": charts.compare_charts(pairs) if len(pairs) >= 2 else {},
            "ids": [r["id"] for r in runs],
            **measured,
        },
    )
