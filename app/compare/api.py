"""The compare API: aligned metrics of several runs (and measurements) with the statistics of their
repeats against the first, as JSON, the robot's text or Markdown; the snippets that recreate runs
on another server; and running the compared configs again with more repeats."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from app.compare import exports, service
from app.compare.service import MAX_COMPARE, Comparison
from app.core.deps import SessionDep
from app.core.errors import ERROR_RESPONSES
from app.core.inputs import ID_CHARS, ID_PATTERN
from app.core.web import absolute, json_response, require_json
from app.runs.lifecycle import RunSpec, SubmitterDep
from app.runs.service import load_run_view
from engine import SimConfig
from engine.repeats import MAX_REPEATS, MIN_REPEATS

IDS_PATTERN = f"^[, ]*{ID_CHARS}([, ]+{ID_CHARS}){{1,{MAX_COMPARE - 1}}}[, ]*$"
router = APIRouter(prefix="/api", tags=["runs"])
IdsQuery = Annotated[
    str,
    Query(
        max_length=MAX_COMPARE * 25,
        description="2 to 8 run ids, comma-separated; changes are against the first.",
        # Ids separated by commas or spaces; that they differ (a repeat counts once) the server checks.
        json_schema_extra={"pattern": IDS_PATTERN},
    ),
]
Repeats = Annotated[int, Field(ge=MIN_REPEATS, le=MAX_REPEATS)]


def compare_link(request: Request, ids: list[str]) -> str:
    return absolute(request, "/compare?ids=" + ",".join(ids))


@router.get(
    "/compare",
    response_model=Comparison,
    responses={
        **ERROR_RESPONSES,
        200: {"content": {"text/plain": {}, "text/markdown": {}}, "description": "With `format`, text."},
    },
)
def compare(
    request: Request,
    session: SessionDep,
    ids: IdsQuery,
    format: Annotated[
        Literal["json", "text", "markdown"],
        Query(description="`text`: the kernel test robot's table (text/plain); `markdown`: for an issue."),
    ] = "json",
    all: Annotated[
        bool, Query(description="Text and Markdown: every metric, not only those with a verdict.")
    ] = False,
) -> Response:
    """Aligned metrics of several runs: per metric each run's mean and %stddev over its repeats, and
    against the first the change with its 95% interval, the test and the verdict (repeated ids
    count once); `warnings` name what makes the figures not comparable."""
    view = service.compare_view(session, ids)
    if format == "json":
        return json_response(view.comparison)
    compared = [r.id for r in view.comparison.runs] + [m.id for m in view.comparison.measurements]
    link = compare_link(request, compared)
    text = exports.compare_report(view, format, link=link, all=all)
    return Response(text, media_type=exports.MEDIA_TYPES[format])


@router.get("/compare/recreate", responses={**ERROR_RESPONSES, 200: {"content": {"text/plain": {}}}})
def recreate_compared(
    request: Request,
    session: SessionDep,
    ids: IdsQuery,
    format: Annotated[Literal["curl", "python"], Query()] = "curl",
    repeats: Annotated[int | None, Query(ge=MIN_REPEATS, le=MAX_REPEATS)] = None,
) -> Response:
    """A shell (curl) or Python snippet that recreates the compared runs on this server's address
    (edit it for another) and prints their comparison there; custom tables inlined."""
    views = [load_run_view(session, run.id) for run in service.compare_view(session, ids).comparison.runs]
    text = exports.snippet(format, absolute(request, "/"), exports.recreate_bodies(views, repeats))
    return Response(text, media_type="text/plain; charset=utf-8")


@router.get("/runs/{run_id}/recreate", responses={**ERROR_RESPONSES, 200: {"content": {"text/plain": {}}}})
def recreate_run(
    run_id: str,
    request: Request,
    session: SessionDep,
    format: Annotated[Literal["curl", "python"], Query()] = "curl",
) -> Response:
    """A shell (curl) or Python snippet that recreates the run (its config, title and repeats; a
    custom table inlined) on this server's address (edit it for another)."""
    body = exports.recreate_bodies([load_run_view(session, run_id)])
    return Response(
        exports.snippet(format, absolute(request, "/"), body), media_type="text/plain; charset=utf-8"
    )


class CompareAgain(BaseModel):
    """Body of `POST /api/compare/again`."""

    model_config = ConfigDict(extra="forbid")

    ids: Annotated[
        list[Annotated[str, Field(json_schema_extra={"pattern": ID_PATTERN})]],
        Field(
            min_length=2, max_length=MAX_COMPARE, description="A repeat counts once: 2 to 8 different ids."
        ),
    ]
    repeats: Repeats = 10


@router.post(
    "/compare/again", status_code=202, responses=ERROR_RESPONSES, dependencies=[Depends(require_json)]
)
async def compare_again(
    request: Request, body: CompareAgain, session: SessionDep, submit: SubmitterDep
) -> Response:
    """Run each compared config again with `repeats` seeds (each as a new run, or answered at once
    by a finished run of the same config and repeats): 202 with the new runs (their delete tokens
    shown once) and the link comparing them."""

    view = service.compare_view(session, body.ids)
    specs = [
        RunSpec(SimConfig.model_validate(config), title=run.title, repeats=body.repeats)
        for run, config in zip(view.comparison.runs, view.configs, strict=True)
    ]
    session.commit()  # ends the read: the submission writes in its own transaction
    runs = [s.answer(absolute(request, f"/runs/{s.id}")) for s in submit(specs)]
    ids = [str(r["id"]) for r in runs]
    return json_response({"runs": runs, "ids": ids, "url": compare_link(request, ids)}, 202)
